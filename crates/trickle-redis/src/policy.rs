//! A policy on Redis: every limit of the core's [`Policy`] for a key, decided all or nothing
//! in one script call, as the core's [`PolicyLimiter`](trickle_core::PolicyLimiter) decides
//! it.

use std::num::NonZeroU32;

use redis::{ConnectionLike, Value};
use trickle_core::{Algorithm, Limit, Op, Policy, PolicyDecision};

use crate::errors::{RedisError, RedisLimitError};
use crate::keys;
use crate::runner::{self, Clock, Runner, DECISION_LEN};
use crate::sliding_log;

/// What each limit answers: its decision, then whether it frees a next token and when.
const LIMIT_LEN: usize = DECISION_LEN + 2;

/// A rate limiter whose buckets live in Redis, one per limit of a [`Policy`] for each key,
/// with the algorithm chosen at run time: the policy's twin of
/// [`RedisLimiter`](crate::RedisLimiter), with the same clocks, errors and settle attempts.
///
/// Each decision is one script call, one round trip, however many limits the policy has:
/// the algorithm's script reads every limit's bucket, decides, and writes only then, so a
/// hit or a reserve is spent in every limit or in none, and no other decision for the key
/// comes in between. A policy of one limit decides exactly as a `RedisLimiter` of that
/// limit (in buckets of its own, below).
///
/// Each limit's bucket is `{PREFIX:KEY}:ALGORITHM:limit:NAME`, under the limit's name
/// ([`limit_keys`](RedisPolicyLimiter::limit_keys)), and an admitted reserve writes one
/// pending record for the whole policy beside them
/// ([`reservation_key`](RedisPolicyLimiter::reservation_key)). The braces make
/// `PREFIX:KEY` their Redis Cluster hash tag, so every key one decision touches is in one
/// slot.
///
/// ```no_run
/// use trickle_core::Algorithm;
/// use trickle_redis::RedisPolicyLimiter;
///
/// let policy = "burst=10/1s 1000/1h".parse().unwrap();
/// let limiter = RedisPolicyLimiter::new(Algorithm::Floating, policy, "api").unwrap();
/// let client = redis::Client::open("redis://127.0.0.1/").unwrap();
/// let mut conn = client.get_connection().unwrap();
/// let decision = limiter.hit(&mut conn, "user-42", 11_000, 1).unwrap();
/// println!("{} {} left", decision.status(), decision.remaining());
/// if let Some(limit) = decision.answered_by() {
///     println!("refused by {}", limiter.policy().name(limit));
/// }
/// ```
#[derive(Debug, Clone)]
pub struct RedisPolicyLimiter {
    policy: Policy,
    /// The policy's limits, in its order, as the script is sent them.
    limits: Vec<Limit>,
    runner: Runner,
}

impl RedisPolicyLimiter {
    /// A limiter of `algorithm` under every limit of `policy`, whose keys start with
    /// `{prefix:`.
    ///
    /// Refused as [`RedisLimiter::new`](crate::RedisLimiter::new) refuses: when a limit is
    /// too large for the algorithm's script to stay exact in Lua's doubles (`N × W` above
    /// [`RedisLimiter::max_scaled`](crate::RedisLimiter::max_scaled); the error names the
    /// first such limit), and when the prefix is not 1 to
    /// [`MAX_PREFIX_LEN`](crate::MAX_PREFIX_LEN) bytes of ASCII letters, digits, `-`, `_`,
    /// `.`, `:` and `/`.
    pub fn new(
        algorithm: Algorithm,
        policy: Policy,
        prefix: &str,
    ) -> Result<RedisPolicyLimiter, RedisLimitError> {
        let limits: Vec<Limit> = policy.limits().collect();
        let runner = Runner::new(algorithm, limits.iter().copied(), prefix)?;
        Ok(RedisPolicyLimiter {
            policy,
            limits,
            runner,
        })
    }

    /// The same limiter deciding on `clock`.
    pub fn with_clock(mut self, clock: Clock) -> RedisPolicyLimiter {
        self.runner.clock = clock;
        self
    }

