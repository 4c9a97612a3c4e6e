//! What can go wrong: a limit or key prefix Redis cannot hold exactly (found at
//! construction), and a decision that could not be made (found at each hit).

use std::fmt;

use trickle_core::{Algorithm, Limit};

use crate::exact::{power_of_two, MAX_TIME_MS};
use crate::keys::{prefix_problem, MAX_PREFIX_LEN};

/// A limit or key prefix that the Redis backend refuses at construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisLimitError {
    /// `N × W` is above the algorithm's `max_scaled` (see
    /// [`RedisLimiter::max_scaled`](crate::RedisLimiter::max_scaled)): the script's sums
    /// would leave the integers a double holds exactly.
    TooLarge {
        algorithm: Algorithm,
        limit: Limit,
        max_scaled: u128,
    },
    /// The key prefix is empty, longer than [`MAX_PREFIX_LEN`](crate::MAX_PREFIX_LEN)
    /// bytes, or holds a character other than ASCII letters, digits, `-`, `_`, `.`, `:`
    /// and `/` (a brace would cut the Cluster hash tag short; see
    /// [`RedisLimiter::redis_key`](crate::RedisLimiter::redis_key)).
    BadPrefix { prefix: String },
}

impl fmt::Display for RedisLimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisLimitError::TooLarge {
                algorithm,
                limit,
                max_scaled,
            } => write!(
                f,
                "limit {limit} is too large for the {algorithm} algorithm on Redis: \
                 tokens × window_ms must be at most {max_scaled} ({}) for its script's \
                 numbers to stay within 2^53, where Lua's doubles stop being exact; got \
                 {} × {} = {}; lower the tokens or the window",
                power_of_two(*max_scaled),
                limit.tokens(),
                limit.window_ms(),
                u128::from(limit.tokens()) * u128::from(limit.window_ms()),
            ),
            RedisLimitError::BadPrefix { prefix } => write!(
                f,
                "key prefix {prefix:?} is not allowed: {}; a prefix is 1 to \
                 {MAX_PREFIX_LEN} bytes of ASCII letters, digits, '-', '_', '.', ':' and '/' \
                 (no brace, which would cut the keys' Redis Cluster hash tag short)",
                prefix_problem(prefix)
            ),
        }
    }
}

impl std::error::Error for RedisLimitError {}

/// A decision that could not be made; the caller chooses whether to let the request through
/// (fail open: the limit is not enforced while Redis is away) or refuse it (fail closed: no
/// request gets through while Redis is away). Nothing was spent unless the script reached
/// the server: after a timeout the server may still decide, and spend, once it runs again,
/// so a timeout says "unknown", not "denied".
#[derive(Debug)]
pub enum RedisError {
    /// Redis could not be reached, refused the script, or failed while running it.
    Redis(redis::RedisError),
    /// The time is beyond 2^53 ms, where Lua's numbers stop being exact.
    TimeTooLarge { now_ms: u64 },
    /// A `record` whose cost would take the bucket's counts past 2^53 (scaled by the
    /// window), where Lua's numbers stop being exact; nothing was charged.
    RecordOutOfRange { cost: u64 },
    /// A settle whose final `cost` would take the bucket's counts past 2^53 (scaled by the
    /// window), as a record would, or whose costs are beyond 2^53 themselves; nothing was
    /// charged or refunded, and the reservation is still pending.
    SettleOutOfRange { reserved: u64, cost: u64 },
    /// A settle was sent `attempts` times and no answer came back; `error` is what made its
    /// outcome unknown first (a timeout, a connection dropped). Redis applied it once or
    /// not at all: every copy after the first to run finds its reservation settled and
    /// changes nothing. Not at all leaves the reserve charged, as for a dropped request.
    SettleUnknown {
        attempts: u32,
        error: redis::RedisError,
    },
    /// The script answered something other than its integers (nine for each limit, two
    /// more each for a policy): another program writes to the same key, or the script and
    /// this crate disagree.
    BadReply { reply: String },
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisError::Redis(err) => write!(f, "Redis failed to decide: {err}"),
            RedisError::TimeTooLarge { now_ms } => write!(
                f,
                "time {now_ms} ms is beyond 2^53 = 9007199254740992 ms, the largest time the \
                 Redis script holds exactly"
            ),
            RedisError::RecordOutOfRange { cost } => write!(
                f,
                "recording {cost} tokens would take the bucket past 2^53 tokens × ms, the \
                 largest count the Redis script holds exactly; nothing was charged"
            ),
            RedisError::SettleOutOfRange { reserved, cost }
                if *cost > MAX_TIME_MS || *reserved > MAX_TIME_MS =>
            {
                write!(
                    f,
                    "a settle's reserve and final cost must each be at most 2^53 = \
                     9007199254740992 tokens, the largest the Redis script holds exactly; \
                     got a reserve of {reserved} and a final cost of {cost}; nothing was \
                     charged, and the reservation is still pending"
                )
            }
            RedisError::SettleOutOfRange { reserved, cost } => write!(
                f,
                "settling a reserve of {reserved} tokens at {cost} would take the bucket \
                 past 2^53 tokens × ms, the largest count the Redis script holds exactly; \
                 nothing was charged, and the reservation is still pending"
            ),
            RedisError::SettleUnknown { attempts, error } => write!(
                f,
                "the settle's outcome is unknown after {attempts} attempt{}: {error}; Redis \
                 applied it once or not at all (a copy that finds its reservation settled \
                 changes nothing)",
                if *attempts == 1 { "" } else { "s" }
            ),
            RedisError::BadReply { reply } => write!(
                f,
                "the limiter's script answered {reply}, not nine integers: is another \
                 program writing to the same key?"
            ),
        }
    }
}

