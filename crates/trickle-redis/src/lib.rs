//! trickle's limiters on Redis: the same decisions as the in-process core, for buckets
//! shared by many server processes.
//!
//! Each decision is one call of a Lua function, `FCALL` of the algorithm's Redis Function
//! library, which the crate loads (`FUNCTION LOAD`, on every master of a Cluster) whenever a
//! server answers "Function not found": a new server, a restart without persistence, a
//! `FUNCTION FLUSH`. A server without Functions (before Redis 7.0) runs the same Lua as a
//! script, with `EVALSHA` (the `redis` crate's [`redis::Script`], which loads it again on
//! `NOSCRIPT`). The script reads the bucket, decides with the core's exact rule, and spends only when the
//! request is allowed. [`RedisLimiter`] picks the algorithm at run time, as the core's
//! [`trickle_core::Limiter`]; [`RedisStore`] is the core's [`trickle_core::Store`] over Redis.
//! [`RedisPolicyLimiter`] and [`RedisPolicyStore`] do the same for a
//! [`Policy`](trickle_core::Policy) of several limits, all of them in the same one script
//! call ([below](#policies)).
//!
//! Redis runs all four of the core's algorithms, each with `hit`, `peek`, `record`, and
//! `reserve` then `settle` ([below](#reserve-and-settle)):
//!
//! - `floating`, [`Algorithm::Floating`](trickle_core::Algorithm::Floating): two counters in a
//!   string, kept until the end of the window after the latest spend;
//! - `fixed`, [`Algorithm::Fixed`](trickle_core::Algorithm::Fixed): one counter, kept until the
//!   end of its window;
//! - `token-bucket`, [`Algorithm::TokenBucket`](trickle_core::Algorithm::TokenBucket): the
//!   tokens taken out, whole and in 1/W parts, kept until the bucket is full again.
//!
//! - `sliding-log`, [`Algorithm::SlidingLog`](trickle_core::Algorithm::SlidingLog): the total
//!   and the latest time in a string, and beside it a list of `ms:cost` entries, oldest
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
//! any script runs, and a `record` (or a settle) that would take a bucket beyond it is
//! refused and charges nothing ([`RedisError::RecordOutOfRange`],
//! [`RedisError::SettleOutOfRange`]).
//!
//! # Reserve and settle
//!
//! [`Op::Reserve`](trickle_core::Op::Reserve) and [`Op::Settle`](trickle_core::Op::Settle) decide as
//! the core's reserve and settle do ([`trickle_core::reservation`]), field for field, in one
//! script call, one round trip, each. [`RedisStore`] gets them from the core's
//! [`Store::reserve`](trickle_core::Store::reserve) and [`Store::settle`](trickle_core::Store::settle),
//! which draw the reservation's ticket.
//!
//! - An admitted reserve spends as a hit does and, in the same script, writes the
//!   reservation's **pending record**, `{PREFIX:KEY}:ALGORITHM:reservation:TICKET`
//!   ([`RedisLimiter::reservation_key`], in the bucket's hash tag and passed in `KEYS`, so
//!   Redis Cluster sees it), holding `at:cost`. It expires when the reservation's tokens
//!   stop counting, the moment from which the core's settle changes nothing (the floating
//!   window: the end of the window after the reservation's; the fixed window: the end of
//!   its window; the sliding log and the token bucket: W after the reservation), plus
//!   [`EXPIRY_GRACE_MS`]. A refused reserve writes none.
//! - A settle applies its difference only if it deletes that record (`DEL` answers 1), in
//!   the same script. Otherwise it changes no counts and answers the bucket as it stands,
//!   with the final cost as the decision's cost.
//!
//! **Why a settle sent again applies once.** The script that applies a settle is the one
//! that deletes its record, and Redis runs scripts one at a time, so of any number of
//! copies exactly the first to run can apply. A missing record means "nothing to do", never
//! "apply": a copy that finds none is a copy of a settle already applied, or one that came
//! after the record expired, when the reservation's tokens no longer count and the core's
//! settle would change nothing either. So no pause of the server, the network or the
//! caller, however long, makes a copy apply twice. (The opposite rule, a "settled" marker
//! whose absence means "apply", would apply a late copy again once the marker expired.)
//! What a very late settle costs instead: one that reaches Redis more than
//! [`EXPIRY_GRACE_MS`] after its reservation stopped counting, on Redis's clock, changes
//! nothing even when the caller's clock still had it counting. A settle is lost then,
//! never doubled, and the reserve stays charged, as for a request that was never settled.
//!
//! Hence the retry: [`RedisLimiter`] sends a settle whose outcome is unknown (a timeout, a
//! connection dropped mid-reply) again, up to [`RedisLimiter::settle_attempts`] times in
//! all ([`SETTLE_ATTEMPTS`], 3, unless
//! [`with_settle_attempts`](RedisLimiter::with_settle_attempts) says otherwise), and then
//! answers [`RedisError::SettleUnknown`]. A reserve is never sent again: two copies could
//! spend twice; the caller's failure rule decides instead ([below](#when-redis-fails)).
//!
//! With [`Clock::Server`], a reservation's time is its reserve decision's `at_ms`, read
//! from the server's `TIME`, and its settle is decided at the server's `TIME` too (never
//! before the reservation, as in the core), so both are on one clock; the pending record
//! expires on that clock as well.
//!
//! A settle whose final cost would take the bucket's counts beyond 2^53 is refused as a
//! `record` is, writing nothing ([`RedisError::SettleOutOfRange`]); its reservation stays
//! pending, and a settle at a cost within the range still applies.
//!
//! `tests/settle.rs` runs random traces of hits, peeks, records, reserves and settles
//! through the core and through Redis for all four algorithms, and `tests/settle_once.rs`
//! sends settles twice, through a paused server and through a proxy that loses the answer,
//! and checks the bucket changed once.
//!
//! # Policies
//!
//! [`RedisPolicyLimiter`] holds a key to every limit of a policy (`burst=10/1s 1000/1h`),
//! all or nothing, as the core's [`PolicyLimiter`](trickle_core::PolicyLimiter) does, in
//! one script call: the algorithm's script reads every limit's bucket before writing any,
//! spends a hit or a reserve in every limit only if every limit has room, and otherwise in
//! none (the limits that had room are not written at all). There is one script per
//! algorithm, not one more for policies: each algorithm's Lua reads one limit's bucket, and
//! the part every script ends with runs the request over the limits it is sent, one for a
//! [`RedisLimiter`], each of a policy's for a [`RedisPolicyLimiter`].
//!
//! Each limit's bucket is `{PREFIX:KEY}:ALGORITHM:limit:NAME`, under the limit's name, and
//! an admitted reserve writes one pending record for the whole policy,
//! `{PREFIX:KEY}:ALGORITHM:policy-reservation:TICKET`, deleted by the settle that settles
//! every limit: all in one hash tag. `tests/policy.rs` runs random policies and traces
//! through the core and through Redis for all four algorithms.
//!
//! # When Redis fails
//!
//! Every call returns [`RedisError`] instead of a decision when Redis cannot be reached,
//! times out, or answers something else; nothing panics. Two kinds, told apart by
//! [`RedisError::is_outage`]:
//!
//! - an **outage**: Redis as a whole could not answer (unreachable, refused, reset, timed
//!   out, loading, busy, without its primary). The caller chooses what that means (in
//!   trickle-tower, its `OnFailure` rule): fail open (let the request through: the limit
//!   is not enforced while Redis is away, and the servers behind it take the load) or fail
//!   closed (refuse it: nothing gets through while Redis is away, an outage of the API);
//!   trickle-tower adds a third, a fallback limiter in each server. A timeout is not a
//!   denial: the server may still run the script, and spend, when it wakes, so its outcome
//!   is **unknown**.
//! - a **data error**: this request or its bucket cannot be decided anywhere: a key holding
//!   the wrong type (`WRONGTYPE`: another program wrote it), an error inside the script, a
//!   reply that is not a decision, a time or cost past what the script holds exactly.
//!   No failure rule applies (letting it through would switch the limit off for that key
//!   until someone deletes it): refuse it, and log it as an error.
//!   [`RedisError::problem`] names it in words a client may read.
//!
//! # Keys
//!
//! `{PREFIX:KEY}:ALGORITHM`, the prefix checked (1 to [`MAX_PREFIX_LEN`] bytes of ASCII
//! letters, digits, `-`, `_`, `.`, `:`, `/`) and the key escaped (`%`, `{`, `}`, `:` as
//! `%25`, `%7B`, `%7D`, `%3A`), so that whatever a client sends as its key, the Cluster hash
//! tag is the whole `PREFIX:KEY` and no two (prefix, key) pairs share a bucket
//! ([`RedisLimiter::redis_key`]).
//!
//! ```no_run
//! use trickle_core::Algorithm;
//! use trickle_redis::RedisLimiter;
//!
//! let limiter = RedisLimiter::new(Algorithm::Floating, "6/8s".parse().unwrap(), "api").unwrap();
//! let client = redis::Client::open("redis://127.0.0.1/").unwrap();
//! let mut conn = client.get_connection().unwrap();
//! let decision = limiter.hit(&mut conn, "user-42", 11_000, 1).unwrap();
//! println!("{} {}", decision.status(), decision.used);
//! ```

mod errors;
mod exact;
mod fixed;
mod floating;
mod keys;
mod limiter;
mod policy;
mod runner;
mod sliding_log;
mod store;
mod token_bucket;

pub use errors::{RedisError, RedisLimitError};
pub use exact::MAX_TIME_MS;
pub use keys::MAX_PREFIX_LEN;
pub use limiter::RedisLimiter;
pub use policy::RedisPolicyLimiter;
pub use runner::{Clock, EXPIRY_GRACE_MS, SETTLE_ATTEMPTS};
pub use store::{RedisPolicyStore, RedisStore};
