//! `--redis URL` and `--redis-cluster URL[,URL…]`: every request decided by trickle-redis's
//! scripts on a real server or cluster, in a bucket of its own, so that a replay's output
//! can be checked against the in-process one.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::cluster::ClusterClient;
use redis::Client;
use trickle_core::{Algorithm, Decision, Limit, Op, Store};
use trickle_redis::{RedisError, RedisLimitError, RedisLimiter, RedisStore};

use crate::cli::args::RedisTarget;

/// One request of the replay decided in its bucket: at a time, of a cost.
pub type Decide = Box<dyn FnMut(u64, u64) -> Result<Decision, RedisError>>;

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
    Limit {
        flag: &'static str,
        error: RedisLimitError,
    },
    /// The server could not be reached.
    Connect {
        url: String,
        error: redis::RedisError,
    },
    /// `--redis-cluster`'s URLs are not ones the cluster client takes. A usage error.
    ClusterUrls {
        urls: String,
        error: redis::RedisError,
    },
    /// No node of the cluster could be reached, or none is a cluster node.
    ClusterConnect {
        urls: String,
        error: redis::RedisError,
    },
}

impl RedisSetupError {
    /// True when the command line itself is wrong (exit code 2), not the server (1).
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            RedisSetupError::Connect { .. } | RedisSetupError::ClusterConnect { .. }
        )
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
            RedisSetupError::Limit { flag, error } => {
                write!(f, "invalid --limit for {flag}: {error}")
            }
            RedisSetupError::Connect { url, error } => {
                write!(f, "cannot reach Redis at {url}: {error}")
            }
            RedisSetupError::ClusterUrls { urls, error } => write!(
                f,
                "invalid --redis-cluster {urls:?}: {error}; expected the redis://HOST:PORT/ \
                 URLs of one or more of the cluster's nodes, apart by commas"
            ),
            RedisSetupError::ClusterConnect { urls, error } => write!(
                f,
                "cannot reach the Redis Cluster at {urls}: {}",
                cluster_problem(error)
            ),
        }
    }
}

/// What a cluster client's error means for someone who gave `--redis-cluster`: a server
/// without cluster support is named as such.
pub fn cluster_problem(error: &redis::RedisError) -> String {
    let text = error.to_string();
    if text.contains("cluster support disabled")
        || error.kind() == redis::ErrorKind::ClusterConnectionNotFound
    {
        format!(
            "{text}: no node there answers as a Redis Cluster node (a single server? give it \
             with --redis instead)"
        )
    } else {
        text
    }
}

/// `CLUSTER INFO`'s answer, checked: the cluster serves every slot.
pub fn cluster_state(info: redis::RedisResult<String>) -> redis::RedisResult<()> {
    let info = info?;
    if info.lines().any(|line| line.trim() == "cluster_state:ok") {
        Ok(())
    } else {
        let state = info
            .lines()
            .find_map(|line| line.trim().strip_prefix("cluster_state:"))
            .unwrap_or("unknown");
        Err(redis::RedisError::from((
            redis::ErrorKind::Client,
            "the cluster does not serve every slot",
            format!("CLUSTER INFO says cluster_state:{state}"),
        )))
    }
}

/// Each request decided on `target` in a fresh bucket of its own: the process id and the
/// time in ns, so two runs never share one. Its state expires by itself.
pub fn connect(
    target: &RedisTarget,
    algorithm: Algorithm,
    limit: Limit,
) -> Result<Decide, RedisSetupError> {
    let limiter =
        RedisLimiter::new(algorithm, limit, PREFIX).map_err(|error| RedisSetupError::Limit {
            flag: target.flag(),
            error,
        })?;
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let key = format!("{}-{started}", std::process::id());
    match target {
        RedisTarget::Server(url) => {
            let mut store = RedisStore::new(limiter, connect_server(url)?);
            Ok(Box::new(move |t_ms, cost| {
                store.decide(key.as_str(), Op::Hit, t_ms, cost)
            }))
        }
        RedisTarget::Cluster(urls) => {
            let mut store = RedisStore::new(limiter, connect_cluster(urls)?);
            Ok(Box::new(move |t_ms, cost| {
                store.decide(key.as_str(), Op::Hit, t_ms, cost)
            }))
        }
    }
}

/// A connection to the server at `url`, with [`TIMEOUT`] on every step.
fn connect_server(url: &str) -> Result<redis::Connection, RedisSetupError> {
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
    Ok(conn)
}

/// A connection to the cluster of which `urls` are nodes (one reachable is enough), with
/// [`TIMEOUT`] on every step. It sends each script to its slot's master, and follows MOVED
/// and ASK.
fn connect_cluster(urls: &[String]) -> Result<redis::cluster::ClusterConnection, RedisSetupError> {
    let listed = urls.join(",");
    let client = ClusterClient::builder(urls.iter().map(String::as_str))
        .connection_timeout(TIMEOUT)
        .response_timeout(TIMEOUT)
        .build()
        .map_err(|error| RedisSetupError::ClusterUrls {
            urls: listed.clone(),
            error,
        })?;
    let unreachable = |error| RedisSetupError::ClusterConnect {
        urls: listed.clone(),
        error,
    };
    let mut conn = client.get_connection().map_err(unreachable)?;
    cluster_state(redis::cmd("CLUSTER").arg("INFO").query(&mut conn)).map_err(unreachable)?;
    Ok(conn)
}
