//! Many keys under one policy: a map of per-limit states, for one thread or shared by many.
//!
//! Each key keeps one state per limit of the policy, not a copy of the policy, and is
//! decided by the same rule as a [`PolicyBucket`](crate::PolicyBucket) (all or nothing).
//! As in the single-limit stores, the clock is shared by every key (the latest time any
//! request brought), and a key whose every limit holds nothing still counting is dropped,
//! at most once per window of the policy's longest limit: no key can be dropped sooner.

use core::borrow::Borrow;
use core::convert::Infallible;
use core::hash::{BuildHasher, Hash};
use core::num::NonZeroUsize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use alloc::boxed::Box;

use crate::algorithms::floating::FloatingState;
use crate::algorithms::state::State;
use crate::stores::concurrent::{KeyArg, TooManyKeys};
use crate::stores::keyed::from_callers_clock;
use crate::stores::policy::{answer, decide_all, peek_all};
use crate::stores::seeded_hash::SeededState;
use crate::stores::store::{Op, PolicyStore};
use crate::values::decision::Outcome;
use crate::values::policy::{Policy, PolicyDecision};

/// The states of every key under `policy`, one per limit, and the shared clock.
#[derive(Debug, Clone)]
struct Buckets<K, S> {
    states: HashMap<K, Box<[S]>, SeededState>,
    /// The window (of the longest limit) in which idle keys were last dropped.
    swept_window: u64,
}

impl<K: Hash + Eq, S: State> Buckets<K, S> {
    fn new() -> Buckets<K, S> {
        Buckets {
            states: HashMap::with_hasher(SeededState::new()),
            swept_window: 0,
        }
    }

    /// Decides `op` for `key` at the shared clock's `at_ms`, told in the caller's time.
    fn decide<Q: Hash + Eq + ?Sized>(
        &mut self,
        policy: &Policy,
        fresh: &impl Fn() -> Box<[S]>,
        key: KeyArg<'_, K, Q>,
        op: Op,
        (now_ms, at_ms): (u64, u64),
        cost: u64,
    ) -> PolicyDecision
    where
        K: Borrow<Q>,
    {
        let answer = match op {
            // A peek's time may be ahead of the shared clock, which it leaves alone; so it
            // sweeps nothing: a later request may still be decided before that time.
            Op::Peek => self.peek(policy, fresh, key.get(), at_ms, cost),
            op => {
                self.sweep_if_due(policy, at_ms);
                let states = match self.states.get_mut(key.get()) {
                    Some(states) => states,
                    None => self.states.entry(key.into_owned()).or_insert_with(fresh),
                };
                let decisions = decide_all(policy, states, op, at_ms, cost);
                answer(policy, states, decisions)
            }
        };
        told(answer, at_ms - now_ms)
    }

    /// Whether `op` for `key` at `at_ms` is turned away because the map already holds `cap`
    /// keys, none of them `key`: only a hit or a reserve of a new key is, after the sweep
    /// due at that time has dropped the keys that no longer count (a record or a settle
    /// charges what a request really cost, and always lands).
    fn turns_away<Q: Hash + Eq + ?Sized>(
        &mut self,
        policy: &Policy,
        key: &Q,
        op: Op,
        (now_ms, at_ms): (u64, u64),
        cap: usize,
    ) -> Option<TooManyKeys>
    where
        K: Borrow<Q>,
    {
        if !matches!(op, Op::Hit | Op::Reserve { .. }) {
            return None;
        }
        self.sweep_if_due(policy, at_ms);
        if self.states.len() < cap || self.states.contains_key(key) {
            return None;
        }
        Some(TooManyKeys {
            max_keys: cap,
            // The next sweep, when the keys that no longer count are dropped.
            retry_after_ms: ((self.swept_window + 1) * longest_window(policy))
                .saturating_sub(now_ms)
                .max(1),
        })
    }

    /// Drops the idle keys once per window of the policy's longest limit.
    fn sweep_if_due(&mut self, policy: &Policy, at_ms: u64) {
        if at_ms / longest_window(policy) > self.swept_window {
            self.sweep(policy, at_ms);
        }
    }

