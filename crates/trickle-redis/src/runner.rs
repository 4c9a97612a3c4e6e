//! What [`RedisLimiter`](crate::RedisLimiter) and
//! [`RedisPolicyLimiter`](crate::RedisPolicyLimiter) share: the algorithm's one script (which
//! decides one limit or all of a policy's), its arguments checked and laid out as
//! `prelude.lua` reads them, the call sent (a settle again while its outcome is unknown),
//! and each limit's nine integers read into the core's [`Decision`].

use std::num::{NonZeroU32, NonZeroU64};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use redis::{Cmd, ConnectionLike, Script, Value};
use trickle_core::{Algorithm, Counters, Decision, Limit, Op, Outcome, Tokens};

use crate::errors::{RedisError, RedisLimitError};
use crate::exact::MAX_TIME_MS;
use crate::{fixed, floating, keys, sliding_log, token_bucket};

/// How long a bucket outlives its usefulness in Redis, in ms. Each script works out when
/// the state it writes stops counting on the caller's clock (for the floating window the
/// end of the next window, for the fixed window the end of this one, for the token bucket
/// the moment it is full again) and expires the key that long after, plus this grace:
/// Redis counts the expiry on its own clock, so callers whose clocks run behind by up to
/// this much still find it. A reservation's pending record is kept the same way, until
/// its tokens stop counting, plus this grace.
pub const EXPIRY_GRACE_MS: u64 = 1_000;

/// How many times [`RedisLimiter`](crate::RedisLimiter) and
/// [`RedisPolicyLimiter`](crate::RedisPolicyLimiter) send a settle whose outcome is unknown (a timeout, a
/// connection dropped before the answer) unless
/// their `with_settle_attempts` says otherwise: 3.
pub const SETTLE_ATTEMPTS: NonZeroU32 = NonZeroU32::MIN.saturating_add(2);

/// Whose clock a decision is made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// The time the caller passes in, as in the core: replays, tests, and servers whose
    /// clocks are kept in step (NTP). The default.
    #[default]
    Caller,
    /// The Redis server's `TIME`, read inside the script; the time the caller passes is
    /// ignored. One clock for the whole fleet, whatever the application servers' clocks
    /// say; see the crate's documentation for what that costs.
    Server,
}

const OUTCOME_ALLOWED: u64 = 0;
const OUTCOME_DENIED: u64 = 1;
const OUTCOME_EXCEEDS: u64 = 2;
/// A `record` or a `settle` that would take a bucket's counts past the integers a Lua
/// number holds exactly; the script wrote nothing, in any limit.
const OUTCOME_OUT_OF_RANGE: u64 = 3;

/// The integers each limit answers: outcome, used × W, the time decided at, the wait from
/// that time (for a denial), the caller's time (the server's with [`Clock::Server`]),
/// whether counters follow, and previous, current and elapsed.
pub(crate) const DECISION_LEN: usize = 9;

/// The algorithm's script and how it is called, for limiters of any number of limits.
#[derive(Debug, Clone)]
pub(crate) struct Runner {
    pub(crate) algorithm: Algorithm,
    pub(crate) prefix: String,
    pub(crate) clock: Clock,
    pub(crate) settle_attempts: NonZeroU32,
    code: Arc<Code>,
}

/// The algorithm's Lua, as a Redis Function library and as a script, and which of them the
/// server takes.
#[derive(Debug)]
struct Code {
    /// The library's one function, which is also the library's name: the algorithm's and
    /// the script's SHA-1, so that two versions of the crate sharing a server never replace
    /// each other's library.
    function: String,
    /// `#!lua name=…`, the text, and the registration of `decide`: what `FUNCTION LOAD`
    /// is sent on "Function not found" (a new server, a restart without persistence, a
    /// `FUNCTION FLUSH`, a failover to a replica that never had it).
    library: String,
    /// The same text ending `return decide(KEYS, ARGV)`: `EVALSHA`, reloaded on `NOSCRIPT`
    /// by the redis crate, for a server without Functions (before Redis 7.0).
    script: Script,
    /// Set once a server answered that it has no `FCALL`; every later call is a script.
    scripts_only: AtomicBool,
}

