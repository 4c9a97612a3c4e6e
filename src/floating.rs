//! The floating window: an approximated sliding window from two counters.
//!
//! Time is cut into fixed windows aligned to multiples of W from 0: window k covers
//! [kW, (k+1)W). The state keeps `previous` (tokens spent in window k−1) and `current`
//! (tokens spent in window k). At e ms into window k, the sliding window [t−W, t] still
//! covers the share `overlap = (W − e) / W` of the previous window, so
//!
//! ```text
//! used = previous × overlap + current
//! ```
//!
//! Every comparison multiplies through by W and runs in u128:
//! `previous × (W − e) + current × W` against `N × W`. This is what Cloudflare and Upstash
//! call a sliding window, and what EVE Online's ESI calls a floating window.

use crate::decision::Counters;
use crate::limit::Limit;
use crate::state::{saturate_ms, Rolling, Usage};

/// A floating window's counters, 40 bytes: see [`crate::KeyedLimiter`] for what a key costs.
///
/// The counters are 128-bit because [`record`](crate::State::record) may charge any number
/// of `u64` costs to one window: a `u64` counter would have to saturate, and a saturated
/// `previous` slides out faster than the real one, letting requests in too early. Packed
/// to 8-byte alignment, which saves 8 of 48 bytes a key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(C, packed(8))]
pub struct FloatingState {
    /// Tokens spent in the window before the one `latest_ms` falls in.
    previous: u128,
    /// Tokens spent in the window `latest_ms` falls in.
    current: u128,
    /// The latest time seen; it also names the window the counters belong to.
    latest_ms: u64,
}

impl FloatingState {
    fn counters(&self, limit: &Limit) -> Counters {
        Counters {
            previous: self.previous,
            current: self.current,
            elapsed_ms: self.latest_ms % limit.window_ms(),
            window_ms: limit.window_ms(),
        }
    }
}

impl Rolling for FloatingState {
    /// Moving into the next window makes `previous = current, current = 0`; skipping a
    /// whole window empties both.
    fn rolled(&self, limit: &Limit, at_ms: u64) -> FloatingState {
        let window_ms = limit.window_ms();
        let (previous, current) = match at_ms / window_ms - self.latest_ms / window_ms {
            0 => (self.previous, self.current),
            1 => (self.current, 0),
            _ => (0, 0),
        };
        FloatingState {
            previous,
            current,
            latest_ms: at_ms,
        }
    }

    fn latest_ms(&self) -> u64 {
        self.latest_ms
    }

    /// `used × W = previous × (W − e) + current × W`, exact.
    fn usage(&self, limit: &Limit) -> Usage {
        let counters = self.counters(limit);
        // Saturating is exact enough here: a sum past u128::MAX is over every N × W.
        let previous = self
            .previous
            .saturating_mul(u128::from(counters.overlap_ms()));
        Usage {
            used_scaled: previous.saturating_add(limit.scale(self.current)),
            counters: Some(counters),
        }
    }

    /// Within a window `previous × (W − e)` only shrinks as e grows, so the first e that
    /// fits is found by one division: `previous × (W − e) ≤ (N − current − cost) × W`.
    /// When `current + cost > N` nothing in this window fits, and the same division is done
    /// for the next window, where `previous` will be today's `current`.
    fn wait_ms(&self, limit: &Limit, cost: u64) -> u64 {
        let window = u128::from(limit.window_ms());
        let elapsed = u128::from(self.latest_ms % limit.window_ms());
        let tokens = u128::from(limit.tokens());
        let (previous, current, cost) = (self.previous, self.current, u128::from(cost));
        // The first offset into a window whose previous window spent `spent` tokens at which
        // `spent × (W − e) ≤ room`. Callers guarantee spent > 0.
        let first_fit = |spent: u128, room: u128| window - (room / spent).min(window);

        let wait = if current <= tokens - cost {
            // Denied with room for the cost once enough of `previous` slides out, so previous > 0.
            first_fit(previous, (tokens - current - cost) * window).saturating_sub(elapsed)
        } else {
            // current > N − cost ≥ 0, so current > 0.
            (window - elapsed) + first_fit(current, (tokens - cost) * window)
        };
        saturate_ms(wait)
    }

    fn spend(&mut self, _limit: &Limit, cost: u64) {
        // Saturating only after 2^64 charges of u64::MAX: past any reachable use.
        self.current = self.current.saturating_add(u128::from(cost));
    }
}