    fn peek<Q: Hash + Eq + ?Sized>(
        &self,
        policy: &Policy,
        fresh: &impl Fn() -> Box<[S]>,
        key: &Q,
        at_ms: u64,
        cost: u64,
    ) -> PolicyDecision
    where
        K: Borrow<Q>,
    {
        let peek = |states: &[S]| answer(policy, states, peek_all(policy, states, at_ms, cost));
        match self.states.get(key) {
            Some(states) => peek(states),
            None => peek(&fresh()),
        }
    }

    fn sweep(&mut self, policy: &Policy, at_ms: u64) {
        self.states.retain(|_, states| {
            !states
                .iter()
                .zip(policy.limits())
                .all(|(state, limit)| state.is_idle(&limit, at_ms))
        });
        if self.states.len() < self.states.capacity() / 4 {
            self.states.shrink_to_fit();
        }
        self.swept_window = at_ms / longest_window(policy);
    }
}

fn longest_window(policy: &Policy) -> u64 {
    policy
        .limits()
        .map(|limit| limit.window_ms())
        .max()
        .unwrap_or(1)
}

/// `answer`, made at the shared clock's time, told in a caller's time `shift_ms` behind it:
/// every wait is that much longer from the caller's `now`.
fn told(answer: PolicyDecision, shift_ms: u64) -> PolicyDecision {
    let decisions = answer
        .decisions()
        .iter()
        .map(|decision| from_callers_clock(*decision, shift_ms))
        .collect();
    let next_token_ms = (0..answer.decisions().len())
        .map(|index| {
            answer
                .next_token_ms(index)
                .map(|ms| ms.saturating_add(shift_ms))
        })
        .collect();
    PolicyDecision::new(decisions, next_token_ms)
}

/// One [`PolicyBucket`](crate::PolicyBucket) per key, all under the same policy, owned by
/// one thread.
///
/// ```
/// use trickle_core::KeyedPolicyLimiter;
///
/// // 2 per second and 3 per minute, for each application.
/// let mut limiter: KeyedPolicyLimiter<u32> = KeyedPolicyLimiter::new("2/1s 3/1m".parse().unwrap());
/// assert!(limiter.hit(7, 0, 1).is_allowed());
/// assert!(limiter.hit(7, 100, 1).is_allowed());
/// // The second's limit answers: a floating window, so its tokens come back as the
/// // window [0, 1 s) slides out of view, enough for one more at 1.5 s.
/// let refused = limiter.hit(7, 200, 1);
/// assert_eq!((refused.answered_by(), refused.retry_after_ms()), (Some(0), Some(1_300)));
/// // Another application has its own buckets.
/// assert!(limiter.hit(8, 200, 1).is_allowed());
/// ```
#[derive(Debug, Clone)]
pub struct KeyedPolicyLimiter<K, S = FloatingState> {
    policy: Policy,
    fresh: S,
    buckets: Buckets<K, S>,
    latest_ms: u64,
}

impl<K: Hash + Eq, S: State + Clone + Default> KeyedPolicyLimiter<K, S> {
    /// An empty limiter: every key starts with fresh buckets, one per limit of `policy`.
    pub fn new(policy: Policy) -> KeyedPolicyLimiter<K, S> {
        KeyedPolicyLimiter::with_state(policy, S::default())
    }
}

impl<K: Hash + Eq, S: State + Clone> KeyedPolicyLimiter<K, S> {
    /// An empty limiter whose keys start from `fresh` in every limit: for
    /// [`AnyState`](crate::state::AnyState), the algorithm chosen at run time.
    pub fn with_state(policy: Policy, fresh: S) -> KeyedPolicyLimiter<K, S> {
        KeyedPolicyLimiter {
            policy,
            fresh,
            buckets: Buckets::new(),
            latest_ms: 0,
        }
    }

    /// The policy every key is held to.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Decides a request of `cost` for `key` at `now_ms`; if every limit has room, spends
    /// the cost in each.
    pub fn hit(&mut self, key: K, now_ms: u64, cost: u64) -> PolicyDecision {
        self.decide(key, Op::Hit, now_ms, cost)
    }

