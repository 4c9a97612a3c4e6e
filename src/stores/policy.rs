//! One key held to every limit of a policy: one state per limit, decided all or nothing.

use alloc::vec::Vec;

use crate::algorithms::any::{Algorithm, AnyState};
use crate::algorithms::state::State;
use crate::stores::store::Op;
use crate::values::decision::Decision;
use crate::values::limit::Limit;
use crate::values::policy::{Policy, PolicyDecision};

/// A bucket per limit of a [`Policy`], for one key.
///
/// A request that would spend (a hit, a reserve) is first looked at by every limit
/// (`peek`); only if all of them have room is it spent in each. A refusal spends in none:
/// the limits that had room are left as they were, and the ones that refused are as a
/// refusal leaves a limit alone (nothing spent, the clock moved on). Each limit's decision
/// is its own. What is charged after the fact (a record, a settle) is charged to every
/// limit.
///
/// ```
/// use trickle_core::{Algorithm, Outcome, PolicyLimiter};
///
/// // A burst of 2 per second, and 3 per minute.
/// let mut limiter = PolicyLimiter::with_algorithm(Algorithm::SlidingLog, "2/1s 3/1m".parse().unwrap());
/// assert!(limiter.hit(0, 1).is_allowed());
/// assert!(limiter.hit(100, 1).is_allowed());
/// // The burst is spent: the second's limit answers, and nothing is charged to the minute's.
/// let burst = limiter.hit(200, 1);
/// assert_eq!((burst.answered_by(), burst.outcome()), (Some(0), Outcome::Denied { retry_after_ms: 800 }));
/// assert!(limiter.hit(1_000, 1).is_allowed());
/// // Three in the minute: now the minute's limit answers, until the first token is a minute old.
/// let minute = limiter.hit(2_000, 1);
/// assert_eq!((minute.answered_by(), minute.retry_after_ms()), (Some(1), Some(58_000)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyBucket<S> {
    policy: Policy,
    /// One per limit, in the policy's order.
    states: Vec<S>,
}

/// A policy whose algorithm is chosen at run time.
pub type PolicyLimiter = PolicyBucket<AnyState>;

impl<S: State + Default> PolicyBucket<S> {
    /// Empty buckets (full ones, for the token bucket), one per limit.
    pub fn new(policy: Policy) -> PolicyBucket<S> {
        let states = policy.limits().map(|_| S::default()).collect();
        PolicyBucket { policy, states }
    }
}

impl PolicyLimiter {
    /// Empty buckets running `algorithm`, one per limit of `policy`.
    pub fn with_algorithm(algorithm: Algorithm, policy: Policy) -> PolicyLimiter {
        let states = policy.limits().map(|_| AnyState::new(algorithm)).collect();
        PolicyBucket { policy, states }
    }
}

impl<S: State> PolicyBucket<S> {
    /// The policy this bucket enforces.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The state of each limit, in the policy's order, for inspection.
    pub fn states(&self) -> &[S] {
        &self.states
    }

    /// Decides a request of `cost` tokens at `now_ms`; if every limit has room, spends the
    /// cost in each.
    pub fn hit(&mut self, now_ms: u64, cost: u64) -> PolicyDecision {
        self.decide(Op::Hit, now_ms, cost)
    }

    /// What [`hit`](PolicyBucket::hit) would answer, without spending anything.
    pub fn peek(&self, now_ms: u64, cost: u64) -> PolicyDecision {
        let decisions = peek_all(&self.policy, &self.states, now_ms, cost);
        answer(&self.policy, &self.states, decisions)
    }

    /// Charges `cost` to every limit after the fact, even past them.
    pub fn record(&mut self, now_ms: u64, cost: u64) -> PolicyDecision {
        self.decide(Op::Record, now_ms, cost)
    }

    /// Applies `op` to every limit, all or nothing for the ops that spend only if they fit
    /// ([`Op::Hit`], [`Op::Reserve`]); a reserve is settled later with [`Op::Settle`] on
    /// the same policy, which settles it in each limit.
    pub fn decide(&mut self, op: Op, now_ms: u64, cost: u64) -> PolicyDecision {
        let decisions = decide_all(&self.policy, &mut self.states, op, now_ms, cost);
        answer(&self.policy, &self.states, decisions)
    }

    /// Forgets every request: as new.
    pub fn reset(&mut self) {
        self.states.iter_mut().for_each(State::clear);
    }
}

/// The policy's answer from each limit's decision and its state after it.
pub(crate) fn answer<S: State>(
    policy: &Policy,
    states: &[S],
    decisions: Vec<Decision>,
) -> PolicyDecision {
    let next_token_ms = states
        .iter()
        .zip(policy.limits())
        .zip(&decisions)
        .map(|((state, limit), decision)| next_token_ms(state, &limit, decision))
        .collect();
    PolicyDecision::new(decisions, next_token_ms)
}

/// Milliseconds until `state` frees one more whole token than `decision` left: the wait of
/// a request costing one token more than what remains (which cannot fit now, since
/// `remaining` is the whole tokens free). `None` when every token is free.
fn next_token_ms<S: State>(state: &S, limit: &Limit, decision: &Decision) -> Option<u64> {
    let remaining = decision.remaining();
    if remaining >= limit.tokens() {
        return None;
    }
    state
        .peek(limit, decision.at_ms, remaining + 1)
        .retry_after_ms()
}

/// Every limit's peek: `states` holds one state per limit of `policy`, in its order.
pub(crate) fn peek_all<S: State>(
    policy: &Policy,
    states: &[S],
    now_ms: u64,
    cost: u64,
) -> Vec<Decision> {
    states
        .iter()
        .zip(policy.limits())
        .map(|(state, limit)| state.peek(&limit, now_ms, cost))
        .collect()
}

/// The one rule of a policy, for every store that keeps one state per limit of `policy` for
/// a key (`states`, in the policy's order).
pub(crate) fn decide_all<S: State>(
    policy: &Policy,
    states: &mut [S],
    op: Op,
    now_ms: u64,
    cost: u64,
) -> Vec<Decision> {
    match op {
        Op::Peek => peek_all(policy, states, now_ms, cost),
        Op::Hit | Op::Reserve { .. } => {
            let peeks = peek_all(policy, states, now_ms, cost);
            let fits = peeks.iter().all(Decision::is_allowed);
            let mut peeks = peeks.into_iter();
            // Refused: a limit that had room is left as it was; one that refused is hit,
            // which spends nothing there but moves its clock as a refusal moves a limit's
            // own, so that a policy of one limit is exactly that limit.
            each(policy, states, |state, limit| match peeks.next() {
                Some(peek) if !fits && peek.is_allowed() => peek,
                _ => state.hit(limit, now_ms, cost),
            })
        }
        Op::Record => each(policy, states, |state, limit| {
            state.record(limit, now_ms, cost)
        }),
        Op::Settle {
            reserved_at_ms,
            reserved,
            ..
        } => each(policy, states, |state, limit| {
            state.settle(limit, now_ms, reserved_at_ms, reserved, cost)
        }),
    }
}

fn each<S: State>(
    policy: &Policy,
    states: &mut [S],
    mut apply: impl FnMut(&mut S, &Limit) -> Decision,
) -> Vec<Decision> {
    states
        .iter_mut()
        .zip(policy.limits())
        .map(|(state, limit)| apply(state, &limit))
        .collect()
}
