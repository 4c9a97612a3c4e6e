//! The command line: `trickle replay --limit 6/8s [--algorithm NAME]
//! [--compare NAME | --redis URL] [FILE]` and `trickle serve --config FILE [--listen ADDR]
//! [--redis URL] [--on-failure open|closed|fallback] [--fallback-share SHARE]
//! [--header-timeout D] [--idle-timeout D] [--max-connections N] [--drain-timeout D]
//! [--max-window D] [--max-keys N] [--metrics ADDR]`, read with lexopt.
//!
//! The values of the flags are checked only once the whole line is read, so
//! `trickle replay --limit 6/8x --help` shows the help rather than the mistake.

use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use lexopt::prelude::*;
use trickle_core::{Algorithm, AlgorithmError, Policy, PolicyError};
use trickle_tower::{OnFailure, Share, ShareError};

use crate::cli::serve::config::{DEFAULT_MAX_WINDOW, MAX_MAX_WINDOW};
use crate::cli::serve::connections::{
    duration_text, parse_duration, Connections, MAX_MAX_CONNECTIONS, MAX_TIMEOUT,
};

/// How many clients each group keeps a bucket for unless `--max-keys` says otherwise: a
/// few megabytes a group (about 100 bytes a key of serve's 64-character ids).
pub const DEFAULT_MAX_KEYS: NonZeroUsize = NonZeroUsize::new(100_000).unwrap();

/// The largest `--max-keys`.
pub const MAX_MAX_KEYS: NonZeroUsize = NonZeroUsize::new(100_000_000).unwrap();

/// Where `trickle serve` listens unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Help,
    Version,
    Replay(ReplayArgs),
    Serve(ServeArgs),
}

/// The arguments of `trickle replay`.
#[derive(Debug)]
pub struct ReplayArgs {
    /// One limit, or several decided all or nothing (`--limit "burst=2/1s 6/1h"`).
    pub policy: Policy,
    pub algorithm: Algorithm,
    /// The reference to compare every decision with (`--compare`), usually the sliding log.
    pub compare: Option<Algorithm>,
    /// Decide through the Redis scripts on this server (`--redis URL`) or cluster
    /// (`--redis-cluster URL[,URL…]`) instead of in process.
    pub redis: Option<RedisTarget>,
    pub input: Input,
}

/// The arguments of `trickle serve`.
#[derive(Debug)]
pub struct ServeArgs {
    /// The TOML file naming the route groups, their limits and the CORS origins.
    pub config: PathBuf,
    pub listen: SocketAddr,
    /// Keep the buckets on this Redis server (`--redis URL`) or cluster
    /// (`--redis-cluster URL[,URL…]`, or the config file's `redis_cluster`) instead of in
    /// process; the file's is filled in once the file is read.
    pub redis: Option<RedisTarget>,
    /// What a request gets while Redis cannot decide it.
    pub on_failure: OnFailure,
    /// The timeouts and the cap on connections (`--header-timeout`, `--idle-timeout`,
    /// `--max-connections`, `--drain-timeout`).
    pub connections: Connections,
    /// The longest window a group's limit may have (`--max-window`).
    pub max_window: Duration,
    /// `--on-failure fallback`: decide in this process while Redis is away, with this part
    /// of each group's limit (`--fallback-share`). `on_failure` is then what the layer does
    /// should the fallback fail too, which an in-process limiter cannot: closed.
    pub fallback: Option<Share>,
    /// The most clients each group keeps a bucket for in this process (`--max-keys`).
    pub max_keys: NonZeroUsize,
    /// Serve the layer's counters for Prometheus at `/metrics` on this address
    /// (`--metrics ADDRESS`); none unless given.
    pub metrics: Option<SocketAddr>,
}

/// Where the buckets live when not in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One server (`--redis URL`).
    Server(String),
    /// A Redis Cluster, found from these of its nodes (`--redis-cluster URL[,URL…]`): at
    /// least one, each a URL the redis crate reads.
    Cluster(Vec<String>),
}

impl RedisTarget {
    /// The flag that names it.
    pub fn flag(&self) -> &'static str {
        match self {
            RedisTarget::Server(_) => "--redis",
            RedisTarget::Cluster(_) => "--redis-cluster",
        }
    }
}

