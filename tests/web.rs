//! The JavaScript boundary (`src/wasm.rs`), run as WebAssembly under Node and in headless
//! Chromium: `wasm-pack test --node` and `wasm-pack test --headless --chrome`.
//!
//! Only the translation is tested here: options in, plain objects out, JS numbers (never
//! BigInt), `null` where a field does not apply, and an `Error` with the core's message for
//! bad input. The arithmetic itself is the core's, tested natively in the other files.
#![cfg(target_arch = "wasm32")]

use js_sys::{Error, Function, Object, Reflect, JSON};
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
        .hit(Some(cost.into()), Some(now.into()))
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
    let peeked = bucket.peek(Some(6.into()), Some(0.into())).unwrap();
    assert_eq!(field(&peeked, "allowed"), JsValue::TRUE);
    assert_eq!(number(&peeked, "used"), 0.0, "nothing was spent");
    let peeked = bucket.peek(Some(7.into()), Some(0.into())).unwrap();
    assert_eq!(field(&peeked, "outcome"), "exceeds-limit");

    let recorded = bucket.record(8.into(), Some(0.into())).unwrap();
    assert_eq!(number(&recorded, "used"), 8.0);
    assert_eq!(number(&recorded, "remaining"), 0.0);

    bucket.reset();
    assert_eq!(
        number(
            &bucket.peek(Some(0.into()), Some(0.into())).unwrap(),
            "used"
        ),
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

/// A `6/8s` floating limiter as JavaScript holds it: the object of wasm-bindgen's glue class.
fn js_limiter() -> JsValue {
    limiter(r#"{ "limit": "6/8s" }"#).into()
}

/// Runs `call`, JavaScript such as `limiter.hit(2n)`, through wasm-bindgen's generated glue
/// as a page would, with `Limiter` the class and `limiter` the given one in scope. Returns
/// what the call gave back, or what it threw.
fn run_js(call: &str, limiter: &JsValue) -> Result<JsValue, JsValue> {
    let class = Reflect::get(limiter, &"constructor".into()).unwrap();
    Function::new_with_args("Limiter, limiter", &format!("return ({call});")).call2(
        &JsValue::NULL,
        &class,
        limiter,
    )
}

/// The message of what `call` threw, which must be a plain `Error`: a wasm panic would be a
/// `RuntimeError: unreachable`, and wasm-bindgen's own coercions throw `TypeError`s.
fn thrown(call: &str, limiter: &JsValue) -> String {
    let thrown = match run_js(call, limiter) {
        Ok(value) => panic!("{call} was accepted and gave {value:?}"),
        Err(thrown) => thrown,
    };
    let error: &Error = thrown
        .dyn_ref()
        .unwrap_or_else(|| panic!("{call} threw {thrown:?}, not an Error"));
    assert_eq!(error.name(), "Error", "{call}: {:?}", error.message());
    error.message().into()
}

/// Tokens in use, which a refused call must leave at 0; and the limiter must still answer.
fn still_works(limiter: &JsValue, after: &str) {
    let used = run_js("limiter.peek(0, 0).used", limiter)
        .unwrap_or_else(|err| panic!("after {after}, peek threw {err:?}"));
    assert_eq!(used.as_f64(), Some(0.0), "after {after}, nothing was spent");
}

/// `new Limiter(options)`, one row per bad input: the call, and the exact message of the
/// `Error` it throws. Each says what was wrong and what is allowed.
#[rustfmt::skip]
const BAD_OPTIONS: &[(&str, &str)] = &[
    // Not an options object.
    (r#"new Limiter()"#,                                   r#"Limiter options must be an object, got undefined; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter(null)"#,                               r#"Limiter options must be an object, got null; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter(6)"#,                                  r#"Limiter options must be an object, got 6; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter("6/8s")"#,                             r#"Limiter options must be an object, got the string "6/8s"; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter(["6/8s"])"#,                           r#"Limiter options must be an object, got an array; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter(6n)"#,                                 r#"Limiter options must be an object, got a bigint; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter({})"#,                                 r#"Limiter options: limit is missing; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter({ limit: undefined })"#,               r#"Limiter options: limit is missing; pass { limit: "6/8s", algorithm: "floating" }"#),
    // The limit, not a string.
    (r#"new Limiter({ limit: 6 })"#,                       r#"Limiter options: limit must be a string, got 6; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter({ limit: NaN })"#,                     r#"Limiter options: limit must be a string, got NaN; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter({ limit: null })"#,                    r#"Limiter options: limit must be a string, got null; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter({ limit: ["6/8s"] })"#,                r#"Limiter options: limit must be a string, got an array; pass { limit: "6/8s", algorithm: "floating" }"#),
    // The limit: zero, negative, fractional, NaN, Infinity, empty.
    (r#"new Limiter({ limit: "0/8s" })"#,                  r#"a limit needs at least 1 token per window, got 0"#),
    (r#"new Limiter({ limit: "6/0s" })"#,                  r#"a window must be at least 1 ms long, got 0"#),
    (r#"new Limiter({ limit: "-6/8s" })"#,                 r#"limit "-6/8s": tokens "-6" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "6/-8s" })"#,                 r#"limit "6/-8s": window "-8s" is not a whole number followed by a unit; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "1.5/8s" })"#,                r#"limit "1.5/8s": tokens "1.5" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "NaN/8s" })"#,                r#"limit "NaN/8s": tokens "NaN" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "6/NaNs" })"#,                r#"limit "6/NaNs": window "NaNs" is not a whole number followed by a unit; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "Infinity/8s" })"#,           r#"limit "Infinity/8s": tokens "Infinity" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "" })"#,                      r#"limit "" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    // Huge: beyond u64 (limits up to u64::MAX are allowed, beyond 2^53 included).
    (r#"new Limiter({ limit: "18446744073709551616/1s" })"#,  r#"limit "18446744073709551616/1s": tokens "18446744073709551616" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "6/18446744073709551616ms" })"#, r#"limit "6/18446744073709551616ms": the window is longer than 18446744073709551615 ms, the longest allowed"#),
    (r#"new Limiter({ limit: "6/18446744073709551615h" })"#,  r#"limit "6/18446744073709551615h": the window is longer than 18446744073709551615 ms, the longest allowed"#),
    // Wrong unit, missing parts.
    (r#"new Limiter({ limit: "6/8x" })"#,                  r#"limit "6/8x": unknown unit "x"; the unit must be ms, s, m or h, as in 6/8s"#),
    (r#"new Limiter({ limit: "6/8S" })"#,                  r#"limit "6/8S": unknown unit "S"; the unit must be ms, s, m or h, as in 6/8s"#),
    (r#"new Limiter({ limit: "6/8" })"#,                   r#"limit "6/8": unknown unit ""; the unit must be ms, s, m or h, as in 6/8s"#),
    (r#"new Limiter({ limit: "6/" })"#,                    r#"limit "6/": window "" is not a whole number followed by a unit; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "/8s" })"#,                   r#"limit "/8s": tokens "" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "6" })"#,                     r#"limit "6" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    // Whitespace inside (around the limit it is trimmed: see the accepted table).
    (r#"new Limiter({ limit: "6 / 8s" })"#,                r#"limit "6 / 8s": tokens "6 " is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "6/8 s" })"#,                 r#"limit "6/8 s": unknown unit " s"; the unit must be ms, s, m or h, as in 6/8s"#),
    (r#"new Limiter({ limit: "\t" })"#,                    r#"limit "\t" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    // Non-ASCII: full-width and Arabic-Indic digits are not digits here; nor is 秒 a unit.
    (r#"new Limiter({ limit: "６/8s" })"#,                 r#"limit "６/8s": tokens "６" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "6/٨s" })"#,                  r#"limit "6/٨s": window "٨s" is not a whole number followed by a unit; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    (r#"new Limiter({ limit: "6/8秒" })"#,                 r#"limit "6/8秒": unknown unit "秒"; the unit must be ms, s, m or h, as in 6/8s"#),
    // Markup is quoted back as text.
    (r#"new Limiter({ limit: "<img src=x onerror=alert(1)>" })"#, r#"limit "<img src=x onerror=alert(1)>" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    // The algorithm: unknown, empty, another case, whitespace, non-ASCII, markup, not a string.
    (r#"new Limiter({ limit: "6/8s", algorithm: "leaky" })"#,     r#"unknown algorithm "leaky"; use floating, sliding-log, fixed or token-bucket"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: "" })"#,          r#"unknown algorithm ""; use floating, sliding-log, fixed or token-bucket"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: "Floating" })"#,  r#"unknown algorithm "Floating"; use floating, sliding-log, fixed or token-bucket"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: " fixed" })"#,    r#"unknown algorithm " fixed"; use floating, sliding-log, fixed or token-bucket"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: "ﬁxed" })"#,      r#"unknown algorithm "ﬁxed"; use floating, sliding-log, fixed or token-bucket"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: "<img src=x onerror=alert(1)>" })"#, r#"unknown algorithm "<img src=x onerror=alert(1)>"; use floating, sliding-log, fixed or token-bucket"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: 1 })"#,           r#"Limiter options: algorithm must be a string, got 1; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: null })"#,        r#"Limiter options: algorithm must be a string, got null; pass { limit: "6/8s", algorithm: "floating" }"#),
    (r#"new Limiter({ limit: "6/8s", algorithm: true })"#,        r#"Limiter options: algorithm must be a string, got a boolean; pass { limit: "6/8s", algorithm: "floating" }"#),
    // Unknown keys: a typo, another case, an option that belongs to the element.
    (r#"new Limiter({ limit: "6/8s", limt: 1 })"#,                r#"Limiter options: unknown option "limt"; the options are limit and algorithm"#),
    (r#"new Limiter({ Limit: "6/8s" })"#,                         r#"Limiter options: unknown option "Limit"; the options are limit and algorithm"#),
    (r#"new Limiter({ limit: "6/8s", cost: 2 })"#,                r#"Limiter options: unknown option "cost"; the options are limit and algorithm"#),
];

#[wasm_bindgen_test]
fn bad_options_throw_an_error_that_says_what_is_allowed() {
    let limiter = js_limiter();
    for (call, expected) in BAD_OPTIONS {
        assert_eq!(thrown(call, &limiter), *expected, "{call}");
    }
}

/// A cost, as the first argument of `hit`, `peek` and `record`: the value, and the exact
/// message. Left out (`undefined` or `null`) it is 1 for `hit` and `peek`; see below.
#[rustfmt::skip]
const BAD_COSTS: &[(&str, &str)] = &[
    ("-1",                             "cost must be a whole number from 0 to 9007199254740991, got -1"),
    ("1.5",                            "cost must be a whole number from 0 to 9007199254740991, got 1.5"),
    ("NaN",                            "cost must be a whole number from 0 to 9007199254740991, got NaN"),
    ("Infinity",                       "cost must be a whole number from 0 to 9007199254740991, got Infinity"),
    ("-Infinity",                      "cost must be a whole number from 0 to 9007199254740991, got -Infinity"),
    ("2 ** 53",                        "cost must be a whole number from 0 to 9007199254740991, got 9007199254740992"),
    ("2 ** 64",                        "cost must be a whole number from 0 to 9007199254740991, got 18446744073709552000"),
    (r#""2""#,                         r#"cost must be a whole number from 0 to 9007199254740991, got the string "2""#),
    (r#""""#,                          r#"cost must be a whole number from 0 to 9007199254740991, got the string """#),
    (r#""<img src=x onerror=alert(1)>""#, r#"cost must be a whole number from 0 to 9007199254740991, got the string "<img src=x onerror=alert(1)>""#),
    ("2n",                             "cost must be a whole number from 0 to 9007199254740991, got a bigint"),
    ("true",                           "cost must be a whole number from 0 to 9007199254740991, got a boolean"),
    ("{}",                             "cost must be a whole number from 0 to 9007199254740991, got an object"),
    ("[1]",                            "cost must be a whole number from 0 to 9007199254740991, got an array"),
    ("Symbol()",                       "cost must be a whole number from 0 to 9007199254740991, got a symbol"),
];

/// A time, as the second argument: the value, and the exact message. Left out it is
/// `performance.now()`; fractions of a millisecond are dropped (see below).
#[rustfmt::skip]
const BAD_TIMES: &[(&str, &str)] = &[
    ("-1",                             "now must be a time in milliseconds from 0 to 9007199254740991, got -1"),
    ("-0.5",                           "now must be a time in milliseconds from 0 to 9007199254740991, got -0.5"),
    ("NaN",                            "now must be a time in milliseconds from 0 to 9007199254740991, got NaN"),
    ("Infinity",                       "now must be a time in milliseconds from 0 to 9007199254740991, got Infinity"),
    ("-Infinity",                      "now must be a time in milliseconds from 0 to 9007199254740991, got -Infinity"),
    ("2 ** 53",                        "now must be a time in milliseconds from 0 to 9007199254740991, got 9007199254740992"),
    ("2 ** 64",                        "now must be a time in milliseconds from 0 to 9007199254740991, got 18446744073709552000"),
    (r#""2""#,                         r#"now must be a time in milliseconds from 0 to 9007199254740991, got the string "2""#),
    (r#""<img src=x onerror=alert(1)>""#, r#"now must be a time in milliseconds from 0 to 9007199254740991, got the string "<img src=x onerror=alert(1)>""#),
    ("2n",                             "now must be a time in milliseconds from 0 to 9007199254740991, got a bigint"),
    ("new Date(0)",                    "now must be a time in milliseconds from 0 to 9007199254740991, got an object"),
    ("[0]",                            "now must be a time in milliseconds from 0 to 9007199254740991, got an array"),
];

#[wasm_bindgen_test]
fn bad_costs_and_times_throw_and_the_limiter_still_works() {
    let limiter = js_limiter();
    for method in ["hit", "peek", "record"] {
        for (cost, expected) in BAD_COSTS {
            let call = format!("limiter.{method}({cost}, 0)");
            assert_eq!(thrown(&call, &limiter), *expected, "{call}");
            still_works(&limiter, &call);
        }
        for (now, expected) in BAD_TIMES {
            let call = format!("limiter.{method}(1, {now})");
            assert_eq!(thrown(&call, &limiter), *expected, "{call}");
            still_works(&limiter, &call);
        }
    }
    // `record` charges what was spent, so it needs the cost.
    #[rustfmt::skip]
    let record = [
        ("limiter.record()",          "cost must be a whole number from 0 to 9007199254740991, got undefined"),
        ("limiter.record(null, 0)",   "cost must be a whole number from 0 to 9007199254740991, got null"),
    ];
    for (call, expected) in record {
        assert_eq!(thrown(call, &limiter), expected, "{call}");
    }
    let allowed = run_js("limiter.hit(6, 0).allowed", &limiter).unwrap();
    assert_eq!(
        allowed,
        JsValue::TRUE,
        "the whole limit is still free after every refusal"
    );
}

/// Inputs at the edge that are accepted, each with what it gives: `(call, expected result)`.
/// The call runs on a fresh `6/8s` floating limiter.
#[rustfmt::skip]
const ACCEPTED: &[(&str, &str)] = &[
    // Whitespace around a limit is trimmed; a limit beyond 2^53 tokens is exact in Rust and
    // its `tokens` is the nearest JS number.
    (r#"new Limiter({ limit: " 6/8s\n" }).limit"#,                 r#""6/8s""#),
    (r#"new Limiter({ limit: "9007199254740993/1s" }).limit"#,     r#""9007199254740993/1s""#),
    (r#"new Limiter({ limit: "9007199254740993/1s" }).tokens"#,    "9007199254740992"),
    (r#"new Limiter({ limit: "6/8s", algorithm: undefined }).algorithm"#, r#""floating""#),
    // A cost left out is 1, except for `record`; a time left out is the page's clock.
    ("limiter.hit(undefined, 0).cost",     "1"),
    ("limiter.hit(null, 0).cost",          "1"),
    ("limiter.peek(null, 0).cost",         "1"),
    ("limiter.hit(1, null).t >= 0",        "true"),
    ("limiter.hit(-0, 0).cost",            "0"),
    // Fractions of a millisecond are dropped; the largest whole JS numbers are fine.
    ("limiter.hit(1, 1.5).t",              "1"),
    ("limiter.hit(1, 2 ** 53 - 1).t",      "9007199254740991"),
    ("limiter.hit(2 ** 53 - 1, 0).outcome", r#""exceeds-limit""#),
    ("limiter.record(2 ** 53 - 1, 0).used", "9007199254740991"),
];

#[wasm_bindgen_test]
fn inputs_at_the_edge_that_are_accepted() {
    for (call, expected) in ACCEPTED {
        let result =
            run_js(call, &js_limiter()).unwrap_or_else(|err| panic!("{call} threw {err:?}"));
        let json: String = JSON::stringify(&result).unwrap().into();
        assert_eq!(json, *expected, "{call}");
    }
}

#[wasm_bindgen_test]
fn esi_costs_by_status() {
    #[rustfmt::skip]
    let table = [(200.0, 2.0), (204.0, 2.0), (304.0, 1.0), (404.0, 5.0), (420.0, 5.0), (429.0, 0.0), (500.0, 0.0), (503.0, 0.0)];
    for (status, cost) in table {
        assert_eq!(
            esi_cost(status.into()).map_err(message),
            Ok(cost),
            "{status}"
        );
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
        assert_eq!(
            esi_cost(status.into()).map_err(message),
            Err(expected.to_string())
        );
    }
}
