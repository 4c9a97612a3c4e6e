//! A floating window's bucket in one `u64`, for the concurrent keyed limiter's
//! compare-and-swap: `previous`, `current`, and how far into the window the latest decision
//! fell.
//!
//! The word holds no window number. [`ConcurrentKeyedLimiter`](crate::ConcurrentKeyedLimiter)
//! keeps, per shard, the window every packed word of that shard belongs to, and rolls all of
//! them into the next window at once, under the shard's write lock, before any decision is
//! made in it (see `src/stores/concurrent.rs`). A window number stored in the word, wrapping in the
//! bits left over, could alias: a key idle for a multiple of its period would look current.
//! With no number stored, there is nothing to alias.
//!
//! ```text
//!  63                                                             0
//! [ previous: B bits ][ current: B bits ][ latest offset: E bits ]
//! ```
//!
//! E is the number of bits of W − 1 (offsets run from 0 to W − 1), and B = ⌊(64 − E) / 2⌋.
//! A limit is packed when N < 2^B, so that no allowed `hit` can carry a counter past the
//! field: `current` only grows by an allowed cost, and only up to N. `record`, and a settle
//! charging more than was reserved, may charge beyond; a charge that would not fit moves the key to the wide
//! [`FloatingState`](crate::FloatingState) instead, so no count is ever cut.
//!
//! | limit | E | B | largest packed N |
//! |---|---:|---:|---:|
//! | `6/8s` | 13 | 25 | 33,554,431 |
//! | `150/15m` | 20 | 22 | 4,194,303 |
//! | `3600/1h` | 22 | 21 | 2,097,151 |
//! | `86400/24h` | 27 | 18 | 262,143 |
//!
//! The offset of the latest decision is what makes the compare-and-swap exact. It only
//! grows within a window, and each decision is made at no earlier a time than it, so a
//! decision whose clock reading went stale while another thread decided for the same key
//! (a denial, which spends nothing, included) finds the word changed, and decides again.

// Under `--cfg loom` the atomic is loom's, so that tests/loom/packed.rs explores every
// interleaving of the compare-and-swap below.
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

use crate::algorithms::floating::FloatingState;
use crate::algorithms::state::{decision, peek_rolled, record_rolled, settle_rolled, State, Usage};
use crate::values::decision::{Counters, Decision, Outcome};
use crate::values::limit::Limit;

/// How a limit's bucket is laid out in a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packing {
    /// E: the width of the latest decision's offset into the window.
    offset_bits: u32,
    /// B: the width of each counter.
    counter_bits: u32,
}

/// A packed bucket, unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packed {
    /// Tokens spent in the window before the shard's window.
    pub previous: u64,
    /// Tokens spent in the shard's window.
    pub current: u64,
    /// How far into the shard's window the latest decision for this key fell, in ms.
    pub latest_offset_ms: u64,
}

impl Packing {
    /// The layout for `limit`, or `None` when its N does not fit the counters left beside
    /// the offset.
    pub(crate) fn new(limit: &Limit) -> Option<Packing> {
        let offset_bits = u64::BITS - (limit.window_ms() - 1).leading_zeros();
        let counter_bits = (u64::BITS - offset_bits) / 2;
        let packing = Packing {
            offset_bits,
            counter_bits,
        };
        // A window longer than 2^62 ms leaves no bits for the counters.
        (counter_bits > 0 && limit.tokens() <= packing.max_count()).then_some(packing)
    }

    /// The largest count a counter holds: 2^B − 1.
    pub(crate) fn max_count(&self) -> u64 {
        (1 << self.counter_bits) - 1
    }

    /// The word of `bucket`, whose counters must be at most [`max_count`](Self::max_count)
    /// and offset below W.
    #[inline]
    pub(crate) fn pack(&self, bucket: Packed) -> u64 {
        (bucket.previous << (self.counter_bits + self.offset_bits))
            | (bucket.current << self.offset_bits)
            | bucket.latest_offset_ms
    }