impl Code {
    fn new(name: &str, text: &str) -> Code {
        let script = Script::new(&format!("{text}\nreturn decide(KEYS, ARGV)\n"));
        let function = format!("trickle_{name}_{}", script.get_hash());
        let library = format!(
            "#!lua name={function}\n{text}\nredis.register_function('{function}', decide)\n"
        );
        Code {
            function,
            library,
            script,
            scripts_only: AtomicBool::new(false),
        }
    }
}

/// One decision's call, its arguments laid out as `prelude.lua` reads them.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    keys: Vec<String>,
    op: &'static str,
    clock: &'static str,
    report_next: &'static str,
    numbers: Vec<u8>,
}

/// What a failed `FCALL` means for the next step.
enum Failed {
    /// "Function not found": the server lost the library (or never had it); load it and
    /// call again. Nothing ran.
    NotLoaded,
    /// No `FCALL` at all (before Redis 7.0): run the script instead. Nothing ran.
    NoFunctions,
    /// Anything else, as the caller's rules read it.
    Other,
}

fn failed(err: &redis::RedisError) -> Failed {
    let detail = err.detail().unwrap_or("");
    if err.code() != Some("ERR") {
        Failed::Other
    } else if detail.starts_with("Function not found") {
        Failed::NotLoaded
    } else if detail.starts_with("unknown command") {
        Failed::NoFunctions
    } else {
        Failed::Other
    }
}

impl Runner {
    /// The script of `algorithm`, for keys starting with `{prefix:` and buckets under
    /// `limits`; refused as [`RedisLimiter::new`](crate::RedisLimiter::new) says.
    pub(crate) fn new(
        algorithm: Algorithm,
        limits: impl IntoIterator<Item = Limit>,
        prefix: &str,
    ) -> Result<Runner, RedisLimitError> {
        if !keys::prefix_is_allowed(prefix) {
            return Err(RedisLimitError::BadPrefix {
                prefix: prefix.to_string(),
            });
        }
        let (text, max_scaled) = script(algorithm);
        // A Function's name takes letters, digits and underscores only.
        let name = algorithm.name().replace('-', "_");
        for limit in limits {
            if u128::from(limit.tokens()) * u128::from(limit.window_ms()) > max_scaled {
                return Err(RedisLimitError::TooLarge {
                    algorithm,
                    limit,
                    max_scaled,
                });
            }
        }
        Ok(Runner {
            algorithm,
            prefix: prefix.to_string(),
            clock: Clock::Caller,
            settle_attempts: SETTLE_ATTEMPTS,
            code: Arc::new(Code::new(&name, text)),
        })
    }