    /// The same limiter sending a settle up to `attempts` times in all while its outcome is
    /// unknown, as [`RedisLimiter::with_settle_attempts`](crate::RedisLimiter::with_settle_attempts):
    /// the first copy Redis runs deletes the reservation's one pending record and settles
    /// every limit; a copy that finds none changes nothing in any.
    pub fn with_settle_attempts(mut self, attempts: NonZeroU32) -> RedisPolicyLimiter {
        self.runner.settle_attempts = attempts;
        self
    }

    /// How many times a settle whose outcome is unknown is sent, in all.
    pub fn settle_attempts(&self) -> NonZeroU32 {
        self.runner.settle_attempts
    }

    /// The algorithm every limit's bucket runs.
    pub fn algorithm(&self) -> Algorithm {
        self.runner.algorithm
    }

    /// The policy every key is held to.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The clock decisions are made on.
    pub fn clock(&self) -> Clock {
        self.runner.clock
    }

    /// The Redis keys of `key`'s bucket for the policy's `index`th limit (empty past the
    /// last): `{PREFIX:KEY}:ALGORITHM:limit:NAME`, the key escaped as in
    /// [`RedisLimiter::redis_key`](crate::RedisLimiter::redis_key) and the limit under its
    /// name, and for the sliding log the list of its entries beside it
    /// (`{PREFIX:KEY}:sliding-log:limit:NAME:entries`).
    ///
    /// ```
    /// use trickle_core::Algorithm;
    /// use trickle_redis::RedisPolicyLimiter;
    ///
    /// let policy = "burst=10/1s 1000/1h".parse().unwrap();
    /// let api = RedisPolicyLimiter::new(Algorithm::Floating, policy, "api").unwrap();
    /// assert_eq!(api.limit_keys("user-42", 0), ["{api:user-42}:floating:limit:burst"]);
    /// assert_eq!(api.limit_keys("v2:alice", 1), ["{api:v2%3Aalice}:floating:limit:1000/1h"]);
    /// assert!(api.limit_keys("user-42", 2).is_empty());
    /// ```
    pub fn limit_keys(&self, key: &str, index: usize) -> Vec<String> {
        if index >= self.policy.len() {
            return Vec::new();
        }
        let name = self.policy.name(index);
        let bucket = keys::limit_key(&self.runner.prefix, key, self.runner.algorithm, name);
        match self.runner.algorithm {
            Algorithm::SlidingLog => {
                let entries = sliding_log::entries_key(&bucket);
                vec![bucket, entries]
            }
            _ => vec![bucket],
        }
    }

    /// Every Redis key of `key`'s buckets, each limit's
    /// ([`limit_keys`](RedisPolicyLimiter::limit_keys)) in the policy's order, all in the
    /// hash tag `{PREFIX:KEY}` and so in one Cluster slot, as are the pending records of its
    /// reservations ([`reservation_key`](RedisPolicyLimiter::reservation_key)).
    pub fn redis_keys(&self, key: &str) -> Vec<String> {
        (0..self.policy.len())
            .flat_map(|index| self.limit_keys(key, index))
            .collect()
    }

    /// The pending record of `key`'s reservation under `ticket`, one for all the policy's
    /// limits: `{PREFIX:KEY}:ALGORITHM:policy-reservation:TICKET`, the ticket in 16
    /// hexadecimal digits. An admitted [`Op::Reserve`] writes it and the first
    /// [`Op::Settle`] to run deletes it, settling every limit; it expires when the
    /// reservation's tokens stop counting in the last of them, plus
    /// [`EXPIRY_GRACE_MS`](crate::EXPIRY_GRACE_MS).
    ///
    /// ```
    /// use trickle_core::Algorithm;
    /// use trickle_redis::RedisPolicyLimiter;
    ///
    /// let policy = "10/1s 1000/1h".parse().unwrap();
    /// let api = RedisPolicyLimiter::new(Algorithm::Fixed, policy, "api").unwrap();
    /// assert_eq!(
    ///     api.reservation_key("user-42", 255),
    ///     "{api:user-42}:fixed:policy-reservation:00000000000000ff"
    /// );
    /// ```
    pub fn reservation_key(&self, key: &str, ticket: u64) -> String {
        let bucket = keys::bucket_key(&self.runner.prefix, key, self.runner.algorithm);
        format!("{bucket}:policy-reservation:{ticket:016x}")
    }