    #[inline]
    pub(crate) fn unpack(&self, word: u64) -> Packed {
        let counter_mask = self.max_count();
        // offset_bits < 63 whenever a packing exists, so the shift cannot overflow.
        let offset_mask = (1 << self.offset_bits) - 1;
        Packed {
            previous: (word >> (self.counter_bits + self.offset_bits)) & counter_mask,
            current: (word >> self.offset_bits) & counter_mask,
            latest_offset_ms: word & offset_mask,
        }
    }
}

/// `hit` on a packed bucket, `elapsed_ms` into its window, at `at_ms`: the floating
/// window's rule as `src/algorithms/floating.rs` and `src/algorithms/state.rs` apply it, in `u64`, which every
/// number of a packed limit fits. Counters below 2^B and a window of at most 2^E ms, with
/// 2B + E ≤ 64, keep `previous × (W − e) + current × W` below 2^64, and N × W too. Returns
/// the decision and `current` after it; the tests compare both with the core's on random
/// buckets.
#[inline]
pub(crate) fn hit(
    limit: &Limit,
    bucket: Packed,
    elapsed_ms: u64,
    at_ms: u64,
    cost: u64,
) -> (Decision, u64) {
    let window_ms = limit.window_ms();
    let tokens = limit.tokens();
    let Packed {
        previous, current, ..
    } = bucket;
    let used = previous * (window_ms - elapsed_ms) + current * window_ms;
    let (outcome, spent) = if cost == 0 {
        (Outcome::Allowed, 0)
    } else if cost > tokens {
        (Outcome::ExceedsLimit, 0)
    } else if used <= (tokens - cost) * window_ms {
        (Outcome::Allowed, cost)
    } else {
        // The first offset at which `spent × (W − offset) ≤ room`.
        let first_fit = |spent: u64, room: u64| window_ms - (room / spent).min(window_ms);
        let retry_after_ms = if current <= tokens - cost {
            // Room for the cost once enough of `previous` slides out, so previous > 0.
            first_fit(previous, (tokens - current - cost) * window_ms).saturating_sub(elapsed_ms)
        } else {
            // current > N − cost ≥ 0, so current > 0; the next window starts with it.
            (window_ms - elapsed_ms) + first_fit(current, (tokens - cost) * window_ms)
        };
        (Outcome::Denied { retry_after_ms }, 0)
    };
    let current = current + spent;
    let usage = Usage {
        used_scaled: (used + spent * window_ms).into(),
        counters: Some(Counters {
            previous: previous.into(),
            current: current.into(),
            elapsed_ms,
            window_ms,
        }),
    };
    (decision(limit, at_ms, cost, outcome, usage), current)
}

/// What a request does to its bucket besides being decided.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Charge {
    /// Spend the cost if it fits ([`State::hit`]).
    Hit,
    /// Spend the cost whether it fits or not ([`State::record`]).
    Record,
    /// Settle a reservation at the cost ([`State::settle`]).
    Settle { reserved_at_ms: u64, reserved: u64 },
}

impl Charge {
    /// The charge on a whole state, at the effective time `at_ms`.
    pub(crate) fn apply<S: State>(
        self,
        state: &mut S,
        limit: &Limit,
        at_ms: u64,
        cost: u64,
    ) -> Decision {
        match self {
            Charge::Hit => state.hit(limit, at_ms, cost),
            Charge::Record => state.record(limit, at_ms, cost),
            Charge::Settle {
                reserved_at_ms,
                reserved,
            } => state.settle(limit, at_ms, reserved_at_ms, reserved, cost),
        }
    }
}

/// A bucket with nothing spent in it.
pub(crate) const EMPTY: Packed = Packed {
    previous: 0,
    current: 0,
    latest_offset_ms: 0,
};