    /// The script call deciding `op` against `limits`, whose buckets' keys are `keys` (in the
    /// same order), its arguments checked: the same for the sync and the async connection.
    /// `pending` names a reservation's pending record from its ticket; `report_next` asks
    /// each limit when it frees its next token, which a policy's answer holds.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call(
        &self,
        keys: Vec<String>,
        pending: impl FnOnce(u64) -> String,
        limits: &[Limit],
        op: Op,
        now_ms: u64,
        cost: u64,
        report_next: bool,
    ) -> Result<Call, RedisError> {
        if self.clock == Clock::Caller && now_ms > MAX_TIME_MS {
            return Err(RedisError::TimeTooLarge { now_ms });
        }
        // A hit, peek or reserve decides every cost above a limit's N alike, so the script
        // never sees a number past the largest N + 1, within 2^53; a record or a settle
        // charges what it is given, and the script refuses what would leave the exact range.
        let never_fits = limits.iter().map(Limit::tokens).max().unwrap_or(0) + 1;
        let (name, script_cost, ticket) = match op {
            Op::Hit => ("hit", cost.min(never_fits), None),
            Op::Peek => ("peek", cost.min(never_fits), None),
            Op::Reserve { ticket } => ("reserve", cost.min(never_fits), Some(ticket)),
            Op::Record if cost > MAX_TIME_MS => {
                return Err(RedisError::RecordOutOfRange { cost });
            }
            Op::Record => ("record", cost, None),
            Op::Settle {
                reserved_at_ms,
                reserved,
                ticket,
            } => {
                // A reservation's time is a decision's, on the clock decisions are made on
                // (the server's too, with `Clock::Server`), so it is checked on both.
                if reserved_at_ms > MAX_TIME_MS {
                    return Err(RedisError::TimeTooLarge {
                        now_ms: reserved_at_ms,
                    });
                }
                if cost > MAX_TIME_MS || reserved > MAX_TIME_MS {
                    return Err(RedisError::SettleOutOfRange { reserved, cost });
                }
                ("settle", cost, Some(ticket))
            }
        };
        let (reserved_at_ms, reserved) = match op {
            Op::Settle {
                reserved_at_ms,
                reserved,
                ..
            } => (reserved_at_ms, reserved),
            _ => (0, 0),
        };
        let mut keys = keys;
        if let Some(ticket) = ticket {
            // The script finds the pending record last in KEYS, so Redis Cluster sees it.
            keys.push(pending(ticket));
        }
        let limits_numbers = limits
            .iter()
            .flat_map(|limit| [limit.tokens(), limit.window_ms()]);
        Ok(Call {
            keys,
            op: name,
            clock: match self.clock {
                Clock::Caller => "caller",
                Clock::Server => "server",
            },
            report_next: if report_next { "1" } else { "0" },
            numbers: doubles(
                [
                    now_ms,
                    script_cost,
                    EXPIRY_GRACE_MS,
                    reserved_at_ms,
                    reserved,
                ]
                .into_iter()
                .chain(limits_numbers),
            ),
        })
    }

    /// `FCALL` of the library's function: KEYS, then ARGV.
    fn fcall(&self, call: &Call) -> Cmd {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(&self.code.function)
            .arg(call.keys.len())
            .arg(&call.keys)
            .arg(call.op)
            .arg(call.clock)
            .arg(call.report_next)
            .arg(&call.numbers);
        cmd
    }

    /// `FUNCTION LOAD REPLACE` of the library: on a Redis Cluster the redis crate sends it
    /// to every master. REPLACE, so that two clients loading it at once both succeed; the
    /// library's name is its text's hash, so what it replaces is the same text.
    fn function_load(&self) -> Cmd {
        let mut cmd = redis::cmd("FUNCTION");
        cmd.arg("LOAD").arg("REPLACE").arg(&self.code.library);
        cmd
    }

    /// The same call as a script, for a server without Functions.
    fn script(&self, call: &Call) -> redis::ScriptInvocation<'_> {
        let mut invocation = self.code.script.key(&call.keys);
        invocation
            .arg(call.op)
            .arg(call.clock)
            .arg(call.report_next)
            .arg(&call.numbers);
        invocation
    }

    /// One attempt at `call`: its function, loaded first if the server has lost it, or the
    /// script where the server has no Functions.
    fn attempt(&self, conn: &mut dyn ConnectionLike, call: &Call) -> redis::RedisResult<Value> {
        if !self.code.scripts_only.load(Ordering::Relaxed) {
            let err = match self.fcall(call).query::<Value>(conn) {
                Ok(reply) => return Ok(reply),
                Err(err) => err,
            };
            match failed(&err) {
                Failed::Other => return Err(err),
                Failed::NotLoaded => {
                    self.function_load().query::<Value>(conn)?;
                    return self.fcall(call).query(conn);
                }
                Failed::NoFunctions => self.code.scripts_only.store(true, Ordering::Relaxed),
            }
        }
        self.script(call).invoke(conn)
    }

    /// [`attempt`](Runner::attempt) on an async connection.
    #[cfg(feature = "aio")]
    async fn attempt_async<C>(&self, conn: &mut C, call: &Call) -> redis::RedisResult<Value>
    where
        C: redis::aio::ConnectionLike,
    {
        if !self.code.scripts_only.load(Ordering::Relaxed) {
            let err = match self.fcall(call).query_async::<Value>(conn).await {
                Ok(reply) => return Ok(reply),
                Err(err) => err,
            };
            match failed(&err) {
                Failed::Other => return Err(err),
                Failed::NotLoaded => {
                    self.function_load().query_async::<Value>(conn).await?;
                    return self.fcall(call).query_async(conn).await;
                }
                Failed::NoFunctions => self.code.scripts_only.store(true, Ordering::Relaxed),
            }
        }
        self.script(call).invoke_async(conn).await
    }

    /// Runs `call` of `op` on `conn`, a settle again while its outcome is unknown.
    pub(crate) fn send(
        &self,
        conn: &mut dyn ConnectionLike,
        call: &Call,
        op: Op,
    ) -> Result<Value, RedisError> {
        let (mut attempt, mut unknown) = (1, None);
        loop {
            match self.attempt(conn, call) {
                Ok(reply) => return Ok(reply),
                Err(err) => self.send_again(op, attempt, err, &mut unknown)?,
            }
            // send_again ends the loop once `attempt` reaches settle_attempts, a u32.
            attempt += 1;
        }
    }

    /// [`send`](Runner::send) on an async connection.
    #[cfg(feature = "aio")]
    pub(crate) async fn send_async<C>(
        &self,
        conn: &mut C,
        call: &Call,
        op: Op,
    ) -> Result<Value, RedisError>
    where
        C: redis::aio::ConnectionLike,
    {
        let (mut attempt, mut unknown) = (1, None);
        loop {
            match self.attempt_async(conn, call).await {
                Ok(reply) => return Ok(reply),
                Err(err) => self.send_again(op, attempt, err, &mut unknown)?,
            }
            // send_again ends the loop once `attempt` reaches settle_attempts, a u32.
            attempt += 1;
        }
    }

    /// After attempt number `attempt` (from 1) of `op` failed with `err`: `Ok` to send it
    /// again, or the error to return. Only a settle is sent again, and only while its
    /// outcome is unknown; `unknown` keeps the failure that first made it so, which is what
    /// the error reports (later attempts on a broken connection only say "broken pipe").
    fn send_again(
        &self,
        op: Op,
        attempt: u32,
        err: redis::RedisError,
        unknown: &mut Option<redis::RedisError>,
    ) -> Result<(), RedisError> {
        if !matches!(op, Op::Settle { .. }) {
            return Err(RedisError::Redis(err));
        }
        let again = outcome_unknown(&err);
        let cause = match unknown.take() {
            Some(first) => first,
            None if again => err,
            // The first attempt failed and Redis said why: nothing ran.
            None => return Err(RedisError::Redis(err)),
        };
        if again && attempt < self.settle_attempts.get() {
            *unknown = Some(cause);
            Ok(())
        } else {
            Err(RedisError::SettleUnknown {
                attempts: attempt,
                error: cause,
            })
        }
    }
}

