//! The fixed window: one counter, emptied at every multiple of W.
//!
//! The simplest limiter and the one with the best-known flaw: a burst at the end of one
//! window and another at the start of the next let 2N tokens through in a few
//! milliseconds. It is here to be compared against, and for the APIs that really use it.

use crate::algorithms::state::{Difference, Rolling};
use crate::values::limit::Limit;

/// The tokens spent in the window of `latest_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FixedState {
    current: u64,
    latest_ms: u64,
}

impl Rolling for FixedState {
    /// How far into its window the latest time is, in ms.
    type Position = u64;

    /// One division finds where `at_ms` falls; the latest time (never later) was in the
    /// same window iff it is not before that window's start.
    #[inline]
    fn roll(&mut self, limit: &Limit, at_ms: u64) -> u64 {
        let elapsed_ms = at_ms % limit.window_ms();
        let same_window = self.latest_ms >= at_ms - elapsed_ms;
        if !same_window {
            self.current = 0;
        }
        self.latest_ms = at_ms;
        elapsed_ms
    }

    fn latest_ms(&self) -> u64 {
        self.latest_ms
    }

    fn used_scaled(&self, limit: &Limit, _elapsed_ms: u64) -> u128 {
        limit.scale_tokens(self.current)
    }

    /// Nothing comes back before the next window begins, and then everything does.
    fn wait_ms(&self, limit: &Limit, elapsed_ms: u64, _cost: u64) -> u64 {
        limit.window_ms() - elapsed_ms
    }

    /// Saturating is exact: a counter at u64::MAX is at or above N, which already refuses
    /// every cost until the window ends, as any larger count would.
    fn spend(&mut self, cost: u64) {
        self.current = self.current.saturating_add(cost);
    }

    /// The reservation's tokens count only while its window lasts.
    fn adjust(
        &mut self,
        _limit: &Limit,
        elapsed_ms: u64,
        reserved_at_ms: u64,
        difference: Difference,
    ) {
        if reserved_at_ms >= self.latest_ms - elapsed_ms {
            self.current = difference.applied_to_u64(self.current);
        }
    }
}
