//! A keyed limiter that many threads share through `&self`, deciding exactly as the
//! sequential [`KeyedLimiter`](crate::KeyedLimiter) does.
//!
//! The buckets are split into shards chosen by the key's hash, each a pair of `HashMap`s
//! behind its own `RwLock`. For the floating window, when N fits (see `src/stores/packed.rs`), a
//! key's bucket is one `AtomicU64`: a decision for a key already present takes its shard's
//! lock only to read, and updates the word by compare-and-swap, so threads deciding at once,
//! even for keys of one shard, do not wait for each other, and a key costs its map slot and
//! 8 bytes. Keys are added, and each shard's packed words rolled into a new window, under
//! the write lock. Other algorithms, limits too large to pack, and keys that a `record` (or
//! a settle charging more) pushed past the packed counters keep their whole state in the second map, decided under
//! the write lock, one thread at a time.
//!
//! The shared clock (the latest time any request brought) is one atomic, moved forward with
//! `fetch_max`; idle buckets are dropped shard by shard, as the keyed limiter drops them.

use core::borrow::Borrow;
use core::hash::{BuildHasher, Hash};
use core::num::NonZeroUsize;
use std::collections::HashMap;
use std::sync::PoisonError;

// Under `--cfg loom` the atomics and locks are loom's, so that tests/loom/packed.rs can
// explore every interleaving of this very code.
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
use loom::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::algorithms::floating::FloatingState;
use crate::algorithms::reservation::{Admission, Reservation};
use crate::algorithms::state::State;
use crate::stores::keyed::from_callers_clock;
use crate::stores::packed::{
    charge_packed, peek_packed, roll, windows_between, Charge, Packed, Packing, EMPTY,
};
use crate::stores::seeded_hash::SeededState;
use crate::stores::store::{Op, Store};
use crate::values::decision::{Decision, Outcome};
use crate::values::limit::Limit;
use core::convert::Infallible;

/// One bucket per key, all under the same limit, shared by threads.
///
/// Every call takes `&self`, so one limiter behind an `Arc` (or a `static`) serves every
/// thread of a server. A request is decided at `max(now, latest)`, where `latest` is the
/// latest time any earlier `hit` or `record` brought, and a denial's `retry_after_ms` is
/// told from the caller's own `now`. For each key, the decisions are exactly those of the
/// sequential core given that key's requests one after the other, in the order in which
/// they changed the key's bucket, each at a time no earlier than the one before: so at one
/// frozen time, T threads hitting a key with a limit of N, each asking for cost c, spend
/// exactly ⌊N / c⌋ × c tokens between them, what one thread alone would: never N + 1.
///
/// Memory: for the floating window with N below the packed bound (4,194,303 for a
/// 15-minute window; `src/stores/packed.rs` has the rule), a key costs its slot in a hash map, the
/// key and one 8-byte word. A bucket holding nothing that still counts is dropped when its
/// shard is next used in a later window, so, as with the keyed limiter, a key idle for two
/// whole windows of the floating window goes, and memory follows the keys active lately.
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
/// use trickle_core::ConcurrentKeyedLimiter;
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
    /// The state a new key starts from: its algorithm, for an [`AnyState`](crate::state::AnyState).
    fresh: S,
    /// How a key's bucket fits one word; `None` unless the state is the floating window's
    /// ([`State::with_window_counters`]) and N fits.
    packing: Option<Packing>,
    /// A power-of-two number of shards, so that picking one is a shift of the hash.
    shards: Box<[PaddedShard<K, S>]>,
    /// How far to shift a key's shard hash right to get its shard: 64 − log2(shards).
    shard_shift: u32,
    /// The seed of the hash that picks a key's shard: random per limiter, and another than
    /// the maps', so that whoever chooses keys can neither crowd them into one shard nor
    /// tell which keys share one.
    shard_seed: SeededState,
    /// The latest time seen by any `hit` or `record`: the server's clock, shared by all keys.
    latest_ms: ClockLine,
    /// The most keys a new key's `hit` may find in its shard (the cap over the shards, rounded
    /// up); `usize::MAX` when there is no cap.
    keys_per_shard: usize,
}

