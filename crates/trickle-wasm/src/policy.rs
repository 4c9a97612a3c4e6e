//! A policy of several limits on the same requests (`10/1s 1000/1h`), decided all or nothing
//! by the core's `PolicyLimiter`, for `<rate-limit-demo limit="10/1s 1000/1h">`: built only
//! with the `extras` feature, into the opt-in modes' WebAssembly module
//! (`trickle_extras_bg.wasm`), so that the default widget's module carries none of it.
//!
//! A decision is written to a buffer of its own, as the single limiter's is: one `f64` for
//! the limit that answered (−1 when allowed), one for the fewest whole tokens any limit has
//! left, one for the limit nearest to refusing (the one ESI's `X-Ratelimit-*` report), then,
//! for each limit in the policy's order, its own decision in the 14 slots of the single
//! limiter's buffer (`super::field`), the ms until it frees one more whole token (−1 when all
//! of its tokens are free), its own outcome code, and the IETF `RateLimit` field's `t` for
//! it (−1 when left out), as the core's `ietf::service_limits` computes it.
//!
//! | export | what it does |
//! |---|---|
//! | `new RawPolicy(policy, algorithm)` | throws an `Error` with the core's message for a bad policy (checked first) or algorithm |
//! | `hit(now, cost)`, `peek(now, cost)` | the policy's outcome code (0 allowed, 1 denied, 2 exceeds a limit); the decision in the buffer |
//! | `respond(now, reserve, cost)` | as `limiter_respond`, for every limit: reserves in all of them or none, then settles in each |
//! | `reset()` | forgets everything spent |
//! | `copy()` | a new `RawPolicy` in the same state, which decides apart from this one |
//! | `text`, `algorithm`, `count` (getters) | `"burst=10/1s 1000/1h"` as the core writes it; `"floating"`; the count of limits |
//! | `name(i)`, `limit(i)`, `tokens(i)`, `window_ms(i)` | the `i`th limit's name, its text, N and W |
//! | `window_s(i)` | the IETF `RateLimit-Policy` field's `w` for the `i`th limit (`ietf::quota_policies`); −1 when left out |
//! | `policy_buffer()` | the byte offset of the buffer in the wasm memory |

// Through `super`, so that tests/policy.rs can compile this crate in as a module.
use super::alloc::string::String;

use core::cell::UnsafeCell;

use trickle_core::ietf::{self, QuotaUnit};
use trickle_core::{Algorithm, Decision, Op, Outcome, Policy, PolicyDecision, PolicyLimiter};
use wasm_bindgen::prelude::*;

use super::{whole, ALLOWED, DECISION, DECISION_FIELDS, DENIED, EXCEEDS_LIMIT};

/// The slots before the limits': the limit that answered, the fewest tokens left, and the
/// limit nearest to refusing (`PolicyDecision::nearest`).
pub const ANSWERED_BY: usize = 0;
pub const REMAINING: usize = 1;
pub const NEAREST: usize = 2;
pub const POLICY_HEAD: usize = 3;

/// Each limit's slots: its decision as the single limiter writes one, then `NEXT_TOKEN_MS`,
/// `OUTCOME`, the code the single limiter would have returned for it, and `RESET_S`, the
/// IETF `RateLimit` field's `t`.
pub const NEXT_TOKEN_MS: usize = DECISION_FIELDS;
pub const OUTCOME: usize = DECISION_FIELDS + 1;
pub const RESET_S: usize = DECISION_FIELDS + 2;
pub const LIMIT_FIELDS: usize = DECISION_FIELDS + 3;

/// How many `f64` the buffer holds: room for the most limits a policy may have.
pub const POLICY_FIELDS: usize = POLICY_HEAD + Policy::MAX_LIMITS * LIMIT_FIELDS;

struct PolicyBuffer(UnsafeCell<[f64; POLICY_FIELDS]>);

// SAFETY: wasm32-unknown-unknown without atomics has one thread.
unsafe impl Sync for PolicyBuffer {}

static POLICY: PolicyBuffer = PolicyBuffer(UnsafeCell::new([0.0; POLICY_FIELDS]));

// The byte offset of the policy's buffer in the wasm memory: read it as
// `new Float64Array(memory.buffer, policy_buffer(), POLICY_FIELDS)`.
#[wasm_bindgen(skip_jsdoc)]
pub fn policy_buffer() -> u32 {
    POLICY.0.get() as u32
}

/// Writes `decision` into the buffer, each limit's part through the single limiter's own
/// writer (`super::publish`), so that a limit's slots mean exactly what they mean there;
/// returns the policy's outcome code. A refusal is written with a cost of 0 in every limit:
/// nothing was spent.
fn publish(policy: &Policy, decision: &PolicyDecision, reserved: u64, refused: bool) -> u32 {
    // SAFETY: see `PolicyBuffer`; no reference into either buffer outlives this function.
    let fields = unsafe { &mut *POLICY.0.get() };
    fields[ANSWERED_BY] = decision.answered_by().map_or(-1.0, |index| index as f64);
    fields[REMAINING] = decision.remaining() as f64;
    fields[NEAREST] = decision.nearest() as f64;
    let service = ietf::service_limits(policy, decision);
    for (index, own) in decision.decisions().iter().enumerate() {
        let own = if refused {
            Decision { cost: 0, ..*own }
        } else {
            *own
        };
        let code = super::publish(&own, reserved);
        let start = POLICY_HEAD + index * LIMIT_FIELDS;
        // SAFETY: as above; `publish` has returned, so its write is whole.
        fields[start..start + DECISION_FIELDS].copy_from_slice(unsafe { &*DECISION.0.get() });
        fields[start + NEXT_TOKEN_MS] = decision.next_token_ms(index).map_or(-1.0, |ms| ms as f64);
        fields[start + OUTCOME] = f64::from(code);
        fields[start + RESET_S] = service
            .get(index)
            .and_then(|limit| limit.reset_s)
            .map_or(-1.0, |seconds| seconds as f64);
    }
    match decision.outcome() {
        Outcome::Allowed => ALLOWED,
        Outcome::Denied { .. } => DENIED,
        Outcome::ExceedsLimit => EXCEEDS_LIMIT,
    }
}