impl RedisError {
    /// Whether this is an **outage**: Redis as a whole could not answer (unreachable, the
    /// connection refused, reset or timed out, still loading, busy running another script,
    /// a replica or a Cluster without its primary, out of memory, unable to persist), or a
    /// settle's outcome is unknown for one of those reasons. Another store, or the same one
    /// a moment later, would decide; a caller's failure rule (open, closed, a fallback
    /// limiter) is for these.
    ///
    /// Everything else concerns this request or its bucket and would fail the same way
    /// anywhere, so it is **not** an outage, and no failure rule should hide it: a key of
    /// the wrong type (`WRONGTYPE`, another program wrote it), an error inside the script, a
    /// reply that is not a decision ([`RedisError::BadReply`]), a key on another Cluster
    /// node, a command the server's ACL refuses, a time or a cost past what the script
    /// holds exactly. A server answers those with 500 and logs them as errors: they stay
    /// until someone fixes them.
    ///
    /// ```
    /// use trickle_redis::RedisError;
    ///
    /// let timed_out = RedisError::Redis(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
    /// assert!(timed_out.is_outage());
    /// let garbage = RedisError::BadReply { reply: "nil".to_string() };
    /// assert!(!garbage.is_outage());
    /// ```
    pub fn is_outage(&self) -> bool {
        match self {
            RedisError::Redis(err) => is_outage(err),
            RedisError::SettleUnknown { .. } => true,
            RedisError::TimeTooLarge { .. }
            | RedisError::RecordOutOfRange { .. }
            | RedisError::SettleOutOfRange { .. }
            | RedisError::BadReply { .. } => false,
        }
    }

    /// What went wrong, in a few words fit for a client's error message (a 500's body):
    /// a fixed text per kind of failure, naming the problem without the key, the server's
    /// address or the script's text, which go to the log with the whole error.
    pub fn problem(&self) -> &'static str {
        let err = match self {
            RedisError::Redis(err) => err,
            RedisError::SettleUnknown { .. } => {
                return "Redis did not answer the settle: its outcome is unknown"
            }
            RedisError::TimeTooLarge { .. } => {
                return "the time is beyond what Redis holds exactly"
            }
            RedisError::RecordOutOfRange { .. } | RedisError::SettleOutOfRange { .. } => {
                return "the cost would take the bucket beyond what Redis holds exactly"
            }
            RedisError::BadReply { .. } => {
                return "Redis answered the limiter's script with something other than a \
                        decision: another program may be writing to the bucket's key"
            }
        };
        if is_outage(err) {
            return "Redis is unreachable, not ready, or did not answer in time";
        }
        match err.code() {
            Some("WRONGTYPE") => {
                "a Redis key of this bucket holds a value of the wrong type (WRONGTYPE): \
                 another program wrote it"
            }
            Some("NOSCRIPT") => "Redis could not load the limiter's script",
            Some("NOPERM") => "Redis's ACL refuses the limiter's commands (NOPERM)",
            Some("MOVED" | "ASK" | "CROSSSLOT") => {
                "the bucket's keys live on another Redis Cluster node: connect with a \
                 Cluster client"
            }
            _ => "the limiter's script failed in Redis",
        }
    }
}

/// See [`RedisError::is_outage`]: the server or the connection, not this request.
fn is_outage(err: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    match err.kind() {
        // Refused, reset, dropped, timed out; a reply that could not be parsed is a broken
        // connection too (the crate reconnects after it).
        ErrorKind::Io
        | ErrorKind::Parse
        | ErrorKind::AuthenticationFailed
        | ErrorKind::ClusterConnectionNotFound
        | ErrorKind::MasterNameNotFoundBySentinel
        | ErrorKind::NoValidReplicasFoundBySentinel => true,
        ErrorKind::Server(kind) => matches!(
            kind,
            ServerErrorKind::BusyLoading
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
                | ServerErrorKind::MasterDown
                | ServerErrorKind::ReadOnly
        ),
        // Codes the crate does not name: a script running past its time limit blocks
        // every client (BUSY); a server that cannot save or is out of memory refuses writes
        // (MISCONF, OOM); a primary without enough replicas too (NOREPLICAS).
        ErrorKind::Extension => {
            matches!(err.code(), Some("BUSY" | "MISCONF" | "OOM" | "NOREPLICAS"))
        }
        _ => false,
    }
}

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RedisError::Redis(err) | RedisError::SettleUnknown { error: err, .. } => Some(err),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for RedisError {
    fn from(err: redis::RedisError) -> RedisError {
        RedisError::Redis(err)
    }
}