/// A new key refused because its shard of a capped limiter
/// ([`ConcurrentKeyedLimiter::with_max_keys`]) is full of buckets that still count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyKeys {
    /// The limiter's cap.
    pub max_keys: usize,
    /// How long from the caller's `now` until the shard's next window begins, when it drops
    /// the buckets that no longer count and new keys may fit again.
    pub retry_after_ms: u64,
}

impl core::fmt::Display for TooManyKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "the limiter holds as many keys as it may ({}), all of them still counting: a new key \
             may fit once the next window begins, in {} ms",
            self.max_keys, self.retry_after_ms
        )
    }
}

impl std::error::Error for TooManyKeys {}

/// The shared clock on cache lines of its own. It is written whenever time moves on, and
/// every decision reads the fields before it: sharing their line, or one with whatever the
/// limiter is placed beside, would make each of those writes cost the other cores a miss.
#[derive(Debug)]
#[repr(align(128))]
struct ClockLine(AtomicU64);

impl core::ops::Deref for ClockLine {
    type Target = AtomicU64;

    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

/// One shard's buckets.
///
/// Every packed word of a shard belongs to the window starting at `window_start_ms`: a word
/// is only written by a decision in that window (under the read lock), or by the sweep that
/// rolls them all into a new window and moves `window_start_ms` (under the write lock, so
/// no decision is halfway meanwhile). A word therefore never needs a window number of its
/// own, which could wrap and alias.
#[derive(Debug)]
struct Shard<K, S> {
    /// Keys whose floating window is packed in one word.
    packed: HashMap<K, AtomicU64, SeededState>,
    /// Keys whose state is kept whole: every key when nothing is packed; otherwise the keys
    /// that a record or a settle pushed past the packed counters, until they fall idle and
    /// are dropped.
    wide: HashMap<K, S, SeededState>,
    /// The start of the window the shard was last swept in, a multiple of W.
    window_start_ms: u64,
}

/// A locked shard on cache lines of its own: two threads locking neighbouring shards would
/// otherwise write to the same line and slow each other down although they never wait.
#[derive(Debug)]
#[repr(align(128))]
struct PaddedShard<K, S>(RwLock<Shard<K, S>>);

/// A request's key: owned, and moved into the limiter if the key is new; or borrowed (a
/// `&str` for a `String` key), and copied into it only then, so that a decision for a key
/// already present allocates nothing.
pub(crate) enum KeyArg<'a, K, Q: ?Sized> {
    Owned(K),
    Borrowed(&'a Q, fn(&Q) -> K),
}

impl<K: Borrow<Q>, Q: ?Sized> KeyArg<'_, K, Q> {
    pub(crate) fn get(&self) -> &Q {
        match self {
            KeyArg::Owned(key) => key.borrow(),
            KeyArg::Borrowed(key, _) => key,
        }
    }

    pub(crate) fn into_owned(self) -> K {
        match self {
            KeyArg::Owned(key) => key,
            KeyArg::Borrowed(key, to_owned) => to_owned(key),
        }
    }
}

impl<K: Hash + Eq, S: State + Clone + Default> ConcurrentKeyedLimiter<K, S> {
    /// An empty limiter with four shards per CPU the machine offers (rounded up to a power
    /// of two): enough that two threads rarely want the same shard at once.
    pub fn new(limit: Limit) -> ConcurrentKeyedLimiter<K, S> {
        ConcurrentKeyedLimiter::with_state(limit, S::default())
    }

    /// An empty limiter with `shards` shards, rounded up to a power of two. One shard is a
    /// single lock around a single pair of maps; more shards let more threads add keys at
    /// once, for one pair of empty maps on cache lines of their own (128 bytes) each.
    pub fn with_shards(limit: Limit, shards: NonZeroUsize) -> ConcurrentKeyedLimiter<K, S> {
        ConcurrentKeyedLimiter::with_state_and_shards(limit, S::default(), shards)
    }
}

