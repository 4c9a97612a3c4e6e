//! The hash of the concurrent keyed limiter's maps: keyed by three random words drawn once
//! per limiter, one multiplication per word of key, and one more to finish.
//!
//! std's `RandomState` (SipHash-1-3) takes about as long to hash an ESI key `(u32, u64)` as
//! the rest of a packed decision; this takes a few cycles. Each word of the key is folded
//! into an accumulator by a 64 × 64 → 128-bit multiplication whose two halves are xored
//! (`folded_multiply`), the construction of foldhash, hashbrown's default hasher, and of
//! aHash's fallback. Every word of the seed comes from a `RandomState` (the operating
//! system's randomness), so someone choosing keys to collide, to slow one shard's table
//! down, cannot work out which keys collide without the seed; the map stays fast for keys
//! chosen by clients. It is not a cryptographic function, as SipHash is: a client able to
//! time many lookups very precisely has more to go on than against SipHash.

use core::hash::{BuildHasher, Hasher};

/// Builds [`SeededHasher`]s with one limiter's seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeededState {
    /// Where every hash starts.
    start: u64,
    /// The odd multiplier every word is folded with.
    multiplier: u64,
    /// What the accumulator is folded with once more when the hash is read.
    finisher: u64,
}

impl SeededState {
    /// A fresh random seed.
    pub(crate) fn new() -> SeededState {
        // RandomState's keys are random, and differ between instances; its hashes of two
        // constants are as hard to guess as the keys themselves.
        let random = std::hash::RandomState::new();
        SeededState {
            start: random.hash_one(0x243f_6a88_85a3_08d3_u64),
            multiplier: random.hash_one(0x1319_8a2e_0370_7344_u64) | 1,
            finisher: random.hash_one(0xa409_3822_299f_31d0_u64),
        }
    }
}

impl BuildHasher for SeededState {
    type Hasher = SeededHasher;

    #[inline]
    fn build_hasher(&self) -> SeededHasher {
        SeededHasher {
            accumulator: self.start,
            multiplier: self.multiplier,
            finisher: self.finisher,
        }
    }
}

/// One key's hash being computed; see the module's documentation.
pub(crate) struct SeededHasher {
    accumulator: u64,
    multiplier: u64,
    finisher: u64,
}

/// The 128-bit product of `a` and `b`, its halves xored.
#[inline]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

impl SeededHasher {
    #[inline]
    fn fold_in(&mut self, word: u64) {
        self.accumulator = folded_multiply(self.accumulator ^ word, self.multiplier);
    }
}

impl Hasher for SeededHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.fold_in(u64::from_le_bytes(word));
        }
        // The length last, so that bytes ending in zeros do not hash as fewer bytes padded.
        self.fold_in(bytes.len() as u64);
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.fold_in(value.into());
    }

    #[inline]
    fn write_u16(&mut self, value: u16) {
        self.fold_in(value.into());
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.fold_in(value.into());
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.fold_in(value);
    }

    #[inline]
    fn write_u128(&mut self, value: u128) {
        self.fold_in(value as u64);
        self.fold_in((value >> 64) as u64);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.fold_in(value as u64);
    }

    /// One more fold, with a second seed word, as foldhash finishes: with one multiplier
    /// alone, the last word's low bits reach the hash's low bits unevenly for some seeds
    /// (consecutive keys crowding a few of a table's buckets, four times the average or
    /// more, in about one seed in forty).
    #[inline]
    fn finish(&self) -> u64 {
        folded_multiply(self.accumulator, self.finisher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Keys that differ in one bit, or in a trailing zero byte, hash apart; and two limiters
    /// hash the same key differently.
    #[test]
    fn near_keys_hash_apart_and_seeds_differ() {
        let state = SeededState::new();
        let hashes: HashSet<u64> = (0..10_000_u64)
            .map(|n| state.hash_one((7_u32, 90_000_000 + n)))
            .collect();
        assert_eq!(hashes.len(), 10_000);
        assert_ne!(state.hash_one("ab"), state.hash_one("ab\0"));
        assert_ne!(
            state.hash_one(b"ab".as_slice()),
            state.hash_one(b"ab\0".as_slice())
        );
        assert_ne!(
            SeededState::new().hash_one(42_u64),
            SeededState::new().hash_one(42_u64)
        );
    }

    /// The top 7 bits (hashbrown's tag) and the low bits (its bucket) of consecutive keys
    /// spread evenly: no value of either is more than twice as common as the average.
    #[test]
    fn consecutive_keys_spread_in_the_bits_a_table_uses() {
        let state = SeededState::new();
        let mut tags = [0_u32; 128];
        let mut buckets = [0_u32; 1024];
        for n in 0..128 * 1024_u64 {
            let hash = state.hash_one((7_u32, n));
            tags[(hash >> 57) as usize] += 1;
            buckets[(hash & 1023) as usize] += 1;
        }
        assert!(tags.iter().all(|&count| count < 2 * 1024), "{tags:?}");
        assert!(buckets.iter().all(|&count| count < 2 * 128));
    }
}
