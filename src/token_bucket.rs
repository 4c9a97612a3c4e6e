//! The token bucket: capacity N, refilled continuously at N tokens per W ms.
//!
//! The classic traps are refilling after the check instead of before it, and keeping the
//! level as a float that drifts or as an integer that drops fractions (Go's x/time/rate,
//! golang/go #34861 and #46579). Here the state keeps the tokens in use, scaled by W: each
//! millisecond gives back exactly N scaled units, so no fraction of a token is ever lost.
//! The bucket starts full.

use crate::limit::Limit;
use crate::state::{saturate_ms, Rolling, Usage};

/// The tokens taken out of the bucket, scaled by W, as of `latest_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TokenBucketState {
    /// `(N − tokens) × W`: 0 when full. Above N × W only after `record`.
    used_scaled: u128,
    latest_ms: u64,
}

impl Rolling for TokenBucketState {
    /// Refills up to `at_ms`: N scaled units per millisecond, never above capacity.
    fn rolled(&self, limit: &Limit, at_ms: u64) -> TokenBucketState {
        let refill = u128::from(limit.tokens()) * u128::from(at_ms - self.latest_ms);
        TokenBucketState {
            used_scaled: self.used_scaled.saturating_sub(refill),
            latest_ms: at_ms,
        }
    }

    fn latest_ms(&self) -> u64 {
        self.latest_ms
    }

    fn usage(&self, _limit: &Limit) -> Usage {
        Usage {
            used_scaled: self.used_scaled,
            counters: None,
        }
    }

    /// The smallest d ≥ 1 with `used − N × d + cost × W ≤ N × W`: a ceiling division.
    fn wait_ms(&self, limit: &Limit, cost: u64) -> u64 {
        let missing = self
            .used_scaled
            .saturating_add(limit.scale(cost))
            .saturating_sub(limit.scaled());
        saturate_ms(missing.div_ceil(u128::from(limit.tokens())))
    }

    fn spend(&mut self, limit: &Limit, cost: u64) {
        self.used_scaled = self.used_scaled.saturating_add(limit.scale(cost));
    }
}