impl<K: Hash + Eq, S: State + Clone> ConcurrentKeyedLimiter<K, S> {
    /// An empty limiter whose new keys start from `fresh`, an empty state: how a limiter of
    /// [`AnyState`](crate::state::AnyState) is told its algorithm, chosen at run time.
    ///
    /// ```
    /// use trickle_core::state::AnyState;
    /// use trickle_core::{Algorithm, ConcurrentKeyedLimiter};
    ///
    /// let limit = "6/8s".parse().unwrap();
    /// let floating = ConcurrentKeyedLimiter::<&str, _>::with_state(limit, AnyState::new(Algorithm::Floating));
    /// let log = ConcurrentKeyedLimiter::<&str, _>::with_state(limit, AnyState::new(Algorithm::SlidingLog));
    /// // The floating window's buckets are one word each, whichever way it was chosen.
    /// assert!(floating.is_packed());
    /// assert!(!log.is_packed());
    /// ```
    pub fn with_state(limit: Limit, fresh: S) -> ConcurrentKeyedLimiter<K, S> {
        let cpus = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        ConcurrentKeyedLimiter::with_state_and_shards(
            limit,
            fresh,
            NonZeroUsize::new(4 * cpus).unwrap_or(NonZeroUsize::MIN),
        )
    }

    /// [`with_state`](ConcurrentKeyedLimiter::with_state) with `shards` shards, as
    /// [`with_shards`](ConcurrentKeyedLimiter::with_shards) counts them.
    pub fn with_state_and_shards(
        limit: Limit,
        fresh: S,
        shards: NonZeroUsize,
    ) -> ConcurrentKeyedLimiter<K, S> {
        let count = shards.get().next_power_of_two();
        // One seed for the limiter: a key's hash depends on it, not on the shard.
        let seed = SeededState::new();
        let shards = (0..count)
            .map(|_| {
                PaddedShard(RwLock::new(Shard {
                    packed: HashMap::with_hasher(seed),
                    wide: HashMap::with_hasher(seed),
                    window_start_ms: 0,
                }))
            })
            .collect();
        // Packed words hold the floating window's two counters, so a state packs when it
        // can be rebuilt from them: when it is the floating window's.
        let packing = match fresh.with_window_counters(0, 0, 0) {
            Some(_) => Packing::new(&limit),
            None => None,
        };
        ConcurrentKeyedLimiter {
            limit,
            fresh,
            packing,
            shards,
            // A shift by 64 would overflow: with one shard, every hash shifts to 0 or 1 by
            // 63, and the mask in `shard_of` keeps it at 0.
            shard_shift: 64 - count.trailing_zeros().max(1),
            shard_seed: SeededState::new(),
            latest_ms: ClockLine(AtomicU64::new(0)),
            keys_per_shard: usize::MAX,
        }
    }

    /// The same limiter holding at most about `max_keys` keys: each shard takes its share,
    /// rounded up. Past it, a `hit` or a reserve for a new key is refused until the shard's
    /// next window, when it drops the buckets that no longer count; keys already present
    /// are decided as ever, and a `record` or a settle always lands (they charge what a
    /// request really cost). Evicting a bucket that still counts would forget its charges
    /// and let its key in again, so none is: the cap bounds memory, at the price of turning
    /// new keys away while the table is full of live ones.
    ///
    /// [`try_decide`](ConcurrentKeyedLimiter::try_decide) tells a refused new key apart;
    /// the other methods answer it as a denial with the same `retry_after_ms`.
    pub fn with_max_keys(mut self, max_keys: NonZeroUsize) -> ConcurrentKeyedLimiter<K, S> {
        self.keys_per_shard = max_keys.get().div_ceil(self.shards.len());
        self
    }

