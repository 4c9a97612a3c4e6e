//! `trickle serve`: the demo API on a socket until SIGTERM or SIGINT, its buckets in this
//! process or on Redis.
//!
//! The first line on stdout is `listening on http://ADDRESS`, with the port actually bound
//! (so `--listen 127.0.0.1:0` can be used by a test or a script that reads it); everything
//! else, the layer's warnings among it, is logged to stderr. The connections, their
//! timeouts and the stop's drain are `connections.rs`'s; the app behind them is `app.rs`'s,
//! the config file `config.rs`'s, the `/metrics` listener `metrics.rs`'s and the OpenAPI
//! document `openapi.rs`'s.

pub mod app;
pub mod config;
pub mod connections;
pub mod metrics;
pub mod openapi;
pub mod request;

use std::fmt;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::net::TcpListener;
use trickle_redis::{Clock, RedisPolicyLimiter};
use trickle_tower::{Fallback, InProcess, OnFailure, Redis, ShareError};

use crate::cli::args::{RedisTarget, ServeArgs};
use crate::cli::redis::{cluster_problem, cluster_state};
use crate::cli::serve::app::app;
use crate::cli::serve::config::{Config, ConfigError, Problem};
use crate::cli::serve::connections::{duration_text, Server};
use crate::cli::serve::metrics::{Exporter, MetricsError};

/// Every Redis key serve writes starts with this, then `:GROUP`: two servers on one Redis
/// with the same config share their buckets, which is the point of `--redis`.
const REDIS_PREFIX: &str = "trickle-serve";

/// How long to wait for Redis to accept a connection, and then for each answer. Short, so
/// that a Redis that went away costs a request about this much before `--on-failure`
/// decides it, rather than holding it for the redis crate's default of many retries.
const REDIS_TIMEOUT: Duration = Duration::from_secs(1);

/// How many times the cluster client sends a command again (after MOVED, ASK, TRYAGAIN, a
/// node down) before the decision fails, and the shortest wait between two, in ms: enough
/// to follow a slot moved between masters, not enough to hold a request through a failover.
const CLUSTER_RETRIES: u32 = 4;
const CLUSTER_RETRY_WAIT_MS: u64 = 50;

/// How often the in-process buckets that no longer count are dropped, in every shard,
/// also those no request touches any more.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Why the server did not start, or stopped other than by a signal.
#[derive(Debug)]
pub enum ServeError {
    Config(ConfigError),
    /// The URL is not one the redis crate reads. A usage error.
    RedisUrl {
        url: String,
        error: redis::RedisError,
    },
    RedisConnect {
        url: String,
        error: redis::RedisError,
    },
    /// `--redis-cluster`'s (or the file's `redis_cluster`) URLs are not ones the cluster
    /// client takes. A usage error.
    ClusterUrls {
        urls: String,
        error: redis::RedisError,
    },
    /// No node of the cluster answered, or none is a cluster node.
    ClusterConnect {
        urls: String,
        error: redis::RedisError,
    },
    /// `--fallback-share` leaves a group of the config file less than one token. A usage
    /// error: the share is what to change, or the file's limit.
    FallbackShare(ShareError),
    /// The async runtime or the signal handlers could not be set up.
    Setup(io::Error),
    Listen {
        address: SocketAddr,
        error: io::Error,
    },
    /// `--metrics` cannot be served.
    Metrics(MetricsError),
}