// Every limit of a policy on one bucket each, decided all or nothing.
#[wasm_bindgen]
pub struct RawPolicy {
    inner: PolicyLimiter,
    algorithm: Algorithm,
}

#[wasm_bindgen]
impl RawPolicy {
    // A policy (`"10/1s 1000/1h"`, `"burst=10/1s 1000/1h"`) running `algorithm` in each of
    // its limits. Throws an `Error` with the core's message for either one bad.
    #[wasm_bindgen(constructor, skip_jsdoc)]
    pub fn new(policy: &str, algorithm: &str) -> Result<RawPolicy, JsError> {
        let policy: Policy = policy
            .parse()
            .map_err(|e: trickle_core::PolicyError| JsError::new(&e.message()))?;
        let algorithm: Algorithm = algorithm
            .parse()
            .map_err(|e: trickle_core::AlgorithmError| JsError::new(&e.message()))?;
        Ok(RawPolicy {
            inner: PolicyLimiter::with_algorithm(algorithm, policy),
            algorithm,
        })
    }

    // Spends `cost` tokens in every limit at `now` if all of them have room, else in none.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn hit(&mut self, now: f64, cost: f64) -> u32 {
        let decision = self.inner.hit(whole(now), whole(cost));
        publish(self.inner.policy(), &decision, 0, false)
    }

    // What `hit` would answer, spending nothing.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn peek(&self, now: f64, cost: f64) -> u32 {
        publish(
            self.inner.policy(),
            &self.inner.peek(whole(now), whole(cost)),
            0,
            false,
        )
    }

    // The flow of a server that prices its answers, as `limiter_respond`, all at `now`:
    // reserves `reserve` tokens in every limit if all of them have room, then settles the
    // request at `cost` in each. A refusal costs nothing and is written with a cost of 0.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn respond(&mut self, now: f64, reserve: f64, cost: f64) -> u32 {
        let now = whole(now);
        let reserved = whole(reserve);
        let admission = self.inner.decide(Op::Reserve { ticket: 0 }, now, reserved);
        if !admission.is_allowed() {
            return publish(self.inner.policy(), &admission, 0, true);
        }
        // Every limit saw the same calls, so their clocks agree: the first one's is the
        // moment the reservation was made.
        let reserved_at_ms = admission.decisions().first().map_or(now, |own| own.at_ms);
        let settle = Op::Settle {
            reserved_at_ms,
            reserved,
            ticket: 0,
        };
        let settled = self.inner.decide(settle, now, whole(cost));
        publish(self.inner.policy(), &settled, reserved, false)
    }

    // Forgets everything spent.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    // A policy in the same state that decides apart from this one: live mode asks it what
    // the server would have answered at either end of a round trip, charging nothing here.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn copy(&self) -> RawPolicy {
        RawPolicy {
            inner: self.inner.clone(),
            algorithm: self.algorithm,
        }
    }

    // The policy as the core writes it, e.g. `"burst=10/1s 1000/1h"`.
    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn text(&self) -> String {
        self.inner.policy().text()
    }

    // The algorithm's name, e.g. `"floating"`.
    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn algorithm(&self) -> String {
        self.algorithm.name().into()
    }

    // How many limits the policy holds.
    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn count(&self) -> u32 {
        self.inner.policy().len() as u32
    }

    // The `index`th limit's name (its text, unless one was given); empty past the last.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn name(&self, index: u32) -> String {
        self.inner.policy().name(index as usize).into()
    }

    // The `index`th limit as the core writes it, `"10/1s"`; empty past the last.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn limit(&self, index: u32) -> String {
        self.inner
            .policy()
            .limit(index as usize)
            .map_or_else(String::new, |limit| limit.text())
    }

    // N of the `index`th limit; 0 past the last.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn tokens(&self, index: u32) -> f64 {
        self.inner
            .policy()
            .limit(index as usize)
            .map_or(0.0, |limit| limit.tokens() as f64)
    }

    // W of the `index`th limit, in ms; 0 past the last.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn window_ms(&self, index: u32) -> f64 {
        self.inner
            .policy()
            .limit(index as usize)
            .map_or(0.0, |limit| limit.window_ms() as f64)
    }

    // The IETF `RateLimit-Policy` field's `w` for the `index`th limit, in whole seconds, as
    // the core's `ietf::quota_policies` gives it; −1 when the field leaves it out (a window
    // that is not a whole number of seconds), or past the last limit.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn window_s(&self, index: u32) -> f64 {
        ietf::quota_policies(self.inner.policy(), QuotaUnit::Requests)
            .get(index as usize)
            .and_then(|item| item.window_s)
            .map_or(-1.0, |seconds| seconds as f64)
    }
}
