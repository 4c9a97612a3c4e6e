//! `trickle serve`'s config file: the route groups (each a limit, an algorithm, a cost table
//! and its routes) and the origins CORS lets read the answers, in TOML.
//!
//! ```toml
//! cors_origins = ["*"]
//! headers = "esi"          # or "ietf" (RateLimit-Policy, RateLimit), or "both"
//!
//! [[group]]
//! name = "fitting"
//! limit = "6/8s"           # or several limits at once: "burst=2/1s 6/8s"
//! algorithm = "floating"
//! costs = "esi"
//! routes = ["/fittings"]
//! ```
//!
//! Everything is checked here, before a socket is opened, so that a mistake is a message
//! naming the file, the line and what is allowed, never a server that half starts (axum
//! panics on a route it cannot parse or on one registered twice; both are refused here).
//! The checks take time in proportion to the file, so that a file of 30,000 routes loads
//! as quickly as it is read.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;
use trickle_core::costs::CostTableError;
use trickle_core::{Algorithm, AlgorithmError, CostTable, Limit, LimitError, Policy, PolicyError};

use trickle_tower::HeaderDialect;

use crate::cli::serve::connections::duration_text;
use crate::cli::serve::request::OPENAPI_PATH;

/// The longest group name: it is sent back in a header and becomes a Redis key prefix.
const MAX_GROUP_NAME: usize = 64;

/// The longest route, far beyond any demo's.
const MAX_ROUTE: usize = 256;

/// The longest window a limit may have unless `--max-window` says otherwise: 31 days, a
/// monthly quota, the longest period API plans commonly count by. A client's bucket is
/// kept until two windows have passed without its requests (in process and on Redis), so
/// the window bounds how long a client that never comes back costs memory: 62 days here,
/// where a window such as `1/5124095576h`'s would keep every key for good.
pub const DEFAULT_MAX_WINDOW: Duration = Duration::from_secs(744 * 3600);

/// The most `--max-window` may allow: 366 days, a yearly quota.
pub const MAX_MAX_WINDOW: Duration = Duration::from_secs(8784 * 3600);

/// A config file, checked.
#[derive(Debug, Clone)]
pub struct Config {
    pub cors_origins: CorsOrigins,
    /// In the file's order, at least one, names and routes unique.
    pub groups: Vec<Group>,
    /// Which rate-limit headers the answers carry: `esi` (the default), `ietf` or `both`.
    pub headers: HeaderDialect,
    /// `redis_cluster = ["redis://HOST:PORT/", …]`: the buckets on the Redis Cluster of
    /// which these are nodes, unless the command line says where they live
    /// (`--redis`, `--redis-cluster`). At least one URL, none empty.
    pub redis_cluster: Option<Vec<String>>,
}

/// The origins whose pages may read the answers (and their rate-limit headers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigins {
    /// `["*"]`, the default: any page may.
    Any,
    /// Exactly these, as browsers send them in `Origin` (`https://docs.example.com`); an
    /// empty list lets no other origin read anything.
    List(Vec<String>),
}

/// One route group: its routes share one bucket per client.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    /// One limit or several (`burst=10/1s 1000/1h`), decided all or nothing.
    pub policy: Policy,
    pub algorithm: Algorithm,
    pub costs: CostTable,
    /// Paths such as `/fittings`, unique across the whole file.
    pub routes: Vec<String>,
    /// Where `[[group]]` starts, for errors found later (a limit Redis cannot hold).
    pub line: usize,
    /// Decide and count, but never refuse (`shadow = true`): the layer's shadow mode.
    pub shadow: bool,
    /// The budget of answers that cost nothing per client (`free_runs = "20/1m"`); none
    /// unless given, which keeps the cost table as it is.
    pub free_runs: Option<Limit>,
}

/// The file as written, before any value is checked. The spans give every error its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    cors_origins: Option<Vec<Spanned<String>>>,
    headers: Option<Spanned<String>>,
    redis_cluster: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    group: Vec<Spanned<RawGroup>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: Spanned<String>,
    limit: Spanned<String>,
    algorithm: Option<Spanned<String>>,
    costs: Option<Spanned<String>>,
    routes: Spanned<Vec<Spanned<String>>>,
    shadow: Option<bool>,
    free_runs: Option<Spanned<String>>,
}

/// A config file that cannot be served: the file, the line when one is to blame, and what
/// was wrong.
#[derive(Debug)]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: Option<usize>,
    // Boxed: the largest problems are several times the size of the rest of the error.
    pub problem: Box<Problem>,
}

