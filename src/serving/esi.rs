//! EVE Online's ESI conventions: what a response costs, and the headers that report it.
//!
//! ESI charges a request by the status it answered with, after answering: a success costs
//! 2 tokens, a redirect or `304 Not Modified` 1, a client error 5 (but a 429, which the
//! limiter itself sent, nothing), and a server error nothing, since the fault is ESI's.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::serving::costs::CostTable;
use crate::values::decision::Decision;
use crate::values::text::{error_from_message, Text};

/// What a response with HTTP `status` costs under ESI's table.
///
/// | status | cost |
/// |---|---|
/// | 2XX | 2 |
/// | 3XX | 1 |
/// | 4XX except 429 | 5 |
/// | 429 | 0 |
/// | 5XX | 0 |
///
/// Anything else (1XX, or not an HTTP status) is an error. The table is
/// [`CostTable::esi`], the preset `esi` of the cost tables a docs page may write.
///
/// ```
/// use trickle_core::esi::cost_for_status;
///
/// assert_eq!(cost_for_status(200), Ok(2));
/// assert_eq!(cost_for_status(304), Ok(1));
/// assert_eq!(cost_for_status(404), Ok(5));
/// assert_eq!(cost_for_status(429), Ok(0));
/// assert_eq!(cost_for_status(503), Ok(0));
/// assert!(cost_for_status(101).is_err());
/// ```
pub fn cost_for_status(status: u16) -> Result<u64, StatusError> {
    CostTable::esi()
        .cost(u64::from(status))
        .map_err(|_| StatusError { status })
}

/// The response headers ESI sends for a decision:
///
/// - `X-Ratelimit-Limit`: the limit as ESI writes it, `150/15m`;
/// - `X-Ratelimit-Remaining`: whole tokens left;
/// - `X-Ratelimit-Used`: the tokens this request spent (0 when denied);
/// - `Retry-After`, on a denial only: whole seconds, rounded up, so that a client that
///   waits that long is never early. A request too large ever to fit gets no
///   `Retry-After`, since no wait would help.
///
/// ```
/// use trickle_core::{esi, FloatingWindow};
///
/// let mut bucket = FloatingWindow::new("150/15m".parse().unwrap());
/// let decision = bucket.hit(0, 2);
/// assert_eq!(
///     esi::headers(&decision),
///     [
///         ("X-Ratelimit-Limit", "150/15m".to_string()),
///         ("X-Ratelimit-Remaining", "148".to_string()),
///         ("X-Ratelimit-Used", "2".to_string()),
///     ]
/// );
/// ```
pub fn headers(decision: &Decision) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("X-Ratelimit-Limit", decision.limit.to_string()),
        ("X-Ratelimit-Remaining", decision.remaining().to_string()),
        ("X-Ratelimit-Used", decision.spent().to_string()),
    ];
    if let Some(seconds) = decision.retry_after_s() {
        headers.push(("Retry-After", seconds.to_string()));
    }
    headers
}

/// An HTTP status that ESI's cost table has no price for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusError {
    pub status: u16,
}

impl StatusError {
    /// What `Display` writes, built without `core::fmt`.
    pub fn message(&self) -> String {
        Text::new()
            .push("status ")
            .number(u64::from(self.status))
            .push(" has no cost in ESI's table; expected an HTTP status from 200 to 599")
            .build()
    }
}

error_from_message!(StatusError);
