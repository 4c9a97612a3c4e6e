//! The token bucket: capacity N, refilled continuously at N tokens per W ms.
//!
//! The classic traps are refilling after the check instead of before it, and keeping the
//! level as a float that drifts or as an integer that drops fractions (Go's x/time/rate,
//! golang/go #34861 and #46579). Here the state keeps the tokens taken out of the bucket
//! as whole tokens plus a fraction in 1/W-token units: each millisecond gives back exactly
//! N/W tokens, so no fraction of a token is ever lost. The bucket starts full.

use crate::algorithms::state::{saturate_ms, Difference, Rolling};
use crate::values::limit::Limit;
use crate::values::tokens::div_rem_wide;

/// The tokens taken out of the bucket as of `latest_ms`: `owed + fraction / W`.
///
/// Whole and fractional parts are kept apart so that `record` can push the bucket far
/// into debt (more than u128::MAX / W tokens) without the sum overflowing: `owed` would
/// need 2^64 charges of u64::MAX to saturate, and a bucket that deep refills past the end
/// of a u64 clock either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TokenBucketState {
    /// Whole tokens taken out: 0 when full, N when empty, above N only after `record`.
    owed: u128,
    /// The fraction of a token taken out, in 1/W units: always below W.
    fraction: u64,
    latest_ms: u64,
}

impl TokenBucketState {
    /// The tokens taken out minus `(N − cost) × W`, in 1/W units, when positive: how much
    /// has to come back before `cost` fits. `None` when that overflows u128, which is more
    /// than any u64 clock can refill.
    fn excess_scaled(&self, limit: &Limit, cost: u64) -> Option<u128> {
        let allowed_owed = u128::from(limit.tokens() - cost);
        let whole = self.owed.checked_sub(allowed_owed)?;
        whole
            .checked_mul(u128::from(limit.window_ms()))?
            .checked_add(u128::from(self.fraction))
    }
}

impl Rolling for TokenBucketState {
    /// The bucket has no windows: its state alone says where it stands.
    type Position = ();

    /// Refills up to `at_ms`: N/W tokens per millisecond, never above capacity.
    #[inline]
    fn roll(&mut self, limit: &Limit, at_ms: u64) {
        // N × Δt / W tokens come back: split into whole tokens and 1/W units.
        let (whole, part) = refilled(limit, at_ms - self.latest_ms);
        let (owed, fraction) = match self.owed.checked_sub(whole) {
            Some(owed) if self.fraction >= part => (owed, self.fraction - part),
            // Borrow one whole token: fraction + W − part < W.
            Some(owed) if owed > 0 => (owed - 1, self.fraction + (limit.window_ms() - part)),
            _ => (0, 0),
        };
        *self = TokenBucketState {
            owed,
            fraction,
            latest_ms: at_ms,
        };
    }

    fn latest_ms(&self) -> u64 {
        self.latest_ms
    }

    /// Saturates only past u128::MAX, which is above N × W for every limit, so decisions
    /// made on it stay exact; `wait_ms` works on the exact parts.
    fn used_scaled(&self, limit: &Limit, _: ()) -> u128 {
        limit
            .scale(self.owed)
            .saturating_add(u128::from(self.fraction))
    }

    /// The smallest d ≥ 1 with `used − N × d ≤ (N − cost) × W`: a ceiling division.
    fn wait_ms(&self, limit: &Limit, _: (), cost: u64) -> u64 {
        match self.excess_scaled(limit, cost) {
            Some(excess) => {
                let (whole, part) = div_rem_wide(excess, u128::from(limit.tokens()));
                saturate_ms(whole + u128::from(part > 0))
            }
            None => u64::MAX,
        }
    }

    fn spend(&mut self, cost: u64) {
        self.owed = self.owed.saturating_add(u128::from(cost));
    }

    /// At the settle's time, for `W` after the reservation: more is taken out as `spend`
    /// takes it; a refund comes back but never past full, where `owed` and `fraction` are 0.
    fn adjust(&mut self, limit: &Limit, _: (), reserved_at_ms: u64, difference: Difference) {
        if self.latest_ms - reserved_at_ms >= limit.window_ms() {
            return;
        }
        match difference {
            Difference::More(tokens) => self.spend(tokens),
            Difference::Less(tokens) => match self.owed.checked_sub(u128::from(tokens)) {
                Some(owed) => self.owed = owed,
                // Fewer whole tokens are out than come back: the bucket is full.
                None => (self.owed, self.fraction) = (0, 0),
            },
        }
    }
}

/// The tokens `elapsed_ms` gives back, `N × elapsed / W`, as whole tokens and 1/W units.
/// In `u64` when `N × elapsed` fits one, as it does for any gap shorter than 2^64 / N ms:
/// the same quotient and remainder as in `u128`, at a fraction of the cost.
fn refilled(limit: &Limit, elapsed_ms: u64) -> (u128, u64) {
    let window = limit.window_ms();
    match limit.tokens().checked_mul(elapsed_ms) {
        Some(refill) => (u128::from(refill / window), refill % window),
        None => {
            let refill = u128::from(limit.tokens()) * u128::from(elapsed_ms);
            let (whole, part) = div_rem_wide(refill, u128::from(window));
            // The remainder is below W, a u64.
            (whole, part as u64)
        }
    }
}