/// What was wrong with a config file.
#[derive(Debug)]
pub enum Problem {
    Read(io::Error),
    /// Not TOML, or TOML of another shape: toml's own message (an unknown field lists the
    /// known ones, a missing one names itself).
    Toml(String),
    NoGroups,
    /// A `redis_cluster` list that is empty or holds an empty URL.
    RedisCluster,
    /// A `headers` value other than `esi`, `ietf` and `both`.
    Headers(String),
    GroupName(String),
    DuplicateGroup {
        name: String,
        first_line: usize,
    },
    Limit {
        group: String,
        error: PolicyError,
    },
    /// A window longer than `--max-window`, whose buckets would be kept that long.
    WindowTooLong {
        group: String,
        limit: Limit,
        max_window: Duration,
    },
    Algorithm {
        group: String,
        error: AlgorithmError,
    },
    Costs {
        group: String,
        error: CostTableError,
    },
    FreeRuns {
        group: String,
        error: LimitError,
    },
    NoRoutes(String),
    Route {
        route: String,
        why: &'static str,
    },
    DuplicateRoute {
        route: String,
        group: String,
        first_group: String,
        first_line: usize,
    },
    CorsOrigin(String),
    /// `"*"` beside named origins, which it would make pointless.
    CorsAnyAndList,
    /// A limit the Redis scripts cannot hold exactly (`--redis` only).
    RedisLimit {
        group: String,
        error: trickle_redis::RedisLimitError,
    },
}

/// What a route may be, for the messages that refuse one.
const ROUTE_FORM: &str = "a route is '/' or '/' followed by segments separated by single '/', \
each of letters, digits, '-', '.', '_' or '~', as in \"/fittings\" or \"/markets/prices\"";

/// What a group must hold, for the message when the file has none.
const GROUP_FORM: &str =
    "[[group]]\nname = \"fitting\"\nlimit = \"6/8s\"\nroutes = [\"/fittings\"]";

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Problem::Read(error) = &*self.problem {
            write!(f, "cannot read the config file {:?}: ", self.path)?;
            return match error.kind() {
                io::ErrorKind::InvalidData => f.write_str("it is not UTF-8 text, as TOML is"),
                _ => error.fmt(f),
            };
        }
        write!(f, "config file {:?}", self.path)?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        f.write_str(": ")?;
        match &*self.problem {
            Problem::Read(_) => Ok(()),
            Problem::Toml(message) => write!(
                f,
                "{}; the file's form is under Serving in 'trickle --help'",
                message.trim_end()
            ),
            Problem::RedisCluster => write!(
                f,
                "redis_cluster must list the URLs of one or more of the cluster's nodes, none \
                 empty, as in redis_cluster = [\"redis://10.0.0.1:6379/\", \
                 \"redis://10.0.0.2:6379/\"]"
            ),
            Problem::NoGroups => write!(
                f,
                "no route group; add at least one [[group]] with a name, a limit and its \
                 routes, as in\n{GROUP_FORM}"
            ),
            Problem::GroupName(name) => write!(
                f,
                "group name {name:?} must be 1 to {MAX_GROUP_NAME} letters, digits, '-', '_' \
                 or '.', as in \"fitting\""
            ),
            Problem::Headers(value) => write!(
                f,
                "headers = {value:?} is no header dialect; write \"esi\" (X-Ratelimit-*, the \
                 default), \"ietf\" (RateLimit-Policy and RateLimit) or \"both\""
            ),
            Problem::DuplicateGroup { name, first_line } => write!(
                f,
                "a second group named {name:?} (the first is on line {first_line}); give \
                 each group a name of its own"
            ),
            Problem::Limit { group, error } => write!(f, "group {group:?}: invalid limit: {error}"),
            Problem::WindowTooLong {
                group,
                limit,
                max_window,
            } => write!(
                f,
                "group {group:?}: limit {limit} has a window longer than {}, the longest \
                 allowed: a client's bucket is kept until two windows pass without a request \
                 from it, so the window bounds how long a client that never returns costs \
                 memory; give a window of at most {}, or raise --max-window (at most {}, \
                 366 days)",
                duration_text(*max_window),
                duration_text(*max_window),
                duration_text(MAX_MAX_WINDOW)
            ),
            Problem::Algorithm { group, error } => write!(f, "group {group:?}: {error}"),
            Problem::Costs { group, error } => {
                write!(f, "group {group:?}: invalid costs: {error}")
            }
            Problem::FreeRuns { group, error } => write!(
                f,
                "group {group:?}: invalid free_runs: {error}; give the budget of answers \
                 that cost nothing per client as TOKENS/WINDOW, as in free_runs = \"20/1m\", \
                 or leave it out for none"
            ),
            Problem::NoRoutes(group) => write!(
                f,
                "group {group:?} has no routes; list at least one, as in routes = [\"/fittings\"]"
            ),
            Problem::Route { route, why } => {
                write!(f, "route {route:?} {why}; {ROUTE_FORM}")
            }
            Problem::DuplicateRoute {
                route,
                group,
                first_group,
                first_line,
            } if group == first_group => write!(
                f,
                "group {group:?} lists route {route:?} twice (first on line {first_line}); \
                 list each route once"
            ),
            Problem::DuplicateRoute {
                route,
                group,
                first_group,
                first_line,
            } => write!(
                f,
                "route {route:?} is in group {group:?} and in group {first_group:?} (line \
                 {first_line}); a route belongs to one group, whose bucket it spends"
            ),
            Problem::CorsOrigin(origin) => write!(
                f,
                "cors_origins: {origin:?} is not an origin; write each as a browser sends it, \
                 http:// or https://, a host and an optional port, with no path or trailing \
                 '/', as in \"https://docs.example.com\" or \"http://localhost:3000\", or \
                 give [\"*\"] for any origin"
            ),
            Problem::CorsAnyAndList => write!(
                f,
                "cors_origins lists \"*\" beside other origins; \"*\" allows every origin, \
                 so give it alone, or list only the origins to allow"
            ),
            Problem::RedisLimit { group, error } => {
                write!(f, "group {group:?}: {error}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// A problem at `line` of the file at `path` (no line when `None`).
    pub fn new(path: &Path, line: Option<usize>, problem: Problem) -> ConfigError {
        ConfigError {
            path: path.to_path_buf(),
            line,
            problem: Box::new(problem),
        }
    }
}

/// Reads and checks the config file at `path`, whose limits may have windows up to
/// `max_window`.
pub fn load(path: &Path, max_window: Duration) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| ConfigError::new(path, None, Problem::Read(error)))?;
    parse(path, &text, max_window)
}

