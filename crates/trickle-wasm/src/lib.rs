//! The WebAssembly face of the `trickle-core` crate, for the `<rate-limit-demo>` element.
//!
//! A low-level, numeric boundary: a hand-written JS wrapper (`www/src/limiter.js`) checks
//! what a page passes and calls these exports with plain numbers. A decision is one wasm
//! call with two `f64` arguments and a `u32` result; its numbers are written to one static
//! buffer of `f64` that the wrapper reads through the wasm memory, so the hot path crosses
//! no strings, objects or imports. Strings cross only to build a limiter or a cost table
//! and to describe one.
//!
//! | export | what it does |
//! |---|---|
//! | `limiter_new(limit, algorithm)` | a limiter's handle, or 0 with the core's message for a bad limit (checked first) or algorithm in `error()` |
//! | `limiter_hit(h, now, cost)`, `limiter_peek(…)`, `limiter_record(…)` | the outcome code: 0 allowed, 1 denied, 2 exceeds the limit; the decision in the buffer |
//! | `limiter_respond(h, now, reserve, cost)` | the flow of a server that prices its answers (`trickle_core::flow`) at one moment: reserves `reserve` tokens and, if they fit, settles at `cost`; the reserve's outcome code, and the settle's decision (or the refusal, at a cost of 0) in the buffer |
//! | `limiter_reset(h)` | forgets everything spent |
//! | `limiter_limit(h)` | `"6/8s"` as the core writes it |
//! | `limiter_tokens(h)`, `limiter_window_ms(h)` | N and W |
//! | `limiter_free(h)` | frees the limiter; the handle is not used again |
//! | `algorithms()` | the algorithms' names, space-separated, the default first |
//! | `decision_buffer()` | the byte offset of the buffer in the wasm memory |
//! | `cost_table_new(text)` (this and the three below: `--features algorithms` only) | a cost table's handle, or 0 with the core's message in `error()` |
//! | `cost_table_cost(h, status)` | the cost; -1 with a message naming what the table prices in `error()` when it has no price |
//! | `cost_table_statuses(h)` | statuses to offer as buttons, space-separated, in table order |
//! | `cost_table_free(h)` | frees the table |
//! | `error()` | the message of the last refusal, taken |
//!
//! Numbers come in checked by JS: whole numbers from 0 to 2^53 − 1, except that a time may
//! have a fraction of a millisecond, which is dropped. The buffer holds 14 `f64`, in the
//! order of the `field` constants: cost, used, remaining, retryAfterMs, retryAfter, t, previous,
//! current, overlap, elapsedMs, counted, limit (N), windowMs (W), reserved.
//!
//! ```js
//! import * as core from "./pkg/trickle.js";
//! const wasm = core.initSync({ module: await WebAssembly.compile(bytes) });
//! const fields = new Float64Array(wasm.memory.buffer, core.decision_buffer(), 14);
//! const limiter = core.limiter_new("6/8s", "floating");   // 0: see core.error()
//! core.limiter_hit(limiter, 1234, 1);   // 0: allowed; fields[1] is `used`, fields[2] `remaining`, …
//! ```
//!
//! The exports carry `//` comments rather than doc comments, and `skip_jsdoc`: wasm-bindgen
//! copies doc comments into the JS glue every page downloads.
//!
//! The crate is `no_std`: a panic traps (`unreachable`) instead of formatting a message, so
//! the module carries none of std's panic machinery. The core has no panic path on these
//! calls; a trap would be a bug. Debug builds (the tests, the lints) link std instead, whose
//! panic handler prints the message a failing test needs.
#![cfg(target_arch = "wasm32")]
#![cfg_attr(not(test), no_std)]

extern crate alloc;
#[cfg(any(test, debug_assertions))]
extern crate std;

use alloc::string::String;

