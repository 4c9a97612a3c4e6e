//! Buckets in Redis, shared by every process that points at the same server or cluster:
//! trickle-redis's scripts, one round trip per decision, on the redis crate's
//! [`ConnectionManager`] or (the `redis-cluster` feature) its async cluster connection.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use redis::aio::ConnectionManager;
use trickle_core::{Op, Policy, PolicyDecision};
use trickle_redis::{RedisError, RedisPolicyLimiter};

use crate::backend::{Backend, InProcess, UnknownGroup};
use crate::failure::Failure;
use crate::fallback::Fallback;
use crate::share::{Share, ShareError};

/// Each group a [`RedisPolicyLimiter`] (its algorithm, its policy of one limit or several,
/// and its key prefix), all on one connection: one script call decides every limit of a
/// request's group. The [`ConnectionManager`] multiplexes the requests in flight over it and
/// reconnects after Redis comes back; while Redis is away every decision is an error, which
/// the layer's [`OnFailure`](crate::OnFailure) turns into a pass or a 503, unless the
/// backend is wrapped in a [`Fallback`] ([`Redis::fallback`]). A data error (a key of the
/// wrong type, a script error) is no outage: the layer answers it 500 whatever the rule
/// ([`RedisError::is_outage`]). An
/// [`Op::Settle`] whose outcome is unknown is sent again by the limiter itself
/// ([`RedisPolicyLimiter::with_settle_attempts`]), on the connection the manager reconnects, and
/// applies once however often it is sent; an [`Op::Reserve`] is sent once.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use trickle_core::Algorithm;
/// use trickle_redis::{Clock, RedisPolicyLimiter};
/// use trickle_tower::Redis;
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let conn = redis::aio::ConnectionManager::new(client).await?;
/// let policy = "burst=2/1s 6/8s".parse()?;
/// let fitting = RedisPolicyLimiter::new(Algorithm::Floating, policy, "api:fitting")?
///     .with_clock(Clock::Server);
/// let backend = Redis::new(conn).with_group("fitting", fitting);
/// # let _ = backend;
/// # Ok(())
/// # }
/// ```
///
/// On a Redis Cluster, [`Redis::cluster`] (the `redis-cluster` feature): every key of a
/// decision is in one hash tag, so each script runs on the master of its slot, and the
/// cluster connection follows MOVED and ASK (a slot moved between masters) and waits out
/// TRYAGAIN (a slot half moved) and CLUSTERDOWN by itself.
#[derive(Clone)]
pub struct Redis {
    groups: HashMap<String, RedisPolicyLimiter>,
    conn: Connection,
}

/// The one connection every decision goes over: to one server, or to a cluster.
#[derive(Clone)]
enum Connection {
    Server(ConnectionManager),
    #[cfg(feature = "redis-cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis")
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// A backend on `conn` with no group yet.
    pub fn new(conn: ConnectionManager) -> Redis {
        Redis {
            groups: HashMap::new(),
            conn: Connection::Server(conn),
        }
    }

    /// A backend on a Redis Cluster, over `conn`, with no group yet (the `redis-cluster`
    /// feature). The connection's retries bound how long a decision waits through a
    /// failover before it fails and the layer's rule decides (they also follow the
    /// redirections, so keep a few): the redis crate's
    /// [`ClusterClientBuilder`](redis::cluster::ClusterClientBuilder) sets them.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use trickle_core::Algorithm;
    /// use trickle_redis::{Clock, RedisPolicyLimiter};
    /// use trickle_tower::Redis;
    ///
    /// let nodes = ["redis://10.0.0.1:6379/", "redis://10.0.0.2:6379/"];
    /// let client = redis::cluster::ClusterClient::new(nodes)?;
    /// let conn = client.get_async_connection().await?;
    /// let fitting = RedisPolicyLimiter::new(Algorithm::Floating, "6/8s".parse()?, "api:fitting")?
    ///     .with_clock(Clock::Server);
    /// let backend = Redis::cluster(conn).with_group("fitting", fitting);
    /// # let _ = backend;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "redis-cluster")]
    pub fn cluster(conn: redis::cluster_async::ClusterConnection) -> Redis {
        Redis {
            groups: HashMap::new(),
            conn: Connection::Cluster(conn),
        }
    }

    /// Adds (or replaces) the group `name`, decided by `limiter`. Give each group a prefix
    /// of its own, or groups share buckets.
    pub fn with_group(mut self, name: impl Into<String>, limiter: RedisPolicyLimiter) -> Redis {
        self.groups.insert(name.into(), limiter);
        self
    }

