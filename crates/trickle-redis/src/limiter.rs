//! The limiter whose algorithm is chosen at run time, as the core's [`trickle_core::Limiter`]:
//! one Lua script per algorithm, each returning the same nine integers, which this side
//! turns into the core's own [`Decision`].

use std::num::{NonZeroU32, NonZeroU64};

use redis::{ConnectionLike, Script, ScriptInvocation, Value};
use trickle_core::{Algorithm, Counters, Decision, Limit, Op, Outcome, Tokens};

use crate::errors::{RedisError, RedisLimitError};
use crate::exact::MAX_TIME_MS;
use crate::{fixed, floating, keys, sliding_log, token_bucket};

/// How long a bucket outlives its usefulness in Redis, in ms. Each script works out when
/// the state it writes stops counting on the caller's clock (for the floating window the
/// end of the next window, for the fixed window the end of this one, for the token bucket
/// the moment it is full again) and expires the key that long after, plus this grace:
/// Redis counts the expiry on its own clock, so callers whose clocks run behind by up to
/// this much still find it. A reservation's pending record is kept the same way, until
/// its tokens stop counting, plus this grace.
pub const EXPIRY_GRACE_MS: u64 = 1_000;

/// How many times [`RedisLimiter`] sends a settle whose outcome is unknown (a timeout, a
/// connection dropped before the answer) unless
/// [`with_settle_attempts`](RedisLimiter::with_settle_attempts) says otherwise: 3.
pub const SETTLE_ATTEMPTS: NonZeroU32 = NonZeroU32::MIN.saturating_add(2);

const OUTCOME_ALLOWED: u64 = 0;
const OUTCOME_DENIED: u64 = 1;
const OUTCOME_EXCEEDS: u64 = 2;
/// A `record` or a `settle` that would take the bucket's counts past the integers a Lua
/// number holds exactly; the script wrote nothing.
const OUTCOME_OUT_OF_RANGE: u64 = 3;

/// Whose clock a decision is made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// The time the caller passes in, as in the core: replays, tests, and servers whose
    /// clocks are kept in step (NTP). The default.
    #[default]
    Caller,
    /// The Redis server's `TIME`, read inside the script; the time the caller passes is
    /// ignored. One clock for the whole fleet, whatever the application servers' clocks
    /// say; see the crate's documentation for what that costs.
    Server,
}

