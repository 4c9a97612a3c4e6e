//! How a replay of a request log went: the figures `trickle replay` prints after its rows
//! and the `<rate-limit-demo replay>` widget shows, counted in one place.
//!
//! A [`Replay`] is fed each decision as it is made, in the log's order, whoever decides it
//! (a limiter in process, one beside a reference, the Redis scripts), so it keeps only
//! counters and never the log: a log of any length is summed up in constant memory.

use alloc::string::String;

use crate::algorithms::any::Algorithm;
use crate::values::decision::{Decision, Outcome};
use crate::values::limit::Limit;
use crate::values::text::Text;

/// The figures of a replay, fed decision by decision.
///
/// With `2/1s`, three requests at 0, 100 and 200 ms and a fourth at 1100 ms: the third is
/// the first 429, told to wait 800 ms (until the first token leaves the window at 1000 ms);
/// the fourth fits again.
///
/// ```
/// use trickle_core::replay::Replay;
/// use trickle_core::{Algorithm, Limiter};
///
/// let limit = "2/1s".parse().unwrap();
/// let mut limiter = Limiter::with_algorithm(Algorithm::SlidingLog, limit);
/// let mut replay = Replay::new(limit, Algorithm::SlidingLog);
/// for t_ms in [0, 100, 200, 1_100] {
///     replay.count(&limiter.hit(t_ms, 1));
/// }
/// assert_eq!((replay.allowed, replay.denied, replay.never_fit), (3, 1, 0));
/// let first = replay.first_refused.unwrap();
/// assert_eq!((first.request, first.t_ms), (3, 200));
/// assert_eq!(replay.longest_wait_ms, Some(800));
/// assert_eq!(
///     replay.to_string(),
///     "replayed 4 requests against 2/1s (sliding-log): 3 allowed, 1 denied, 0 never fit; \
///      first 429 at request 3, t_ms 200; longest wait 800 ms"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replay {
    pub limit: Limit,
    pub algorithm: Algorithm,
    /// Requests let through.
    pub allowed: u64,
    /// Requests refused that would fit after a wait.
    pub denied: u64,
    /// Requests larger than the whole limit, refused whatever the wait.
    pub never_fit: u64,
    /// The first request refused, denied or never fitting: the first 429 a client met.
    pub first_refused: Option<Refused>,
    /// The longest `retry_after_ms` of a denial: the longest a refused client had to wait
    /// before the same request fitted. `None` until a request is denied.
    pub longest_wait_ms: Option<u64>,
}

/// Where the first 429 came: the request's place in the log, from 1, and its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub request: u64,
    pub t_ms: u64,
}

impl Replay {
    /// Nothing replayed yet.
    pub fn new(limit: Limit, algorithm: Algorithm) -> Replay {
        Replay {
            limit,
            algorithm,
            allowed: 0,
            denied: 0,
            never_fit: 0,
            first_refused: None,
            longest_wait_ms: None,
        }
    }

    /// The requests replayed so far.
    pub fn requests(&self) -> u64 {
        self.allowed + self.denied + self.never_fit
    }

    /// Counts the next request's decision; its time is the decision's own.
    pub fn count(&mut self, decision: &Decision) {
        match decision.outcome {
            Outcome::Allowed => self.allowed += 1,
            Outcome::Denied { retry_after_ms } => {
                self.denied += 1;
                self.longest_wait_ms = Some(
                    self.longest_wait_ms
                        .map_or(retry_after_ms, |wait| wait.max(retry_after_ms)),
                );
            }
            Outcome::ExceedsLimit => self.never_fit += 1,
        }
        if !decision.is_allowed() && self.first_refused.is_none() {
            self.first_refused = Some(Refused {
                request: self.requests(),
                t_ms: decision.at_ms,
            });
        }
    }

    /// The summary line, as `trickle replay` writes it on stderr after the rows; what
    /// `Display` writes, built without `core::fmt`.
    pub fn message(&self) -> String {
        let requests = self.requests();
        let mut text = Text::new();
        text.push("replayed ")
            .number(requests)
            .push(if requests == 1 {
                " request"
            } else {
                " requests"
            })
            .push(" against ")
            .push(&self.limit.text())
            .push(" (")
            .push(self.algorithm.name())
            .push("): ")
            .number(self.allowed)
            .push(" allowed, ")
            .number(self.denied)
            .push(" denied, ")
            .number(self.never_fit)
            .push(" never fit");
        match self.first_refused {
            Some(Refused { request, t_ms }) => {
                text.push("; first 429 at request ")
                    .number(request)
                    .push(", t_ms ")
                    .number(t_ms);
            }
            None => {
                text.push("; no 429");
            }
        }
        if let Some(wait) = self.longest_wait_ms {
            text.push("; longest wait ").number(wait).push(" ms");
        }
        text.build()
    }
}

impl core::fmt::Display for Replay {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::{Refused, Replay};
    use crate::algorithms::any::Algorithm;
    use crate::stores::bucket::Limiter;

    fn replay(limit: &str, algorithm: Algorithm, requests: &[(u64, u64)]) -> Replay {
        let limit = limit.parse().unwrap();
        let mut limiter = Limiter::with_algorithm(algorithm, limit);
        let mut replay = Replay::new(limit, algorithm);
        for &(t_ms, cost) in requests {
            replay.count(&limiter.hit(t_ms, cost));
        }
        replay
    }

    #[test]
    fn nothing_replayed_says_so() {
        let replay = replay("6/8s", Algorithm::Floating, &[]);
        assert_eq!(
            replay.to_string(),
            "replayed 0 requests against 6/8s (floating): 0 allowed, 0 denied, 0 never fit; no 429"
        );
    }

    #[test]
    fn a_request_above_the_limit_is_the_first_429_but_has_no_wait() {
        let replay = replay(
            "2/1s",
            Algorithm::Fixed,
            &[(0, 1), (5, 3), (10, 1), (20, 1)],
        );
        assert_eq!((replay.allowed, replay.denied, replay.never_fit), (2, 1, 1));
        assert_eq!(
            replay.first_refused,
            Some(Refused {
                request: 2,
                t_ms: 5
            })
        );
        // The fixed window's 20 ms denial waits for the window's end at 1000 ms.
        assert_eq!(replay.longest_wait_ms, Some(980));
    }

    #[test]
    fn the_longest_wait_is_the_largest_not_the_last() {
        // 1/1s: denied at 100 (wait 900), then at 900 (wait 100).
        let replay = replay("1/1s", Algorithm::SlidingLog, &[(0, 1), (100, 1), (900, 1)]);
        assert_eq!(replay.longest_wait_ms, Some(900));
        assert_eq!(
            replay.first_refused,
            Some(Refused {
                request: 2,
                t_ms: 100
            })
        );
        assert_eq!(replay.requests(), 3);
    }

    #[test]
    fn one_request_is_singular() {
        let replay = replay("6/8s", Algorithm::TokenBucket, &[(0, 0)]);
        assert_eq!(
            replay.to_string(),
            "replayed 1 request against 6/8s (token-bucket): 1 allowed, 0 denied, 0 never fit; no 429"
        );
    }
}
