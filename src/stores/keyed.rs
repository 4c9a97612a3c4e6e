//! Many buckets under one limit, one per key; and groups of them, each with its own limit.
//!
//! ESI limits each route group × application × character: a [`GroupedLimiter`] keyed by
//! group holds one [`KeyedLimiter`] per group, keyed by (application, character).
//!
//! A bucket that holds nothing that still counts is dropped, at most once per window, so
//! memory follows the keys active lately, not every key ever seen. For the floating
//! window that means keys active in the last two windows: a key idle for two whole
//! windows has both counters at zero.

use core::hash::Hash;
use core::mem::size_of;
use std::collections::HashMap;

use crate::algorithms::floating::FloatingState;
use crate::algorithms::reservation::{Admission, Reservation};
use crate::algorithms::state::State;
use crate::stores::store::{Op, Store};
use crate::values::decision::{Decision, Outcome};
use crate::values::limit::Limit;
use core::convert::Infallible;

/// One bucket per key, all under the same limit.
///
/// ```
/// use trickle_core::KeyedLimiter;
///
/// let mut limiter: KeyedLimiter<(u32, u64)> = KeyedLimiter::new("150/15m".parse().unwrap());
/// let (application, character) = (7, 90_000_001);
/// assert!(limiter.hit((application, character), 0, 2).is_allowed());
/// assert_eq!(limiter.len(), 1);
///
/// // 30 minutes later (two whole windows) the key holds nothing and is dropped.
/// limiter.hit((application, 90_000_002), 30 * 60 * 1000, 2);
/// assert_eq!(limiter.len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct KeyedLimiter<K, S = FloatingState> {
    limit: Limit,
    buckets: HashMap<K, S>,
    /// The latest time seen by any key: the clock is the server's, shared by all keys.
    latest_ms: u64,
    /// The window in which idle buckets were last dropped.
    swept_window: u64,
}

impl<K: Hash + Eq, S: State + Default> KeyedLimiter<K, S> {
    /// An empty limiter: every key starts with a fresh bucket under `limit`.
    pub fn new(limit: Limit) -> KeyedLimiter<K, S> {
        KeyedLimiter {
            limit,
            buckets: HashMap::new(),
            latest_ms: 0,
            swept_window: 0,
        }
    }

    /// The limit every key is held to.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Decides a request of `cost` for `key` at `now_ms`, spending the cost if it fits.
    pub fn hit(&mut self, key: K, now_ms: u64, cost: u64) -> Decision {
        let at_ms = self.advance(now_ms);
        let decision = self
            .buckets
            .entry(key)
            .or_default()
            .hit(&self.limit, at_ms, cost);
        from_callers_clock(decision, at_ms - now_ms)
    }

    /// What [`hit`](KeyedLimiter::hit) would answer for `key`, without spending or storing.
    pub fn peek(&self, key: &K, now_ms: u64, cost: u64) -> Decision {
        let at_ms = now_ms.max(self.latest_ms);
        let decision = match self.buckets.get(key) {
            Some(state) => state.peek(&self.limit, at_ms, cost),
            None => S::default().peek(&self.limit, at_ms, cost),
        };
        from_callers_clock(decision, at_ms - now_ms)
    }

    /// Charges `cost` to `key` after the fact, even past the limit.
    pub fn record(&mut self, key: K, now_ms: u64, cost: u64) -> Decision {
        let at_ms = self.advance(now_ms);
        self.buckets
            .entry(key)
            .or_default()
            .record(&self.limit, at_ms, cost)
    }

    /// Admits a request of `cost` for `key` at `now_ms` if it fits, holding the cost in a
    /// [`Reservation`] until it is settled; see [`crate::reservation`].
    pub fn reserve(&mut self, key: K, now_ms: u64, cost: u64) -> Admission {
        Admission::of(self.hit(key, now_ms, cost))
    }

    /// Settles `key`'s `reservation` at the request's final `cost`.
    pub fn settle(&mut self, key: K, reservation: Reservation, now_ms: u64, cost: u64) -> Decision {
        self.settle_parts(key, reservation.at_ms(), reservation.cost(), now_ms, cost)
    }

    /// [`settle`](KeyedLimiter::settle) of the reservation's parts, as [`crate::Op::Settle`]
    /// carries them.
    pub(crate) fn settle_parts(
        &mut self,
        key: K,
        reserved_at_ms: u64,
        reserved: u64,
        now_ms: u64,
        cost: u64,
    ) -> Decision {
        let at_ms = self.advance(now_ms);
        self.buckets.entry(key).or_default().settle(
            &self.limit,
            at_ms,
            reserved_at_ms,
            reserved,
            cost,
        )
    }

    /// Forgets `key`'s requests.
    pub fn reset(&mut self, key: &K) {
        self.buckets.remove(key);
    }

    /// How many keys hold a bucket now.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// True when no key holds a bucket.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The bytes the table of buckets takes, estimated from its layout: the standard
    /// `HashMap` keeps a power-of-two number of slots, at most 7/8 of them full, each slot
    /// a key, a state and a control byte. Keys that own heap memory (a `String`) cost that
    /// too, and are not counted here.
    pub fn table_bytes(&self) -> usize {
        let capacity = self.buckets.capacity();
        let slots = match capacity {
            0 => 0,
            1..=7 => (capacity + 1).next_power_of_two(),
            _ => (capacity * 8 / 7).next_power_of_two(),
        };
        slots * KeyedLimiter::<K, S>::SLOT_BYTES
    }

    /// What one slot of the table costs, in bytes: key, state and a control byte.
    pub const SLOT_BYTES: usize = size_of::<(K, S)>() + 1;