impl ServeError {
    /// 2 for a command line that cannot work, 1 for everything else (as replay).
    pub fn exit_code(&self) -> u8 {
        match self {
            ServeError::RedisUrl { .. }
            | ServeError::ClusterUrls { .. }
            | ServeError::FallbackShare(_) => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Config(error) => error.fmt(f),
            ServeError::RedisUrl { url, error } => write!(
                f,
                "invalid --redis {url:?}: {error}; expected redis://HOST:PORT/ (or \
                 redis+unix:///path/to/socket)"
            ),
            ServeError::RedisConnect { url, error } => write!(
                f,
                "cannot reach Redis at {url}: {error}; serve needs Redis up when it starts \
                 (once it runs, --on-failure decides what requests get while Redis is away)"
            ),
            ServeError::ClusterUrls { urls, error } => write!(
                f,
                "invalid --redis-cluster {urls:?}: {error}; expected the redis://HOST:PORT/ \
                 URLs of one or more of the cluster's nodes"
            ),
            ServeError::ClusterConnect { urls, error } => write!(
                f,
                "cannot reach the Redis Cluster at {urls}: {}; serve needs it up when it \
                 starts (once it runs, --on-failure decides what requests get while it is away)",
                cluster_problem(error)
            ),
            ServeError::FallbackShare(error) => write!(f, "invalid --fallback-share: {error}"),
            ServeError::Setup(error) => write!(f, "cannot start the server: {error}"),
            ServeError::Listen { address, error } => {
                write!(f, "cannot listen on {address}: {error}")
            }
            ServeError::Metrics(error) => error.fmt(f),
        }
    }
}

/// Reads the config, then serves until SIGTERM or SIGINT, after which requests in flight
/// get `--drain-timeout` to finish.
pub fn serve(args: &ServeArgs) -> Result<(), ServeError> {
    let config = config::load(&args.config, args.max_window).map_err(ServeError::Config)?;
    // A second subscriber (none here) would be the only reason for an error; nothing to do.
    let _ = tracing_subscriber::fmt()
        .with_writer(io::stderr)
        .with_max_level(tracing::Level::INFO)
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Setup)?;
    let result = runtime.block_on(run(args, &config));
    // Whatever is left (the sweeper, Redis's reconnection) is not worth waiting for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