/// `--redis-cluster`'s nodes: URLs apart by commas, none empty.
pub fn cluster_urls(text: &str) -> Option<Vec<String>> {
    let urls: Vec<String> = text.split(',').map(|url| url.trim().to_string()).collect();
    urls.iter().all(|url| !url.is_empty()).then_some(urls)
}

/// Where the request log comes from.
#[derive(Debug)]
pub enum Input {
    Stdin,
    Path(PathBuf),
}

/// A command line that cannot be run. Exit code 2.
#[derive(Debug)]
pub enum UsageError {
    /// An unknown flag, a flag without its value, a stray argument.
    Arguments(lexopt::Error),
    NoCommand,
    UnknownCommand(OsString),
    /// A second input file: replay reads one log.
    SecondInput(OsString),
    MissingLimit,
    Limit(PolicyError),
    /// A policy of several limits with `--compare` or `--redis`, which take one.
    PolicyWith(&'static str),
    Algorithm(AlgorithmError),
    Compare(AlgorithmError),
    /// The same flag twice: which one was meant is a guess, so do not guess.
    Repeated(&'static str),
    /// `--redis` or `--redis-cluster` with `--compare`: the comparison runs in process only.
    RedisWithCompare(&'static str),
    /// Both `--redis` and `--redis-cluster`: one place for the buckets.
    RedisAndCluster,
    /// A `--redis-cluster` list with an empty entry.
    ClusterUrls(String),
    /// `serve` without `--config`.
    MissingConfig,
    /// `--listen` is not an IP address and a port.
    Listen(String),
    /// `--on-failure` is neither `open`, `closed` nor `fallback`.
    OnFailure(String),
    /// `--fallback-share` is not a fraction between 0 and 1.
    FallbackShare(ShareError),
    /// `--on-failure fallback` without `--fallback-share`: no default is safe, since the
    /// right share depends on how many servers there are.
    MissingFallbackShare,
    /// `--fallback-share` without `--on-failure fallback`, where it would do nothing.
    FallbackShareWithoutFallback,
    /// `--metrics` is not an IP address and a port.
    Metrics(String),
    /// A positional argument after `serve`, which reads its routes from `--config`.
    ServeArgument(OsString),
    /// A malformed or out-of-range `--header-timeout`, `--idle-timeout`, `--drain-timeout`
    /// or `--max-window`.
    Duration {
        flag: &'static str,
        text: String,
        max: Duration,
    },
    /// `--max-connections` is not a whole number from 1 to [`MAX_MAX_CONNECTIONS`].
    MaxConnections(String),
    /// `--max-keys` is not a whole number from 1 to [`MAX_MAX_KEYS`].
    MaxKeys(String),
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsageError::Arguments(error) => write!(f, "{error}"),
            UsageError::NoCommand => write!(
                f,
                "no command given; expected replay, as in trickle replay --limit 6/8s \
                 requests.csv, or serve, as in trickle serve --config examples/serve.toml"
            ),
            UsageError::UnknownCommand(name) => {
                write!(
                    f,
                    "unknown command {name:?}; the commands are replay and serve"
                )
            }
            UsageError::SecondInput(path) => write!(
                f,
                "unexpected argument {path:?}: replay reads one log, from one FILE or stdin"
            ),
            UsageError::MissingLimit => write!(
                f,
                "replay needs --limit TOKENS/WINDOW with a unit ms, s, m or h, as in --limit 6/8s"
            ),
            UsageError::Limit(error) => write!(f, "invalid --limit: {error}"),
            UsageError::PolicyWith(flag) => write!(
                f,
                "{flag} takes one limit, and --limit gives several; give {flag} one limit, \
                 or replay the policy in process without {flag}"
            ),
            UsageError::Algorithm(error) => write!(f, "invalid --algorithm: {error}"),
            UsageError::Compare(error) => write!(f, "invalid --compare: {error}"),
            UsageError::Repeated(flag) => write!(f, "{flag} is given more than once; give it once"),
            UsageError::RedisWithCompare(flag) => write!(
                f,
                "--compare runs both limiters in process and cannot be combined with {flag}; \
                 give one of them"
            ),
            UsageError::RedisAndCluster => write!(
                f,
                "--redis (one server) and --redis-cluster (a Redis Cluster) both name where the \
                 buckets live; give one of them"
            ),
            UsageError::ClusterUrls(text) => write!(
                f,
                "invalid --redis-cluster {text:?}: expected the URLs of one or more of the \
                 cluster's nodes apart by commas, as in \
                 redis://10.0.0.1:6379/,redis://10.0.0.2:6379/"
            ),
            UsageError::MissingConfig => write!(
                f,
                "serve needs --config FILE, a TOML file of route groups, as in \
                 --config examples/serve.toml"
            ),
            UsageError::Listen(text) => write!(
                f,
                "invalid --listen {text:?}: expected an IP address and a port, as in \
                 127.0.0.1:8080 or [::1]:8080 (port 0 picks a free one); host names are not \
                 looked up"
            ),
            UsageError::OnFailure(text) => write!(
                f,
                "invalid --on-failure {text:?}: expected open (let requests through \
                 uncharged while Redis is away, the default), closed (answer them 503) or \
                 fallback (limit them in this process, with --fallback-share of each limit)"
            ),
            UsageError::FallbackShare(error) => write!(f, "invalid --fallback-share: {error}"),
            UsageError::MissingFallbackShare => write!(
                f,
                "--on-failure fallback needs --fallback-share SHARE, the part of each \
                 group's limit this server may admit on its own while Redis is away: 1/N \
                 when N servers share the Redis, so that together they admit no more than \
                 the limit"
            ),
            UsageError::FallbackShareWithoutFallback => write!(
                f,
                "--fallback-share only applies with --on-failure fallback; give both, or \
                 neither"
            ),
            UsageError::Metrics(text) => write!(
                f,
                "invalid --metrics {text:?}: expected an IP address and a port to serve \
                 /metrics on, apart from --listen, as in 127.0.0.1:9090 (port 0 picks a free \
                 one); host names are not looked up"
            ),
            UsageError::ServeArgument(argument) => write!(
                f,
                "unexpected argument {argument:?}: serve reads its routes from --config FILE"
            ),
            UsageError::Duration { flag, text, max } => write!(
                f,
                "invalid {flag} {text:?}: expected a whole number and a unit ms, s, m or h, \
                 from 1ms to {}, as in 10s or 500ms",
                duration_text(*max)
            ),
            UsageError::MaxConnections(text) => write!(
                f,
                "invalid --max-connections {text:?}: expected a whole number from 1 to \
                 {MAX_MAX_CONNECTIONS}, as in 512"
            ),
            UsageError::MaxKeys(text) => write!(
                f,
                "invalid --max-keys {text:?}: expected a whole number from 1 to \
                 {MAX_MAX_KEYS}, as in {DEFAULT_MAX_KEYS}"
            ),
        }
    }
}

impl From<lexopt::Error> for UsageError {
    fn from(error: lexopt::Error) -> UsageError {
        UsageError::Arguments(error)
    }
}

/// Reads the whole command line.
pub fn parse(mut parser: lexopt::Parser) -> Result<Command, UsageError> {
    match parser.next()? {
        None => Err(UsageError::NoCommand),
        Some(Short('h') | Long("help")) => Ok(Command::Help),
        Some(Short('V') | Long("version")) => Ok(Command::Version),
        Some(Value(command)) if command == "replay" => parse_replay(parser),
        Some(Value(command)) if command == "serve" => parse_serve(parser),
        Some(Value(command)) => Err(UsageError::UnknownCommand(command)),
        Some(flag) => Err(flag.unexpected().into()),
    }
}

/// Reads what follows `replay`.
fn parse_replay(mut parser: lexopt::Parser) -> Result<Command, UsageError> {
    let mut limit: Option<String> = None;
    let mut algorithm: Option<String> = None;
    let mut compare: Option<String> = None;
    let mut redis: Option<String> = None;
    let mut cluster: Option<String> = None;
    let mut input: Option<OsString> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Long("limit") => set_once(&mut limit, "--limit", parser.value()?.string()?)?,
            Long("algorithm") => {
                set_once(&mut algorithm, "--algorithm", parser.value()?.string()?)?
            }
            Long("compare") => set_once(&mut compare, "--compare", parser.value()?.string()?)?,
            Long("redis") => set_once(&mut redis, "--redis", parser.value()?.string()?)?,
            Long("redis-cluster") => {
                set_once(&mut cluster, "--redis-cluster", parser.value()?.string()?)?
            }
            Value(path) if input.is_none() => input = Some(path),
            Value(path) => return Err(UsageError::SecondInput(path)),
            _ => return Err(arg.unexpected().into()),
        }
    }

    let limit = limit
        .ok_or(UsageError::MissingLimit)?
        .parse()
        .map_err(UsageError::Limit)?;
    let algorithm = match algorithm {
        Some(name) => name.parse().map_err(UsageError::Algorithm)?,
        None => Algorithm::default(),
    };
    let compare = compare
        .map(|name| name.parse().map_err(UsageError::Compare))
        .transpose()?;
    let redis = redis_target(redis, cluster)?;
    if let (Some(redis), Some(_)) = (&redis, compare) {
        return Err(UsageError::RedisWithCompare(redis.flag()));
    }
    let policy: Policy = limit;
    if policy.len() > 1 {
        if compare.is_some() {
            return Err(UsageError::PolicyWith("--compare"));
        }
        if let Some(redis) = &redis {
            return Err(UsageError::PolicyWith(redis.flag()));
        }
    }
    let input = match input {
        Some(path) if path != "-" => Input::Path(PathBuf::from(path)),
        _ => Input::Stdin,
    };
    Ok(Command::Replay(ReplayArgs {
        policy,
        algorithm,
        compare,
        redis,
        input,
    }))
}

