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

use crate::algorithms::state::{saturate_ms, Difference, Rolling};
use crate::values::decision::Counters;
use crate::values::limit::Limit;
use crate::values::tokens::{div_rem_wide, mul_wide};

/// A floating window's counters, 40 bytes: see [`crate::KeyedLimiter`] for what a key costs.
///
/// The counters are 128-bit because [`record`](crate::state::State::record) may charge any number
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
    /// A state whose latest time is `latest_ms`, with counters that fit a `u64`: the
    /// concurrent limiter's packed bucket, unpacked.
    pub(crate) fn from_counters(previous: u64, current: u64, latest_ms: u64) -> FloatingState {
        FloatingState {
            previous: previous.into(),
            current: current.into(),
            latest_ms,
        }
    }

    /// `previous` and `current`.
    #[cfg(feature = "std")]
    pub(crate) fn counters(&self) -> (u128, u128) {
        (self.previous, self.current)
    }
}

impl Rolling for FloatingState {
    /// How far into its window the latest time is, in ms.
    type Position = u64;

    /// Moving into the next window makes `previous = current, current = 0`; skipping a
    /// whole window empties both. One division finds where `at_ms` falls; which window the
    /// latest time was in then follows by comparing it with that window's start.
    #[inline]
    fn roll(&mut self, limit: &Limit, at_ms: u64) -> u64 {
        let window_ms = limit.window_ms();
        let elapsed_ms = at_ms % window_ms;
        let start_ms = at_ms - elapsed_ms;
        // latest_ms ≤ at_ms, so it is in this window, in the one before (which began
        // W before this one), or earlier; written without subtracting W from start_ms,
        // which is 0 in the first window.
        if self.latest_ms >= start_ms {
            // The same window: the counters stand.
        } else if start_ms - self.latest_ms <= window_ms {
            (self.previous, self.current) = (self.current, 0);
        } else {
            (self.previous, self.current) = (0, 0);
        }
        self.latest_ms = at_ms;
        elapsed_ms
    }

    fn latest_ms(&self) -> u64 {
        self.latest_ms
    }

    /// `used × W = previous × (W − e) + current × W`, exact.
    #[inline]
    fn used_scaled(&self, limit: &Limit, elapsed_ms: u64) -> u128 {
        let overlap_ms = limit.window_ms() - elapsed_ms;
        let previous = match u64::try_from(self.previous) {
            // A u64 times a u64 fits a u128: one multiplication.
            Ok(previous) => mul_wide(previous, overlap_ms),
            Err(_) => self.previous.saturating_mul(u128::from(overlap_ms)),
        };
        // Saturating is exact enough here: a sum past u128::MAX is over every N × W.
        previous.saturating_add(limit.scale(self.current))
    }

    fn counters(&self, limit: &Limit, elapsed_ms: u64) -> Option<Counters> {
        Some(Counters {
            previous: self.previous,
            current: self.current,
            elapsed_ms,
            window_ms: limit.window_ms(),
        })
    }

    /// Within a window `previous × (W − e)` only shrinks as e grows, so the first e that
    /// fits is found by one division: `previous × (W − e) ≤ (N − current − cost) × W`.
    /// When `current + cost > N` nothing in this window fits, and the same division is done
    /// for the next window, where `previous` will be today's `current`.
    fn wait_ms(&self, limit: &Limit, elapsed_ms: u64, cost: u64) -> u64 {
        let window = u128::from(limit.window_ms());
        let elapsed = u128::from(elapsed_ms);
        let tokens = u128::from(limit.tokens());
        let (previous, current, cost) = (self.previous, self.current, u128::from(cost));
        let first_fit = |spent: u128, room: u128| window - fitting_share(room, spent, window);

        let wait = if current <= tokens - cost {
            // Denied with room for the cost once enough of `previous` slides out, so previous > 0.
            first_fit(previous, (tokens - current - cost) * window).saturating_sub(elapsed)
        } else {
            // current > N − cost ≥ 0, so current > 0.
            (window - elapsed) + first_fit(current, (tokens - cost) * window)
        };
        saturate_ms(wait)
    }

    fn spend(&mut self, cost: u64) {
        // Saturating only after 2^64 charges of u64::MAX: past any reachable use.
        self.current = self.current.saturating_add(u128::from(cost));
    }

    /// The reservation's tokens are in `current` while its window lasts and in `previous`
    /// through the next; after that they no longer count.
    fn adjust(
        &mut self,
        limit: &Limit,
        elapsed_ms: u64,
        reserved_at_ms: u64,
        difference: Difference,
    ) {
        let start_ms = self.latest_ms - elapsed_ms;
        if reserved_at_ms >= start_ms {
            self.current = difference.applied_to(self.current);
        } else if start_ms - reserved_at_ms <= limit.window_ms() {
            self.previous = difference.applied_to(self.previous);
        }
    }

    fn from_window_counters(previous: u64, current: u64, latest_ms: u64) -> Option<Self> {
        Some(FloatingState::from_counters(previous, current, latest_ms))
    }
}

/// `min(room / spent, window)`: how many ms of a previous window that spent `spent` tokens
/// may still overlap before the request fits (the first fitting offset is `W` minus it).
/// Callers guarantee `spent > 0`. When all three fit a `u64`, as they do unless `record`
/// pushed a counter past 2^64 or N × W is beyond 2^64, a `u64` division gives the same
/// quotient as the `u128` one, at a fraction of its cost.
fn fitting_share(room: u128, spent: u128, window: u128) -> u128 {
    match (u64::try_from(room), u64::try_from(spent)) {
        (Ok(room), Ok(spent)) => u128::from(room / spent).min(window),
        _ => div_rem_wide(room, spent).0.min(window),
    }
}