    /// The cap on keys, as the shards hold it (the cap given, rounded up to a multiple of
    /// the number of shards); `None` without one.
    pub fn max_keys(&self) -> Option<usize> {
        (self.keys_per_shard != usize::MAX).then(|| self.keys_per_shard * self.shards.len())
    }

    /// The limit every key is held to.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// How many shards the buckets are split into.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// True when each key's bucket is one atomic word, decided by compare-and-swap: for the
    /// floating window, when N is below the packed bound of its window (`src/stores/packed.rs`).
    pub fn is_packed(&self) -> bool {
        self.packing.is_some()
    }

    /// Decides a request of `cost` for `key` at `now_ms`, spending the cost if it fits.
    pub fn hit(&self, key: K, now_ms: u64, cost: u64) -> Decision {
        let charged = self.charge(KeyArg::Owned(key), now_ms, cost, Charge::Hit);
        self.or_denial(charged, now_ms, cost)
    }

    /// Applies `op` to `key`'s bucket, as a [`Store`](crate::Store) does, with the key
    /// borrowed (a `&str` for a `String` key): it is copied into the limiter only when it
    /// is new, so that a decision for a key already present allocates nothing.
    pub fn decide<Q>(&self, key: &Q, op: Op, now_ms: u64, cost: u64) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let decided = self.try_decide(key, op, now_ms, cost);
        self.or_denial(decided, now_ms, cost)
    }

    /// [`decide`](ConcurrentKeyedLimiter::decide), telling a new key refused by the cap
    /// ([`with_max_keys`](ConcurrentKeyedLimiter::with_max_keys)) apart from a denial.
    pub fn try_decide<Q>(
        &self,
        key: &Q,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, TooManyKeys>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let key = KeyArg::Borrowed(key, Q::to_owned);
        match op {
            Op::Hit | Op::Reserve { .. } => self.charge(key, now_ms, cost, Charge::Hit),
            Op::Peek => Ok(self.peek(key.get(), now_ms, cost)),
            Op::Record => self.charge(key, now_ms, cost, Charge::Record),
            Op::Settle {
                reserved_at_ms,
                reserved,
                ..
            } => self.settle_key(key, reserved_at_ms, reserved, now_ms, cost),
        }
    }

    /// The decision, or for a new key the cap refused, a denial of a fresh bucket with the
    /// cap's wait.
    fn or_denial(
        &self,
        decided: Result<Decision, TooManyKeys>,
        now_ms: u64,
        cost: u64,
    ) -> Decision {
        decided.unwrap_or_else(|full| {
            let at_ms = now_ms.max(self.latest_ms.load(Ordering::Relaxed));
            let mut denial = self.fresh.peek(&self.limit, at_ms, cost);
            denial.outcome = Outcome::Denied {
                retry_after_ms: full.retry_after_ms,
            };
            denial
        })
    }

    /// What [`hit`](ConcurrentKeyedLimiter::hit) would answer for `key`, without spending or
    /// storing, and without moving the shared clock.
    pub fn peek<Q>(&self, key: &Q, now_ms: u64, cost: u64) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let buckets = read(self.shard_of(key));
        let at_ms = now_ms.max(self.latest_ms.load(Ordering::Relaxed));
        let decision = match (self.packing, buckets.packed.get(key)) {
            (Some(packing), Some(word)) => peek_packed(
                &self.limit,
                packing,
                word.load(Ordering::Relaxed),
                buckets.window_start_ms,
                at_ms,
                cost,
            ),
            _ => match buckets.wide.get(key) {
                Some(state) => state.peek(&self.limit, at_ms, cost),
                None => self.fresh.peek(&self.limit, at_ms, cost),
            },
        };
        drop(buckets);
        told(decision, now_ms)
    }

    /// Charges `cost` to `key` after the fact, even past the limit.
    pub fn record(&self, key: K, now_ms: u64, cost: u64) -> Decision {
        let charged = self.charge(KeyArg::Owned(key), now_ms, cost, Charge::Record);
        self.or_denial(charged, now_ms, cost)
    }

    /// Admits a request of `cost` for `key` at `now_ms` if it fits, holding the cost in a
    /// [`Reservation`] until it is settled; see [`crate::reservation`]. However many threads
    /// reserve for one key at once, the reserves admitted never pass the limit.
    pub fn reserve(&self, key: K, now_ms: u64, cost: u64) -> Admission {
        Admission::of(self.hit(key, now_ms, cost))
    }

    /// Settles `key`'s `reservation` at the request's final `cost`, exactly as the
    /// sequential core would at this point in the key's decisions.
    pub fn settle(&self, key: K, reservation: Reservation, now_ms: u64, cost: u64) -> Decision {
        let (at_ms, reserved) = (reservation.at_ms(), reservation.cost());
        let settled = self.settle_key(KeyArg::Owned(key), at_ms, reserved, now_ms, cost);
        self.or_denial(settled, now_ms, cost)
    }

    /// [`settle`](ConcurrentKeyedLimiter::settle) of the reservation's parts, as
    /// [`Op::Settle`] carries them.
    fn settle_key<Q: Hash + Eq + ?Sized>(
        &self,
        key: KeyArg<'_, K, Q>,
        reserved_at_ms: u64,
        reserved: u64,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, TooManyKeys>
    where
        K: Borrow<Q>,
    {
        let charge = Charge::Settle {
            reserved_at_ms,
            reserved,
        };
        // The reservation's time was seen: a settle is never decided before it.
        self.charge(key, now_ms.max(reserved_at_ms), cost, charge)
    }

    /// Forgets `key`'s requests.
    pub fn reset(&self, key: &K) {
        let mut buckets = write(self.shard_of(key));
        buckets.packed.remove(key);
        buckets.wide.remove(key);
    }

    /// How many keys hold a bucket: the shards are counted one after the other, so while
    /// other threads are deciding this is only a close estimate.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                let buckets = read(shard);
                buckets.packed.len() + buckets.wide.len()
            })
            .sum()
    }

    /// True when no key holds a bucket (with the same caveat as [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(|shard| {
            let buckets = read(shard);
            buckets.packed.is_empty() && buckets.wide.is_empty()
        })
    }

    /// Drops, in every shard, each bucket that holds nothing still counting at `now_ms`,
    /// and gives back memory when most of a shard's table is empty. Each shard also does
    /// this by itself when it is first used in a new window; calling this sweeps the shards
    /// no request has touched lately.
    pub fn sweep(&self, now_ms: u64) {
        for shard in self.shards.iter() {
            let mut buckets = write(shard);
            // Read under the lock, so it is no earlier than the shard's window. The packed
            // words roll only as far as the shared clock: a `now_ms` beyond it moves
            // nothing, and later requests may still come before it.
            let clock_ms = self.latest_ms.load(Ordering::Relaxed);
            self.sweep_shard(&mut buckets, clock_ms, now_ms.max(clock_ms));
        }
    }

    /// The shard `key` lives in, picked by the top bits of its hash under the limiter's
    /// shard seed. A borrowed key hashes as the owned one does (`Borrow`'s contract).
    #[inline]
    fn shard_of<Q: Hash + ?Sized>(&self, key: &Q) -> &PaddedShard<K, S> {
        let hash = self.shard_seed.hash_one(key);
        let index = (hash >> self.shard_shift) as usize & (self.shards.len() - 1);
        &self.shards[index]
    }

    /// `hit`, `record` and `settle`. A packed key already present in the shard's window is
    /// decided under the read lock, by compare-and-swap on its word; everything else (a new
    /// key, a new window, a charge past the packed counters, a wide state) under the write
    /// lock.
    #[inline]
    fn charge<Q: Hash + Eq + ?Sized>(
        &self,
        key: KeyArg<'_, K, Q>,
        now_ms: u64,
        cost: u64,
        charge: Charge,
    ) -> Result<Decision, TooManyKeys>
    where
        K: Borrow<Q>,
    {
        let shard = self.shard_of(key.get());
        if let Some(packing) = self.packing {
            let buckets = read(shard);
            // Read under the lock: no earlier than the clock the last sweep rolled to.
            let seen_ms = self.latest_ms.load(Ordering::Relaxed);
            let elapsed_ms = now_ms.max(seen_ms) - buckets.window_start_ms;
            if elapsed_ms < self.limit.window_ms() {
                if let Some(word) = buckets.packed.get(key.get()) {
                    let decision = charge_packed(
                        &self.limit,
                        packing,
                        word,
                        buckets.window_start_ms,
                        elapsed_ms,
                        cost,
                        charge,
                    );
                    if let Some(decision) = decision {
                        self.publish(now_ms, seen_ms);
                        drop(buckets);
                        return Ok(told(decision, now_ms));
                    }
                }
            }
        }
        self.charge_exclusively(shard, key, now_ms, cost, charge)
    }

    /// `charge` under the shard's write lock: sweeps the shard first if the clock is in a
    /// later window, then decides, adding the key if it is new.
    fn charge_exclusively<Q: Hash + Eq + ?Sized>(
        &self,
        shard: &PaddedShard<K, S>,
        key: KeyArg<'_, K, Q>,
        now_ms: u64,
        cost: u64,
        charge: Charge,
    ) -> Result<Decision, TooManyKeys>
    where
        K: Borrow<Q>,
    {
        let mut guard = write(shard);
        let seen_ms = self.latest_ms.load(Ordering::Relaxed);
        let at_ms = now_ms.max(seen_ms);
        // Before the sweep moves the shard's window: a window never starts after the shared
        // clock, even should a key's `Hash` panic below. Moving the clock first is safe here,
        // unlike under the read lock: no other decision for this shard's keys can be made
        // until this one is.
        self.publish(now_ms, seen_ms);
        if at_ms - guard.window_start_ms >= self.limit.window_ms() {
            self.sweep_shard(&mut guard, at_ms, at_ms);
        }
        let buckets = &mut *guard;
        let elapsed_ms = at_ms - buckets.window_start_ms;
        // The cap turns away a new key's hit while the shard is full of buckets that still
        // count (the sweep above dropped the rest, once a window); a record or a settle
        // charges what a request really cost, and always lands.
        if charge == Charge::Hit
            && buckets.packed.len() + buckets.wide.len() >= self.keys_per_shard
            && !buckets.packed.contains_key(key.get())
            && !buckets.wide.contains_key(key.get())
        {
            return Err(TooManyKeys {
                max_keys: self.keys_per_shard * self.shards.len(),
                retry_after_ms: buckets.window_start_ms + self.limit.window_ms() - now_ms,
            });
        }
        let decision = match self.packing {
            Some(packing) if buckets.wide.is_empty() || !buckets.wide.contains_key(key.get()) => {
                let start_ms = buckets.window_start_ms;
                let decide = |word: &AtomicU64| {
                    charge_packed(
                        &self.limit,
                        packing,
                        word,
                        start_ms,
                        elapsed_ms,
                        cost,
                        charge,
                    )
                };
                match buckets.packed.get(key.get()).map(decide) {
                    Some(Some(decision)) => decision,
                    // More than the packed counters hold: the key moves to the wide map.
                    Some(None) => {
                        let (key, bucket) = match buckets.packed.remove_entry(key.get()) {
                            Some((key, word)) => {
                                (key, packing.unpack(word.load(Ordering::Relaxed)))
                            }
                            None => (key.into_owned(), EMPTY),
                        };
                        let wide = &mut buckets.wide;
                        self.charge_widened(wide, key, bucket, start_ms, at_ms, cost, charge)
                    }
                    None => {
                        let word = AtomicU64::new(0);
                        match decide(&word) {
                            Some(decision) => {
                                buckets.packed.insert(key.into_owned(), word);
                                decision
                            }
                            None => {
                                let (wide, key) = (&mut buckets.wide, key.into_owned());
                                self.charge_widened(wide, key, EMPTY, start_ms, at_ms, cost, charge)
                            }
                        }
                    }
                }
            }
            _ => {
                let state = match buckets.wide.get_mut(key.get()) {
                    Some(state) => state,
                    None => buckets
                        .wide
                        .entry(key.into_owned())
                        .or_insert_with(|| self.fresh.clone()),
                };
                charge.apply(state, &self.limit, at_ms, cost)
            }
        };
        drop(guard);
        Ok(told(decision, now_ms))
    }

    /// Moves a packed key into the wide map and charges `cost` there: the packed counters
    /// cannot hold what a record, or a settle charging more, brings. An allowed `hit` never
    /// gets here, since it keeps `current` at most N, which always fits.
    #[allow(clippy::too_many_arguments)]
    fn charge_widened(
        &self,
        wide: &mut HashMap<K, S, SeededState>,
        key: K,
        bucket: Packed,
        start_ms: u64,
        at_ms: u64,
        cost: u64,
        charge: Charge,
    ) -> Decision {
        let latest_ms = start_ms + bucket.latest_offset_ms;
        let state = self
            .fresh
            .with_window_counters(bucket.previous, bucket.current, latest_ms)
            .expect("a limiter packs only a state that takes window counters");
        let state = wide.entry(key).insert_entry(state).into_mut();
        charge.apply(state, &self.limit, at_ms, cost)
    }

    /// Moves the shared clock to `now_ms` (never back), while the request's shard is
    /// locked, `seen_ms` being the clock read to decide it.
    ///
    /// Under the read lock, only once the request is decided: were the clock moved first,
    /// another thread could read the new time and be decided at it, for the same key,
    /// before this request is: an order no sequence of calls gives (the loom model
    /// `a_later_denial_races_an_earlier_hit` found it).
    #[inline]
    fn publish(&self, now_ms: u64, seen_ms: u64) {
        // Only a later time is written: most requests on a busy server bring a time already
        // seen, and a read leaves the clock's cache line shared between the cores.
        if now_ms > seen_ms {
            self.latest_ms.fetch_max(now_ms, Ordering::Relaxed);
        }
    }

    /// Rolls the shard's packed words into the window of `roll_to_ms` and drops every
    /// bucket that holds nothing still counting at `idle_at_ms` (≥ `roll_to_ms`); gives back
    /// memory when most of a table is empty. `roll_to_ms` must be no earlier than the
    /// shard's window and no later than the shared clock, so that no decision comes before
    /// the window the words are rolled into.
    ///
    /// Sweeping costs O(keys in the shard) at most once per window per shard: amortised
    /// O(1) per request, since every key kept was active in the last two windows.
    fn sweep_shard(&self, buckets: &mut Shard<K, S>, roll_to_ms: u64, idle_at_ms: u64) {
        let window_ms = self.limit.window_ms();
        let start_ms = roll_to_ms - roll_to_ms % window_ms;
        if let Some(packing) = self.packing {
            let windows_rolled = windows_between(buckets.window_start_ms, start_ms, window_ms);
            let windows_idle = windows_between(start_ms, idle_at_ms, window_ms);
            buckets.packed.retain(|_, word| {
                let bucket = roll(packing.unpack(word.load(Ordering::Relaxed)), windows_rolled);
                // Nothing counts once both counters are 0, and W − elapsed ≥ 1 weighs any
                // `previous` left.
                let idle = roll(bucket, windows_idle);
                if windows_rolled > 0 {
                    word.store(packing.pack(bucket), Ordering::Relaxed);
                }
                idle.previous != 0 || idle.current != 0
            });
            shrink(&mut buckets.packed);
        }
        buckets
            .wide
            .retain(|_, state| !state.is_idle(&self.limit, idle_at_ms));
        shrink(&mut buckets.wide);
        buckets.window_start_ms = buckets.window_start_ms.max(start_ms);
    }
}

