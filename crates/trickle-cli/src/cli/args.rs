//! The command line: `trickle replay --limit 6/8s [--algorithm NAME]
//! [--compare NAME | --redis URL] [FILE]` and `trickle serve --config FILE [--listen ADDR]
//! [--redis URL] [--on-failure open|closed] [--metrics ADDR]`, read with lexopt.
//!
//! The values of the flags are checked only once the whole line is read, so
//! `trickle replay --limit 6/8x --help` shows the help rather than the mistake.

use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use lexopt::prelude::*;
use trickle::{Algorithm, AlgorithmError, Limit, LimitError};
use trickle_tower::OnFailure;

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
    pub limit: Limit,
    pub algorithm: Algorithm,
    /// The reference to compare every decision with (`--compare`), usually the sliding log.
    pub compare: Option<Algorithm>,
    /// Decide through the Redis scripts on this server (`--redis URL`) instead of in process.
    pub redis: Option<String>,
    pub input: Input,
}

/// The arguments of `trickle serve`.
#[derive(Debug)]
pub struct ServeArgs {
    /// The TOML file naming the route groups, their limits and the CORS origins.
    pub config: PathBuf,
    pub listen: SocketAddr,
    /// Keep the buckets on this Redis server (`--redis URL`) instead of in process.
    pub redis: Option<String>,
    /// What a request gets while Redis cannot decide it.
    pub on_failure: OnFailure,
    /// Serve the layer's counters for Prometheus at `/metrics` on this address
    /// (`--metrics ADDRESS`); none unless given.
    pub metrics: Option<SocketAddr>,
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
    Limit(LimitError),
    Algorithm(AlgorithmError),
    Compare(AlgorithmError),
    /// The same flag twice: which one was meant is a guess, so do not guess.
    Repeated(&'static str),
    /// `--redis` with `--compare`: the comparison runs in process only.
    RedisWithCompare,
    /// `serve` without `--config`.
    MissingConfig,
    /// `--listen` is not an IP address and a port.
    Listen(String),
    /// `--on-failure` is neither `open` nor `closed`.
    OnFailure(String),
    /// `--metrics` is not an IP address and a port.
    Metrics(String),
    /// A positional argument after `serve`, which reads its routes from `--config`.
    ServeArgument(OsString),
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
            UsageError::Algorithm(error) => write!(f, "invalid --algorithm: {error}"),
            UsageError::Compare(error) => write!(f, "invalid --compare: {error}"),
            UsageError::Repeated(flag) => write!(f, "{flag} is given more than once; give it once"),
            UsageError::RedisWithCompare => write!(
                f,
                "--compare runs both limiters in process and cannot be combined with --redis; \
                 give one of them"
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
                 uncharged while Redis is away, the default) or closed (answer them 503)"
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
    if redis.is_some() && compare.is_some() {
        return Err(UsageError::RedisWithCompare);
    }
    let input = match input {
        Some(path) if path != "-" => Input::Path(PathBuf::from(path)),
        _ => Input::Stdin,
    };
    Ok(Command::Replay(ReplayArgs {
        limit,
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
    let mut on_failure: Option<String> = None;
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
            Long("on-failure") => {
                set_once(&mut on_failure, "--on-failure", parser.value()?.string()?)?
            }
            Long("metrics") => set_once(&mut metrics, "--metrics", parser.value()?.string()?)?,
            Value(argument) => return Err(UsageError::ServeArgument(argument)),
            _ => return Err(arg.unexpected().into()),
        }
    }

    let config = PathBuf::from(config.ok_or(UsageError::MissingConfig)?);
    let listen = listen.as_deref().unwrap_or(DEFAULT_LISTEN);
    let listen = listen
        .parse()
        .map_err(|_| UsageError::Listen(listen.to_string()))?;
    let on_failure = match on_failure.as_deref() {
        None | Some("open") => OnFailure::Open,
        Some("closed") => OnFailure::Closed,
        Some(other) => return Err(UsageError::OnFailure(other.to_string())),
    };
    let metrics = metrics
        .map(|text| text.parse().map_err(|_| UsageError::Metrics(text)))
        .transpose()?;
    Ok(Command::Serve(ServeArgs {
        config,
        listen,
        redis,
        on_failure,
        metrics,
    }))
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