/// Checks `text`, the contents of the file at `path` (named in the errors), whose limits
/// may have windows up to `max_window`.
pub fn parse(path: &Path, text: &str, max_window: Duration) -> Result<Config, ConfigError> {
    let file = File {
        path,
        lines: Lines::new(text),
    };
    let raw = read_toml(&file, text)?;
    let cors_origins = cors_origins(&file, raw.cors_origins)?;
    let headers = header_dialect(&file, raw.headers)?;
    let redis_cluster = match raw.redis_cluster {
        Some(urls) if urls.get_ref().is_empty() || urls.get_ref().iter().any(String::is_empty) => {
            return Err(file.error(urls.span(), Problem::RedisCluster));
        }
        urls => urls.map(Spanned::into_inner),
    };
    let groups = groups(&file, raw.group, max_window)?;
    Ok(Config {
        cors_origins,
        groups,
        headers,
        redis_cluster,
    })
}

/// The file being checked: its path and its lines, which every error names.
struct File<'a> {
    path: &'a Path,
    lines: Lines,
}

impl File<'_> {
    /// `problem`, found at the bytes `span` of the file.
    fn error(&self, span: Range<usize>, problem: Problem) -> ConfigError {
        ConfigError::new(self.path, Some(self.lines.of(span)), problem)
    }

    /// `problem`, found in no one place of the file.
    fn error_anywhere(&self, problem: Problem) -> ConfigError {
        ConfigError::new(self.path, None, problem)
    }
}

/// The file as TOML of the config's shape, its values not yet checked.
fn read_toml(file: &File, text: &str) -> Result<RawConfig, ConfigError> {
    toml::from_str(text).map_err(|error| {
        ConfigError::new(
            file.path,
            error.span().map(|span| file.lines.of(span)),
            Problem::Toml(error.message().to_string()),
        )
    })
}

/// `cors_origins`: any origin when absent or `["*"]`, else a list of origins as browsers
/// send them.
fn cors_origins(
    file: &File,
    origins: Option<Vec<Spanned<String>>>,
) -> Result<CorsOrigins, ConfigError> {
    let Some(origins) = origins else {
        return Ok(CorsOrigins::Any);
    };
    let any = origins.iter().any(|origin| origin.get_ref() == "*");
    if any && origins.len() > 1 {
        let named = origins.iter().find(|origin| origin.get_ref() != "*");
        let line = named.map(|origin| file.lines.of(origin.span()));
        return Err(ConfigError::new(file.path, line, Problem::CorsAnyAndList));
    }
    if any {
        return Ok(CorsOrigins::Any);
    }
    let mut list = Vec::with_capacity(origins.len());
    for origin in origins {
        if !is_origin(origin.get_ref()) {
            let span = origin.span();
            return Err(file.error(span, Problem::CorsOrigin(origin.into_inner())));
        }
        list.push(origin.into_inner());
    }
    Ok(CorsOrigins::List(list))
}