/// The algorithm's script and the largest `N × W` it decides exactly: every algorithm of
/// the core has one, so a new algorithm does not compile until it has a script too.
pub(crate) fn script(algorithm: Algorithm) -> (&'static str, u128) {
    match algorithm {
        Algorithm::Floating => (floating::SCRIPT, floating::MAX_SCALED),
        Algorithm::Fixed => (fixed::SCRIPT, fixed::MAX_SCALED),
        Algorithm::TokenBucket => (token_bucket::SCRIPT, token_bucket::MAX_SCALED),
        Algorithm::SlidingLog => (sliding_log::SCRIPT, sliding_log::MAX_SCALED),
    }
}

/// Whether a failed command may have run: it timed out waiting for the answer, or the
/// connection broke (before it was sent, or after: nobody can tell which).
fn outcome_unknown(err: &redis::RedisError) -> bool {
    err.is_timeout() || err.is_connection_dropped() || err.is_io_error()
}

/// One limit's [`DECISION_LEN`] integers of `reply`, read into the core's decision of
/// `op` at `cost` under `limit`. A record or settle past the exact range is its error.
pub(crate) fn decision(
    numbers: &[u64],
    limit: Limit,
    op: Op,
    cost: u64,
    reply: &Value,
) -> Result<Decision, RedisError> {
    let &[outcome, used, at_ms, wait_ms, now_ms, has_counters, previous, current, elapsed_ms] =
        numbers
    else {
        return Err(bad_reply(reply));
    };
    let outcome = match outcome {
        OUTCOME_ALLOWED => Outcome::Allowed,
        // As the core: reported from the caller's clock, so that `now + retry_after_ms`
        // is the moment even when that clock had gone backwards.
        OUTCOME_DENIED => Outcome::Denied {
            retry_after_ms: at_ms
                .checked_sub(now_ms)
                .ok_or_else(|| bad_reply(reply))?
                .saturating_add(wait_ms),
        },
        OUTCOME_EXCEEDS => Outcome::ExceedsLimit,
        OUTCOME_OUT_OF_RANGE => {
            return Err(match op {
                Op::Settle { reserved, .. } => RedisError::SettleOutOfRange { reserved, cost },
                _ => RedisError::RecordOutOfRange { cost },
            })
        }
        _ => return Err(bad_reply(reply)),
    };
    let window_ms = limit.window_ms();
    // A Limit's window is at least 1 ms.
    let window = NonZeroU64::new(window_ms).ok_or_else(|| bad_reply(reply))?;
    Ok(Decision {
        outcome,
        cost,
        limit,
        used: Tokens::new(u128::from(used), window),
        at_ms,
        counters: (has_counters == 1).then_some(Counters {
            previous: u128::from(previous),
            current: u128::from(current),
            elapsed_ms,
            window_ms,
        }),
    })
}