#[cfg(not(any(test, debug_assertions)))]
#[panic_handler]
fn trap(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

use core::cell::UnsafeCell;

use trickle_core::{Admission, Algorithm, Decision, Limit, Outcome};
use wasm_bindgen::prelude::*;

mod allocator;
// Built only into the opt-in modes' own module (`--features extras`).
#[cfg(feature = "extras")]
pub mod policy;
#[cfg(feature = "extras")]
pub mod replay;

#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator::new();

/// How many `f64` a decision writes to the buffer.
pub const DECISION_FIELDS: usize = 14;

/// The buffer's slots, in order: what the JS wrapper reads at each index.
pub mod field {
    /// What the request costs (or would have cost), in tokens.
    pub const COST: usize = 0;
    /// Tokens in use after the decision; fractional for the floating window and bucket.
    pub const USED: usize = 1;
    /// Whole tokens left.
    pub const REMAINING: usize = 2;
    /// The exact wait before the same request fits, in ms; 0 unless denied.
    pub const RETRY_AFTER_MS: usize = 3;
    /// The `Retry-After` header: whole seconds, rounded up; 0 unless denied.
    pub const RETRY_AFTER: usize = 4;
    /// When the decision was made, in ms.
    pub const T: usize = 5;
    /// The floating window's counters (0 for the other algorithms): tokens spent in the
    /// previous and the current fixed window, the share of the previous one still counted,
    /// and how far into the current window `t` is.
    pub const PREVIOUS: usize = 6;
    pub const CURRENT: usize = 7;
    pub const OVERLAP: usize = 8;
    pub const ELAPSED_MS: usize = 9;
    /// 1 when the four counters above apply (the floating window), else 0.
    pub const COUNTED: usize = 10;
    /// N, the limit's tokens, and W, its window in ms.
    pub const LIMIT: usize = 11;
    pub const WINDOW_MS: usize = 12;
    /// What `respond` reserved before the answer was priced: its `reserve`, or 0 when the
    /// request was refused. 0 after `hit`, `peek` and `record`, which reserve nothing.
    pub const RESERVED: usize = 13;
}

/// Outcome codes `hit`, `peek`, `record` and `respond` return.
pub const ALLOWED: u32 = 0;
pub const DENIED: u32 = 1;
pub const EXCEEDS_LIMIT: u32 = 2;

/// The one decision buffer. The module is single-threaded and a decision is written whole
/// before its call returns, so there is never more than one writer or a reader mid-write.
struct DecisionBuffer(UnsafeCell<[f64; DECISION_FIELDS]>);

// SAFETY: wasm32-unknown-unknown without atomics has one thread.
unsafe impl Sync for DecisionBuffer {}

static DECISION: DecisionBuffer = DecisionBuffer(UnsafeCell::new([0.0; DECISION_FIELDS]));

// The byte offset of the decision buffer in the wasm memory: read it as
// `new Float64Array(memory.buffer, decision_buffer(), 14)`.
#[wasm_bindgen(skip_jsdoc)]
pub fn decision_buffer() -> u32 {
    DECISION.0.get() as u32
}

/// A counter as an f64, exact below 2^64 (counters pass it only after `record`), within an
/// ulp above. Two u64 → f64 instructions: `n as f64` on a u128 is a library call here, and
/// the compiler folds any branch that is exact in both arms back into it.
fn wide_to_f64(n: u128) -> f64 {
    ((n >> 64) as u64) as f64 * 18_446_744_073_709_551_616.0 + (n as u64) as f64
}

/// Writes `decision`, and the tokens reserved before it, into the buffer and returns its
/// outcome code.
fn publish(decision: &Decision, reserved: u64) -> u32 {
    let (code, retry_after_ms, retry_after) = match decision.outcome {
        Outcome::Allowed => (ALLOWED, 0.0, 0.0),
        Outcome::Denied { retry_after_ms } => (
            DENIED,
            retry_after_ms as f64,
            decision.retry_after_s().unwrap_or_default() as f64,
        ),
        Outcome::ExceedsLimit => (EXCEEDS_LIMIT, 0.0, 0.0),
    };
    let counters = decision.counters;
    let fields = [
        decision.cost as f64,
        decision.used.as_f64(),
        decision.remaining() as f64,
        retry_after_ms,
        retry_after,
        decision.at_ms as f64,
        counters.map_or(0.0, |c| wide_to_f64(c.previous)),
        counters.map_or(0.0, |c| wide_to_f64(c.current)),
        counters.map_or(0.0, |c| c.overlap()),
        counters.map_or(0.0, |c| c.elapsed_ms as f64),
        if counters.is_some() { 1.0 } else { 0.0 },
        decision.limit.tokens() as f64,
        decision.limit.window_ms() as f64,
        reserved as f64,
    ];
    // SAFETY: see `DecisionBuffer`; no reference into the buffer outlives this write.
    unsafe { DECISION.0.get().write(fields) };
    code
}

/// A whole number of ms or tokens from JS, which has already checked it is one from 0 to
/// 2^53 − 1. The cast floors a time's fraction of a millisecond and saturates anything else.
fn whole(value: f64) -> u64 {
    value as u64
}

/// The bucket a limiter's handle holds. The default module runs the floating window alone,
/// the algorithm a default widget shows: the other three are most of the module's code
/// otherwise. `--features algorithms` (trickle_algorithms_bg.wasm, which limiter.js fetches
/// the first time a page asks for another algorithm, and the extras module) runs all four.
#[cfg(not(feature = "algorithms"))]
type Core = trickle_core::FloatingWindow;
#[cfg(feature = "algorithms")]
type Core = trickle_core::Limiter;

/// An empty limiter for `limit` (`"6/8s"`) running `algorithm` (`"floating"`), or the
/// core's message for the first one that is bad. The default module names the module that
/// runs a good algorithm it does not (limiter.js never asks it to).
pub(crate) fn limiter(limit: &str, algorithm: &str) -> Result<Core, String> {
    let limit: Limit = limit
        .parse()
        .map_err(|e: trickle_core::LimitError| e.message())?;
    let algorithm: Algorithm = algorithm
        .parse()
        .map_err(|e: trickle_core::AlgorithmError| e.message())?;
    #[cfg(not(feature = "algorithms"))]
    {
        if algorithm != Algorithm::Floating {
            let mut message = String::from(algorithm.name());
            message.push_str(" runs in trickle_algorithms_bg.wasm; this module runs floating");
            return Err(message);
        }
        Ok(Core::new(limit))
    }
    #[cfg(feature = "algorithms")]
    Ok(Core::with_algorithm(algorithm, limit))
}

/// The message of the last refusal, until `error()` takes it.
struct LastError(UnsafeCell<String>);

// SAFETY: as `DecisionBuffer`.
unsafe impl Sync for LastError {}

static LAST_ERROR: LastError = LastError(UnsafeCell::new(String::new()));

/// Keeps `message` for `error()`, and returns the handle or value that says "refused".
fn refuse<T>(message: String, refused: T) -> T {
    // SAFETY: see `DecisionBuffer`; no reference into the message outlives this write.
    unsafe { *LAST_ERROR.0.get() = message };
    refused
}

// The message of the last call that was refused (a handle of 0, a cost of -1), taken: a
// second call gives "".
#[wasm_bindgen(skip_jsdoc)]
pub fn error() -> String {
    // SAFETY: as in `refuse`.
    unsafe { core::mem::take(&mut *LAST_ERROR.0.get()) }
}

/// A boxed object handed to JS as its address, which `www/src/limiter.js` keeps private,
/// passes back to the exports below and frees once. Handles instead of wasm-bindgen's
/// classes: a class brings a borrow flag, a finalizer and their messages into the module and
/// the glue of every page, for a wrapper that already guards its one owner.
fn into_handle<T>(object: T) -> u32 {
    alloc::boxed::Box::into_raw(alloc::boxed::Box::new(object)) as u32
}

/// # Safety
/// `handle` came from `into_handle::<T>` and has not been freed.
unsafe fn object<'a, T>(handle: u32) -> &'a mut T {
    // SAFETY: the caller's promise; one thread, and no reference outlives its export.
    unsafe { &mut *(handle as *mut T) }
}

/// # Safety
/// As `object`; the handle is not used again.
unsafe fn free<T>(handle: u32) {
    // SAFETY: the caller's promise.
    drop(unsafe { alloc::boxed::Box::from_raw(handle as *mut T) });
}

/// One rate-limited bucket running one of the algorithms.
pub struct RawLimiter {
    inner: Core,
}

impl RawLimiter {
    /// A limiter for `limit` (`"6/8s"`) running `algorithm` (`"floating"`, see
    /// `algorithms()`), or the core's message for the first one that is bad.
    pub fn new(limit: &str, algorithm: &str) -> Result<RawLimiter, String> {
        Ok(RawLimiter {
            inner: limiter(limit, algorithm)?,
        })
    }

    /// Spends `cost` tokens at `now` if they fit; the outcome code, and the decision in
    /// the buffer.
    pub fn hit(&mut self, now: f64, cost: f64) -> u32 {
        publish(&self.inner.hit(whole(now), whole(cost)), 0)
    }

    /// What `hit` would answer, spending nothing.
    pub fn peek(&self, now: f64, cost: f64) -> u32 {
        publish(&self.inner.peek(whole(now), whole(cost)), 0)
    }

    /// Charges `cost` tokens whether or not they fit (always 0, allowed).
    pub fn record(&mut self, now: f64, cost: f64) -> u32 {
        publish(&self.inner.record(whole(now), whole(cost)), 0)
    }

    /// One request of a server that prices its answer (ESI's flow, `trickle_core::flow`),
    /// all at `now`: reserves `reserve` tokens (spent at once, as `hit` spends them) and, if
    /// they fit, settles the request at its final `cost`, the answer's price, which charges
    /// or refunds the difference; the settle's decision goes in the buffer, with `reserved`.
    /// A refused request is answered 429, which costs nothing: the refusal goes in the
    /// buffer with a `cost` and `reserved` of 0, and nothing was spent. The outcome code is
    /// the reserve's: a settle is always allowed, even when it takes the bucket past the
    /// limit.
    pub fn respond(&mut self, now: f64, reserve: f64, cost: f64) -> u32 {
        let now = whole(now);
        match self.inner.reserve(now, whole(reserve)) {
            Admission::Admitted { reservation, .. } => {
                let reserved = reservation.cost();
                publish(&self.inner.settle(reservation, now, whole(cost)), reserved)
            }
            Admission::Refused(refusal) => publish(&Decision { cost: 0, ..refusal }, 0),
        }
    }

    /// Forgets everything spent.
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// The limit as the core writes it, e.g. `"6/8s"`.
    pub fn limit(&self) -> String {
        self.inner.limit().text()
    }

    /// N, the tokens one window holds.
    pub fn tokens(&self) -> f64 {
        self.inner.limit().tokens() as f64
    }

    /// W, the window's length in ms.
    pub fn window_ms(&self) -> f64 {
        self.inner.limit().window_ms() as f64
    }

    /// The algorithm's name, e.g. `"floating"`.
    pub fn algorithm(&self) -> &'static str {
        #[cfg(not(feature = "algorithms"))]
        return Algorithm::Floating.name();
        #[cfg(feature = "algorithms")]
        self.inner.algorithm().name()
    }
}

