//! A keyed limiter that many threads share through `&self`, deciding exactly as the
//! sequential [`KeyedLimiter`](crate::KeyedLimiter) does: the buckets are split into shards,
//! each a `HashMap` behind its own `Mutex` and chosen by the key's hash, so threads deciding
//! for keys in different shards never wait for each other, and a key's bucket is only ever
//! read and changed by one thread at a time, which is what keeps "never N + 1" exact. The
//! shared clock (the latest time any request brought) is one atomic, moved forward with
//! `fetch_max`; idle buckets are dropped shard by shard, as the keyed limiter drops them.

use core::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use core::num::NonZeroUsize;
use core::sync::atomic::{AtomicU64, Ordering};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::decision::Decision;
use crate::floating::FloatingState;
use crate::keyed::from_callers_clock;
use crate::limit::Limit;
use crate::state::State;

/// One bucket per key, all under the same limit, shared by threads.
///
/// Every call takes `&self`, so one limiter behind an `Arc` (or a `static`) serves every
/// thread of a server. Each decision is the one [`KeyedLimiter`](crate::KeyedLimiter)
/// would make had the calls come one after the other, in the order in which they read the
/// shared clock (each reads it, and moves it, while holding its key's shard): a request is
/// decided at `max(now, latest)`, where `latest` is the latest time any earlier `hit` or
/// `record` brought, and a denial's `retry_after_ms` is told from the caller's own `now`.
/// So at one frozen time, T threads hitting a key with a limit of N, each asking for cost c,
/// spend exactly ⌊N / c⌋ × c tokens between them, what one thread alone would: never N + 1.
///
/// Memory: a bucket holding nothing that still counts is dropped when its shard is next used
/// in a later window, so, as with the keyed limiter, a key idle for two whole windows of the
/// floating window goes, and memory follows the keys active lately.
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
/// use trickle::ConcurrentKeyedLimiter;
///
/// let limiter: Arc<ConcurrentKeyedLimiter<(u32, u64)>> =
///     Arc::new(ConcurrentKeyedLimiter::new("150/15m".parse().unwrap()));
/// let threads: Vec<_> = (0..4)
///     .map(|_| {
///         let limiter = Arc::clone(&limiter);
///         thread::spawn(move || {
///             (0..100)
///                 .filter(|_| limiter.hit((7, 90_000_001), 0, 1).is_allowed())
///                 .count()
///         })
///     })
///     .collect();
/// let allowed: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
/// // 400 requests at one time for one key: exactly the limit goes in.
/// assert_eq!(allowed, 150);
/// ```
#[derive(Debug)]
pub struct ConcurrentKeyedLimiter<K, S = FloatingState> {
    limit: Limit,
    /// A power-of-two number of shards, so that picking one is a shift of the hash.
    shards: Box<[PaddedShard<K, S>]>,
    /// How far to shift a key's shard hash right to get its shard: 64 − log2(shards).
    shard_shift: u32,
    /// The latest time seen by any `hit` or `record`: the server's clock, shared by all keys.
    latest_ms: AtomicU64,
}

/// One shard's buckets, and the window in which its idle ones were last dropped.
#[derive(Debug)]
struct Shard<K, S> {
    buckets: HashMap<K, S>,
    swept_window: u64,
}

/// A locked shard on cache lines of its own: two threads locking neighbouring shards would
/// otherwise write to the same line and slow each other down although they never wait.
#[derive(Debug)]
#[repr(align(128))]
struct PaddedShard<K, S>(Mutex<Shard<K, S>>);

impl<K: Hash + Eq, S: State + Default> ConcurrentKeyedLimiter<K, S> {
    /// An empty limiter with four shards per CPU the machine offers (rounded up to a power
    /// of two): enough that two threads rarely want the same shard at once.
    pub fn new(limit: Limit) -> ConcurrentKeyedLimiter<K, S> {
        let cpus = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        ConcurrentKeyedLimiter::with_shards(
            limit,
            NonZeroUsize::new(4 * cpus).unwrap_or(NonZeroUsize::MIN),
        )
    }

    /// An empty limiter with `shards` shards, rounded up to a power of two. One shard is a
    /// single lock around a single map; more shards let more threads decide at once, for
    /// one empty map on cache lines of its own (128 bytes) each.
    pub fn with_shards(limit: Limit, shards: NonZeroUsize) -> ConcurrentKeyedLimiter<K, S> {
        let count = shards.get().next_power_of_two();
        let shards = (0..count)
            .map(|_| {
                PaddedShard(Mutex::new(Shard {
                    buckets: HashMap::new(),
                    swept_window: 0,
                }))
            })
            .collect();
        ConcurrentKeyedLimiter {
            limit,
            shards,
            // A shift by 64 would overflow: with one shard, every hash shifts to 0 or 1 by
            // 63, and the mask in `lock_shard_of` keeps it at 0.
            shard_shift: 64 - count.trailing_zeros().max(1),
            latest_ms: AtomicU64::new(0),
        }
    }

    /// The limit every key is held to.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// How many shards the buckets are split into.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Decides a request of `cost` for `key` at `now_ms`, spending the cost if it fits.
    pub fn hit(&self, key: K, now_ms: u64, cost: u64) -> Decision {
        let mut shard = self.lock_shard_of(&key);
        let at_ms = self.advance(&mut shard, now_ms);
        let decision = shard
            .buckets
            .entry(key)
            .or_default()
            .hit(&self.limit, at_ms, cost);
        drop(shard);
        from_callers_clock(decision, at_ms - now_ms)
    }

