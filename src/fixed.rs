//! The fixed window: one counter, emptied at every multiple of W.
//!
//! The simplest limiter and the one with the best-known flaw: a burst at the end of one
//! window and another at the start of the next let 2N tokens through in a few
//! milliseconds. It is here to be compared against, and for the APIs that really use it.

use crate::limit::Limit;
use crate::state::{Rolling, Usage};

/// The tokens spent in the window of `latest_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FixedState {
    current: u64,
    latest_ms: u64,
}

impl Rolling for FixedState {
    fn rolled(&self, limit: &Limit, at_ms: u64) -> FixedState {
        let same_window = at_ms / limit.window_ms() == self.latest_ms / limit.window_ms();
        FixedState {
            current: if same_window { self.current } else { 0 },
            latest_ms: at_ms,
        }
    }

    fn latest_ms(&self) -> u64 {
        self.latest_ms
    }

    fn usage(&self, limit: &Limit) -> Usage {
        Usage {
            used_scaled: limit.scale(self.current),
            counters: None,
        }
    }

    /// Nothing comes back before the next window begins, and then everything does.
    fn wait_ms(&self, limit: &Limit, _cost: u64) -> u64 {
        limit.window_ms() - self.latest_ms % limit.window_ms()
    }

    /// Saturating is exact: a counter at u64::MAX is at or above N, which already refuses
    /// every cost until the window ends, as any larger count would.
    fn spend(&mut self, _limit: &Limit, cost: u64) {
        self.current = self.current.saturating_add(cost);
    }
}