    /// What [`hit`](KeyedPolicyLimiter::hit) would answer for `key`, without spending or
    /// storing anything.
    pub fn peek(&self, key: &K, now_ms: u64, cost: u64) -> PolicyDecision {
        let at_ms = now_ms.max(self.latest_ms);
        let fresh = || self.fresh_states();
        told(
            self.buckets.peek(&self.policy, &fresh, key, at_ms, cost),
            at_ms - now_ms,
        )
    }

    /// Charges `cost` to every limit of `key` after the fact, even past them.
    pub fn record(&mut self, key: K, now_ms: u64, cost: u64) -> PolicyDecision {
        self.decide(key, Op::Record, now_ms, cost)
    }

    /// Applies `op` to `key`'s buckets: all or nothing for a hit or a reserve.
    pub fn decide(&mut self, key: K, op: Op, now_ms: u64, cost: u64) -> PolicyDecision {
        if op == Op::Peek {
            return self.peek(&key, now_ms, cost);
        }
        self.latest_ms = self.latest_ms.max(now_ms);
        let (policy, fresh) = (&self.policy, &self.fresh);
        let fresh = || fresh_states(policy, fresh);
        let key = KeyArg::<K, K>::Owned(key);
        self.buckets
            .decide(policy, &fresh, key, op, (now_ms, self.latest_ms), cost)
    }

    /// Forgets `key`'s requests.
    pub fn reset(&mut self, key: &K) {
        self.buckets.states.remove(key);
    }

    /// How many keys hold buckets now.
    pub fn len(&self) -> usize {
        self.buckets.states.len()
    }

    /// True when no key holds buckets.
    pub fn is_empty(&self) -> bool {
        self.buckets.states.is_empty()
    }

    fn fresh_states(&self) -> Box<[S]> {
        fresh_states(&self.policy, &self.fresh)
    }
}

fn fresh_states<S: Clone>(policy: &Policy, fresh: &S) -> Box<[S]> {
    (0..policy.len()).map(|_| fresh.clone()).collect()
}

impl<K: Hash + Eq + Clone, S: State + Clone> PolicyStore<K> for KeyedPolicyLimiter<K, S> {
    type Error = Infallible;

    fn policy(&self) -> &Policy {
        &self.policy
    }

    fn decide(
        &mut self,
        key: &K,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, Infallible> {
        Ok(KeyedPolicyLimiter::decide(
            self,
            key.clone(),
            op,
            now_ms,
            cost,
        ))
    }
}

/// [`KeyedPolicyLimiter`] for many threads at once, through `&self`.
///
/// The keys are split into shards by hash, each a map behind its own lock: a decision
/// takes its key's shard's lock for the whole rule (every limit's peek and spend), so two
/// threads never interleave inside one key's decision, and threads deciding for keys of
/// different shards do not wait for each other. The shared clock is one atomic, moved
/// forward with `fetch_max`, as in [`ConcurrentKeyedLimiter`](crate::ConcurrentKeyedLimiter).
///
/// ```
/// use std::thread;
/// use trickle_core::ConcurrentKeyedPolicyLimiter;
///
/// // 5 per second and 8 per minute: eight threads asking twice each at once get 5 in.
/// let limiter: ConcurrentKeyedPolicyLimiter<&str> =
///     ConcurrentKeyedPolicyLimiter::new("5/1s 8/1m".parse().unwrap());
/// let allowed: usize = thread::scope(|scope| {
///     let threads: Vec<_> = (0..8)
///         .map(|_| scope.spawn(|| (0..2).filter(|_| limiter.hit("alice", 0, 1).is_allowed()).count()))
///         .collect();
///     threads.into_iter().map(|thread| thread.join().unwrap()).sum()
/// });
/// assert_eq!(allowed, 5);
/// ```
#[derive(Debug)]
pub struct ConcurrentKeyedPolicyLimiter<K, S = FloatingState> {
    policy: Policy,
    fresh: S,
    shards: Box<[Mutex<Buckets<K, S>>]>,
    hasher: SeededState,
    latest_ms: AtomicU64,
    /// The most keys a shard holds before a new key is turned away; `usize::MAX`, no cap.
    keys_per_shard: usize,
}

impl<K: Hash + Eq, S: State + Clone + Default> ConcurrentKeyedPolicyLimiter<K, S> {
    /// An empty limiter with a shard for every four threads the machine runs at once.
    pub fn new(policy: Policy) -> ConcurrentKeyedPolicyLimiter<K, S> {
        let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let shards = NonZeroUsize::new(threads.saturating_mul(4)).unwrap_or(NonZeroUsize::MIN);
        ConcurrentKeyedPolicyLimiter::with_state_and_shards(policy, S::default(), shards)
    }
}

impl<K: Hash + Eq, S: State + Clone> ConcurrentKeyedPolicyLimiter<K, S> {
    /// An empty limiter of `shards` shards whose keys start from `fresh` in every limit.
    pub fn with_state_and_shards(
        policy: Policy,
        fresh: S,
        shards: NonZeroUsize,
    ) -> ConcurrentKeyedPolicyLimiter<K, S> {
        ConcurrentKeyedPolicyLimiter {
            policy,
            fresh,
            shards: (0..shards.get())
                .map(|_| Mutex::new(Buckets::new()))
                .collect(),
            hasher: SeededState::new(),
            latest_ms: AtomicU64::new(0),
            keys_per_shard: usize::MAX,
        }
    }