/// What the groups checked so far hold, for the checks that span groups: names and routes
/// are unique across the file.
struct Seen {
    /// Every group name and the line its group starts on.
    names: HashMap<String, usize>,
    /// Every route: the group it is in and the line it is on.
    routes: HashMap<String, (String, usize)>,
}

/// Every `[[group]]`, in the file's order: at least one.
fn groups(
    file: &File,
    raw: Vec<Spanned<RawGroup>>,
    max_window: Duration,
) -> Result<Vec<Group>, ConfigError> {
    if raw.is_empty() {
        return Err(file.error_anywhere(Problem::NoGroups));
    }
    let mut seen = Seen {
        names: HashMap::with_capacity(raw.len()),
        routes: HashMap::new(),
    };
    raw.into_iter()
        .map(|raw_group| group(file, raw_group, max_window, &mut seen))
        .collect()
}

/// `headers`: `esi`, `ietf` or `both`; ESI's when absent.
fn header_dialect(
    file: &File,
    headers: Option<Spanned<String>>,
) -> Result<HeaderDialect, ConfigError> {
    let Some(headers) = headers else {
        return Ok(HeaderDialect::default());
    };
    headers
        .get_ref()
        .parse()
        .map_err(|_| file.error(headers.span(), Problem::Headers(headers.get_ref().clone())))
}

/// One `[[group]]`, its fields checked in the order they are usually written.
fn group(
    file: &File,
    raw: Spanned<RawGroup>,
    max_window: Duration,
    seen: &mut Seen,
) -> Result<Group, ConfigError> {
    let line = file.lines.of(raw.span());
    let RawGroup {
        name,
        limit,
        algorithm,
        costs,
        routes,
        shadow,
        free_runs,
    } = raw.into_inner();
    let name = group_name(file, name, line, &mut seen.names)?;
    let policy = group_policy(file, &name, limit, max_window)?;
    let algorithm = group_algorithm(file, &name, algorithm)?;
    let costs = group_costs(file, &name, costs)?;
    let free_runs = group_free_runs(file, &name, free_runs)?;
    let routes = group_routes(file, &name, routes, &mut seen.routes)?;
    Ok(Group {
        name,
        policy,
        algorithm,
        costs,
        routes,
        line,
        shadow: shadow.unwrap_or(false),
        free_runs,
    })
}

/// `name`: plain, and no other group's; kept in `names_seen` with the group's `line`.
fn group_name(
    file: &File,
    name: Spanned<String>,
    line: usize,
    names_seen: &mut HashMap<String, usize>,
) -> Result<String, ConfigError> {
    if !is_group_name(name.get_ref()) {
        let span = name.span();
        return Err(file.error(span, Problem::GroupName(name.into_inner())));
    }
    let span = name.span();
    let name = name.into_inner();
    if let Some(&first_line) = names_seen.get(&name) {
        return Err(file.error(span, Problem::DuplicateGroup { name, first_line }));
    }
    names_seen.insert(name.clone(), line);
    Ok(name)
}

/// `limit`: a policy of one limit, TOKENS/WINDOW, or several (`burst=10/1s 1000/1h`), no
/// window longer than `max_window`.
fn group_policy(
    file: &File,
    group: &str,
    limit: Spanned<String>,
    max_window: Duration,
) -> Result<Policy, ConfigError> {
    let group = group.to_string();
    let policy = match limit.get_ref().parse::<Policy>() {
        Ok(policy) => policy,
        Err(error) => return Err(file.error(limit.span(), Problem::Limit { group, error })),
    };
    let too_long = policy
        .limits()
        .find(|parsed| u128::from(parsed.window_ms()) > max_window.as_millis());
    match too_long {
        Some(parsed) => Err(file.error(
            limit.span(),
            Problem::WindowTooLong {
                group,
                limit: parsed,
                max_window,
            },
        )),
        None => Ok(policy),
    }
}

