//! The floating window as one Lua script: decide, and spend only when allowed, in one
//! round trip.
//!
//! The script (`floating.lua`, beside this file) repeats the core's `src/floating.rs`
//! step for step in integers: roll the counters to the request's window, compare
//! `previous × (W − e) + current × W` with `(N − cost) × W`, and for a denial find the first
//! millisecond that fits with the same floor division the core makes. It returns integers
//! only; this side turns them into the core's own [`Decision`], so a caller (and the parity
//! test) sees exactly what an in-process [`trickle::FloatingWindow`] would answer.

use std::num::NonZeroU64;

use redis::{ConnectionLike, Script, Value};
use trickle::{Counters, Decision, Limit, Outcome, Tokens};

use crate::errors::{RedisError, RedisLimitError};

/// 2^52: the largest `N × W` a limit may have. The script's largest number is
/// `used × W = previous × (W − e) + current × W ≤ 2 × N × W`, as a hit never lets a counter
/// pass N, and doubles hold every integer up to 2^53 exactly.
pub const MAX_SCALED: u128 = 1 << 52;

/// 2^53: the latest time, in ms, a hit may bring (about 285,000 years after 1970).
pub const MAX_TIME_MS: u64 = 1 << 53;

/// How long a bucket outlives its usefulness in Redis, in ms. Its counters stop counting
/// two windows after the last write on the caller's clock; Redis counts the expiry on its
/// own clock, so callers whose clocks run behind by up to this much still find them.
pub const EXPIRY_GRACE_MS: u64 = 1_000;

const OUTCOME_ALLOWED: u64 = 0;
const OUTCOME_DENIED: u64 = 1;
const OUTCOME_EXCEEDS: u64 = 2;

/// A floating window whose buckets live in Redis, one hash per key.
///
/// The bucket for `key` is the hash `{PREFIX:KEY}:floating`; the braces make `PREFIX:KEY`
/// its Redis Cluster hash tag, so every key one decision touches is in one slot. Fields:
/// `previous` and `current` (the counters), `counted` (the time they were rolled to) and
/// `seen` (the latest time any request brought).
#[derive(Debug, Clone)]
pub struct RedisFloatingWindow {
    limit: Limit,
    prefix: String,
    script: Script,
}

impl RedisFloatingWindow {
    /// A floating window of `limit` whose keys start with `{prefix:`.
    ///
    /// Refused when `N × W` is above 2^52 ([`MAX_SCALED`]), so that `2 × N × W` stays within
    /// the 2^53 a Lua number holds exactly, and when the prefix is empty or holds a brace.
    pub fn new(limit: Limit, prefix: &str) -> Result<RedisFloatingWindow, RedisLimitError> {
        if u128::from(limit.tokens()) * u128::from(limit.window_ms()) > MAX_SCALED {
            return Err(RedisLimitError::TooLarge { limit });
        }
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(RedisLimitError::BadPrefix {
                prefix: prefix.to_string(),
            });
        }
        Ok(RedisFloatingWindow {
            limit,
            prefix: prefix.to_string(),
            script: Script::new(include_str!("floating.lua")),
        })
    }

    /// The limit every bucket is checked against.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// The Redis key holding `key`'s bucket: `{PREFIX:KEY}:floating`.
    pub fn redis_key(&self, key: &str) -> String {
        format!("{{{}:{}}}:floating", self.prefix, key)
    }

    /// Decides a request of `cost` tokens at `now_ms` for `key`, and spends the cost if it
    /// fits: the same [`Decision`] as [`trickle::FloatingWindow::hit`] on the same requests.
    ///
    /// A request that spends nothing leaves the counters untouched; when its time is later
    /// than any seen before, it records that time alone (the core reads a clock that went
    /// backwards as the latest time seen). State expires two windows after its last write
    /// (plus [`EXPIRY_GRACE_MS`]).
    pub fn hit(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(conn, key, now_ms, cost, "hit")
    }

    /// What [`hit`](RedisFloatingWindow::hit) would answer, spending and writing nothing:
    /// the same [`Decision`] as [`trickle::FloatingWindow::peek`]. `peek(…, 0)` shows what
    /// is in use.
    pub fn peek(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(conn, key, now_ms, cost, "peek")
    }

    /// Runs the script for `hit` or `peek` and reads its answer into the core's `Decision`.
    fn decide(
        &self,
        conn: &mut dyn ConnectionLike,
        key: &str,
        now_ms: u64,
        cost: u64,
        mode: &str,
    ) -> Result<Decision, RedisError> {
        if now_ms > MAX_TIME_MS {
            return Err(RedisError::TimeTooLarge { now_ms });
        }
        let tokens = self.limit.tokens();
        let window_ms = self.limit.window_ms();
        // Every cost above N is decided alike, so the script never sees a number past 2^53.
        let script_cost = cost.min(tokens + 1);
        let ttl_ms = 2 * window_ms + EXPIRY_GRACE_MS;
        let reply: Value = self
            .script
            .key(self.redis_key(key))
            .arg(tokens)
            .arg(window_ms)
            .arg(now_ms)
            .arg(script_cost)
            .arg(ttl_ms)
            .arg(mode)
            .invoke(conn)?;
        let [outcome, used, previous, current, elapsed_ms, at_ms, wait_ms] = integers(&reply)?;

        let outcome = match outcome {
            OUTCOME_ALLOWED => Outcome::Allowed,
            // As the core: reported from the caller's clock, so that `now + retry_after_ms`
            // is the moment even when that clock had gone backwards.
            OUTCOME_DENIED => Outcome::Denied {
                retry_after_ms: at_ms
                    .checked_sub(now_ms)
                    .ok_or_else(|| bad_reply(&reply))?
                    .saturating_add(wait_ms),
            },
            OUTCOME_EXCEEDS => Outcome::ExceedsLimit,
            _ => return Err(bad_reply(&reply)),
        };
        // A Limit's window is at least 1 ms.
        let window = NonZeroU64::new(window_ms).ok_or_else(|| bad_reply(&reply))?;
        Ok(Decision {
            outcome,
            cost,
            limit: self.limit,
            used: Tokens::new(u128::from(used), window),
            at_ms,
            counters: Some(Counters {
                previous: u128::from(previous),
                current: u128::from(current),
                elapsed_ms,
                window_ms,
            }),
        })
    }
}

/// The script's seven non-negative integers; anything else is a [`RedisError::BadReply`].
fn integers(reply: &Value) -> Result<[u64; 7], RedisError> {
    let Value::Array(items) = reply else {
        return Err(bad_reply(reply));
    };
    let mut numbers = [0u64; 7];
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
