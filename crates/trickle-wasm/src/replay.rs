//! The replay of a request log, for `<rate-limit-demo replay>`: built only with the
//! `extras` feature, into the WebAssembly module of the opt-in modes (`trickle_extras_bg.wasm`)
//! that the widget's replay mode fetches, so that the default widget's module carries none of it.
//!
//! The rows' rules and messages and the figures are the core's (`request_log`, `replay`),
//! the same `trickle replay` uses, so the widget shows the CLI's summary line and its error
//! messages for the same file. JS feeds a CSV log a chunk of whole lines at a time, or a
//! HAR's entries one by one (it parses the JSON), then plays them a chunk at a time; after
//! each chunk it reads the times and outcome codes of the requests just decided.
//!
//! | export | what it does |
//! |---|---|
//! | `new RawReplay(limit, algorithm)` | throws an `Error` with the core's message for either one bad |
//! | `csv(lines)` | decides the requests of these lines (split at `\n`), the next of the log; the count; throws with the core's message (and line) for a bad row |
//! | `finish()` | throws if the CSV log had no header |
//! | `har_entry(started, status)` | one HAR entry (`status` NaN when missing); throws for a bad one |
//! | `har_play(most)` | decides up to `most` of the HAR's requests, in time order; the count |
//! | `times()`, `codes()` | the requests `csv` or `har_play` just decided: their `t_ms`, and 0 allowed, 1 denied, 2 never fits |
//! | `summary()` | the line `trickle replay` writes after its rows |
//! | `allowed`, `denied`, `never_fit`, `first_refused_request`, `first_refused_t`, `longest_wait_ms` (getters) | the figures; −1 for none |

// Through `super`, so that tests/replay.rs can compile this crate in as a module.
use super::alloc::string::String;
use super::alloc::vec::Vec;

use trickle_core::replay::Replay;
use trickle_core::request_log::{HarLog, Request, TextLog};
use trickle_core::Limiter;
use wasm_bindgen::prelude::*;

use super::{ALLOWED, DENIED, EXCEEDS_LIMIT};

// One log replayed through one limiter.
#[wasm_bindgen]
pub struct RawReplay {
    limiter: Limiter,
    replay: Replay,
    csv: TextLog,
    har: Option<HarLog>,
    /// A HAR's requests in time order, once its entries are all in, and the next to play.
    pending: Vec<Request>,
    next: usize,
    times: Vec<f64>,
    codes: Vec<u8>,
}

#[wasm_bindgen]
impl RawReplay {
    #[wasm_bindgen(constructor, skip_jsdoc)]
    pub fn new(limit: &str, algorithm: &str) -> Result<RawReplay, JsError> {
        let limiter = super::limiter(limit, algorithm).map_err(|message| JsError::new(&message))?;
        Ok(RawReplay {
            replay: Replay::new(limiter.limit(), limiter.algorithm()),
            limiter,
            csv: TextLog::new(),
            har: None,
            pending: Vec::new(),
            next: 0,
            times: Vec::new(),
            codes: Vec::new(),
        })
    }

    // Decides the requests of `lines`, the log's next lines; how many it decided.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn csv(&mut self, lines: &str) -> Result<u32, JsError> {
        self.times.clear();
        self.codes.clear();
        for line in lines.split('\n') {
            let request = self
                .csv
                .line(line)
                .map_err(|e| JsError::new(&e.message()))?;
            if let Some(request) = request {
                self.decide(request);
            }
        }
        Ok(self.times.len() as u32)
    }

    // Throws unless the CSV log had its header.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn finish(&self) -> Result<(), JsError> {
        self.csv.finish().map_err(|e| JsError::new(&e.message()))
    }

    // The next HAR entry: its startedDateTime and response.status (NaN when missing).
    #[wasm_bindgen(skip_jsdoc)]
    pub fn har_entry(&mut self, started: Option<String>, status: f64) -> Result<(), JsError> {
        // no_std has no `f64::fract`: a whole number survives the round trip through i64.
        let status =
            (status.is_finite() && status as i64 as f64 == status).then_some(status as i64);
        self.har
            .get_or_insert_with(HarLog::new)
            .entry(started.as_deref(), status)
            .map_err(|e| JsError::new(&e.message()))
    }

    // Decides up to `most` of the HAR's requests, in time order; how many it decided.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn har_play(&mut self, most: u32) -> u32 {
        if let Some(har) = self.har.take() {
            self.pending = har.requests();
            self.next = 0;
        }
        self.times.clear();
        self.codes.clear();
        let end = self.pending.len().min(self.next + most as usize);
        for index in self.next..end {
            self.decide(self.pending[index]);
        }
        self.next = end;
        self.times.len() as u32
    }

    fn decide(&mut self, request: Request) {
        let decision = self.limiter.hit(request.t_ms, request.cost);
        self.replay.count(&decision);
        self.times.push(request.t_ms as f64);
        self.codes.push(match decision.outcome {
            trickle_core::Outcome::Allowed => ALLOWED,
            trickle_core::Outcome::Denied { .. } => DENIED,
            trickle_core::Outcome::ExceedsLimit => EXCEEDS_LIMIT,
        } as u8);
    }

    // The HAR's requests still to play.
    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn left(&self) -> u32 {
        (self.pending.len() - self.next) as u32
    }

    #[wasm_bindgen(skip_jsdoc)]
    pub fn times(&self) -> Vec<f64> {
        self.times.clone()
    }

    #[wasm_bindgen(skip_jsdoc)]
    pub fn codes(&self) -> Vec<u8> {
        self.codes.clone()
    }

    #[wasm_bindgen(skip_jsdoc)]
    pub fn summary(&self) -> String {
        self.replay.message()
    }

    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn allowed(&self) -> f64 {
        self.replay.allowed as f64
    }

    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn denied(&self) -> f64 {
        self.replay.denied as f64
    }

    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn never_fit(&self) -> f64 {
        self.replay.never_fit as f64
    }

    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn first_refused_request(&self) -> f64 {
        self.replay
            .first_refused
            .map_or(-1.0, |first| first.request as f64)
    }

    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn first_refused_t(&self) -> f64 {
        self.replay
            .first_refused
            .map_or(-1.0, |first| first.t_ms as f64)
    }

    #[wasm_bindgen(getter, skip_jsdoc)]
    pub fn longest_wait_ms(&self) -> f64 {
        self.replay.longest_wait_ms.map_or(-1.0, |wait| wait as f64)
    }
}