/// Integers as the scripts read their arguments and write their answers and buckets: each
/// a little-endian double (Lua's `struct`, `<d`), exact as every one is at most 2^53 (the
/// caller checked times and costs, the limits' N × W is within it), and read in one call
/// instead of one `tonumber` each, which costs a script more than its arithmetic.
fn doubles(numbers: impl Iterator<Item = u64>) -> Vec<u8> {
    numbers
        // At most 2^53 (a time of the server's clock aside, which the script ignores).
        .flat_map(|n| (n as f64).to_le_bytes())
        .collect()
}

/// The script's `len` non-negative integers, as [`doubles`]; anything else is a
/// [`RedisError::BadReply`].
pub(crate) fn integers(reply: &Value, len: usize) -> Result<Vec<u64>, RedisError> {
    let Value::BulkString(bytes) = reply else {
        return Err(bad_reply(reply));
    };
    if bytes.len() != 8 * len {
        return Err(bad_reply(reply));
    }
    bytes
        .chunks_exact(8)
        .map(|double| {
            let mut le = [0; 8];
            le.copy_from_slice(double);
            let number = f64::from_le_bytes(le);
            // Integers of 0 to 2^53, every one of which a double holds exactly.
            if (0.0..=MAX_TIME_MS as f64).contains(&number) && number.fract() == 0.0 {
                Ok(number as u64)
            } else {
                Err(bad_reply(reply))
            }
        })
        .collect()
}

pub(crate) fn bad_reply(reply: &Value) -> RedisError {
    RedisError::BadReply {
        reply: format!("{reply:?}"),
    }
}
