//! Where the buckets live: one rule, decided wherever the state is.
//!
//! A [`Store`] holds one bucket per key under one limit and applies an [`Op`] to a key's
//! bucket as one indivisible step: read the state, decide with the algorithm's rule, write
//! the state back. Three stores implement it:
//!
//! - [`KeyedLimiter`](crate::KeyedLimiter): a `HashMap` owned by one thread (`&mut self`);
//! - [`ConcurrentKeyedLimiter`](crate::ConcurrentKeyedLimiter), through `&` so any number of
//!   threads share it;
//! - `trickle_redis`'s store, whose state is in Redis and whose step is a Lua script, for
//!   buckets shared by many machines.
//!
//! Code written against `Store` (a log replay, a server's middleware) runs unchanged on each,
//! and gets the same decisions: the Redis tests replay random traces through the core and
//! through Redis and compare every field.
//!
//! governor's `StateStore::measure_and_replace` hands the store a closure that computes the
//! new state, and the store makes the read-compute-write atomic. The step here is a whole
//! decision instead, because Redis cannot run a Rust closure: with a closure, Redis would
//! need `WATCH`, a read, a `MULTI`/`EXEC` and retries under contention, two round trips or
//! more, where a script decides in one.
//!
//! ```
//! use trickle_core::{ConcurrentKeyedLimiter, KeyedLimiter, Op, Store};
//!
//! /// Replays `(time, cost)` requests for one key and counts the ones let in.
//! fn admitted<S: Store<&'static str>>(store: &mut S, requests: &[(u64, u64)]) -> Result<usize, S::Error> {
//!     let mut allowed = 0;
//!     for &(now_ms, cost) in requests {
//!         if store.decide(&"alice", Op::Hit, now_ms, cost)?.is_allowed() {
//!             allowed += 1;
//!         }
//!     }
//!     Ok(allowed)
//! }
//!
//! let requests = [(0, 2), (1_000, 2), (2_000, 2), (3_000, 2)];
//! let mut in_process: KeyedLimiter<&str> = KeyedLimiter::new("6/8s".parse().unwrap());
//! assert_eq!(admitted(&mut in_process, &requests), Ok(3));
//!
//! let shared: ConcurrentKeyedLimiter<&str> = ConcurrentKeyedLimiter::new("6/8s".parse().unwrap());
//! assert_eq!(admitted(&mut &shared, &requests), Ok(3));
//! ```

use crate::algorithms::reservation::{Admission, Reservation};
use crate::values::decision::Decision;
use crate::values::limit::Limit;
use crate::values::policy::{Policy, PolicyDecision};

/// What a request asks of its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Decide, and spend the cost if it fits ([`State::hit`](crate::state::State::hit)).
    Hit,
    /// Decide without spending or changing anything ([`State::peek`](crate::state::State::peek)).
    Peek,
    /// Charge the cost after the fact, whether it fits or not
    /// ([`State::record`](crate::state::State::record)): for costs known from the response.
    Record,
    /// Decide and spend as [`Op::Hit`] does, for a request that will settle its final cost
    /// later ([`Store::reserve`]). A store across a network keeps `ticket` until the
    /// settle, so that a settle sent twice applies once; in-process stores ignore it.
    Reserve {
        /// The reservation's [`ticket`](crate::Reservation::ticket).
        ticket: u64,
    },
    /// Settle, at the decision's cost, a reservation of `reserved` tokens made at
    /// `reserved_at_ms` ([`Store::settle`], [`State::settle`](crate::state::State::settle)).
    Settle {
        /// When the reservation was made: its decision's `at_ms`.
        reserved_at_ms: u64,
        /// What it holds.
        reserved: u64,
        /// Its [`ticket`](crate::Reservation::ticket).
        ticket: u64,
    },
}

impl Op {
    /// The settle of `reservation`, whose final cost is the decision's `cost`. It takes the
    /// reservation, as a settle is made once: an in-process store keeps no tickets and
    /// applies every settle it is given, so the same one twice would refund twice. (A store
    /// across the network sends it again itself while its outcome is unknown, and applies it
    /// once by its ticket.)
    pub fn settle(reservation: Reservation) -> Op {
        Op::Settle {
            reserved_at_ms: reservation.at_ms(),
            reserved: reservation.cost(),
            ticket: reservation.ticket(),
        }
    }
}

/// One bucket per key under one limit, wherever the buckets are kept.
///
/// `decide` is one indivisible step on `key`'s bucket: no other decision for that key
/// happens between its read and its write.
pub trait Store<K: ?Sized> {
    /// Why a decision could not be made. [`Infallible`](core::convert::Infallible) for the in-process stores; for a
    /// store across the network, the caller chooses to let the request through (fail open)
    /// or refuse it (fail closed).
    type Error;

    /// The limit every key is held to.
    fn limit(&self) -> Limit;

    /// Applies `op` with `cost` tokens to `key`'s bucket at `now_ms`.
    fn decide(&mut self, key: &K, op: Op, now_ms: u64, cost: u64) -> Result<Decision, Self::Error>;

    /// Admits a request of `cost` tokens for `key` if it fits, spending the cost and
    /// holding it until [`settle`](Store::settle); refuses it, spending nothing, if not.
    /// See [`crate::reservation`].
    fn reserve(&mut self, key: &K, now_ms: u64, cost: u64) -> Result<Admission, Self::Error> {
        let ticket = Reservation::new_ticket();
        let decision = self.decide(key, Op::Reserve { ticket }, now_ms, cost)?;
        Ok(Admission::new(decision, ticket))
    }

    /// Settles `key`'s `reservation` at the request's final `cost`: the difference is
    /// charged or refunded. A store across the network that has to send the settle again
    /// (its outcome unknown after a timeout) applies it once, by the reservation's ticket.
    fn settle(
        &mut self,
        key: &K,
        reservation: Reservation,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, Self::Error> {
        self.decide(key, Op::settle(reservation), now_ms, cost)
    }
}

/// Every limit of one [`Policy`] per key, wherever the buckets are kept: the policy's
/// [`Store`].
///
/// `decide` is one indivisible step on all of `key`'s buckets: a hit or a reserve is
/// spent in every limit or in none ([`PolicyBucket`](crate::PolicyBucket) gives the
/// rule), and no other decision for `key` happens between its reads and its writes.
/// [`KeyedPolicyLimiter`](crate::KeyedPolicyLimiter) and
/// [`ConcurrentKeyedPolicyLimiter`](crate::ConcurrentKeyedPolicyLimiter) implement it in
/// process.
pub trait PolicyStore<K: ?Sized> {
    /// Why a decision could not be made, as for [`Store::Error`].
    type Error;

    /// The policy every key is held to.
    fn policy(&self) -> &Policy;

    /// Applies `op` with `cost` tokens to every limit of `key` at `now_ms`.
    fn decide(
        &mut self,
        key: &K,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, Self::Error>;
}
