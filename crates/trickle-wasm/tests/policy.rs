//! The policy's boundary (`--features extras`, `src/policy.rs`), run as WebAssembly under
//! Node: `wasm-pack test --node -- --features extras --test policy`.
//!
//! What crosses is tested here: the policy's buffer read the way www/src/policy-fields.js
//! reads it (a `Float64Array` over the wasm memory), each limit's slots meaning what the
//! single limiter's mean, the limit that answered, `respond` all or nothing, the getters,
//! and an `Error` with the core's message for a bad policy. The rule itself is the core's
//! `PolicyLimiter`, tested natively (tests/policy*.rs at the root).
#![cfg(all(target_arch = "wasm32", feature = "extras"))]

// The whole binding comes in, and this suite calls only the policy's part of it.
#[allow(dead_code)]
#[path = "../src/lib.rs"]
mod binding;

use binding::field;
use binding::policy::{
    policy_buffer, RawPolicy, ANSWERED_BY, LIMIT_FIELDS, NEAREST, NEXT_TOKEN_MS, OUTCOME,
    POLICY_FIELDS, POLICY_HEAD, REMAINING, RESET_S,
};
use binding::{ALLOWED, DENIED, EXCEEDS_LIMIT};
use js_sys::{Error, Float64Array, WebAssembly};
use wasm_bindgen::{JsCast, JsError, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

fn message(err: JsError) -> String {
    let value = JsValue::from(err);
    let error: &Error = value.dyn_ref().expect("bindings throw JS Error objects");
    assert_eq!(error.name(), "Error");
    error.message().into()
}

fn policy(text: &str, algorithm: &str) -> RawPolicy {
    RawPolicy::new(text, algorithm).unwrap_or_else(|err| panic!("{}", message(err)))
}

/// The buffer as JS sees it: a view of the wasm memory at `policy_buffer()`.
fn fields() -> Vec<f64> {
    let memory: WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    Float64Array::new_with_byte_offset_and_length(
        &memory.buffer(),
        policy_buffer(),
        POLICY_FIELDS as u32,
    )
    .to_vec()
}

/// The `index`th limit's slot `slot` in `fields`.
fn own(fields: &[f64], index: usize, slot: usize) -> f64 {
    fields[POLICY_HEAD + index * LIMIT_FIELDS + slot]
}

#[wasm_bindgen_test]
fn the_core_rejects_bad_policies_with_its_own_messages() {
    #[rustfmt::skip]
    let cases = [
        ("10/1s 10/1s", "floating", "two limits named \"10/1s\" in one policy; give each limit its own name, as in burst=10/1s"),
        ("1/1s 2/1s 3/1s 4/1s 5/1s 6/1s 7/1s 8/1s 9/1s", "floating", "a policy holds at most 8 limits"),
        ("10/1s garbage", "floating", "limit 2 of the policy: "),
        // Nothing written reads as one limit, with a limit's own message.
        ("", "floating", "limit \"\" has no '/'; "),
        ("Burst=10/1s", "floating", "limit name \"Burst\" must be 1 to 32 characters"),
        // The policy is read first, then the algorithm.
        ("10/1s 1000/1h", "leaky", "unknown algorithm"),
        ("10/1s 10/1s", "leaky", "two limits named"),
    ];
    for (text, algorithm, expected) in cases {
        let err = RawPolicy::new(text, algorithm)
            .err()
            .unwrap_or_else(|| panic!("{text:?} with {algorithm} should be refused"));
        let message = message(err);
        assert!(
            message.contains(expected),
            "{text:?} with {algorithm}: {message:?} should contain {expected:?}"
        );
    }
}

#[wasm_bindgen_test]
fn getters_give_each_limit_as_the_core_reads_it() {
    let raw = policy("burst=10/1s 1000/1h", "sliding-log");
    assert_eq!(raw.text(), "burst=10/1s 1000/1h");
    assert_eq!(raw.algorithm(), "sliding-log");
    assert_eq!(raw.count(), 2);
    assert_eq!(
        (raw.name(0), raw.limit(0)),
        ("burst".into(), "10/1s".into())
    );
    assert_eq!(
        (raw.name(1), raw.limit(1)),
        ("1000/1h".into(), "1000/1h".into())
    );
    assert_eq!((raw.tokens(0), raw.window_ms(0)), (10.0, 1_000.0));
    assert_eq!((raw.tokens(1), raw.window_ms(1)), (1_000.0, 3_600_000.0));
    // Past the last: empty, not a trap.
    assert_eq!((raw.name(2), raw.limit(2)), (String::new(), String::new()));
    assert_eq!((raw.tokens(2), raw.window_ms(2)), (0.0, 0.0));
}

/// The core's own example (src/stores/policy.rs): 2/1s and 3/1m on the sliding log.
#[wasm_bindgen_test]
fn the_buffer_names_the_limit_that_answered_and_each_limits_numbers() {
    let mut raw = policy("2/1s 3/1m", "sliding-log");
    assert_eq!(raw.hit(0.0, 1.0), ALLOWED);
    let first = fields();
    assert_eq!(first[ANSWERED_BY], -1.0);
    assert_eq!(first[REMAINING], 1.0, "the burst has 1 left, the minute 2");
    assert_eq!(
        (
            own(&first, 0, field::REMAINING),
            own(&first, 1, field::REMAINING)
        ),
        (1.0, 2.0)
    );
    // One token of each comes back when the one spent at 0 leaves its window.
    assert_eq!(own(&first, 0, NEXT_TOKEN_MS), 1_000.0);
    assert_eq!(own(&first, 1, NEXT_TOKEN_MS), 60_000.0);

    assert_eq!(raw.hit(100.0, 1.0), ALLOWED);
    // The burst is spent: it answers, after 800 ms; the minute's limit would have let it in.
    assert_eq!(raw.hit(200.0, 1.0), DENIED);
    let burst = fields();
    assert_eq!(burst[ANSWERED_BY], 0.0);
    assert_eq!(burst[REMAINING], 0.0);
    assert_eq!(own(&burst, 0, field::RETRY_AFTER_MS), 800.0);
    assert_eq!(own(&burst, 0, field::RETRY_AFTER), 1.0);
    assert_eq!(own(&burst, 1, field::RETRY_AFTER_MS), 0.0);
    assert_eq!(
        (own(&burst, 0, OUTCOME), own(&burst, 1, OUTCOME)),
        (f64::from(DENIED), f64::from(ALLOWED))
    );
    for index in 0..2 {
        assert_eq!(own(&burst, index, field::USED), 2.0, "limit {index}");
        assert_eq!(own(&burst, index, field::T), 200.0, "limit {index}");
        assert_eq!(own(&burst, index, field::COST), 1.0, "limit {index}");
    }
    assert_eq!(
        (
            own(&burst, 0, field::LIMIT),
            own(&burst, 0, field::WINDOW_MS)
        ),
        (2.0, 1_000.0)
    );
    assert_eq!(
        (
            own(&burst, 1, field::LIMIT),
            own(&burst, 1, field::WINDOW_MS)
        ),
        (3.0, 60_000.0)
    );

    assert_eq!(raw.hit(1_000.0, 1.0), ALLOWED);
    // Three in the minute: the minute's limit answers until the first token is a minute old.
    assert_eq!(raw.hit(2_000.0, 1.0), DENIED);
    let minute = fields();
    assert_eq!(minute[ANSWERED_BY], 1.0);
    assert_eq!(own(&minute, 1, field::RETRY_AFTER_MS), 58_000.0);
    assert_eq!(own(&minute, 1, field::RETRY_AFTER), 58.0);

    // A peek spends nothing, and a cost above a limit never fits: that limit answers.
    assert_eq!(raw.peek(2_000.0, 3.0), EXCEEDS_LIMIT);
    let too_big = fields();
    assert_eq!(too_big[ANSWERED_BY], 0.0);
    assert_eq!(
        (own(&too_big, 0, OUTCOME), own(&too_big, 1, OUTCOME)),
        (f64::from(EXCEEDS_LIMIT), f64::from(DENIED))
    );
    raw.reset();
    assert_eq!(raw.peek(2_000.0, 0.0), ALLOWED);
    let empty = fields();
    assert_eq!(
        (own(&empty, 0, field::USED), own(&empty, 1, field::USED)),
        (0.0, 0.0)
    );
    assert_eq!(own(&empty, 0, NEXT_TOKEN_MS), -1.0, "nothing to come back");
}

/// What the response headers are made of: the limit ESI's fields report and the IETF
/// fields' `w` and `t`, each as the core's `PolicyDecision::nearest` and `ietf` give them.
#[wasm_bindgen_test]
fn the_buffer_holds_the_nearest_limit_and_the_ietf_fields_numbers() {
    let mut raw = policy("5/1m burst=2/1s 3/1500ms", "sliding-log");
    // `w` only for a whole number of seconds, which 1500 ms is not.
    assert_eq!(
        (
            raw.window_s(0),
            raw.window_s(1),
            raw.window_s(2),
            raw.window_s(3)
        ),
        (60.0, 1.0, -1.0, -1.0)
    );
    assert_eq!(raw.peek(0.0, 0.0), ALLOWED);
    let empty = fields();
    assert_eq!(empty[NEAREST], 1.0, "the fewest tokens: the burst's 2");
    assert_eq!(own(&empty, 0, RESET_S), -1.0, "every token free: no t");

    assert_eq!(raw.hit(0.0, 1.0), ALLOWED);
    assert_eq!(raw.hit(400.0, 1.0), ALLOWED);
    let spent = fields();
    // 5/1m has three left, the burst none, 3/1500ms one: the burst is the nearest.
    assert_eq!(spent[NEAREST], 1.0);
    // t rounds up the ms until a token comes back: 60000, 1000 and 1500 ms after 0.
    assert_eq!(
        (
            own(&spent, 0, RESET_S),
            own(&spent, 1, RESET_S),
            own(&spent, 2, RESET_S)
        ),
        (60.0, 1.0, 2.0)
    );
    // At 1600 3/1500ms holds 400 and 1600: a token back at 1900, 300 ms on, rounded up.
    assert_eq!(raw.hit(1_600.0, 1.0), ALLOWED);
    let later = fields();
    assert_eq!(own(&later, 2, field::REMAINING), 1.0);
    assert_eq!(own(&later, 2, RESET_S), 1.0);
    // Then 3/1500ms is the one with fewest left, and a refusal reports the limit that
    // answered it, the burst (a wait of 900 ms against 3/1500ms's 200).
    assert_eq!(raw.hit(1_700.0, 1.0), ALLOWED);
    assert_eq!(
        fields()[NEAREST],
        1.0,
        "the burst and 3/1500ms have none left: the first"
    );
    assert_eq!(raw.hit(1_700.0, 1.0), DENIED);
    let refused = fields();
    assert_eq!((refused[ANSWERED_BY], refused[NEAREST]), (1.0, 1.0));
}

#[wasm_bindgen_test]
fn a_copy_decides_apart_from_its_original() {
    let mut raw = policy("2/1s 3/1m", "fixed");
    assert_eq!(raw.hit(0.0, 1.0), ALLOWED);
    let mut copy = raw.copy();
    assert_eq!(copy.hit(10.0, 1.0), ALLOWED);
    assert_eq!(
        copy.hit(20.0, 1.0),
        DENIED,
        "the copy holds the original's token"
    );
    // The original has spent one token only.
    assert_eq!(raw.peek(20.0, 0.0), ALLOWED);
    assert_eq!(own(&fields(), 0, field::REMAINING), 1.0);
    assert_eq!(
        (copy.text(), copy.algorithm()),
        (raw.text(), raw.algorithm())
    );
}

#[wasm_bindgen_test]
fn respond_reserves_in_every_limit_or_none_then_settles_in_each() {
    let mut raw = policy("2/1s 5/1m", "sliding-log");
    // Reserve 2, answered with a price of 1: a token of each refunded.
    assert_eq!(raw.respond(0.0, 2.0, 1.0), ALLOWED);
    let settled = fields();
    for index in 0..2 {
        assert_eq!(own(&settled, index, field::COST), 1.0, "limit {index}");
        assert_eq!(own(&settled, index, field::USED), 1.0, "limit {index}");
        assert_eq!(own(&settled, index, field::RESERVED), 2.0, "limit {index}");
    }
    // Reserve 2 again: the burst has 1 left, so neither limit is charged, and the 429 costs
    // nothing.
    assert_eq!(raw.respond(10.0, 2.0, 1.0), DENIED);
    let refused = fields();
    assert_eq!(refused[ANSWERED_BY], 0.0);
    for index in 0..2 {
        assert_eq!(own(&refused, index, field::COST), 0.0, "limit {index}");
        assert_eq!(own(&refused, index, field::RESERVED), 0.0, "limit {index}");
    }
    assert_eq!(raw.peek(10.0, 0.0), ALLOWED);
    let after = fields();
    assert_eq!(
        (own(&after, 0, field::USED), own(&after, 1, field::USED)),
        (1.0, 1.0)
    );
}
