//! What a limiter answers: allowed or not, and every number behind the answer.
//!
//! The fields map onto HTTP headers (see [`crate::esi`]) and onto what the docs widget
//! shows: `used = previous × overlap + current` with the real numbers.

use crate::values::limit::Limit;
use crate::values::tokens::Tokens;

/// The answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The request fits and, unless it was only a peek, its cost has been spent.
    Allowed,
    /// The request does not fit now. Nothing was spent. The same request sent at
    /// `now + retry_after_ms` (the `now` the caller passed) fits if nothing else is spent in
    /// between; sent 1 ms earlier than that, it does not. Always at least 1.
    Denied { retry_after_ms: u64 },
    /// The cost is larger than the whole limit, so the request can never fit, however long
    /// the caller waits. Nothing was spent.
    ExceedsLimit,
}

/// The floating window's two counters and where in the window the request fell.
///
/// At `elapsed_ms` into the current window, the share of the previous window still inside
/// the sliding window is `overlap = (window_ms − elapsed_ms) / window_ms`, and
/// `used = previous × overlap + current`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Counters {
    /// Tokens spent in the previous fixed window (above N only after `record`).
    pub previous: u128,
    /// Tokens spent in the current fixed window (above N only after `record`).
    pub current: u128,
    /// Milliseconds since the current fixed window began.
    pub elapsed_ms: u64,
    /// The window length W.
    pub window_ms: u64,
}

impl Counters {
    /// `window_ms − elapsed_ms`: the previous window's share still counted, in ms.
    pub fn overlap_ms(&self) -> u64 {
        self.window_ms.saturating_sub(self.elapsed_ms)
    }

    /// The share of the previous window still counted, from 1 (the window just began) down
    /// to 1/W (its last millisecond). For showing only.
    pub fn overlap(&self) -> f64 {
        self.overlap_ms() as f64 / self.window_ms as f64
    }
}

/// Everything a limiter knows about one request, allowed or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decision {
    /// Allowed, denied with a retry time, or too large ever to fit.
    pub outcome: Outcome,
    /// What the request costs (or would have cost), in tokens.
    pub cost: u64,
    /// The limit it was checked against.
    pub limit: Limit,
    /// Tokens in use after the decision: with the cost when a `hit` was allowed, without it
    /// when denied, and without it after a `peek`, which spends nothing.
    /// May exceed the limit after [`record`](crate::FloatingWindow::record).
    pub used: Tokens,
    /// The time the decision was made at, in ms: the caller's `now`, or the latest time the
    /// limiter had already seen when the caller's clock went backwards.
    pub at_ms: u64,
    /// The floating window's counters; `None` for the other algorithms.
    pub counters: Option<Counters>,
}

impl Decision {
    /// True when the request fits.
    pub fn is_allowed(&self) -> bool {
        self.outcome == Outcome::Allowed
    }

    /// The HTTP status to answer with: 200 when allowed, 429 otherwise.
    pub fn status(&self) -> u16 {
        if self.is_allowed() {
            200
        } else {
            429
        }
    }

    /// Whole tokens left: `floor(limit − used)`, never below 0.
    pub fn remaining(&self) -> u64 {
        let free = self.limit.scaled().saturating_sub(self.used.numerator());
        // free ≤ N × W, so free / W ≤ N fits a u64.
        crate::values::tokens::div_rem(free, self.limit.window_ms()).0 as u64
    }

    /// Milliseconds to wait before the same request fits; `None` when allowed or when it can
    /// never fit.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self.outcome {
            Outcome::Denied { retry_after_ms } => Some(retry_after_ms),
            Outcome::Allowed | Outcome::ExceedsLimit => None,
        }
    }

    /// The `Retry-After` header's value: whole seconds, rounded up so that a client that
    /// waits that long is never early. `None` when allowed, or when no wait would help.
    pub fn retry_after_s(&self) -> Option<u64> {
        self.retry_after_ms().map(|ms| ms.div_ceil(1000))
    }

    /// Tokens this request spent: its cost when allowed, 0 otherwise.
    pub fn spent(&self) -> u64 {
        if self.is_allowed() {
            self.cost
        } else {
            0
        }
    }
}