/// A decision made at its `at_ms`, told in the caller's time: a retry is due that much later
/// from the caller's earlier `now`.
#[inline]
fn told(decision: Decision, now_ms: u64) -> Decision {
    from_callers_clock(decision, decision.at_ms - now_ms)
}

/// Gives back a table's memory when most of it is empty.
fn shrink<K: Hash + Eq, V>(map: &mut HashMap<K, V, SeededState>) {
    if map.len() < map.capacity() / 4 {
        map.shrink_to_fit();
    }
}

/// Locks a shard for reading. A thread that panicked while holding the write lock cannot have
/// left a bucket half-changed (a state is replaced whole, after its decision is made), so a
/// poisoned lock is taken as it is.
fn read<K, S>(shard: &PaddedShard<K, S>) -> RwLockReadGuard<'_, Shard<K, S>> {
    shard.0.read().unwrap_or_else(PoisonError::into_inner)
}

/// Locks a shard for writing; a poisoned lock is taken as it is, as in [`read`].
fn write<K, S>(shard: &PaddedShard<K, S>) -> RwLockWriteGuard<'_, Shard<K, S>> {
    shard.0.write().unwrap_or_else(PoisonError::into_inner)
}

/// Shared by reference (or through an `Arc`), the concurrent limiter is a [`Store`].
impl<K: Hash + Eq + Clone, S: State + Clone> Store<K> for &ConcurrentKeyedLimiter<K, S> {
    type Error = Infallible;

