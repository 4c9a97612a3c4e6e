//! trickle's floating window on Redis: the same decisions as the in-process core, for
//! buckets shared by many server processes.
//!
//! Each decision is one Lua script run with `EVALSHA` (the `redis` crate's [`redis::Script`],
//! which loads the script again after a `SCRIPT FLUSH` or a restart answers `NOSCRIPT`). The
//! script reads the bucket's counters, decides with the core's exact rule, and spends only
//! when the request is allowed. Time is the caller's clock, passed in as integer
//! milliseconds as in the core; a clock that goes backwards reads as the latest time seen.
//!
//! Redis's Lua numbers are doubles, exact for integers up to 2^53, so a limit is refused
//! at construction when its largest product, `2 × N × W`, could leave that range
//! ([`RedisLimitError`]), and a time beyond 2^53 ms is refused before any script runs.
//!
//! ```no_run
//! use trickle_redis::RedisFloatingWindow;
//!
//! let bucket = RedisFloatingWindow::new("6/8s".parse().unwrap(), "api").unwrap();
//! let client = redis::Client::open("redis://127.0.0.1/").unwrap();
//! let mut conn = client.get_connection().unwrap();
//! let decision = bucket.hit(&mut conn, "user-42", 11_000, 1).unwrap();
//! println!("{} {}", decision.status(), decision.used);
//! ```

mod errors;
mod floating;

pub use errors::{RedisError, RedisLimitError};
pub use floating::{RedisFloatingWindow, EXPIRY_GRACE_MS, MAX_SCALED, MAX_TIME_MS};