async fn run(args: &ServeArgs, config: &Config) -> Result<(), ServeError> {
    // Before anything else: the recorder must be in before the first request.
    let mut metrics = match args.metrics {
        Some(address) => Some(Exporter::bind(address).await.map_err(ServeError::Metrics)?),
        None => None,
    };
    // The command line's place for the buckets, else the file's cluster.
    let target = args
        .redis
        .clone()
        .or_else(|| config.redis_cluster.clone().map(RedisTarget::Cluster));
    let (router, backend) = match &target {
        None => {
            let backend = Arc::new(in_process(config).with_max_keys(args.max_keys));
            tokio::spawn(sweep(Arc::clone(&backend)));
            if let Some(metrics) = &mut metrics {
                metrics.count_live_keys(Arc::clone(&backend));
            }
            let router = app(config, backend, args.on_failure, args.max_keys);
            (router, "buckets in this process".to_string())
        }
        Some(target) => {
            let redis = on_redis(target, config, &args.config).await?;
            let (router, on_failure) = match args.fallback {
                None => {
                    let router = app(config, Arc::new(redis), args.on_failure, args.max_keys);
                    let on_failure = match args.on_failure {
                        OnFailure::Open => "failing open".to_string(),
                        OnFailure::Closed => "failing closed".to_string(),
                    };
                    (router, on_failure)
                }
                Some(share) => {
                    let backend = Arc::new(
                        redis
                            .fallback_in(share, InProcess::new().with_max_keys(args.max_keys))
                            .map_err(ServeError::FallbackShare)?,
                    );
                    tokio::spawn(sweep_fallback(Arc::clone(&backend)));
                    if let Some(metrics) = &mut metrics {
                        metrics.count_fallback(Arc::clone(&backend));
                    }
                    // The fallback decides every outage; the layer's own rule is left for
                    // what an in-process limiter cannot have, and closed is the safe one.
                    let router = app(config, backend, OnFailure::Closed, args.max_keys);
                    (
                        router,
                        format!("falling back to {share} of each limit in this process"),
                    )
                }
            };
            let place = match target {
                RedisTarget::Server(url) => format!("Redis at {url}"),
                RedisTarget::Cluster(urls) => format!("the Redis Cluster at {}", urls.join(",")),
            };
            let described = format!(
                "buckets on {place}, keys {{{REDIS_PREFIX}:GROUP:CLIENT}}:ALGORITHM \
                 (CLIENT with % {{ }} : escaped as %25 %7B %7D %3A), decided on its clock; \
                 {on_failure} while it is away"
            );
            (router, described)
        }
    };

    // The signal handlers go in before the address is announced: whoever read it may stop
    // the server at once.
    let mut signals = Signals::new().map_err(ServeError::Setup)?;
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|error| ServeError::Listen {
            address: args.listen,
            error,
        })?;
    let address = listener.local_addr().map_err(|error| ServeError::Listen {
        address: args.listen,
        error,
    })?;
    tracing::info!("{backend}");
    for group in &config.groups {
        tracing::info!(
            group = %group.name,
            limit = %group.policy,
            algorithm = %group.algorithm,
            costs = %group.costs,
            routes = %group.routes.join(" "),
            shadow = group.shadow,
            free_runs = %group.free_runs.map_or("none".to_string(), |budget| budget.text()),
            "route group"
        );
    }
    let connections = &args.connections;
    tracing::info!(
        header_timeout = %duration_text(connections.header_timeout),
        idle_timeout = %duration_text(connections.idle_timeout),
        max_connections = connections.max_connections,
        drain_timeout = %duration_text(connections.drain),
        "connections"
    );
    let server = Server::start(listener, router, *connections);
    announce(address);
    if let Some(metrics) = metrics {
        metrics.spawn();
    }

    let signal = signals.next().await;
    let drain = duration_text(connections.drain);
    match server.stop() {
        0 => tracing::info!(
            signal,
            "stopping: no new connections; no request in flight, so every connection closes now"
        ),
        1 => tracing::info!(
            signal,
            "stopping: no new connections; connections without a request closed; 1 request \
             in flight has {drain} to finish"
        ),
        in_flight => tracing::info!(
            signal,
            "stopping: no new connections; connections without a request closed; {in_flight} \
             requests in flight have {drain} to finish"
        ),
    }
    // A second signal means now, as a second Ctrl-C does.
    tokio::select! {
        drained = tokio::time::timeout(connections.drain, server.stopped()) => {
            if drained.is_err() {
                tracing::warn!("requests still in flight after {drain}; stopping without them");
            }
        }
        signal = signals.next() => tracing::warn!(
            signal,
            "a second signal; stopping without the requests in flight"
        ),
    }
    tracing::info!("stopped");
    Ok(())
}

/// `listening on http://ADDRESS`, flushed at once: a script waits for this line.
fn announce(address: SocketAddr) {
    let mut stdout = io::stdout().lock();
    if let Err(error) =
        writeln!(stdout, "listening on http://{address}").and_then(|()| stdout.flush())
    {
        // Nobody reads stdout; the server is no less up.
        tracing::warn!(%error, "cannot write the address to stdout");
    }
    tracing::info!("listening on http://{address}");
}

/// SIGTERM and SIGINT (Ctrl-C), caught from when this is made, so that neither ends the
/// process before the requests in flight do.
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                terminate: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The name of the next signal, when it comes.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => "SIGTERM",
                _ = self.interrupt.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            // Should the handler fail, Ctrl-C ends the process as it would without one.
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

fn in_process(config: &Config) -> InProcess {
    config
        .groups
        .iter()
        .fold(InProcess::new(), |backend, group| {
            backend.with_group(group.name.clone(), group.algorithm, group.policy.clone())
        })
}

/// Drops the buckets that no longer count, now and then, so that a server many clients
/// have visited does not keep them all.
async fn sweep(backend: Arc<InProcess>) {
    let mut ticks = tokio::time::interval(SWEEP_EVERY);
    loop {
        ticks.tick().await;
        backend.sweep(trickle_tower::system_ms());
    }
}