    /// Decides a request of `cost` tokens at `now_ms` for `key`, and spends the cost in
    /// every limit if every limit has room: the core's
    /// [`PolicyBucket::hit`](trickle_core::PolicyBucket::hit) on the same requests.
    pub fn hit(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, RedisError> {
        self.decide(conn, key, Op::Hit, now_ms, cost)
    }

    /// What [`hit`](RedisPolicyLimiter::hit) would answer, spending and writing nothing.
    pub fn peek(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, RedisError> {
        self.decide(conn, key, Op::Peek, now_ms, cost)
    }

    /// Charges `cost` to every limit after the fact, whether it fits or not; when that
    /// would take any limit past the integers the script holds exactly, to none
    /// ([`RedisError::RecordOutOfRange`]).
    pub fn record(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, RedisError> {
        self.decide(conn, key, Op::Record, now_ms, cost)
    }

    /// Applies `op` to every limit of `key` in one script call, as the core's
    /// [`PolicyBucket::decide`](trickle_core::PolicyBucket::decide) does, and as
    /// [`RedisLimiter::decide`](crate::RedisLimiter::decide) does for one limit:
    ///
    /// - [`Op::Hit`] and [`Op::Reserve`] spend in every limit if every limit has room, and
    ///   in none otherwise: the limits that had room are left as they were, and the ones
    ///   that refused as a refusal leaves a limit alone. An admitted reserve also writes
    ///   its pending record ([`reservation_key`](RedisPolicyLimiter::reservation_key)),
    ///   and is sent once.
    /// - [`Op::Settle`] settles every limit at `cost` if it deletes that record; otherwise
    ///   it changes no counts. Sent again while its outcome is unknown, up to
    ///   [`settle_attempts`](RedisPolicyLimiter::settle_attempts) times in all.
    /// - [`Op::Record`] and [`Op::Settle`] charge every limit, or none when one would leave
    ///   the exact range.
    ///
    /// [`trickle_core::flow::policy_reservation`] reads an admitted reserve's reservation
    /// from its answer.
    pub fn decide(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, RedisError> {
        let call = self.call(key, op, now_ms, cost)?;
        let reply = self.runner.send(conn, &call, op)?;
        self.read_reply(&reply, op, cost)
    }

    /// [`decide`](RedisPolicyLimiter::decide) on an async connection (the `aio` feature).
    #[cfg(feature = "aio")]
    pub async fn decide_async<C>(
        &self,
        conn: &mut C,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, RedisError>
    where
        C: redis::aio::ConnectionLike,
    {
        let call = self.call(key, op, now_ms, cost)?;
        let reply = self.runner.send_async(conn, &call, op).await?;
        self.read_reply(&reply, op, cost)
    }

    fn call(&self, key: &str, op: Op, now_ms: u64, cost: u64) -> Result<runner::Call, RedisError> {
        self.runner.call(
            self.redis_keys(key),
            |ticket| self.reservation_key(key, ticket),
            &self.limits,
            op,
            now_ms,
            cost,
            true,
        )
    }

    /// Each limit's nine integers and its next token, as the core's policy answer.
    fn read_reply(&self, reply: &Value, op: Op, cost: u64) -> Result<PolicyDecision, RedisError> {
        let numbers = runner::integers(reply, LIMIT_LEN * self.limits.len())?;
        let mut decisions = Vec::with_capacity(self.limits.len());
        let mut next_token_ms = Vec::with_capacity(self.limits.len());
        for (answer, &limit) in numbers.chunks_exact(LIMIT_LEN).zip(&self.limits) {
            let (decision, next) = answer.split_at(DECISION_LEN);
            decisions.push(runner::decision(decision, limit, op, cost, reply)?);
            next_token_ms.push(match *next {
                [0, _] => None,
                [1, ms] => Some(ms),
                _ => return Err(runner::bad_reply(reply)),
            });
        }
        Ok(PolicyDecision::new(decisions, next_token_ms))
    }
}