    /// The policy every key is held to.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Decides a request of `cost` for `key` at `now_ms`; if every limit has room, spends
    /// the cost in each, as one step no other thread's decision for `key` enters.
    pub fn hit(&self, key: K, now_ms: u64, cost: u64) -> PolicyDecision {
        self.decide(key, Op::Hit, now_ms, cost)
    }

    /// What [`hit`](ConcurrentKeyedPolicyLimiter::hit) would answer for `key`, without
    /// spending or storing anything.
    pub fn peek(&self, key: K, now_ms: u64, cost: u64) -> PolicyDecision {
        self.decide(key, Op::Peek, now_ms, cost)
    }

    /// Charges `cost` to every limit of `key` after the fact, even past them.
    pub fn record(&self, key: K, now_ms: u64, cost: u64) -> PolicyDecision {
        self.decide(key, Op::Record, now_ms, cost)
    }

    /// Applies `op` to `key`'s buckets: all or nothing for a hit or a reserve. A new key
    /// turned away by the cap ([`with_max_keys`](ConcurrentKeyedPolicyLimiter::with_max_keys))
    /// is answered as a denial by every limit, with the cap's wait.
    pub fn decide(&self, key: K, op: Op, now_ms: u64, cost: u64) -> PolicyDecision {
        let key = KeyArg::<K, K>::Owned(key);
        match self.decide_key(key, op, now_ms, cost) {
            Ok(answer) => answer,
            Err(full) => self.full_answer(full, now_ms, cost),
        }
    }

    /// [`decide`](ConcurrentKeyedPolicyLimiter::decide) for a borrowed key (a `&str` for a
    /// `String` key), copied only when the key is new, and telling a new key turned away by
    /// the cap apart from a denial.
    pub fn try_decide<Q>(
        &self,
        key: &Q,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, TooManyKeys>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.decide_key(KeyArg::Borrowed(key, Q::to_owned), op, now_ms, cost)
    }

    /// The same limiter holding at most about `max_keys` keys, each shard its share rounded
    /// up: past it, a hit or a reserve for a new key is turned away until its shard's next
    /// sweep drops the keys that no longer count. No key that still counts is ever evicted,
    /// since that would forget its charges; a record or a settle always lands.
    pub fn with_max_keys(mut self, max_keys: NonZeroUsize) -> ConcurrentKeyedPolicyLimiter<K, S> {
        self.keys_per_shard = max_keys.get().div_ceil(self.shards.len());
        self
    }