/// [`sweep`] for the fallback's buckets and the tickets of its reservations.
async fn sweep_fallback(backend: Arc<Fallback<Redis>>) {
    let mut ticks = tokio::time::interval(SWEEP_EVERY);
    loop {
        ticks.tick().await;
        backend.sweep(trickle_tower::system_ms());
    }
}

/// Each group a [`RedisPolicyLimiter`] under `trickle-serve:GROUP`, deciding on Redis's clock so
/// that every server sharing it agrees on the time (on a cluster, each key's master's), over
/// one connection checked with a PING before the server starts.
async fn on_redis(target: &RedisTarget, config: &Config, path: &Path) -> Result<Redis, ServeError> {
    let mut limiters = Vec::with_capacity(config.groups.len());
    for group in &config.groups {
        let prefix = format!("{REDIS_PREFIX}:{}", group.name);
        let limiter = RedisPolicyLimiter::new(group.algorithm, group.policy.clone(), &prefix)
            .map_err(|error| {
                ServeError::Config(ConfigError::new(
                    path,
                    Some(group.line),
                    Problem::RedisLimit {
                        group: group.name.clone(),
                        error,
                    },
                ))
            })?;
        limiters.push((group.name.clone(), limiter.with_clock(Clock::Server)));
    }
    let backend = match target {
        RedisTarget::Server(url) => on_server(url).await?,
        RedisTarget::Cluster(urls) => on_cluster(urls).await?,
    };
    Ok(limiters
        .into_iter()
        .fold(backend, |backend, (name, limiter)| {
            backend.with_group(name, limiter)
        }))
}

/// The backend on the one server at `url`.
async fn on_server(url: &str) -> Result<Redis, ServeError> {
    let client = redis::Client::open(url).map_err(|error| ServeError::RedisUrl {
        url: url.to_string(),
        error,
    })?;
    let unreachable = |error| ServeError::RedisConnect {
        url: url.to_string(),
        error,
    };
    // One retry, soon: while Redis is away each request waits for a reconnection attempt,
    // and the redis crate's default (six, backing off to seconds) would hold it that long.
    let settings = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(REDIS_TIMEOUT))
        .set_response_timeout(Some(REDIS_TIMEOUT))
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(100))
        .set_max_delay(Duration::from_millis(500));
    let mut conn = ConnectionManager::new_with_config(client, settings)
        .await
        .map_err(unreachable)?;
    redis::cmd("PING")
        .query_async::<String>(&mut conn)
        .await
        .map_err(unreachable)?;
    Ok(Redis::new(conn))
}

/// The backend on the cluster of which `urls` are nodes (one reachable is enough).
///
/// The cluster client retries a command through MOVED, ASK, TRYAGAIN, CLUSTERDOWN and a
/// lost connection, waiting longer each time; its default (16 retries, waits from 1.28 s
/// doubling to minutes) would hold a request through a whole failover. Here it retries
/// a few times, soon, so that a decision fails within seconds of a master going away and
/// `--on-failure` decides it, as with one server.
async fn on_cluster(urls: &[String]) -> Result<Redis, ServeError> {
    let listed = urls.join(",");
    let client = redis::cluster::ClusterClient::builder(urls.iter().map(String::as_str))
        .connection_timeout(REDIS_TIMEOUT)
        .response_timeout(REDIS_TIMEOUT)
        .retries(CLUSTER_RETRIES)
        .min_retry_wait(CLUSTER_RETRY_WAIT_MS)
        .max_retry_wait(CLUSTER_RETRY_WAIT_MS * 4)
        .build()
        .map_err(|error| ServeError::ClusterUrls {
            urls: listed.clone(),
            error,
        })?;
    let unreachable = |error| ServeError::ClusterConnect {
        urls: listed.clone(),
        error,
    };
    let mut conn = client.get_async_connection().await.map_err(unreachable)?;
    cluster_state(
        redis::cmd("CLUSTER")
            .arg("INFO")
            .query_async(&mut conn)
            .await,
    )
    .map_err(unreachable)?;
    Ok(Redis::cluster(conn))
}