/// A rate limiter whose buckets live in Redis, one key per bucket, all under one limit,
/// with the algorithm chosen at run time.
///
/// The bucket for `key` is `{PREFIX:KEY}:ALGORITHM`, the key escaped
/// ([`redis_key`](RedisLimiter::redis_key)), and a reservation's pending record is beside
/// it ([`reservation_key`](RedisLimiter::reservation_key)); the braces make `PREFIX:KEY`
/// their Redis Cluster hash tag, so every key one decision touches is in one slot.
#[derive(Debug, Clone)]
pub struct RedisLimiter {
    algorithm: Algorithm,
    limit: Limit,
    prefix: String,
    clock: Clock,
    settle_attempts: NonZeroU32,
    script: Script,
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
        if !keys::prefix_is_allowed(prefix) {
            return Err(RedisLimitError::BadPrefix {
                prefix: prefix.to_string(),
            });
        }
        let (text, max_scaled) = script(algorithm);
        if u128::from(limit.tokens()) * u128::from(limit.window_ms()) > max_scaled {
            return Err(RedisLimitError::TooLarge {
                algorithm,
                limit,
                max_scaled,
            });
        }
        Ok(RedisLimiter {
            algorithm,
            limit,
            prefix: prefix.to_string(),
            clock: Clock::Caller,
            settle_attempts: SETTLE_ATTEMPTS,
            script: Script::new(text),
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
        script(algorithm).1
    }

    /// The same limiter deciding on `clock`.
    pub fn with_clock(mut self, clock: Clock) -> RedisLimiter {
        self.clock = clock;
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
        self.settle_attempts = attempts;
        self
    }

    /// How many times a settle whose outcome is unknown is sent, in all.
    pub fn settle_attempts(&self) -> NonZeroU32 {
        self.settle_attempts
    }

    /// The algorithm every bucket runs.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The limit every bucket is checked against.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// The clock decisions are made on.
    pub fn clock(&self) -> Clock {
        self.clock
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
        keys::bucket_key(&self.prefix, key, self.algorithm)
    }

    /// Every Redis key `key`'s bucket uses, all in the hash tag `{PREFIX:KEY}` and so in
    /// one Cluster slot: the bucket's own key, and for the sliding log the list of its
    /// entries beside it (`{PREFIX:KEY}:sliding-log:entries`). Reservations' pending
    /// records are in the same slot too, one key each
    /// ([`reservation_key`](RedisLimiter::reservation_key)).
    pub fn redis_keys(&self, key: &str) -> Vec<String> {
        let bucket = self.redis_key(key);
        match self.algorithm {
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
        let invocation = self.invocation(key, op, now_ms, cost)?;
        let (mut attempt, mut unknown) = (1, None);
        loop {
            match invocation.invoke::<Value>(conn) {
                Ok(reply) => return self.read_reply(&reply, op, cost),
                Err(err) => self.send_again(op, attempt, err, &mut unknown)?,
            }
            // send_again ends the loop once `attempt` reaches settle_attempts, a u32.
            attempt += 1;
        }
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
        let invocation = self.invocation(key, op, now_ms, cost)?;
        let (mut attempt, mut unknown) = (1, None);
        loop {
            match invocation.invoke_async::<Value>(conn).await {
                Ok(reply) => return self.read_reply(&reply, op, cost),
                Err(err) => self.send_again(op, attempt, err, &mut unknown)?,
            }
            // send_again ends the loop once `attempt` reaches settle_attempts, a u32.
            attempt += 1;
        }
    }

    /// After attempt number `attempt` (from 1) of `op` failed with `err`: `Ok` to send it
    /// again, or the error to return. Only a settle is sent again, and only while its
    /// outcome is unknown; `unknown` keeps the failure that first made it so, which is what
    /// the error reports (later attempts on a broken connection only say "broken pipe").
    fn send_again(
        &self,
        op: Op,
        attempt: u32,
        err: redis::RedisError,
        unknown: &mut Option<redis::RedisError>,
    ) -> Result<(), RedisError> {
        if !matches!(op, Op::Settle { .. }) {
            return Err(RedisError::Redis(err));
        }
        let again = outcome_unknown(&err);
        let cause = match unknown.take() {
            Some(first) => first,
            None if again => err,
            // The first attempt failed and Redis said why: nothing ran.
            None => return Err(RedisError::Redis(err)),
        };
        if again && attempt < self.settle_attempts.get() {
            *unknown = Some(cause);
            Ok(())
        } else {
            Err(RedisError::SettleUnknown {
                attempts: attempt,
                error: cause,
            })
        }
    }

    /// The script call for one decision, its arguments checked: the same for the sync and
    /// the async connection.
    fn invocation(
        &self,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<ScriptInvocation<'_>, RedisError> {
        if self.clock == Clock::Caller && now_ms > MAX_TIME_MS {
            return Err(RedisError::TimeTooLarge { now_ms });
        }
        let tokens = self.limit.tokens();
        let window_ms = self.limit.window_ms();
        // A hit, peek or reserve decides every cost above N alike, so the script never sees
        // a number past 2^53; a record or a settle charges what it is given, and the script
        // refuses what would leave the exact range.
        let (name, script_cost, ticket) = match op {
            Op::Hit => ("hit", cost.min(tokens + 1), None),
            Op::Peek => ("peek", cost.min(tokens + 1), None),
            Op::Reserve { ticket } => ("reserve", cost.min(tokens + 1), Some(ticket)),
            Op::Record if cost > MAX_TIME_MS => {
                return Err(RedisError::RecordOutOfRange { cost });
            }
            Op::Record => ("record", cost, None),
            Op::Settle {
                reserved_at_ms,
                reserved,
                ticket,
            } => {
                // A reservation's time is a decision's, on the clock decisions are made on
                // (the server's too, with `Clock::Server`), so it is checked on both.
                if reserved_at_ms > MAX_TIME_MS {
                    return Err(RedisError::TimeTooLarge {
                        now_ms: reserved_at_ms,
                    });
                }
                if cost > MAX_TIME_MS || reserved > MAX_TIME_MS {
                    return Err(RedisError::SettleOutOfRange { reserved, cost });
                }
                ("settle", cost, Some(ticket))
            }
        };
        let mut invocation = self.script.key(self.redis_keys(key));
        if let Some(ticket) = ticket {
            // The scripts find the pending record last in KEYS, so Redis Cluster sees it.
            invocation.key(self.reservation_key(key, ticket));
        }
        invocation
            .arg(tokens)
            .arg(window_ms)
            .arg(now_ms)
            .arg(script_cost)
            .arg(EXPIRY_GRACE_MS)
            .arg(name)
            .arg(match self.clock {
                Clock::Caller => "caller",
                Clock::Server => "server",
            });
        if let Op::Settle {
            reserved_at_ms,
            reserved,
            ..
        } = op
        {
            invocation.arg(reserved_at_ms).arg(reserved);
        }
        Ok(invocation)
    }

    /// The nine integers every script returns: outcome, used × W, the time decided at, the
    /// wait from that time (for a denial), the caller's time (the server's with
    /// [`Clock::Server`]), whether counters follow, and previous, current and elapsed.
    fn read_reply(&self, reply: &Value, op: Op, cost: u64) -> Result<Decision, RedisError> {
        let [outcome, used, at_ms, wait_ms, now_ms, has_counters, previous, current, elapsed_ms] =
            integers(reply)?;
        let outcome = match outcome {
            OUTCOME_ALLOWED => Outcome::Allowed,
            // As the core: reported from the caller's clock, so that `now + retry_after_ms`
            // is the moment even when that clock had gone backwards.
            OUTCOME_DENIED => Outcome::Denied {
                retry_after_ms: at_ms
                    .checked_sub(now_ms)
                    .ok_or_else(|| bad_reply(reply))?
                    .saturating_add(wait_ms),
            },
            OUTCOME_EXCEEDS => Outcome::ExceedsLimit,
            OUTCOME_OUT_OF_RANGE => {
                return Err(match op {
                    Op::Settle { reserved, .. } => RedisError::SettleOutOfRange { reserved, cost },
                    _ => RedisError::RecordOutOfRange { cost },
                })
            }
            _ => return Err(bad_reply(reply)),
        };
        let window_ms = self.limit.window_ms();
        // A Limit's window is at least 1 ms.
        let window = NonZeroU64::new(window_ms).ok_or_else(|| bad_reply(reply))?;
        Ok(Decision {
            outcome,
            cost,
            limit: self.limit,
            used: Tokens::new(u128::from(used), window),
            at_ms,
            counters: (has_counters == 1).then_some(Counters {
                previous: u128::from(previous),
                current: u128::from(current),
                elapsed_ms,
                window_ms,
            }),
        })
    }
}

/// The algorithm's script and the largest `N × W` it decides exactly: every algorithm of
/// the core has one, so a new algorithm does not compile until it has a script too.
fn script(algorithm: Algorithm) -> (&'static str, u128) {
    match algorithm {
        Algorithm::Floating => (floating::SCRIPT, floating::MAX_SCALED),
        Algorithm::Fixed => (fixed::SCRIPT, fixed::MAX_SCALED),
        Algorithm::TokenBucket => (token_bucket::SCRIPT, token_bucket::MAX_SCALED),
        Algorithm::SlidingLog => (sliding_log::SCRIPT, sliding_log::MAX_SCALED),
    }
}

/// Whether a failed command may have run: it timed out waiting for the answer, or the
/// connection broke (before it was sent, or after: nobody can tell which).
fn outcome_unknown(err: &redis::RedisError) -> bool {
    err.is_timeout() || err.is_connection_dropped() || err.is_io_error()
}

/// The script's nine non-negative integers; anything else is a [`RedisError::BadReply`].
fn integers(reply: &Value) -> Result<[u64; 9], RedisError> {
    let Value::Array(items) = reply else {
        return Err(bad_reply(reply));
    };
    let mut numbers = [0u64; 9];
    if items.len() != numbers.len() {
        return Err(bad_reply(reply));
    }
    for (number, item) in numbers.iter_mut().zip(items) {
        *number = match item {
            Value::Int(n) => u64::try_from(*n).map_err(|_| bad_reply(reply))?,
            _ => return Err(bad_reply(reply)),
        };
    }
    Ok(numbers)
}

fn bad_reply(reply: &Value) -> RedisError {
    RedisError::BadReply {
        reply: format!("{reply:?}"),
    }
}
