//! One limit and one state: a single rate-limited bucket.

use crate::algorithms::any::{Algorithm, AnyState};
use crate::algorithms::fixed::FixedState;
use crate::algorithms::floating::FloatingState;
use crate::algorithms::reservation::{Admission, Reservation};
use crate::algorithms::sliding_log::SlidingLogState;
use crate::algorithms::state::State;
use crate::algorithms::token_bucket::TokenBucketState;
use crate::stores::store::Op;
use crate::values::decision::Decision;
use crate::values::limit::Limit;

/// A single bucket: a [`Limit`] and the state of one algorithm.
///
/// Use it through the aliases [`FloatingWindow`], [`SlidingLog`], [`FixedWindow`] and
/// [`TokenBucket`], or through [`crate::Limiter`] when the algorithm is chosen at run time.
///
/// ```
/// use trickle_core::{FloatingWindow, Outcome};
///
/// let mut bucket = FloatingWindow::new("2/1s".parse().unwrap());
/// assert!(bucket.hit(0, 1).is_allowed());
/// assert!(bucket.hit(10, 1).is_allowed());
/// let denied = bucket.hit(20, 1);
/// assert_eq!(denied.status(), 429);
/// // Both tokens count in full until the next window begins at 1000 ms; then they slide
/// // out, and at 1500 ms half of them is left: 2 × 0.5 + 1 ≤ 2. That is 20 + 1480.
/// assert_eq!(denied.outcome, Outcome::Denied { retry_after_ms: 1_480 });
///
/// // In generic code the state type is inferred.
/// fn fresh<S: trickle_core::state::State + Default>(limit: trickle_core::Limit) -> trickle_core::Bucket<S> {
///     trickle_core::Bucket::new(limit)
/// }
/// let sliding: trickle_core::SlidingLog = fresh(bucket.limit());
/// assert!(sliding.peek(0, 2).is_allowed());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket<S> {
    limit: Limit,
    state: S,
}

/// The floating window (approximated sliding window), the main algorithm.
pub type FloatingWindow = Bucket<FloatingState>;
/// The sliding log, the exact sliding window.
pub type SlidingLog = Bucket<SlidingLogState>;
/// The fixed window.
pub type FixedWindow = Bucket<FixedState>;
/// The token bucket.
pub type TokenBucket = Bucket<TokenBucketState>;

impl<S: State + Default> Bucket<S> {
    /// An empty bucket (a full one, for the token bucket).
    pub fn new(limit: Limit) -> Bucket<S> {
        Bucket::with_state(limit, S::default())
    }
}

impl<S: State> Bucket<S> {
    pub(crate) fn with_state(limit: Limit, state: S) -> Bucket<S> {
        Bucket { limit, state }
    }

    /// The limit this bucket enforces.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// The state, for inspection.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// Decides a request of `cost` tokens at `now_ms` and spends the cost if it fits.
    pub fn hit(&mut self, now_ms: u64, cost: u64) -> Decision {
        self.state.hit(&self.limit, now_ms, cost)
    }

    /// What [`hit`](Bucket::hit) would answer, without spending anything.
    pub fn peek(&self, now_ms: u64, cost: u64) -> Decision {
        self.state.peek(&self.limit, now_ms, cost)
    }

    /// Charges `cost` after the fact, even past the limit (for costs known only from the
    /// response, as ESI charges by status).
    pub fn record(&mut self, now_ms: u64, cost: u64) -> Decision {
        self.state.record(&self.limit, now_ms, cost)
    }

    /// Admits a request of `cost` tokens at `now_ms` if it fits, spending the cost at once
    /// and holding it in a [`Reservation`] until the request's final cost is known;
    /// refuses it, spending nothing, if not. See [`crate::reservation`].
    pub fn reserve(&mut self, now_ms: u64, cost: u64) -> Admission {
        Admission::of(self.hit(now_ms, cost))
    }

    /// Settles `reservation` at the request's final `cost`: charges the difference, or
    /// refunds it, as [`crate::reservation`] defines for each algorithm.
    pub fn settle(&mut self, reservation: Reservation, now_ms: u64, cost: u64) -> Decision {
        self.state.settle(
            &self.limit,
            now_ms,
            reservation.at_ms(),
            reservation.cost(),
            cost,
        )
    }

    /// Applies `op` with `cost` tokens at `now_ms`: what a [`Store`](crate::Store) does to
    /// one key's bucket. A reserve is a hit here; a settle settles the reservation the op
    /// describes.
    pub fn decide(&mut self, op: Op, now_ms: u64, cost: u64) -> Decision {
        match op {
            Op::Hit | Op::Reserve { .. } => self.hit(now_ms, cost),
            Op::Peek => self.peek(now_ms, cost),
            Op::Record => self.record(now_ms, cost),
            Op::Settle {
                reserved_at_ms,
                reserved,
                ..
            } => self
                .state
                .settle(&self.limit, now_ms, reserved_at_ms, reserved, cost),
        }
    }

    /// Forgets every request: as new.
    pub fn reset(&mut self) {
        self.state.clear();
    }
}

/// A bucket whose algorithm is chosen at run time, as the CLI and the widget choose it.
///
/// ```
/// use trickle_core::{Algorithm, Limiter};
///
/// let mut limiter = Limiter::with_algorithm(Algorithm::SlidingLog, "6/8s".parse().unwrap());
/// for t in 0..6 {
///     assert!(limiter.hit(t * 100, 1).is_allowed());
/// }
/// // The first token comes back exactly 8 s after it was spent.
/// assert_eq!(limiter.hit(600, 1).retry_after_ms(), Some(8_000 - 600));
/// ```
pub type Limiter = Bucket<AnyState>;

impl Limiter {
    /// An empty limiter running `algorithm` under `limit`. (Not `new`, which the
    /// single-algorithm buckets use: one name for both would make `Bucket::new` ambiguous.)
    pub fn with_algorithm(algorithm: Algorithm, limit: Limit) -> Limiter {
        Bucket::with_state(limit, AnyState::new(algorithm))
    }

    /// The algorithm this limiter runs.
    pub fn algorithm(&self) -> Algorithm {
        self.state().algorithm()
    }
}