    /// This backend with an in-process limiter behind it for when Redis is away: each
    /// group's algorithm, each limit of its policy over its window with `share` of its
    /// tokens, rounded down (see [`Share`] for why the servers then never admit more than
    /// the limit together). Refused when a limit's share is less than one token.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use trickle_core::Algorithm;
    /// use trickle_redis::RedisPolicyLimiter;
    /// use trickle_tower::{Redis, Share};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let conn = redis::aio::ConnectionManager::new(client).await?;
    /// let fitting = RedisPolicyLimiter::new(Algorithm::Floating, "6/8s".parse()?, "api:fitting")?;
    /// // Two servers: each admits 3 of the 6 tokens on its own while Redis is away.
    /// let backend = Redis::new(conn)
    ///     .with_group("fitting", fitting)
    ///     .fallback("1/2".parse::<Share>()?)?;
    /// # let _ = backend;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fallback(self, share: Share) -> Result<Fallback<Redis>, ShareError> {
        self.fallback_in(share, InProcess::new())
    }

    /// [`fallback`](Redis::fallback) onto `secondary`, to which each group is added: for a
    /// fallback whose keys are capped ([`InProcess::with_max_keys`]).
    pub fn fallback_in(
        self,
        share: Share,
        mut secondary: InProcess,
    ) -> Result<Fallback<Redis>, ShareError> {
        for (name, limiter) in &self.groups {
            let mut parts = Vec::with_capacity(limiter.policy().len());
            for limit in limiter.policy().limits() {
                let part = share.of(limit).ok_or_else(|| ShareError::NoTokens {
                    group: name.clone(),
                    limit,
                    share,
                })?;
                parts.push((format!("share-{}", parts.len()), part));
            }
            // Named by place: the layer speaks of each limit under the store's policy's
            // name, and a share's own text may be another limit's ("4/1s 5/1s" halved).
            // (At most Policy::MAX_LIMITS distinct plain names: it cannot fail.)
            let parts = Policy::named(parts).map_err(|error| ShareError::Invalid {
                text: format!("{share} of group {name:?}'s policy ({error})"),
            })?;
            secondary = secondary.with_group(name.clone(), limiter.algorithm(), parts);
        }
        Ok(Fallback::new(self, secondary))
    }
}

/// Why the Redis backend gave no decision.
#[derive(Debug)]
#[non_exhaustive]
pub enum RedisBackendError {
    /// The group was never added.
    UnknownGroup(UnknownGroup),
    /// Redis failed, timed out, or answered something else; [`RedisError::is_outage`]
    /// tells which.
    Redis(RedisError),
    /// A Redis Cluster still answered MOVED or ASK once the cluster connection had
    /// followed all the redirections its retries allow: the slot's master is changing (a
    /// failover, a reshard), an outage. (From one server's connection, MOVED is a
    /// [`Redis`](RedisBackendError::Redis) data error instead: a client that cannot
    /// follow it.)
    Redirected(RedisError),
}

impl fmt::Display for RedisBackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisBackendError::UnknownGroup(error) => error.fmt(f),
            RedisBackendError::Redis(error) => error.fmt(f),
            RedisBackendError::Redirected(error) => write!(
                f,
                "the Redis Cluster kept redirecting the decision (its slots are moving, or a \
                 master is failing over): {error}"
            ),
        }
    }
}

impl std::error::Error for RedisBackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RedisBackendError::UnknownGroup(error) => Some(error),
            RedisBackendError::Redis(error) | RedisBackendError::Redirected(error) => Some(error),
        }
    }
}

impl Backend for Redis {
    type Error = RedisBackendError;

    fn policy(&self, group: &str) -> Option<&Policy> {
        self.groups.get(group).map(RedisPolicyLimiter::policy)
    }

    /// An outage when [`RedisError::is_outage`] says so; a data error, named by
    /// [`RedisError::problem`], otherwise.
    fn failure(error: &RedisBackendError) -> Failure {
        match error {
            RedisBackendError::UnknownGroup(_) => Failure::Data {
                problem: "this route's rate limit is not configured",
            },
            RedisBackendError::Redirected(_) => Failure::Outage,
            RedisBackendError::Redis(error) if error.is_outage() => Failure::Outage,
            RedisBackendError::Redis(error) => Failure::Data {
                problem: error.problem(),
            },
        }
    }

    fn decide(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> impl Future<Output = Result<PolicyDecision, RedisBackendError>> + Send {
        // The future borrows the group and the key for as long as it runs: nothing is
        // copied for a decision, only for the error naming a missing group.
        let limiter = self.groups.get(group);
        let mut conn = self.conn.clone();
        async move {
            let limiter = limiter.ok_or_else(|| {
                RedisBackendError::UnknownGroup(UnknownGroup {
                    group: group.to_string(),
                })
            })?;
            match &mut conn {
                Connection::Server(conn) => limiter
                    .decide_async(conn, key, op, now_ms, cost)
                    .await
                    .map_err(RedisBackendError::Redis),
                #[cfg(feature = "redis-cluster")]
                Connection::Cluster(conn) => limiter
                    .decide_async(conn, key, op, now_ms, cost)
                    .await
                    .map_err(|error| match &error {
                        RedisError::Redis(redis) if redirected(redis) => {
                            RedisBackendError::Redirected(error)
                        }
                        _ => RedisBackendError::Redis(error),
                    }),
            }
        }
    }
}

/// Whether the server's answer was MOVED or ASK.
#[cfg(feature = "redis-cluster")]
fn redirected(error: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    matches!(
        error.kind(),
        ErrorKind::Server(ServerErrorKind::Moved | ServerErrorKind::Ask)
    )
}