    /// The cap on keys as the shards hold it (rounded up to a multiple of the shards);
    /// `None` without one.
    pub fn max_keys(&self) -> Option<usize> {
        (self.keys_per_shard != usize::MAX).then(|| self.keys_per_shard * self.shards.len())
    }

    /// Drops every key whose limits hold nothing still counting at `now_ms` (or the shared
    /// clock, if later), in every shard: shards sweep themselves once per longest window
    /// when used, and a server may call this for the ones no request has touched lately.
    pub fn sweep(&self, now_ms: u64) {
        let at_ms = self.latest_ms.load(Ordering::Acquire).max(now_ms);
        for shard in self.shards.iter() {
            let mut buckets = shard.lock().unwrap_or_else(PoisonError::into_inner);
            buckets.sweep(&self.policy, at_ms);
        }
    }

    /// The answer of a new key turned away by the cap: each limit as a fresh key's would
    /// answer, but a denial, with the cap's wait, where it would have had room.
    fn full_answer(&self, full: TooManyKeys, now_ms: u64, cost: u64) -> PolicyDecision {
        let fresh = fresh_states(&self.policy, &self.fresh);
        let peeks = peek_all(&self.policy, &fresh, now_ms, cost);
        let decisions = peeks
            .into_iter()
            .map(|mut decision| {
                if decision.outcome == Outcome::Allowed {
                    decision.outcome = Outcome::Denied {
                        retry_after_ms: full.retry_after_ms,
                    };
                }
                decision
            })
            .collect();
        PolicyDecision::new(decisions, alloc::vec![None; self.policy.len()])
    }

    fn decide_key<Q: Hash + Eq + ?Sized>(
        &self,
        key: KeyArg<'_, K, Q>,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, TooManyKeys>
    where
        K: Borrow<Q>,
    {
        let shard = &self.shards[self.shard_of(key.get())];
        // A poisoned lock means a thread panicked while holding it; the rule never panics
        // part-way through a write, so the states are whole and the lock can be used.
        let mut buckets = shard.lock().unwrap_or_else(PoisonError::into_inner);
        // Read under the lock, so that decisions for one key see the clock in the order
        // they take the lock, as the sequential limiter sees its calls.
        // A peek reads the clock and leaves it, as the sequential limiter's peek does.
        let latest_ms = match op {
            Op::Peek => self.latest_ms.load(Ordering::Acquire),
            _ => self.latest_ms.fetch_max(now_ms, Ordering::AcqRel),
        };
        let at_ms = latest_ms.max(now_ms);
        let (policy, fresh) = (&self.policy, &self.fresh);
        let fresh = || fresh_states(policy, fresh);
        let times = (now_ms, at_ms);
        if let Some(full) = buckets.turns_away(policy, key.get(), op, times, self.keys_per_shard) {
            return Err(full);
        }
        Ok(buckets.decide(policy, &fresh, key, op, times, cost))
    }

    /// Forgets `key`'s requests.
    pub fn reset(&self, key: &K) {
        let shard = &self.shards[self.shard_of(key)];
        let mut buckets = shard.lock().unwrap_or_else(PoisonError::into_inner);
        buckets.states.remove(key);
    }

    /// How many keys hold buckets now.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                shard
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .states
                    .len()
            })
            .sum()
    }

    /// True when no key holds buckets.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard_of<Q: Hash + ?Sized>(&self, key: &Q) -> usize {
        let hash = self.hasher.hash_one(key);
        // The high bits: the map inside the shard uses the low ones.
        ((hash >> 32) as usize) % self.shards.len()
    }
}

impl<K: Hash + Eq + Clone, S: State + Clone> PolicyStore<K>
    for &ConcurrentKeyedPolicyLimiter<K, S>
{
    type Error = Infallible;

    fn policy(&self) -> &Policy {
        &self.policy
    }

    fn decide(
        &mut self,
        key: &K,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, Infallible> {
        Ok(ConcurrentKeyedPolicyLimiter::decide(
            self,
            key.clone(),
            op,
            now_ms,
            cost,
        ))
    }
}