/// `algorithm`: one of the core's, the default when absent.
fn group_algorithm(
    file: &File,
    group: &str,
    algorithm: Option<Spanned<String>>,
) -> Result<Algorithm, ConfigError> {
    let Some(name) = algorithm else {
        return Ok(Algorithm::default());
    };
    name.get_ref().parse::<Algorithm>().map_err(|error| {
        let group = group.to_string();
        file.error(name.span(), Problem::Algorithm { group, error })
    })
}

/// `costs`: a cost table, ESI's when absent.
fn group_costs(
    file: &File,
    group: &str,
    costs: Option<Spanned<String>>,
) -> Result<CostTable, ConfigError> {
    let Some(table) = costs else {
        return Ok(CostTable::esi());
    };
    table.get_ref().parse::<CostTable>().map_err(|error| {
        let group = group.to_string();
        file.error(table.span(), Problem::Costs { group, error })
    })
}

/// `free_runs`: a budget written as a limit, none when absent.
fn group_free_runs(
    file: &File,
    group: &str,
    free_runs: Option<Spanned<String>>,
) -> Result<Option<Limit>, ConfigError> {
    let Some(budget) = free_runs else {
        return Ok(None);
    };
    match budget.get_ref().parse::<Limit>() {
        Ok(parsed) => Ok(Some(parsed)),
        Err(error) => {
            let group = group.to_string();
            Err(file.error(budget.span(), Problem::FreeRuns { group, error }))
        }
    }
}

/// `routes`: at least one, each a plain path and in no other group, nor twice in this one;
/// kept in `routes_seen` with the group and the line.
fn group_routes(
    file: &File,
    group: &str,
    routes: Spanned<Vec<Spanned<String>>>,
    routes_seen: &mut HashMap<String, (String, usize)>,
) -> Result<Vec<String>, ConfigError> {
    if routes.get_ref().is_empty() {
        return Err(file.error(routes.span(), Problem::NoRoutes(group.to_string())));
    }
    let mut checked = Vec::with_capacity(routes.get_ref().len());
    for route in routes.into_inner() {
        let span = route.span();
        let line = file.lines.of(span.clone());
        let route = route.into_inner();
        if let Err(why) = check_route(&route) {
            return Err(file.error(span, Problem::Route { route, why }));
        }
        if let Some((first_group, first_line)) = routes_seen.get(&route) {
            let problem = Problem::DuplicateRoute {
                first_group: first_group.clone(),
                first_line: *first_line,
                route,
                group: group.to_string(),
            };
            return Err(file.error(span, problem));
        }
        routes_seen.insert(route.clone(), (group.to_string(), line));
        checked.push(route);
    }
    Ok(checked)
}

/// Byte offsets into the file as 1-based line numbers, as an editor shows them.
struct Lines {
    /// Where each line after the first starts: a search in it, rather than counting the
    /// newlines before every span, keeps a file of many routes from taking the square of
    /// its size to check.
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let starts = text
            .bytes()
            .enumerate()
            .filter(|(_, byte)| *byte == b'\n')
            .map(|(offset, _)| offset + 1)
            .collect();
        Lines { starts }
    }

    fn of(&self, span: Range<usize>) -> usize {
        self.starts.partition_point(|start| *start <= span.start) + 1
    }
}

/// Sent back in `X-Ratelimit-Group` and part of Redis keys, so plain: no spaces, no braces
/// (which would break the keys' Cluster hash tag), nothing a header cannot carry.
fn is_group_name(name: &str) -> bool {
    (1..=MAX_GROUP_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
}

/// Why `route` cannot be served, if it cannot. Only plain paths: axum gives `{`, `}` and
/// `*` a meaning (captures) and `:` a panic, and a browser or a proxy rewrites `.` and `..`
/// segments, `//` and percent-escapes before the server could match them.
fn check_route(route: &str) -> Result<(), &'static str> {
    let Some(rest) = route.strip_prefix('/') else {
        return Err("does not start with '/'");
    };
    if route.len() > MAX_ROUTE {
        return Err("is longer than 256 characters");
    }
    if route == OPENAPI_PATH {
        return Err("is where the server publishes its OpenAPI document, so no group may list it");
    }
    if rest.is_empty() {
        return Ok(());
    }
    for segment in rest.split('/') {
        if segment.is_empty() {
            return Err("has an empty segment ('//' or a trailing '/')");
        }
        if segment == "." || segment == ".." {
            return Err("has a '.' or '..' segment");
        }
        if !segment
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~'))
        {
            return Err("holds a character other than letters, digits, '-', '.', '_', '~' and '/'");
        }
    }
    Ok(())
}

