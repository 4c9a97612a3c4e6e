//! The limiter whose algorithm is chosen at run time, as the core's [`trickle_core::Limiter`]:
//! one Lua script per algorithm, each returning the same nine integers, which this side
//! turns into the core's own [`Decision`].

use std::num::NonZeroU32;

use redis::ConnectionLike;
use trickle_core::{Algorithm, Decision, Limit, Op};

use crate::errors::{RedisError, RedisLimitError};
use crate::runner::{self, Clock, Runner, DECISION_LEN};
#[cfg(doc)]
use crate::runner::{EXPIRY_GRACE_MS, SETTLE_ATTEMPTS};
use crate::{keys, sliding_log};

/// A rate limiter whose buckets live in Redis, one key per bucket, all under one limit,
/// with the algorithm chosen at run time.
///
/// The bucket for `key` is `{PREFIX:KEY}:ALGORITHM`, the key escaped
/// ([`redis_key`](RedisLimiter::redis_key)), and a reservation's pending record is beside
/// it ([`reservation_key`](RedisLimiter::reservation_key)); the braces make `PREFIX:KEY`
/// their Redis Cluster hash tag, so every key one decision touches is in one slot.
#[derive(Debug, Clone)]
pub struct RedisLimiter {
    limit: Limit,
    runner: Runner,
}

impl RedisLimiter {
    /// A limiter of `algorithm` under `limit`, whose keys start with `{prefix:`.
    ///
    /// Refused when the limit is too large for the algorithm's script to stay exact in
    /// Lua's doubles (`N × W` above
    /// [`max_scaled`](RedisLimiter::max_scaled)), and when the prefix is not 1 to
    /// [`MAX_PREFIX_LEN`](crate::MAX_PREFIX_LEN) bytes of ASCII letters, digits, `-`, `_`,
    /// `.`, `:` and `/`.
    pub fn new(
        algorithm: Algorithm,
        limit: Limit,
        prefix: &str,
    ) -> Result<RedisLimiter, RedisLimitError> {
        Ok(RedisLimiter {
            limit,
            runner: Runner::new(algorithm, [limit], prefix)?,
        })
    }

    /// The largest `N × W` (tokens × window in ms) for which `algorithm`'s script stays
    /// exact in Lua's doubles, which hold every integer up to 2^53.
    ///
    /// - floating: 2^52, as its sums reach `2 × N × W`;
    /// - fixed and token-bucket: 2^53 − 1, as their sums reach `N × W` and a request that
    ///   never fits reaches the script as cost N + 1.
    ///
    /// ```
    /// use trickle_core::Algorithm;
    /// use trickle_redis::RedisLimiter;
    ///
    /// assert_eq!(RedisLimiter::max_scaled(Algorithm::Floating), 1 << 52);
    /// assert_eq!(RedisLimiter::max_scaled(Algorithm::TokenBucket), (1 << 53) - 1);
    /// ```
    pub fn max_scaled(algorithm: Algorithm) -> u128 {
        runner::script(algorithm).1
    }

    /// The same limiter deciding on `clock`.
    pub fn with_clock(mut self, clock: Clock) -> RedisLimiter {
        self.runner.clock = clock;
        self
    }

    /// The same limiter sending a settle up to `attempts` times in all while its outcome is
    /// unknown (a timeout, a connection dropped before the answer); [`SETTLE_ATTEMPTS`]
    /// unless set. Safe because a settle applies once however often it is sent: the first
    /// copy Redis runs deletes the reservation's pending record, and a copy that finds none
    /// changes nothing (see the crate's documentation). Nothing else is ever sent again: a
    /// reserve sent twice could spend twice.
    ///
    /// Each attempt waits as long as the connection's own timeout allows, and the next one
    /// is sent at once on the same connection: the redis crate drops the late answer to
    /// an attempt that timed out, so every attempt reads its own answer.
    pub fn with_settle_attempts(mut self, attempts: NonZeroU32) -> RedisLimiter {
        self.runner.settle_attempts = attempts;
        self
    }

    /// How many times a settle whose outcome is unknown is sent, in all.
    pub fn settle_attempts(&self) -> NonZeroU32 {
        self.runner.settle_attempts
    }

    /// The algorithm every bucket runs.
    pub fn algorithm(&self) -> Algorithm {
        self.runner.algorithm
    }

    /// The limit every bucket is checked against.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// The clock decisions are made on.
    pub fn clock(&self) -> Clock {
        self.runner.clock
    }

    /// The Redis key holding `key`'s bucket: `{PREFIX:KEY}:ALGORITHM`, with `%`, `{`, `}`
    /// and `:` in the key written `%25`, `%7B`, `%7D` and `%3A`, so that no key moves the
    /// Cluster hash tag (a `}` would end it) or reads as another prefix's (`api` + `v2:x`
    /// against `api:v2` + `x`): the tag's last `:` ends the prefix, and the rest unescapes
    /// to the key. A key with none of them is written as it is.
    ///
    /// ```
    /// use trickle_core::Algorithm;
    /// use trickle_redis::RedisLimiter;
    ///
    /// let api = RedisLimiter::new(Algorithm::Floating, "6/8s".parse().unwrap(), "api").unwrap();
    /// assert_eq!(api.redis_key("user-42"), "{api:user-42}:floating");
    /// assert_eq!(api.redis_key("}abc"), "{api:%7Dabc}:floating");
    /// assert_eq!(api.redis_key("v2:alice"), "{api:v2%3Aalice}:floating");
    /// let v2 = RedisLimiter::new(Algorithm::Floating, "6/8s".parse().unwrap(), "api:v2").unwrap();
    /// assert_eq!(v2.redis_key("alice"), "{api:v2:alice}:floating");
    /// ```
    pub fn redis_key(&self, key: &str) -> String {
        keys::bucket_key(&self.runner.prefix, key, self.runner.algorithm)
    }

