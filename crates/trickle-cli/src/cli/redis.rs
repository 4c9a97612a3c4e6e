//! `--redis URL`: every request decided by trickle-redis's scripts on a real server, in a
//! bucket of its own, so that a replay's output can be checked against the in-process one.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{Client, Connection};
use trickle_core::{Algorithm, Limit};
use trickle_redis::{RedisLimitError, RedisLimiter, RedisStore};

/// The prefix of every key a replay writes; each run adds a key of its own after it.
const PREFIX: &str = "trickle-replay";

/// How long to wait for the server to accept the connection, and then for each answer,
/// before giving up with an error rather than hanging on a server that stopped answering.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a replay through Redis could not start.
#[derive(Debug)]
pub enum RedisSetupError {
    /// The URL is not one the redis crate reads. A usage error.
    Url {
        url: String,
        error: redis::RedisError,
    },
    /// The limit is too large for the algorithm's script, or it has none. A usage error.
    Limit(RedisLimitError),
    /// The server could not be reached.
    Connect {
        url: String,
        error: redis::RedisError,
    },
}

impl RedisSetupError {
    /// True when the command line itself is wrong (exit code 2), not the server (1).
    pub fn is_usage(&self) -> bool {
        !matches!(self, RedisSetupError::Connect { .. })
    }
}

impl fmt::Display for RedisSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisSetupError::Url { url, error } => write!(
                f,
                "invalid --redis {url:?}: {error}; expected redis://HOST:PORT/ (or \
                 redis+unix:///path/to/socket)"
            ),
            RedisSetupError::Limit(error) => write!(f, "invalid --limit for --redis: {error}"),
            RedisSetupError::Connect { url, error } => {
                write!(f, "cannot reach Redis at {url}: {error}")
            }
        }
    }
}

/// A store on the server at `url`, and the fresh key this run decides in: the process id
/// and the time in ns, so two runs never share a bucket. Its state expires by itself.
pub fn connect(
    url: &str,
    algorithm: Algorithm,
    limit: Limit,
) -> Result<(RedisStore<Connection>, String), RedisSetupError> {
    let limiter = RedisLimiter::new(algorithm, limit, PREFIX).map_err(RedisSetupError::Limit)?;
    let client = Client::open(url).map_err(|error| RedisSetupError::Url {
        url: url.to_string(),
        error,
    })?;
    let unreachable = |error| RedisSetupError::Connect {
        url: url.to_string(),
        error,
    };
    let conn = client
        .get_connection_with_timeout(TIMEOUT)
        .map_err(unreachable)?;
    conn.set_read_timeout(Some(TIMEOUT)).map_err(unreachable)?;
    conn.set_write_timeout(Some(TIMEOUT)).map_err(unreachable)?;
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let key = format!("{}-{started}", std::process::id());
    Ok((RedisStore::new(limiter, conn), key))
}