/// `scheme://host[:port]` as a browser sends it in `Origin`: http or https, a host of
/// letters, digits, '-' and '.' (or an IPv6 address in brackets), an optional port, no
/// path. Anything else would never equal a browser's `Origin`, so no page could use it.
fn is_origin(origin: &str) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((address, rest)) if address.parse::<std::net::Ipv6Addr>().is_ok() => {
                ("ipv6", rest)
            }
            _ => return false,
        },
        None => match authority.find(':') {
            Some(colon) => authority.split_at(colon),
            None => (authority, ""),
        },
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.'));
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.parse::<u16>().is_ok() && !digits.starts_with('+'));
    host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    #[test]
    fn routes() {
        let cases: [(&str, bool); 14] = [
            ("/", true),
            ("/openapi.json", false),
            ("/openapi.jsonx", true),
            ("/fittings", true),
            ("/markets/prices", true),
            ("/v1/a-b_c.d~e", true),
            ("fittings", false),
            ("", false),
            ("/fittings/", false),
            ("//fittings", false),
            ("/a/../b", false),
            ("/{id}", false),
            ("/:id", false),
            ("/a b", false),
        ];
        for (route, ok) in cases {
            assert_eq!(check_route(route).is_ok(), ok, "{route:?}");
        }
    }

    #[rustfmt::skip]
    #[test]
    fn origins() {
        let cases: [(&str, bool); 12] = [
            ("https://docs.example.com", true),
            ("http://localhost:3000", true),
            ("http://127.0.0.1:8000", true),
            ("http://[::1]:8000", true),
            ("http://allowed.test", true),
            ("https://docs.example.com/", false),
            ("https://docs.example.com/page", false),
            ("docs.example.com", false),
            ("ftp://example.com", false),
            ("http://", false),
            ("http://host:99999", false),
            ("http://ho st", false),
        ];
        for (origin, ok) in cases {
            assert_eq!(is_origin(origin), ok, "{origin:?}");
        }
    }

    #[test]
    fn group_names() {
        assert!(is_group_name("fitting"));
        assert!(is_group_name("market.v2_x-y"));
        assert!(!is_group_name(""));
        assert!(!is_group_name("a{b}"));
        assert!(!is_group_name("a b"));
        assert!(!is_group_name(&"x".repeat(65)));
    }

    #[test]
    fn lines_count_from_one() {
        let lines = Lines::new("a\nb\nc");
        assert_eq!(lines.of(0..1), 1);
        assert_eq!(lines.of(1..2), 1);
        assert_eq!(lines.of(2..3), 2);
        assert_eq!(lines.of(4..5), 3);
        assert_eq!(lines.of(99..100), 3);
    }

    /// 30 groups of 1,000 routes: the file a big API's routes make. The checks are linear,
    /// so this takes as long as reading the file (see docs/src/reliability.md for the
    /// figures before and after; no clock here, as timing is a benchmark's job).
    #[test]
    fn thirty_thousand_routes_load() {
        let text = many_routes(30, 1_000);
        let path = Path::new("many.toml");
        let config = parse(path, &text, DEFAULT_MAX_WINDOW).unwrap();
        assert_eq!(config.groups.len(), 30);
        let routes: usize = config.groups.iter().map(|group| group.routes.len()).sum();
        assert_eq!(routes, 30_000);
        assert_eq!(config.groups[29].routes[999], "/g29/r999");

        // The last route repeating the first is still found, on the lines the file has.
        let repeated = text.replace("\"/g29/r999\",", "\"/g29/r999\", \"/g0/r0\",");
        let error = parse(path, &repeated, DEFAULT_MAX_WINDOW).unwrap_err();
        let last_route = text.lines().position(|line| line.contains("/g29/r999"));
        assert_eq!(error.line, last_route.map(|index| index + 1), "{error}");
        assert!(
            error
                .to_string()
                .contains("route \"/g0/r0\" is in group \"g29\" and in group \"g0\" (line 5)"),
            "{error}"
        );
    }

    /// `groups` groups of `routes` routes each, one route a line.
    fn many_routes(groups: usize, routes: usize) -> String {
        let mut text = String::new();
        for group in 0..groups {
            text.push_str(&format!(
                "[[group]]\nname = \"g{group}\"\nlimit = \"6/8s\"\nroutes = [\n"
            ));
            for route in 0..routes {
                text.push_str(&format!("  \"/g{group}/r{route}\",\n"));
            }
            text.push_str("]\n\n");
        }
        text
    }

    #[rustfmt::skip]
    #[test]
    fn windows_up_to_the_longest_allowed() {
        let cases: [(&str, Duration, bool); 6] = [
            ("6/8s",          DEFAULT_MAX_WINDOW, true),
            ("100/744h",      DEFAULT_MAX_WINDOW, true),
            ("100/745h",      DEFAULT_MAX_WINDOW, false),
            ("1/5124095576h", DEFAULT_MAX_WINDOW, false),
            ("1/8784h",       MAX_MAX_WINDOW,     true),
            ("1/2s",          Duration::from_secs(1), false),
        ];
        for (limit, max_window, ok) in cases {
            let text = format!("[[group]]\nname = \"a\"\nlimit = \"{limit}\"\nroutes = [\"/a\"]\n");
            let parsed = parse(Path::new("w.toml"), &text, max_window);
            assert_eq!(parsed.is_ok(), ok, "{limit}: {:?}", parsed.err().map(|e| e.to_string()));
        }
    }

    /// A file of blank lines, so that a value [`on`] a line is on that line.
    fn blank_file() -> File<'static> {
        File {
            path: Path::new("serve.toml"),
            lines: Lines::new(&"\n".repeat(40)),
        }
    }

    /// A value on `line` of [`blank_file`].
    fn on(line: usize, value: &str) -> Spanned<String> {
        Spanned::new(line - 1..line, value.to_string())
    }

    /// The error's line and its message without the file's name.
    fn said(error: ConfigError) -> (Option<usize>, String) {
        let text = error.to_string();
        let (_, message) = text.split_once(": ").expect("a message after the place");
        (error.line, message.to_string())
    }

    #[test]
    fn a_group_name_is_plain_and_unique() {
        let file = blank_file();
        let mut seen = HashMap::new();
        assert_eq!(
            group_name(&file, on(2, "fitting"), 1, &mut seen).unwrap(),
            "fitting"
        );
        assert_eq!(seen["fitting"], 1);
        let error = group_name(&file, on(9, "fitting"), 8, &mut seen).unwrap_err();
        assert_eq!(
            said(error),
            (
                Some(9),
                "a second group named \"fitting\" (the first is on line 1); give each group a \
                 name of its own"
                    .to_string()
            )
        );
        let error = group_name(&file, on(12, "a b"), 11, &mut seen).unwrap_err();
        assert_eq!(
            said(error),
            (
                Some(12),
                "group name \"a b\" must be 1 to 64 letters, digits, '-', '_' or '.', as in \
                 \"fitting\""
                    .to_string()
            )
        );
    }

    #[test]
    fn a_limit_is_tokens_per_window_no_longer_than_the_longest_allowed() {
        let file = blank_file();
        let limit = group_policy(&file, "a", on(3, "6/8s"), DEFAULT_MAX_WINDOW).unwrap();
        assert_eq!(limit, "6/8s".parse().unwrap());
        let two = group_policy(&file, "a", on(3, "burst=2/1s 6/8s"), DEFAULT_MAX_WINDOW).unwrap();
        assert_eq!((two.len(), two.name(0), two.name(1)), (2, "burst", "6/8s"));
        let error = group_policy(&file, "a", on(3, "100/745h"), DEFAULT_MAX_WINDOW).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(3));
        assert!(
            message.starts_with(
                "group \"a\": limit 100/745h has a window longer than 744h, the longest allowed"
            ),
            "{message}"
        );
        assert!(
            message.contains("raise --max-window (at most 8784h"),
            "{message}"
        );
        // The second limit of a policy is held to the longest window too.
        let error =
            group_policy(&file, "a", on(3, "1/1s 100/745h"), DEFAULT_MAX_WINDOW).unwrap_err();
        assert!(said(error).1.contains("limit 100/745h has a window longer"));
        let error = group_policy(&file, "a", on(4, "6 per 8s"), DEFAULT_MAX_WINDOW).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(4));
        assert!(
            message.starts_with("group \"a\": invalid limit: "),
            "{message}"
        );
    }

    #[test]
    fn an_algorithm_is_one_of_the_cores_and_the_refusal_lists_them() {
        let file = blank_file();
        assert_eq!(
            group_algorithm(&file, "a", None).unwrap(),
            Algorithm::default()
        );
        for algorithm in Algorithm::ALL {
            let name = on(5, algorithm.name());
            assert_eq!(group_algorithm(&file, "a", Some(name)).unwrap(), algorithm);
        }
        let error = group_algorithm(&file, "a", Some(on(6, "leaky"))).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(6));
        assert!(message.starts_with("group \"a\": "), "{message}");
        assert!(message.contains("leaky"), "{message}");
        for algorithm in Algorithm::ALL {
            assert!(message.contains(algorithm.name()), "{message}");
        }
    }

    #[test]
    fn costs_and_free_runs_default_and_say_what_they_expect() {
        let file = blank_file();
        assert_eq!(group_costs(&file, "a", None).unwrap(), CostTable::esi());
        let error = group_costs(&file, "a", Some(on(7, "cheap"))).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(7));
        assert!(
            message.starts_with("group \"a\": invalid costs: "),
            "{message}"
        );

        assert_eq!(group_free_runs(&file, "a", None).unwrap(), None);
        let budget = group_free_runs(&file, "a", Some(on(8, "20/1m"))).unwrap();
        assert_eq!(budget, Some("20/1m".parse().unwrap()));
        let error = group_free_runs(&file, "a", Some(on(8, "lots"))).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(8));
        assert!(
            message.starts_with("group \"a\": invalid free_runs: "),
            "{message}"
        );
        assert!(
            message.ends_with("as in free_runs = \"20/1m\", or leave it out for none"),
            "{message}"
        );
    }

    #[test]
    fn routes_are_plain_and_each_in_one_group_once() {
        let file = blank_file();
        let mut seen = HashMap::new();
        let routes = |line, list: &[&str]| {
            Spanned::new(
                line - 1..line,
                list.iter().map(|route| on(line, route)).collect(),
            )
        };
        let checked = group_routes(&file, "a", routes(3, &["/a", "/b"]), &mut seen).unwrap();
        assert_eq!(checked, ["/a", "/b"]);

        let error = group_routes(&file, "b", routes(5, &[]), &mut seen).unwrap_err();
        assert_eq!(
            said(error),
            (
                Some(5),
                "group \"b\" has no routes; list at least one, as in routes = [\"/fittings\"]"
                    .to_string()
            )
        );
        let error = group_routes(&file, "b", routes(6, &["/c", "/a"]), &mut seen).unwrap_err();
        assert_eq!(
            said(error),
            (
                Some(6),
                "route \"/a\" is in group \"b\" and in group \"a\" (line 3); a route belongs \
                 to one group, whose bucket it spends"
                    .to_string()
            )
        );
        let error = group_routes(&file, "c", routes(7, &["/d", "/d"]), &mut seen).unwrap_err();
        assert_eq!(
            said(error),
            (
                Some(7),
                "group \"c\" lists route \"/d\" twice (first on line 7); list each route once"
                    .to_string()
            )
        );
        let error = group_routes(&file, "d", routes(8, &["/{id}"]), &mut seen).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(8));
        assert_eq!(
            message,
            format!(
                "route \"/{{id}}\" holds a character other than letters, digits, '-', '.', '_', \
                 '~' and '/'; {ROUTE_FORM}"
            )
        );
    }

    #[test]
    fn cors_origins_are_any_or_a_list_of_origins() {
        let file = blank_file();
        assert_eq!(cors_origins(&file, None).unwrap(), CorsOrigins::Any);
        assert_eq!(
            cors_origins(&file, Some(vec![on(1, "*")])).unwrap(),
            CorsOrigins::Any
        );
        assert_eq!(
            cors_origins(&file, Some(vec![on(1, "https://docs.example.com")])).unwrap(),
            CorsOrigins::List(vec!["https://docs.example.com".to_string()])
        );
        let error =
            cors_origins(&file, Some(vec![on(1, "*"), on(2, "https://a.example")])).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(2));
        assert!(
            message.starts_with("cors_origins lists \"*\" beside other origins"),
            "{message}"
        );
        let error = cors_origins(&file, Some(vec![on(3, "https://a.example/")])).unwrap_err();
        let (line, message) = said(error);
        assert_eq!(line, Some(3));
        assert!(
            message.starts_with("cors_origins: \"https://a.example/\" is not an origin"),
            "{message}"
        );
    }

    #[test]
    fn a_file_of_another_shape_is_toml_s_message_with_its_line() {
        let text = "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroute = [\"/a\"]\n";
        let file = File {
            path: Path::new("serve.toml"),
            lines: Lines::new(text),
        };
        let Err(error) = read_toml(&file, text) else {
            panic!("an unknown field read");
        };
        let (line, message) = said(error);
        assert_eq!(line, Some(4));
        assert!(message.contains("route"), "{message}");
        assert!(
            message.ends_with("the file's form is under Serving in 'trickle --help'"),
            "{message}"
        );
        let error = groups(&file, Vec::new(), DEFAULT_MAX_WINDOW).unwrap_err();
        assert_eq!(error.line, None);
        assert!(error
            .to_string()
            .contains("no route group; add at least one [[group]]"));
    }
}