/// Reads what follows `serve`.
fn parse_serve(mut parser: lexopt::Parser) -> Result<Command, UsageError> {
    let mut config: Option<OsString> = None;
    let mut listen: Option<String> = None;
    let mut redis: Option<String> = None;
    let mut cluster: Option<String> = None;
    let mut on_failure: Option<String> = None;
    let mut header_timeout: Option<String> = None;
    let mut idle_timeout: Option<String> = None;
    let mut max_connections: Option<String> = None;
    let mut max_keys: Option<String> = None;
    let mut drain_timeout: Option<String> = None;
    let mut max_window: Option<String> = None;
    let mut fallback_share: Option<String> = None;
    let mut metrics: Option<String> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Long("config") => {
                let path = parser.value()?;
                if config.replace(path).is_some() {
                    return Err(UsageError::Repeated("--config"));
                }
            }
            Long("listen") => set_once(&mut listen, "--listen", parser.value()?.string()?)?,
            Long("redis") => set_once(&mut redis, "--redis", parser.value()?.string()?)?,
            Long("redis-cluster") => {
                set_once(&mut cluster, "--redis-cluster", parser.value()?.string()?)?
            }
            Long("on-failure") => {
                set_once(&mut on_failure, "--on-failure", parser.value()?.string()?)?
            }
            Long("header-timeout") => set_once(
                &mut header_timeout,
                "--header-timeout",
                parser.value()?.string()?,
            )?,
            Long("idle-timeout") => set_once(
                &mut idle_timeout,
                "--idle-timeout",
                parser.value()?.string()?,
            )?,
            Long("max-keys") => set_once(&mut max_keys, "--max-keys", parser.value()?.string()?)?,
            Long("max-connections") => set_once(
                &mut max_connections,
                "--max-connections",
                parser.value()?.string()?,
            )?,
            Long("drain-timeout") => set_once(
                &mut drain_timeout,
                "--drain-timeout",
                parser.value()?.string()?,
            )?,
            Long("max-window") => {
                set_once(&mut max_window, "--max-window", parser.value()?.string()?)?
            }
            Long("fallback-share") => set_once(
                &mut fallback_share,
                "--fallback-share",
                parser.value()?.string()?,
            )?,
            Long("metrics") => set_once(&mut metrics, "--metrics", parser.value()?.string()?)?,
            Value(argument) => return Err(UsageError::ServeArgument(argument)),
            _ => return Err(arg.unexpected().into()),
        }
    }

    let config = PathBuf::from(config.ok_or(UsageError::MissingConfig)?);
    let redis = redis_target(redis, cluster)?;
    let listen = listen.as_deref().unwrap_or(DEFAULT_LISTEN);
    let listen = listen
        .parse()
        .map_err(|_| UsageError::Listen(listen.to_string()))?;
    let share = fallback_share
        .map(|text| text.parse::<Share>().map_err(UsageError::FallbackShare))
        .transpose()?;
    let (on_failure, fallback) = match (on_failure.as_deref(), share) {
        (None | Some("open"), None) => (OnFailure::Open, None),
        (Some("closed"), None) => (OnFailure::Closed, None),
        (Some("fallback"), Some(share)) => (OnFailure::Closed, Some(share)),
        (Some("fallback"), None) => return Err(UsageError::MissingFallbackShare),
        (None | Some("open" | "closed"), Some(_)) => {
            return Err(UsageError::FallbackShareWithoutFallback)
        }
        (Some(other), _) => return Err(UsageError::OnFailure(other.to_string())),
    };
    let defaults = Connections::default();
    let connections = Connections {
        header_timeout: duration_flag(
            "--header-timeout",
            header_timeout,
            defaults.header_timeout,
            MAX_TIMEOUT,
        )?,
        idle_timeout: duration_flag(
            "--idle-timeout",
            idle_timeout,
            defaults.idle_timeout,
            MAX_TIMEOUT,
        )?,
        max_connections: match max_connections {
            None => defaults.max_connections,
            Some(text) => text
                .parse()
                .ok()
                .filter(|max| (1..=MAX_MAX_CONNECTIONS).contains(max) && !text.starts_with('+'))
                .ok_or(UsageError::MaxConnections(text))?,
        },
        drain: duration_flag(
            "--drain-timeout",
            drain_timeout,
            defaults.drain,
            MAX_TIMEOUT,
        )?,
    };
    let max_window = duration_flag(
        "--max-window",
        max_window,
        DEFAULT_MAX_WINDOW,
        MAX_MAX_WINDOW,
    )?;
    let metrics = metrics
        .map(|text| text.parse().map_err(|_| UsageError::Metrics(text)))
        .transpose()?;
    let max_keys = match max_keys {
        None => DEFAULT_MAX_KEYS,
        Some(text) => text
            .parse::<NonZeroUsize>()
            .ok()
            .filter(|max| max.get() <= MAX_MAX_KEYS.get() && !text.starts_with('+'))
            .ok_or(UsageError::MaxKeys(text))?,
    };
    Ok(Command::Serve(ServeArgs {
        config,
        listen,
        redis,
        on_failure,
        connections,
        max_window,
        fallback,
        max_keys,
        metrics,
    }))
}

/// `--redis` or `--redis-cluster`, not both.
fn redis_target(
    redis: Option<String>,
    cluster: Option<String>,
) -> Result<Option<RedisTarget>, UsageError> {
    match (redis, cluster) {
        (Some(_), Some(_)) => Err(UsageError::RedisAndCluster),
        (Some(url), None) => Ok(Some(RedisTarget::Server(url))),
        (None, Some(text)) => match cluster_urls(&text) {
            Some(urls) => Ok(Some(RedisTarget::Cluster(urls))),
            None => Err(UsageError::ClusterUrls(text)),
        },
        (None, None) => Ok(None),
    }
}

/// The value of the duration flag `flag`, `default` when absent, at most `max`.
fn duration_flag(
    flag: &'static str,
    text: Option<String>,
    default: Duration,
    max: Duration,
) -> Result<Duration, UsageError> {
    match text {
        None => Ok(default),
        Some(text) => parse_duration(&text, max).ok_or(UsageError::Duration { flag, text, max }),
    }
}

fn set_once(
    slot: &mut Option<String>,
    flag: &'static str,
    value: String,
) -> Result<(), UsageError> {
    if slot.replace(value).is_some() {
        return Err(UsageError::Repeated(flag));
    }
    Ok(())
}