// The exports on a limiter's handle, each `RawLimiter`'s method of the same name. SAFETY,
// for every `object` and `free` below: limiter.js passes only the handle it got from
// `limiter_new` (never 0) until it calls `limiter_free`, once.

// A new limiter's handle, or 0 with the core's message for `error()`.
#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_new(limit: &str, algorithm: &str) -> u32 {
    RawLimiter::new(limit, algorithm).map_or_else(|message| refuse(message, 0), into_handle)
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_free(limiter: u32) {
    unsafe { free::<RawLimiter>(limiter) }
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_hit(limiter: u32, now: f64, cost: f64) -> u32 {
    unsafe { object::<RawLimiter>(limiter) }.hit(now, cost)
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_peek(limiter: u32, now: f64, cost: f64) -> u32 {
    unsafe { object::<RawLimiter>(limiter) }.peek(now, cost)
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_record(limiter: u32, now: f64, cost: f64) -> u32 {
    unsafe { object::<RawLimiter>(limiter) }.record(now, cost)
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_respond(limiter: u32, now: f64, reserve: f64, cost: f64) -> u32 {
    unsafe { object::<RawLimiter>(limiter) }.respond(now, reserve, cost)
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_reset(limiter: u32) {
    unsafe { object::<RawLimiter>(limiter) }.reset();
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_limit(limiter: u32) -> String {
    unsafe { object::<RawLimiter>(limiter) }.limit()
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_tokens(limiter: u32) -> f64 {
    unsafe { object::<RawLimiter>(limiter) }.tokens()
}

#[wasm_bindgen(skip_jsdoc)]
pub fn limiter_window_ms(limiter: u32) -> f64 {
    unsafe { object::<RawLimiter>(limiter) }.window_ms()
}

// The algorithms' names, space-separated, the default first.
#[wasm_bindgen(skip_jsdoc)]
pub fn algorithms() -> String {
    Algorithm::names(" ")
}

// Cost tables are in the algorithms module alone (`--features algorithms`): only a widget
// with `costs` prices its answers, and their parsing and messages are a quarter of the
// default module otherwise.

/// What a response costs by its HTTP status: a `CostTable` written as text
/// (`"200:2 304:1 4xx:5 429:0 5xx:0"`, or the preset `"esi"`).
#[cfg(feature = "algorithms")]
pub struct RawCostTable {
    inner: trickle_core::CostTable,
}

#[cfg(feature = "algorithms")]
impl RawCostTable {
    /// The table, or the core's message when the text is not one.
    pub fn new(text: &str) -> Result<RawCostTable, String> {
        text.parse()
            .map(|inner| RawCostTable { inner })
            .map_err(|e: trickle_core::costs::CostTableError| e.message())
    }

    /// The cost of a response with `status` (a whole number, checked by JS), or the core's
    /// message saying which statuses the table prices when it has no entry for it.
    pub fn cost(&self, status: f64) -> Result<f64, String> {
        self.inner
            .cost(whole(status))
            .map(|cost| cost as f64)
            .map_err(|e| e.message())
    }

    /// Statuses to offer as buttons, one per entry in table order, space-separated.
    pub fn statuses(&self) -> String {
        let mut text = alloc::vec::Vec::new();
        for status in self.inner.statuses() {
            if !text.is_empty() {
                text.push(b' ');
            }
            // A status is 100 to 599: three digits.
            for digit in [status / 100, status / 10 % 10, status % 10] {
                text.push(b'0' + digit as u8);
            }
        }
        // SAFETY: ASCII digits and spaces. Bytes rather than `String::push`, whose UTF-8
        // encoding of any char would be one more function in the module.
        unsafe { String::from_utf8_unchecked(text) }
    }
}

// The exports on a cost table's handle, as the limiter's (the same SAFETY, with
// `cost_table_new` and `cost_table_free`).

// A new table's handle, or 0 with the core's message for `error()`.
#[cfg(feature = "algorithms")]
#[wasm_bindgen(skip_jsdoc)]
pub fn cost_table_new(text: &str) -> u32 {
    RawCostTable::new(text).map_or_else(|message| refuse(message, 0), into_handle)
}

#[cfg(feature = "algorithms")]
#[wasm_bindgen(skip_jsdoc)]
pub fn cost_table_free(table: u32) {
    unsafe { free::<RawCostTable>(table) }
}

// The cost, or -1 with the core's message for `error()`.
#[cfg(feature = "algorithms")]
#[wasm_bindgen(skip_jsdoc)]
pub fn cost_table_cost(table: u32, status: f64) -> f64 {
    unsafe { object::<RawCostTable>(table) }
        .cost(status)
        .unwrap_or_else(|message| refuse(message, -1.0))
}

#[cfg(feature = "algorithms")]
#[wasm_bindgen(skip_jsdoc)]
pub fn cost_table_statuses(table: u32) -> String {
    unsafe { object::<RawCostTable>(table) }.statuses()
}
