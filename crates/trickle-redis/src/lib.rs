//! trickle's limiters on Redis: the same decisions as the in-process core, for buckets
//! shared by many server processes.
//!
//! Each decision is one Lua script run with `EVALSHA` (the `redis` crate's [`redis::Script`],
//! which loads the script again after a `SCRIPT FLUSH` or a restart answers `NOSCRIPT`). The
//! script reads the bucket, decides with the core's exact rule, and spends only when the
//! request is allowed. [`RedisLimiter`] picks the algorithm at run time, as the core's
//! [`trickle::Limiter`]; [`RedisStore`] is the core's [`trickle::Store`] over Redis.
//!
//! Redis runs all four of the core's algorithms, each with `hit`, `peek` and `record`:
//!
//! - `floating`, [`Algorithm::Floating`](trickle::Algorithm::Floating): two counters in a
//!   hash, kept until the end of the window after the latest spend;
//! - `fixed`, [`Algorithm::Fixed`](trickle::Algorithm::Fixed): one counter, kept until the
//!   end of its window;
//! - `token-bucket`, [`Algorithm::TokenBucket`](trickle::Algorithm::TokenBucket): the
//!   tokens taken out, whole and in 1/W parts, kept until the bucket is full again.
//!
//! - `sliding-log`, [`Algorithm::SlidingLog`](trickle::Algorithm::SlidingLog): the total
//!   and the latest time in a hash, and beside it a list of `ms:cost` entries, oldest
//!   first, pruned as they stop counting; both kept until the newest entry stops counting.
//!
//! # Time
//!
//! By default time is the caller's clock, passed in as integer milliseconds as in the core;
//! a clock that goes backwards reads as the latest time the bucket has seen. Application
//! servers whose clocks disagree then share buckets only as well as their clocks agree: one
//! running ahead pushes every bucket it touches forward, and the others are decided at its
//! time until theirs catch up (no token is spent twice, but tokens come back early for the
//! ones running behind, up to their skew).
//!
//! [`Clock::Server`] decides at the Redis server's `TIME` instead: one clock for the whole
//! fleet. What it costs: the time the caller passes is ignored, so a replay of a log is no
//! longer possible; after a failover, the new primary's clock takes over, and if it runs
//! behind, buckets hold their latest time until it catches up; and `TIME` is read once per
//! script (since Redis 7 it is frozen for the whole script, which is what one decision
//! needs).
//!
//! # Exactness
//!
//! Redis's Lua numbers are doubles, exact for integers up to 2^53, so a limit is refused at
//! construction when the script's largest product could leave that range
//! ([`RedisLimitError::TooLarge`]; `N × W` at most 2^52 for the floating window, 2^53 − 1
//! for the others, [`RedisLimiter::max_scaled`]), a time beyond 2^53 ms is refused before
//! any script runs, and a `record` that would take a bucket beyond it is refused and
//! charges nothing ([`RedisError::RecordOutOfRange`]).
//!
//! # When Redis fails
//!
//! Every call returns [`RedisError`] instead of a decision when Redis cannot be reached,
//! times out, or answers something else; nothing panics. The caller chooses what that
//! means with [`OnFailure`]: fail open (let the request through: the limit is not enforced
//! while Redis is away, and the servers behind it take the load) or fail closed (refuse
//! it: nothing gets through while Redis is away, an outage of the API). A timeout is not
//! a denial: the server may still run the script, and spend, when it wakes.
//!
//! ```no_run
//! use trickle::Algorithm;
//! use trickle_redis::RedisLimiter;
//!
//! let limiter = RedisLimiter::new(Algorithm::Floating, "6/8s".parse().unwrap(), "api").unwrap();
//! let client = redis::Client::open("redis://127.0.0.1/").unwrap();
//! let mut conn = client.get_connection().unwrap();
//! let decision = limiter.hit(&mut conn, "user-42", 11_000, 1).unwrap();
//! println!("{} {}", decision.status(), decision.used);
//! ```

mod errors;
mod failure;
mod fixed;
mod floating;
mod limiter;
mod sliding_log;
mod store;
mod token_bucket;

pub use errors::{RedisError, RedisLimitError};
pub use failure::{Admission, OnFailure};
pub use limiter::{Clock, RedisLimiter, EXPIRY_GRACE_MS, MAX_TIME_MS, SETTLE_ATTEMPTS};
pub use store::RedisStore;