/// Decides `hit`, `record` or `settle` on a packed word by compare-and-swap, `elapsed_ms`
/// into the shard's window (which starts at `start_ms`); `None` when a record or a settle
/// would carry a counter past the packed counters, leaving the word as it was.
///
/// Each try decides at no earlier a time than the word's latest offset, and writes its own
/// time there, so the word changes with every decision made at a later time, a denial's
/// too. A try whose word went stale while it decided (another thread decided for the key,
/// at a later time or spending) fails to swap and decides again from the new word: the
/// key's decisions follow one another as in the sequential core, at nondecreasing times.
/// A word may change and change back (a refund undoing a hit at the same offset), and a
/// swap then succeeds on a word other threads have been through; that is harmless, as the
/// word is the bucket's whole state: a decision made from it holds whenever it is the
/// state, at any time no earlier than its offset.
///
/// Only the word's own modification order matters here, so every access is relaxed; the
/// shard's lock orders the word against the sweeps that roll it.
#[inline(always)]
pub(crate) fn charge_packed(
    limit: &Limit,
    packing: Packing,
    word: &AtomicU64,
    start_ms: u64,
    elapsed_ms: u64,
    cost: u64,
    charge: Charge,
) -> Option<Decision> {
    let mut seen = word.load(Ordering::Relaxed);
    loop {
        let bucket = packing.unpack(seen);
        let elapsed_ms = elapsed_ms.max(bucket.latest_offset_ms);
        let at_ms = start_ms + elapsed_ms;
        let (decision, previous, current) = match charge {
            // An allowed hit keeps `current` at most N, which the counters hold.
            Charge::Hit => {
                let (decision, current) = hit(limit, bucket, elapsed_ms, at_ms, cost);
                (decision, bucket.previous, current)
            }
            Charge::Record | Charge::Settle { .. } => {
                let mut state =
                    FloatingState::from_counters(bucket.previous, bucket.current, at_ms);
                let decision = match charge {
                    Charge::Settle {
                        reserved_at_ms,
                        reserved,
                    } => settle_rolled(
                        &mut state,
                        limit,
                        elapsed_ms,
                        reserved_at_ms,
                        reserved,
                        cost,
                    ),
                    _ => record_rolled(&mut state, limit, elapsed_ms, cost),
                };
                let (previous, current) = state.counters();
                let fits = |count: u128| {
                    u64::try_from(count)
                        .ok()
                        .filter(|&count| count <= packing.max_count())
                };
                (decision, fits(previous)?, fits(current)?)
            }
        };
        let next = packing.pack(Packed {
            previous,
            current,
            latest_offset_ms: elapsed_ms,
        });
        if next == seen {
            return Some(decision);
        }
        match word.compare_exchange_weak(seen, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(decision),
            Err(actual) => seen = actual,
        }
    }
}

/// `peek` on a packed word of the shard whose window starts at `start_ms`. The clock may be
/// in a later window that no request has swept the shard into yet: the counters are rolled
/// here, as the sweep would roll them, without writing.
pub(crate) fn peek_packed(
    limit: &Limit,
    packing: Packing,
    word: u64,
    start_ms: u64,
    at_ms: u64,
    cost: u64,
) -> Decision {
    let window_ms = limit.window_ms();
    let bucket = packing.unpack(word);
    let at_ms = at_ms.max(start_ms + bucket.latest_offset_ms);
    let window_at_ms = at_ms - at_ms % window_ms;
    let bucket = roll(bucket, windows_between(start_ms, window_at_ms, window_ms));
    let state = FloatingState::from_counters(bucket.previous, bucket.current, at_ms);
    peek_rolled(&state, limit, at_ms, at_ms - window_at_ms, cost)
}

/// A packed bucket `windows` windows later: the floating window's roll.
pub(crate) fn roll(bucket: Packed, windows: u64) -> Packed {
    match windows {
        0 => bucket,
        1 => Packed {
            previous: bucket.current,
            current: 0,
            latest_offset_ms: 0,
        },
        _ => Packed {
            previous: 0,
            current: 0,
            latest_offset_ms: 0,
        },
    }
}