    /// Drops every bucket that holds nothing still counting at `now_ms`, and gives back
    /// memory when most of the table is empty. Runs by itself once per window.
    pub fn sweep(&mut self, now_ms: u64) {
        let at_ms = now_ms.max(self.latest_ms);
        let limit = self.limit;
        self.buckets
            .retain(|_, state| !state.is_idle(&limit, at_ms));
        if self.buckets.len() < self.buckets.capacity() / 4 {
            self.buckets.shrink_to_fit();
        }
        self.swept_window = at_ms / limit.window_ms();
    }

    /// Moves the shared clock to `now_ms` (never back) and sweeps when a new window began,
    /// which costs O(keys) at most once per window: amortised O(1) per request, since every
    /// key kept was active in the last two windows.
    fn advance(&mut self, now_ms: u64) -> u64 {
        self.latest_ms = self.latest_ms.max(now_ms);
        if self.latest_ms / self.limit.window_ms() > self.swept_window {
            self.sweep(self.latest_ms);
        }
        self.latest_ms
    }
}

/// A decision made at the shared clock's `at_ms`, told in the caller's time: a retry is
/// due `shift_ms` later from the caller's earlier `now`.
pub(crate) fn from_callers_clock(mut decision: Decision, shift_ms: u64) -> Decision {
    if let Outcome::Denied { retry_after_ms } = &mut decision.outcome {
        *retry_after_ms = retry_after_ms.saturating_add(shift_ms);
    }
    decision
}

/// Keyed limiters by group, each group with its own limit, as ESI limits route groups.
///
/// ```
/// use trickle_core::GroupedLimiter;
///
/// let mut esi: GroupedLimiter<&str, (u32, u64)> = GroupedLimiter::new();
/// esi.add_group("fitting", "150/15m".parse().unwrap());
/// esi.add_group("market", "300/15m".parse().unwrap());
///
/// let decision = esi.hit(&"market", (7, 90_000_001), 0, 2).expect("a known group");
/// assert_eq!(decision.remaining(), 298);
/// assert!(esi.hit(&"unknown", (7, 90_000_001), 0, 2).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct GroupedLimiter<G, K, S = FloatingState> {
    groups: HashMap<G, KeyedLimiter<K, S>>,
}

impl<G: Hash + Eq, K: Hash + Eq, S: State + Default> GroupedLimiter<G, K, S> {
    /// No groups yet.
    pub fn new() -> GroupedLimiter<G, K, S> {
        GroupedLimiter {
            groups: HashMap::new(),
        }
    }

    /// Adds `group` with its own `limit`, replacing the group (and its buckets) if it
    /// existed.
    pub fn add_group(&mut self, group: G, limit: Limit) {
        self.groups.insert(group, KeyedLimiter::new(limit));
    }

    /// The keyed limiter of `group`.
    pub fn group(&self, group: &G) -> Option<&KeyedLimiter<K, S>> {
        self.groups.get(group)
    }

    /// Decides a request of `cost` for `key` in `group`; `None` when the group is unknown.
    pub fn hit(&mut self, group: &G, key: K, now_ms: u64, cost: u64) -> Option<Decision> {
        Some(self.groups.get_mut(group)?.hit(key, now_ms, cost))
    }

    /// What [`hit`](GroupedLimiter::hit) would answer, without spending.
    pub fn peek(&self, group: &G, key: &K, now_ms: u64, cost: u64) -> Option<Decision> {
        Some(self.groups.get(group)?.peek(key, now_ms, cost))
    }

    /// Charges `cost` after the fact; `None` when the group is unknown.
    pub fn record(&mut self, group: &G, key: K, now_ms: u64, cost: u64) -> Option<Decision> {
        Some(self.groups.get_mut(group)?.record(key, now_ms, cost))
    }

    /// Admits a request of `cost` for `key` in `group` if it fits, holding the cost until
    /// it is settled; `None` when the group is unknown.
    pub fn reserve(&mut self, group: &G, key: K, now_ms: u64, cost: u64) -> Option<Admission> {
        Some(self.groups.get_mut(group)?.reserve(key, now_ms, cost))
    }

    /// Settles `key`'s `reservation` in `group` at the request's final `cost`; `None` when
    /// the group is unknown (the reservation is then dropped, and keeps its reserve).
    pub fn settle(
        &mut self,
        group: &G,
        key: K,
        reservation: Reservation,
        now_ms: u64,
        cost: u64,
    ) -> Option<Decision> {
        Some(
            self.groups
                .get_mut(group)?
                .settle(key, reservation, now_ms, cost),
        )
    }
}

impl<G: Hash + Eq, K: Hash + Eq, S: State + Default> Default for GroupedLimiter<G, K, S> {
    fn default() -> Self {
        GroupedLimiter::new()
    }
}

/// A keyed limiter is a [`Store`]: what the flow and its tests run over.
impl<K: Hash + Eq + Clone, S: State + Default> Store<K> for KeyedLimiter<K, S> {
    type Error = Infallible;

    fn limit(&self) -> Limit {
        KeyedLimiter::limit(self)
    }

    fn decide(&mut self, key: &K, op: Op, now_ms: u64, cost: u64) -> Result<Decision, Infallible> {
        Ok(match op {
            Op::Hit | Op::Reserve { .. } => self.hit(key.clone(), now_ms, cost),
            Op::Peek => self.peek(key, now_ms, cost),
            Op::Record => self.record(key.clone(), now_ms, cost),
            Op::Settle {
                reserved_at_ms,
                reserved,
                ..
            } => self.settle_parts(key.clone(), reserved_at_ms, reserved, now_ms, cost),
        })
    }
}
