//! The core's [`Store`] and [`PolicyStore`] over Redis: code written against them (a replay,
//! a middleware) runs on buckets shared by many machines without changing.

use std::fmt::{self, Write};

use redis::ConnectionLike;
use trickle_core::{Decision, Limit, Op, Policy, PolicyDecision, PolicyStore, Store};

use crate::errors::RedisError;
use crate::limiter::RedisLimiter;
use crate::policy::RedisPolicyLimiter;

/// A [`RedisLimiter`] with the connection it decides on: a [`Store`] whose keys are
/// anything that can be written as text.
///
/// ```no_run
/// use trickle_core::{Algorithm, Op, Store};
/// use trickle_redis::{RedisLimiter, RedisStore};
///
/// let limiter = RedisLimiter::new(Algorithm::Floating, "150/15m".parse().unwrap(), "esi").unwrap();
/// let conn = redis::Client::open("redis://127.0.0.1/").unwrap().get_connection().unwrap();
/// let mut store = RedisStore::new(limiter, conn);
/// let decision = store.decide("7:90000001", Op::Hit, 1_700_000_000_000, 2).unwrap();
/// println!("{}", decision.status());
/// ```
///
/// The core's [`Store::reserve`] and [`Store::settle`] run on it too, one round trip each;
/// the settle is applied once however often it has to be sent (see the crate's
/// documentation, [Reserve and settle](crate#reserve-and-settle)):
///
/// ```no_run
/// use trickle_core::flow::{Answer, Pricing};
/// use trickle_core::{Admission, Algorithm};
/// use trickle_redis::{RedisLimiter, RedisStore};
///
/// let limiter = RedisLimiter::new(Algorithm::Floating, "150/15m".parse().unwrap(), "esi").unwrap();
/// let conn = redis::Client::open("redis://127.0.0.1/").unwrap().get_connection().unwrap();
/// let mut store = RedisStore::new(limiter, conn);
/// let esi = Pricing::esi();
/// let now_ms = 1_700_000_000_000;
/// match esi.admit(&mut store, "7:90000001", now_ms).unwrap() {
///     Admission::Admitted { reservation, .. } => {
///         // … the handler answers 404, which ESI prices at 5 …
///         let settled = esi
///             .settle(&mut store, "7:90000001", reservation, now_ms + 20, Answer::Status(404))
///             .unwrap();
///         println!("{} left", settled.decision.remaining());
///     }
///     Admission::Refused(decision) => println!("429, retry after {:?} s", decision.retry_after_s()),
/// }
/// ```
#[derive(Debug)]
pub struct RedisStore<C> {
    limiter: RedisLimiter,
    conn: C,
}

impl<C: ConnectionLike> RedisStore<C> {
    /// Decides with `limiter`'s scripts on `conn`.
    pub fn new(limiter: RedisLimiter, conn: C) -> RedisStore<C> {
        RedisStore { limiter, conn }
    }

    /// The limiter whose scripts decide.
    pub fn limiter(&self) -> &RedisLimiter {
        &self.limiter
    }

    /// The connection, for other commands between decisions.
    pub fn connection(&mut self) -> &mut C {
        &mut self.conn
    }

    /// The limiter and the connection, apart again.
    pub fn into_parts(self) -> (RedisLimiter, C) {
        (self.limiter, self.conn)
    }
}

impl<K: fmt::Display + ?Sized, C: ConnectionLike> Store<K> for RedisStore<C> {
    type Error = RedisError;

    fn limit(&self) -> Limit {
        self.limiter.limit()
    }

    fn decide(&mut self, key: &K, op: Op, now_ms: u64, cost: u64) -> Result<Decision, RedisError> {
        self.limiter
            .decide(&mut self.conn, &text(key), op, now_ms, cost)
    }
}

/// A [`RedisPolicyLimiter`] with the connection it decides on: a [`PolicyStore`] whose keys
/// are anything that can be written as text.
///
/// ```no_run
/// use trickle_core::{Algorithm, Op, PolicyStore};
/// use trickle_redis::{RedisPolicyLimiter, RedisPolicyStore};
///
/// let policy = "burst=10/1s 1000/1h".parse().unwrap();
/// let limiter = RedisPolicyLimiter::new(Algorithm::SlidingLog, policy, "api").unwrap();
/// let conn = redis::Client::open("redis://127.0.0.1/").unwrap().get_connection().unwrap();
/// let mut store = RedisPolicyStore::new(limiter, conn);
/// let decision = store.decide("user-42", Op::Hit, 1_700_000_000_000, 1).unwrap();
/// println!("{}", decision.status());
/// ```
#[derive(Debug)]
pub struct RedisPolicyStore<C> {
    limiter: RedisPolicyLimiter,
    conn: C,
}

impl<C: ConnectionLike> RedisPolicyStore<C> {
    /// Decides with `limiter`'s scripts on `conn`.
    pub fn new(limiter: RedisPolicyLimiter, conn: C) -> RedisPolicyStore<C> {
        RedisPolicyStore { limiter, conn }
    }

    /// The limiter whose scripts decide.
    pub fn limiter(&self) -> &RedisPolicyLimiter {
        &self.limiter
    }

    /// The connection, for other commands between decisions.
    pub fn connection(&mut self) -> &mut C {
        &mut self.conn
    }

    /// The limiter and the connection, apart again.
    pub fn into_parts(self) -> (RedisPolicyLimiter, C) {
        (self.limiter, self.conn)
    }
}

impl<K: fmt::Display + ?Sized, C: ConnectionLike> PolicyStore<K> for RedisPolicyStore<C> {
    type Error = RedisError;

    fn policy(&self) -> &Policy {
        self.limiter.policy()
    }

    fn decide(
        &mut self,
        key: &K,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, RedisError> {
        self.limiter
            .decide(&mut self.conn, &text(key), op, now_ms, cost)
    }
}

fn text<K: fmt::Display + ?Sized>(key: &K) -> String {
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = write!(text, "{key}");
    text
}