/// How many windows the window starting at `from_ms` is before the time `to_ms`, ≥ `from_ms`:
/// 0, 1 or 2 for anything further (all that rolling needs), without dividing.
pub(crate) fn windows_between(from_ms: u64, to_ms: u64, window_ms: u64) -> u64 {
    let apart_ms = to_ms - from_ms;
    if apart_ms < window_ms {
        0
    } else if apart_ms - window_ms < window_ms {
        1
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(text: &str) -> Limit {
        text.parse().expect("a valid limit")
    }

    #[test]
    fn the_documented_bounds() {
        #[rustfmt::skip]
        let cases = [
            // limit,       E,  B
            ("6/8s",       13, 25),
            ("150/15m",    20, 22),
            ("3600/1h",    22, 21),
            ("86400/24h",  27, 18),
            ("1/1ms",       0, 32),
            ("1/2ms",       1, 31),
        ];
        for (text, offset_bits, counter_bits) in cases {
            let packing = Packing::new(&limit(text)).expect("packed");
            assert_eq!(
                (packing.offset_bits, packing.counter_bits),
                (offset_bits, counter_bits),
                "{text}"
            );
        }
    }

    #[test]
    fn packed_just_at_the_bound_and_not_beyond() {
        let at = Limit::new(33_554_431, 8_000).expect("valid");
        assert!(Packing::new(&at).is_some());
        let beyond = Limit::new(33_554_432, 8_000).expect("valid");
        assert_eq!(Packing::new(&beyond), None);
        // A window of 2^62 ms leaves one bit a counter; from 2^62 + 1 ms on, none.
        assert!(Packing::new(&Limit::new(1, 1 << 62).expect("valid")).is_some());
        assert_eq!(Packing::new(&Limit::new(2, 1 << 62).expect("valid")), None);
        assert_eq!(
            Packing::new(&Limit::new(1, (1 << 62) + 1).expect("valid")),
            None
        );
        assert_eq!(Packing::new(&Limit::new(1, u64::MAX).expect("valid")), None);
    }

    /// The packed `hit` answers as the core's on the same bucket, field for field, and
    /// leaves the same `current`: random buckets (empty, full, past N after a record),
    /// offsets and costs (0, N, above N) under limits from 1 ms to the packed bound.
    #[test]
    fn hit_answers_as_the_core() {
        use crate::algorithms::floating::FloatingState;
        use crate::algorithms::state::hit_rolled;

        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut below = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let limits = [
            limit("1/1ms"),
            limit("6/8s"),
            limit("150/15m"),
            limit("3600/1h"),
            Limit::new(33_554_431, 8_000).expect("valid"),
            Limit::new(15, 1 << 56).expect("valid"),
            Limit::new(1, 1 << 62).expect("valid"),
        ];
        for limit in limits {
            let packing = Packing::new(&limit).expect("packed");
            let (tokens, window_ms) = (limit.tokens(), limit.window_ms());
            for _ in 0..20_000 {
                let mut count = || match below(4) {
                    0 => 0,
                    1 => tokens.min(packing.max_count()),
                    2 => packing.max_count(),
                    _ => below(packing.max_count() + 1),
                };
                let (previous, current) = (count(), count());
                let elapsed_ms = match below(3) {
                    0 => 0,
                    1 => window_ms - 1,
                    _ => below(window_ms),
                };
                let cost = match below(5) {
                    0 => 0,
                    1 => tokens,
                    2 => tokens + 1 + below(3),
                    _ => 1 + below(tokens),
                };
                let at_ms = 7 * window_ms.min(1 << 40) + elapsed_ms;
                let bucket = Packed {
                    previous,
                    current,
                    latest_offset_ms: 0,
                };
                let (decision, after) = hit(&limit, bucket, elapsed_ms, at_ms, cost);
                let mut state = FloatingState::from_counters(previous, current, at_ms);
                let expected = hit_rolled(&mut state, &limit, at_ms, elapsed_ms, cost);
                assert_eq!(
                    decision, expected,
                    "{limit} {bucket:?} at {elapsed_ms}, cost {cost}"
                );
                assert_eq!(u128::from(after), state.counters().1);
            }
        }
    }

    #[test]
    fn round_trips_at_the_extremes() {
        for text in ["1/1ms", "6/8s", "150/15m", "3600/1h"] {
            let limit = limit(text);
            let packing = Packing::new(&limit).expect("packed");
            for bucket in [
                Packed {
                    previous: 0,
                    current: 0,
                    latest_offset_ms: 0,
                },
                Packed {
                    previous: packing.max_count(),
                    current: packing.max_count(),
                    latest_offset_ms: limit.window_ms() - 1,
                },
                Packed {
                    previous: 1,
                    current: packing.max_count() - 1,
                    latest_offset_ms: limit.window_ms() / 2,
                },
            ] {
                assert_eq!(packing.unpack(packing.pack(bucket)), bucket, "{text}");
            }
        }
    }
}
