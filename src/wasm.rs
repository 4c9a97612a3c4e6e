//! The JavaScript face of the core, for the `<rate-limit-demo>` element and any page script.
//!
//! The core knows nothing of JavaScript; this module only translates. Options come in as one
//! object, decisions go out as plain objects with camelCase names, and every number that
//! crosses is a JS number (`f64`), never a BigInt. Anything the core would refuse becomes a JS
//! `Error` carrying the core's own message, which says what was wrong and what is allowed.
//!
//! ```js
//! import init, { Limiter } from "./pkg/trickle.js";
//! await init();
//! const limiter = new Limiter({ limit: "6/8s", algorithm: "floating" });
//! const decision = limiter.hit(1);        // cost 1, now = performance.now()
//! decision.allowed;                       // true
//! limiter.hit(1, 2500).used;              // an explicit time, in ms
//! ```

use std::fmt::Display;

use js_sys::{Array, Number, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::{esi, Algorithm, Decision, Limit, Limiter, Outcome};

/// The largest integer a JS number holds exactly: the ceiling for costs and times.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;
const MAX_SAFE_INTEGER_TEXT: &str = "9007199254740991";

/// How to build a limiter, for error messages.
const OPTIONS_FORM: &str = r#"pass { limit: "6/8s", algorithm: "floating" }"#;

// Talc instead of Rust's default dlmalloc: a drop-in allocator for single-threaded wasm that
// makes the module 2.2 kB smaller gzipped (24.9 → 22.7 kB, measured with `make size`).
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[wasm_bindgen]
extern "C" {
    /// The page's clock (or Node's): milliseconds since the page started.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// Turns any error of the core into a JS `Error` with its `Display` text.
fn into_error<E: Display>(err: E) -> JsError {
    JsError::new(&err.to_string())
}

/// A number as JS writes it (`1.5`, `NaN`, `-Infinity`). Formatting floats in Rust would
/// add some 15 KB of float-printing code to the wasm for error messages alone.
fn js_number(value: f64) -> String {
    Number::from(value)
        .to_string_with_radix(10)
        .map(String::from)
        .unwrap_or_default()
}

/// What a caller passed, for error messages: `1.5`, `NaN`, `the string "2"`, `an array`.
/// Strings are quoted as Rust quotes them, so markup or control characters stay visible text.
fn describe(value: &JsValue) -> String {
    if let Some(number) = value.as_f64() {
        return js_number(number);
    }
    if let Some(text) = value.as_string() {
        return format!("the string {text:?}");
    }
    if value.is_null() {
        return "null".into();
    }
    if value.is_undefined() {
        return "undefined".into();
    }
    if Array::is_array(value) {
        return "an array".into();
    }
    let kind = value.js_typeof().as_string().unwrap_or_default();
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}

/// One key of the options object: absent (`undefined`) or a string.
fn string_option(options: &JsValue, key: &str) -> Result<Option<String>, JsError> {
    let value = Reflect::get(options, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
    if value.is_undefined() {
        return Ok(None);
    }
    value.as_string().map(Some).ok_or_else(|| {
        JsError::new(&format!(
            "Limiter options: {key} must be a string, got {}; {OPTIONS_FORM}",
            describe(&value)
        ))
    })
}

/// Reads `{ limit, algorithm }`, refusing anything else so that a typo is not ignored.
fn limiter_from_options(options: &JsValue) -> Result<Limiter, JsError> {
    // An array is an object too, but `["6/8s"]` is surely a mistake.
    if !options.is_object() || Array::is_array(options) {
        return Err(JsError::new(&format!(
            "Limiter options must be an object, got {}; {OPTIONS_FORM}",
            describe(options)
        )));
    }
    for key in Object::keys(options.unchecked_ref::<Object>()).iter() {
        let key = key.as_string().unwrap_or_default();
        if key != "limit" && key != "algorithm" {
            return Err(JsError::new(&format!(
                "Limiter options: unknown option {key:?}; the options are limit and algorithm"
            )));
        }
    }
    let limit: Limit = string_option(options, "limit")?
        .ok_or_else(|| {
            JsError::new(&format!(
                "Limiter options: limit is missing; {OPTIONS_FORM}"
            ))
        })?
        .parse()
        .map_err(into_error)?;
    let algorithm = match string_option(options, "algorithm")? {
        Some(name) => name.parse().map_err(into_error)?,
        None => Algorithm::default(),
    };
    Ok(Limiter::with_algorithm(algorithm, limit))
}

/// A decision as JS sees it: a plain object with the fields in the table below.
/// Fields that do not apply are `null`, never missing.
///
/// The object is built by one call into JS ([`make_decision`]) with every field a number, so
/// a decision crosses the boundary once: building it from Rust, a field at a time, took some
/// thirty crossings and a string decode per key, 500 times the cost of the decision itself.
fn to_js(decision: &Decision) -> JsValue {
    let counters = decision.counters;
    let (outcome, retry_after_ms, retry_after) = match decision.outcome {
        Outcome::Allowed => (OUTCOME_ALLOWED, 0.0, 0.0),
        Outcome::Denied { retry_after_ms } => (
            OUTCOME_DENIED,
            retry_after_ms as f64,
            decision.retry_after_s().unwrap_or_default() as f64,
        ),
        Outcome::ExceedsLimit => (OUTCOME_EXCEEDS_LIMIT, 0.0, 0.0),
    };
    make_decision(
        outcome,
        decision.cost as f64,
        decision.used.as_f64(),
        decision.limit.tokens() as f64,
        decision.limit.window_ms() as f64,
        decision.remaining() as f64,
        retry_after_ms,
        retry_after,
        decision.at_ms as f64,
        counters.is_some(),
        counters.map_or(0.0, |c| c.previous as f64),
        counters.map_or(0.0, |c| c.current as f64),
        counters.map_or(0.0, |c| c.overlap()),
        counters.map_or(0.0, |c| c.elapsed_ms as f64),
    )
}

/// `outcome` codes for [`make_decision`].
const OUTCOME_ALLOWED: u8 = 0;
const OUTCOME_DENIED: u8 = 1;
const OUTCOME_EXCEEDS_LIMIT: u8 = 2;

// The hot path's two helpers in JS. The decision object's one constructor is here so that V8
// gives every decision the same shape and builds it inline; its field comments are the JS
// API's documentation.
#[wasm_bindgen(inline_js = r#"
const OUTCOMES = ["allowed", "denied", "exceeds-limit"];

// A JS number as it is, and NaN for anything else: what `JsValue::as_f64` answers, but
// returned directly rather than written to wasm memory, which took a third of a hit's time.
export function numberOrNaN(value) {
  return typeof value === "number" ? value : NaN;
}

export function makeDecision(outcome, cost, used, limit, windowMs, remaining,
                             retryAfterMs, retryAfter, t, counted, previous, current,
                             overlap, elapsedMs) {
  const denied = outcome === 1;
  return {
    // True when the request fits; then 200, otherwise 429.
    allowed: outcome === 0,
    status: outcome === 0 ? 200 : 429,
    // "exceeds-limit" is a cost above the whole limit: no wait helps.
    outcome: OUTCOMES[outcome],
    cost,
    // Tokens in use after the decision; fractional for the floating window and bucket.
    used,
    // N and W.
    limit,
    windowMs,
    // Whole tokens left.
    remaining,
    // The exact wait before the same request fits, and the Retry-After header (whole
    // seconds, rounded up); null unless denied.
    retryAfterMs: denied ? retryAfterMs : null,
    retryAfter: denied ? retryAfter : null,
    // When the decision was made, in ms.
    t,
    // The floating window's counters: tokens spent in the previous and the current fixed
    // window, the share of the previous one still counted (1 down to 1/W), and how far into
    // the current window `t` is. Null for the other algorithms.
    previous: counted ? previous : null,
    current: counted ? current : null,
    overlap: counted ? overlap : null,
    elapsedMs: counted ? elapsedMs : null,
  };
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = numberOrNaN)]
    fn number_or_nan(value: &JsValue) -> f64;

    #[wasm_bindgen(js_name = makeDecision)]
    #[allow(clippy::too_many_arguments)]
    fn make_decision(
        outcome: u8,
        cost: f64,
        used: f64,
        limit: f64,
        window_ms: f64,
        remaining: f64,
        retry_after_ms: f64,
        retry_after: f64,
        t: f64,
        counted: bool,
        previous: f64,
        current: f64,
        overlap: f64,
        elapsed_ms: f64,
    ) -> JsValue;
}

/// A whole, non-negative JS number below 2^53, for costs and statuses.
///
/// Arguments come in as `JsValue` rather than `f64`, which wasm-bindgen would coerce as JS's
/// `Number()` does: `"2"` would pass as 2, a required `null` as 0, and a BigInt would throw a
/// `TypeError` that says nothing of what is allowed.
fn whole(what: &str, value: &JsValue) -> Result<u64, JsError> {
    match number_or_nan(value) {
        // NaN (and anything not a number) and the infinities fall outside the range.
        number if (0.0..=MAX_SAFE_INTEGER).contains(&number) && number.fract() == 0.0 => {
            Ok(number as u64)
        }
        _ => Err(JsError::new(&format!(
            "{what} must be a whole number from 0 to {MAX_SAFE_INTEGER_TEXT}, got {}",
            describe(value)
        ))),
    }
}

/// A cost, 1 (one request) when left out: the glue passes `undefined` and `null` as `None`.
fn cost_or_one(cost: Option<JsValue>) -> Result<u64, JsError> {
    cost.map_or(Ok(1), |cost| whole("cost", &cost))
}

/// The caller's time, or the page's clock when none was given. Fractions of a millisecond
/// (as `performance.now()` gives) are dropped: the core counts whole milliseconds.
fn time(now: Option<JsValue>) -> Result<u64, JsError> {
    let now = now.unwrap_or_else(|| performance_now().into());
    match number_or_nan(&now) {
        // NaN (and anything not a number) falls outside the range.
        ms if (0.0..=MAX_SAFE_INTEGER).contains(&ms) => Ok(ms.floor() as u64),
        _ => Err(JsError::new(&format!(
            "now must be a time in milliseconds from 0 to {MAX_SAFE_INTEGER_TEXT}, got {}",
            describe(&now)
        ))),
    }
}

/// One rate-limited bucket, running one of the four algorithms.
///
/// Every method takes the cost first and the time second, both optional: cost 1 and
/// `performance.now()` when left out.
#[wasm_bindgen(js_name = Limiter)]
pub struct JsLimiter {
    inner: Limiter,
}

#[wasm_bindgen(js_class = Limiter)]
impl JsLimiter {
    /// `new Limiter({ limit: "6/8s", algorithm: "floating" })`. `algorithm` may be left out
    /// (floating); it is one of `floating`, `sliding-log`, `fixed`, `token-bucket`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsLimiter, JsError> {
        Ok(JsLimiter {
            inner: limiter_from_options(&options)?,
        })
    }

    /// Spends `cost` tokens if they fit, and says what happened.
    pub fn hit(
        &mut self,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] cost: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] now: Option<JsValue>,
    ) -> Result<JsValue, JsError> {
        let cost = cost_or_one(cost)?;
        Ok(to_js(&self.inner.hit(time(now)?, cost)))
    }

    /// What `hit` would answer, without spending anything. `peek(0)` shows what is in use.
    pub fn peek(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] cost: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] now: Option<JsValue>,
    ) -> Result<JsValue, JsError> {
        let cost = cost_or_one(cost)?;
        Ok(to_js(&self.inner.peek(time(now)?, cost)))
    }

    /// Charges `cost` tokens whether or not they fit, as a server does once it knows what a
    /// response cost (ESI charges by status after answering).
    pub fn record(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number")] cost: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] now: Option<JsValue>,
    ) -> Result<JsValue, JsError> {
        let cost = whole("cost", &cost)?;
        Ok(to_js(&self.inner.record(time(now)?, cost)))
    }

    /// Forgets everything spent.
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// The limit as it is written, e.g. `"6/8s"`.
    #[wasm_bindgen(getter)]
    pub fn limit(&self) -> String {
        self.inner.limit().to_string()
    }

    /// N, the tokens one window holds.
    #[wasm_bindgen(getter)]
    pub fn tokens(&self) -> f64 {
        self.inner.limit().tokens() as f64
    }

    /// W, the window's length in ms.
    #[wasm_bindgen(getter, js_name = windowMs)]
    pub fn window_ms(&self) -> f64 {
        self.inner.limit().window_ms() as f64
    }

    /// The algorithm's name, e.g. `"floating"`.
    #[wasm_bindgen(getter)]
    pub fn algorithm(&self) -> String {
        self.inner.algorithm().name().to_string()
    }
}

/// What a response with HTTP `status` costs under ESI's table: 2XX 2, 3XX 1, 4XX 5 but
/// 429 0, 5XX 0. Anything else throws.
#[wasm_bindgen(js_name = esiCost)]
pub fn esi_cost(
    #[wasm_bindgen(unchecked_param_type = "number")] status: JsValue,
) -> Result<f64, JsError> {
    let status = whole("status", &status)?;
    let status = u16::try_from(status).map_err(|_| {
        JsError::new(&format!(
            "status {status} has no cost in ESI's table; expected an HTTP status from 200 to 599"
        ))
    })?;
    esi::cost_for_status(status)
        .map(|cost| cost as f64)
        .map_err(into_error)
}