    fn limit(&self) -> Limit {
        ConcurrentKeyedLimiter::limit(self)
    }

    fn decide(&mut self, key: &K, op: Op, now_ms: u64, cost: u64) -> Result<Decision, Infallible> {
        Ok(ConcurrentKeyedLimiter::decide(self, key, op, now_ms, cost))
    }
}

impl<K: Hash + Eq + Clone, S: State + Clone> Store<K>
    for std::sync::Arc<ConcurrentKeyedLimiter<K, S>>
{
    type Error = Infallible;

    fn limit(&self) -> Limit {
        ConcurrentKeyedLimiter::limit(self)
    }

    fn decide(&mut self, key: &K, op: Op, now_ms: u64, cost: u64) -> Result<Decision, Infallible> {
        Ok(ConcurrentKeyedLimiter::decide(self, key, op, now_ms, cost))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use core::num::NonZeroUsize;

    /// The shard of each of `keys` under `limiter`, as indexes.
    fn shards_of(limiter: &ConcurrentKeyedLimiter<String>, keys: &[String]) -> Vec<usize> {
        keys.iter()
            .map(|key| {
                let shard = limiter.shard_of(key);
                let is_it = |candidate: &PaddedShard<String, FloatingState>| {
                    core::ptr::eq(candidate, shard)
                };
                limiter
                    .shards
                    .iter()
                    .position(is_it)
                    .expect("one of its shards")
            })
            .collect()
    }

    /// Keys as a client would choose them spread over the shards (none holds twice its
    /// share), and a second limiter puts them elsewhere: the shard hash is seeded, so no
    /// one can choose keys that crowd one shard without knowing the seed.
    #[test]
    fn chosen_keys_spread_over_the_shards_and_each_limiter_places_them_apart() {
        let limit = "10/1m".parse().expect("a limit");
        let shards = NonZeroUsize::new(64).expect("64");
        let keys: Vec<String> = (0..64 * 1_000).map(|n| format!("client-{n}")).collect();
        let first = ConcurrentKeyedLimiter::<String>::with_shards(limit, shards);
        let second = ConcurrentKeyedLimiter::<String>::with_shards(limit, shards);
        let (placed, again) = (shards_of(&first, &keys), shards_of(&second, &keys));
        let mut counts = [0_usize; 64];
        for &shard in &placed {
            counts[shard] += 1;
        }
        assert!(counts.iter().all(|&count| count < 2 * 1_000), "{counts:?}");
        let moved = placed.iter().zip(&again).filter(|(a, b)| a != b).count();
        assert!(
            moved > keys.len() * 9 / 10,
            "{moved} of {} moved",
            keys.len()
        );
    }
}