    /// Every Redis key `key`'s bucket uses, all in the hash tag `{PREFIX:KEY}` and so in
    /// one Cluster slot: the bucket's own key, and for the sliding log the list of its
    /// entries beside it (`{PREFIX:KEY}:sliding-log:entries`). Reservations' pending
    /// records are in the same slot too, one key each
    /// ([`reservation_key`](RedisLimiter::reservation_key)).
    pub fn redis_keys(&self, key: &str) -> Vec<String> {
        let bucket = self.redis_key(key);
        match self.runner.algorithm {
            Algorithm::SlidingLog => {
                let entries = sliding_log::entries_key(&bucket);
                vec![bucket, entries]
            }
            _ => vec![bucket],
        }
    }

    /// The pending record of `key`'s reservation under `ticket`:
    /// `{PREFIX:KEY}:ALGORITHM:reservation:TICKET`, the key escaped as in
    /// [`redis_key`](RedisLimiter::redis_key) and the ticket in 16 hexadecimal digits, in
    /// the bucket's hash tag. An admitted [`Op::Reserve`] writes it and the first
    /// [`Op::Settle`] to run deletes it; it expires when the reservation's tokens stop
    /// counting, plus [`EXPIRY_GRACE_MS`].
    pub fn reservation_key(&self, key: &str, ticket: u64) -> String {
        format!("{}:reservation:{ticket:016x}", self.redis_key(key))
    }

    /// Decides a request of `cost` tokens at `now_ms` for `key`, and spends the cost if it
    /// fits: the same [`Decision`] as the core's `hit` on the same requests.
    ///
    /// A request that spends nothing leaves the counts untouched; when its time is later
    /// than any seen before, it records that time alone (the core reads a clock that went
    /// backwards as the latest time seen).
    pub fn hit(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(conn, key, Op::Hit, now_ms, cost)
    }

    /// What [`hit`](RedisLimiter::hit) would answer, spending and writing nothing: the same
    /// [`Decision`] as the core's `peek`. `peek(…, 0)` shows what is in use.
    pub fn peek(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(conn, key, Op::Peek, now_ms, cost)
    }

    /// Charges `cost` after the fact, whether it fits or not, as the core's `record`: for
    /// costs known only from the response (ESI's 4XX costing 5).
    pub fn record(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(conn, key, Op::Record, now_ms, cost)
    }

    /// Runs the algorithm's script for `op` and reads its answer into the core's `Decision`:
    /// the core's `decide` on the same requests ([`trickle_core::Bucket::decide`]), in one round
    /// trip for every op.
    ///
    /// - [`Op::Reserve`] is a hit that, when admitted, also writes the reservation's pending
    ///   record under its ticket ([`reservation_key`](RedisLimiter::reservation_key)). It is
    ///   sent once: an error leaves the caller's fail-open or fail-closed rule to decide.
    /// - [`Op::Settle`] settles at `cost` (the final cost) as the core's settle does, if it
    ///   deletes that pending record; otherwise it changes no counts and answers the bucket
    ///   as it stands. Sent again while its outcome is unknown, up to
    ///   [`settle_attempts`](RedisLimiter::settle_attempts) times in all; then the error is
    ///   [`RedisError::SettleUnknown`].
    ///
    /// The core's [`Store::reserve`](trickle_core::Store::reserve) and
    /// [`Store::settle`](trickle_core::Store::settle) (on a [`RedisStore`](crate::RedisStore))
    /// draw the ticket and send both.
    pub fn decide(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, RedisError> {
        let call = self.call(key, op, now_ms, cost)?;
        let reply = self.runner.send(conn, &call, op)?;
        self.read_reply(&reply, op, cost)
    }

    /// [`decide`](RedisLimiter::decide) on an async connection (the `aio` feature): for
    /// servers on tokio, such as trickle-tower's middleware over a
    /// [`ConnectionManager`](redis::aio::ConnectionManager), which reconnects after Redis
    /// comes back.
    #[cfg(feature = "aio")]
    pub async fn decide_async<C>(
        &self,
        conn: &mut C,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, RedisError>
    where
        C: redis::aio::ConnectionLike,
    {
        let call = self.call(key, op, now_ms, cost)?;
        let reply = self.runner.send_async(conn, &call, op).await?;
        self.read_reply(&reply, op, cost)
    }

    /// The script call for one decision, its arguments checked: the same for the sync and
    /// the async connection.
    fn call(&self, key: &str, op: Op, now_ms: u64, cost: u64) -> Result<runner::Call, RedisError> {
        self.runner.call(
            self.redis_keys(key),
            |ticket| self.reservation_key(key, ticket),
            &[self.limit],
            op,
            now_ms,
            cost,
            false,
        )
    }

    /// The nine integers the script answers for the one limit, as the core's decision.
    fn read_reply(&self, reply: &redis::Value, op: Op, cost: u64) -> Result<Decision, RedisError> {
        let numbers = runner::integers(reply, DECISION_LEN)?;
        runner::decision(&numbers, self.limit, op, cost, reply)
    }
}