    /// What [`hit`](ConcurrentKeyedLimiter::hit) would answer for `key`, without spending or
    /// storing, and without moving the shared clock.
    pub fn peek(&self, key: &K, now_ms: u64, cost: u64) -> Decision {
        let shard = self.lock_shard_of(key);
        let at_ms = now_ms.max(self.latest_ms.load(Ordering::Relaxed));
        let decision = match shard.buckets.get(key) {
            Some(state) => state.peek(&self.limit, at_ms, cost),
            None => S::default().peek(&self.limit, at_ms, cost),
        };
        drop(shard);
        from_callers_clock(decision, at_ms - now_ms)
    }

    /// Charges `cost` to `key` after the fact, even past the limit.
    pub fn record(&self, key: K, now_ms: u64, cost: u64) -> Decision {
        let mut shard = self.lock_shard_of(&key);
        let at_ms = self.advance(&mut shard, now_ms);
        shard
            .buckets
            .entry(key)
            .or_default()
            .record(&self.limit, at_ms, cost)
    }

    /// Forgets `key`'s requests.
    pub fn reset(&self, key: &K) {
        self.lock_shard_of(key).buckets.remove(key);
    }

    /// How many keys hold a bucket: the shards are counted one after the other, so while
    /// other threads are deciding this is only a close estimate.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| lock(shard).buckets.len())
            .sum()
    }

    /// True when no key holds a bucket (with the same caveat as [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.shards
            .iter()
            .all(|shard| lock(shard).buckets.is_empty())
    }

    /// Drops, in every shard, each bucket that holds nothing still counting at `now_ms`,
    /// and gives back memory when most of a shard's table is empty. Each shard also does
    /// this by itself when it is first used in a new window; calling this sweeps the shards
    /// no request has touched lately.
    pub fn sweep(&self, now_ms: u64) {
        let at_ms = now_ms.max(self.latest_ms.load(Ordering::Relaxed));
        for shard in self.shards.iter() {
            sweep(&mut lock(shard), &self.limit, at_ms);
        }
    }

    /// The shard `key` lives in, locked, picked by the top bits of its [`ShardHasher`] hash.
    fn lock_shard_of(&self, key: &K) -> MutexGuard<'_, Shard<K, S>> {
        let hash = BuildHasherDefault::<ShardHasher>::default().hash_one(key);
        let index = (hash >> self.shard_shift) as usize & (self.shards.len() - 1);
        lock(&self.shards[index])
    }

    /// Moves the shared clock to `now_ms` (never back) and returns the time to decide at;
    /// sweeps `shard` when this is its first use in a new window. Called with the shard
    /// locked, so two requests for one key move the clock in the order they are decided:
    /// the later one is never decided at an earlier time.
    ///
    /// Sweeping costs O(keys in the shard) at most once per window per shard: amortised
    /// O(1) per request, since every key kept was active in the last two windows.
    fn advance(&self, shard: &mut Shard<K, S>, now_ms: u64) -> u64 {
        // Only a later time is written: most requests on a busy server bring a time already
        // seen, and a read leaves the clock's cache line shared between the cores.
        let seen_ms = self.latest_ms.load(Ordering::Relaxed);
        let at_ms = if now_ms > seen_ms {
            now_ms.max(self.latest_ms.fetch_max(now_ms, Ordering::Relaxed))
        } else {
            seen_ms
        };
        if at_ms / self.limit.window_ms() > shard.swept_window {
            sweep(shard, &self.limit, at_ms);
        }
        at_ms
    }
}

/// Picks a key's shard: the multiply-and-rotate hash of rustc's `FxHasher`, a few cycles
/// where the maps' keyed SipHash takes tens, and well mixed in its top bits, which are the
/// ones used. It is not keyed, so whoever chooses the keys could crowd them into one shard;
/// that costs only waiting for one lock, since within a shard the map still hashes with
/// std's randomly keyed `RandomState`, and a crowded table is no slower to search.
#[derive(Default)]
struct ShardHasher(u64);

impl ShardHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for ShardHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(value.into());
    }

    fn write_u16(&mut self, value: u16) {
        self.add(value.into());
    }

    fn write_u32(&mut self, value: u32) {
        self.add(value.into());
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Locks a shard. A thread that panicked while holding the lock cannot have left a bucket
/// half-changed (a state is replaced whole, after its decision is made), so a poisoned lock
/// is taken as it is.
fn lock<K, S>(shard: &PaddedShard<K, S>) -> MutexGuard<'_, Shard<K, S>> {
    shard.0.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Drops a shard's buckets that hold nothing still counting at `at_ms`, and gives back
/// memory when most of its table is empty.
fn sweep<K: Hash + Eq, S: State>(shard: &mut Shard<K, S>, limit: &Limit, at_ms: u64) {
    shard
        .buckets
        .retain(|_, state| !state.is_idle(limit, at_ms));
    if shard.buckets.len() < shard.buckets.capacity() / 4 {
        shard.buckets.shrink_to_fit();
    }
    shard.swept_window = shard.swept_window.max(at_ms / limit.window_ms());
}
