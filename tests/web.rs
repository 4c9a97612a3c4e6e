//! The JavaScript boundary (`src/wasm.rs`), run as WebAssembly under Node and in headless
//! Chromium: `wasm-pack test --node` and `wasm-pack test --headless --chrome`.
//!
//! Only the translation is tested here: options in, plain objects out, JS numbers (never
//! BigInt), `null` where a field does not apply, and an `Error` with the core's message for
//! bad input. The arithmetic itself is the core's, tested natively in the other files.
#![cfg(target_arch = "wasm32")]

use js_sys::{Error, Object, Reflect, JSON};
use trickle::wasm::{esi_cost, JsLimiter};
use wasm_bindgen::{JsCast, JsError, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

fn options(json: &str) -> JsValue {
    JSON::parse(json).expect("test options are valid JSON")
}

fn limiter(json: &str) -> JsLimiter {
    JsLimiter::new(options(json)).unwrap_or_else(|err| panic!("{}", message(err)))
}

/// The message of the JS `Error` a binding threw.
fn message(err: JsError) -> String {
    let value = JsValue::from(err);
    let error: &Error = value.dyn_ref().expect("bindings throw JS Error objects");
    error.message().into()
}

fn field(object: &JsValue, key: &str) -> JsValue {
    assert!(
        object.is_object(),
        "expected a plain object, got {object:?}"
    );
    Reflect::get(object, &key.into()).unwrap()
}

/// A field that must be a JS number (a BigInt would make `as_f64` return None).
fn number(object: &JsValue, key: &str) -> f64 {
    let value = field(object, key);
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{key} should be a JS number, got {value:?}"))
}

fn hit(limiter: &mut JsLimiter, cost: f64, now: f64) -> JsValue {
    limiter
        .hit(Some(cost), Some(now))
        .unwrap_or_else(|err| panic!("{}", message(err)))
}

#[wasm_bindgen_test]
fn the_readme_example_crosses_the_boundary_with_every_number() {
    let mut bucket = limiter(r#"{ "limit": "6/8s", "algorithm": "floating" }"#);
    for t in [0.0, 1_000.0, 2_000.0, 3_000.0, 9_000.0, 10_000.0] {
        assert_eq!(field(&hit(&mut bucket, 1.0, t), "allowed"), JsValue::TRUE);
    }

    let allowed = hit(&mut bucket, 1.0, 11_000.0);
    assert_eq!(field(&allowed, "allowed"), JsValue::TRUE);
    assert_eq!(number(&allowed, "status"), 200.0);
    assert_eq!(field(&allowed, "outcome"), "allowed");
    assert_eq!(number(&allowed, "previous"), 4.0);
    assert_eq!(number(&allowed, "current"), 3.0);
    assert_eq!(number(&allowed, "overlap"), 0.625);
    assert_eq!(number(&allowed, "elapsedMs"), 3_000.0);
    assert_eq!(number(&allowed, "used"), 5.5);
    assert_eq!(number(&allowed, "limit"), 6.0);
    assert_eq!(number(&allowed, "windowMs"), 8_000.0);
    assert_eq!(number(&allowed, "remaining"), 0.0);
    assert_eq!(number(&allowed, "cost"), 1.0);
    assert_eq!(number(&allowed, "t"), 11_000.0);
    assert!(field(&allowed, "retryAfterMs").is_null());
    assert!(field(&allowed, "retryAfter").is_null());

    let denied = hit(&mut bucket, 1.0, 11_000.0);
    assert_eq!(field(&denied, "allowed"), JsValue::FALSE);
    assert_eq!(number(&denied, "status"), 429.0);
    assert_eq!(field(&denied, "outcome"), "denied");
    assert_eq!(number(&denied, "retryAfterMs"), 1_000.0);
    assert_eq!(number(&denied, "retryAfter"), 1.0);
    assert_eq!(number(&denied, "used"), 5.5, "a denial spends nothing");
}

#[wasm_bindgen_test]
fn a_decision_has_exactly_the_documented_camel_case_fields() {
    let mut bucket = limiter(r#"{ "limit": "6/8s" }"#);
    let keys: Vec<String> = Object::keys(hit(&mut bucket, 1.0, 0.0).unchecked_ref::<Object>())
        .iter()
        .map(|key| key.as_string().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "allowed",
            "status",
            "outcome",
            "cost",
            "used",
            "limit",
            "windowMs",
            "remaining",
            "retryAfterMs",
            "retryAfter",
            "t",
            "previous",
            "current",
            "overlap",
            "elapsedMs"
        ]
    );
}

#[wasm_bindgen_test]
fn counters_are_null_for_algorithms_without_them() {
    for algorithm in ["sliding-log", "fixed", "token-bucket"] {
        let mut bucket = limiter(&format!(
            r#"{{ "limit": "6/8s", "algorithm": "{algorithm}" }}"#
        ));
        assert_eq!(bucket.algorithm(), algorithm);
        let decision = hit(&mut bucket, 2.0, 0.0);
        assert_eq!(number(&decision, "used"), 2.0, "{algorithm}");
        for key in ["previous", "current", "overlap", "elapsedMs"] {
            assert!(field(&decision, key).is_null(), "{algorithm}: {key}");
        }
    }
}

#[wasm_bindgen_test]
fn a_cost_above_the_limit_is_refused_without_a_retry() {
    let mut bucket = limiter(r#"{ "limit": "6/8s" }"#);
    let decision = hit(&mut bucket, 7.0, 0.0);
    assert_eq!(field(&decision, "outcome"), "exceeds-limit");
    assert_eq!(number(&decision, "status"), 429.0);
    assert!(field(&decision, "retryAfterMs").is_null());
    assert!(field(&decision, "retryAfter").is_null());
}

#[wasm_bindgen_test]
fn peek_spends_nothing_and_record_charges_past_the_limit() {
    let mut bucket = limiter(r#"{ "limit": "6/8s" }"#);
    let peeked = bucket.peek(Some(6.0), Some(0.0)).unwrap();
    assert_eq!(field(&peeked, "allowed"), JsValue::TRUE);
    assert_eq!(number(&peeked, "used"), 0.0, "nothing was spent");
    let peeked = bucket.peek(Some(7.0), Some(0.0)).unwrap();
    assert_eq!(field(&peeked, "outcome"), "exceeds-limit");

    let recorded = bucket.record(8.0, Some(0.0)).unwrap();
    assert_eq!(number(&recorded, "used"), 8.0);
    assert_eq!(number(&recorded, "remaining"), 0.0);

    bucket.reset();
    assert_eq!(
        number(&bucket.peek(Some(0.0), Some(0.0)).unwrap(), "used"),
        0.0
    );
}

#[wasm_bindgen_test]
fn cost_and_time_default_to_one_token_now() {
    let mut bucket = limiter(r#"{ "limit": "6/8s" }"#);
    let before = js_sys::global()
        .dyn_into::<Object>()
        .ok()
        .and_then(|global| Reflect::get(&global, &"performance".into()).ok())
        .and_then(|performance| {
            let now: js_sys::Function = Reflect::get(&performance, &"now".into())
                .ok()?
                .dyn_into()
                .ok()?;
            now.call0(&performance).ok()?.as_f64()
        })
        .expect("performance.now() exists in Node and in browsers");
    let decision = bucket.hit(None, None).unwrap();
    assert_eq!(number(&decision, "cost"), 1.0);
    let t = number(&decision, "t");
    assert!(
        t >= before.floor() && t <= before + 60_000.0,
        "t = {t}, performance.now() was {before}"
    );
}

#[wasm_bindgen_test]
fn fractions_of_a_millisecond_are_dropped() {
    let mut bucket = limiter(r#"{ "limit": "6/8s" }"#);
    assert_eq!(number(&hit(&mut bucket, 1.0, 1234.9), "t"), 1234.0);
}

#[wasm_bindgen_test]
fn getters_describe_the_limit() {
    let bucket = limiter(r#"{ "limit": "150/900s", "algorithm": "token-bucket" }"#);
    assert_eq!(bucket.limit(), "150/15m");
    assert_eq!(bucket.tokens(), 150.0);
    assert_eq!(bucket.window_ms(), 900_000.0);
    assert_eq!(bucket.algorithm(), "token-bucket");
}

#[wasm_bindgen_test]
fn huge_limits_arrive_as_numbers_not_bigints() {
    let mut bucket = limiter(r#"{ "limit": "18446744073709551615/1ms" }"#);
    assert_eq!(bucket.tokens(), u64::MAX as f64);
    let decision = hit(&mut bucket, 9_007_199_254_740_991.0, 0.0);
    assert_eq!(number(&decision, "limit"), u64::MAX as f64);
    assert_eq!(number(&decision, "cost"), 9_007_199_254_740_991.0);
}

/// One row per bad input: the options, then a piece of the message the `Error` must carry.
#[rustfmt::skip]
const BAD_OPTIONS: &[(&str, &str)] = &[
    (r#"{ "limit": "abc" }"#,                          r#"limit "abc" has no '/'"#),
    (r#"{ "limit": "6/8x" }"#,                         "unit must be ms, s, m or h"),
    (r#"{ "limit": "0/8s" }"#,                         "at least 1 token"),
    (r#"{ "limit": "6/8s", "algorithm": "leaky" }"#,   r#"unknown algorithm "leaky"; use floating, sliding-log, fixed or token-bucket"#),
    (r#"{ "limit": "6/8s", "limt": 1 }"#,              r#"unknown option "limt"; the options are limit and algorithm"#),
    (r#"{ "algorithm": "floating" }"#,                 r#"limit is missing; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"{ "limit": 6 }"#,                              "limit must be a string, got number"),
    (r#"{ "limit": "6/8s", "algorithm": null }"#,      "algorithm must be a string, got object"),
    (r#"null"#,                                        r#"options must be an object; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#""6/8s""#,                                      "options must be an object"),
];

#[wasm_bindgen_test]
fn bad_options_throw_an_error_that_says_what_is_allowed() {
    for (json, expected) in BAD_OPTIONS {
        let err = match JsLimiter::new(options(json)) {
            Ok(_) => panic!("{json} was accepted"),
            Err(err) => message(err),
        };
        assert!(err.contains(expected), "{json}: {err:?} lacks {expected:?}");
    }
}

#[wasm_bindgen_test]
fn bad_costs_and_times_throw() {
    let mut bucket = limiter(r#"{ "limit": "6/8s" }"#);
    for cost in [1.5, -1.0, f64::NAN, f64::INFINITY, 9_007_199_254_740_992.0] {
        let err = message(bucket.hit(Some(cost), Some(0.0)).unwrap_err());
        assert!(
            err.starts_with("cost must be a whole number from 0 to 9007199254740991, got"),
            "{cost}: {err}"
        );
    }
    for now in [-1.0, f64::NAN, f64::NEG_INFINITY] {
        let err = message(bucket.peek(Some(1.0), Some(now)).unwrap_err());
        assert!(
            err.starts_with("now must be a time in milliseconds"),
            "{now}: {err}"
        );
    }
    let err = message(bucket.record(-2.0, Some(0.0)).unwrap_err());
    assert!(err.contains("got -2"), "{err}");
    assert_eq!(
        number(&bucket.peek(Some(0.0), Some(0.0)).unwrap(), "used"),
        0.0,
        "nothing was spent by the refused calls"
    );
}

#[wasm_bindgen_test]
fn esi_costs_by_status() {
    #[rustfmt::skip]
    let table = [(200.0, 2.0), (204.0, 2.0), (304.0, 1.0), (404.0, 5.0), (420.0, 5.0), (429.0, 0.0), (500.0, 0.0), (503.0, 0.0)];
    for (status, cost) in table {
        assert_eq!(esi_cost(status).map_err(message), Ok(cost), "{status}");
    }
    #[rustfmt::skip]
    let refused = [
        (101.0,    "status 101 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
        (600.0,    "status 600 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
        (70_000.0, "status 70000 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
        (200.5,    "status must be a whole number from 0 to 9007199254740991, got 200.5"),
        (-200.0,   "status must be a whole number from 0 to 9007199254740991, got -200"),
    ];
    for (status, expected) in refused {
        assert_eq!(esi_cost(status).map_err(message), Err(expected.to_string()));
    }
}
