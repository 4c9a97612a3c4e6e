//! `trickle replay`: every request of a log through one limiter, one CSV row per decision.
//! With `--compare NAME`, every request also goes through a second limiter, the reference,
//! with its own state (see [`trickle_core::compare::Comparison`] for what is counted); its answer is added
//! to each row, and the disagreements are summed up after them twice: each limiter on its
//! own history, then `--algorithm` judged on the reference's history.
//!
//! Rows are written as requests are decided, so a large log streams through in constant
//! memory (the sliding log aside, which keeps a window of history), and a bad line late
//! in it comes after the rows it did not stop.

use std::fmt;
use std::io::{self, Read, Write};

use trickle_core::compare::{Accuracy, Comparison, Verdict};
use trickle_core::replay::Replay;
use trickle_core::{Decision, Limiter, Outcome, Policy, PolicyDecision, PolicyLimiter};
use trickle_redis::RedisError;

use crate::cli::args::ReplayArgs;
use crate::cli::log::{InputError, RequestLog};
use crate::cli::redis::{connect, Decide, RedisSetupError};

/// The output's header; the help text shows the same line.
pub const OUTPUT_HEADER: &str = "t_ms,cost,allowed,used,remaining,retry_after_ms";

/// The column a policy of several limits adds after [`OUTPUT_HEADER`]'s, before three per
/// limit (`used:NAME,remaining:NAME,next_token_ms:NAME`).
pub const ANSWERED_BY_COLUMN: &str = "answered_by";

/// The columns `--compare` adds after [`OUTPUT_HEADER`]'s.
pub const REFERENCE_COLUMNS: &str = "reference_allowed,reference_used,disagreement";

/// How a replay went, for the line on stderr after the rows: the core's figures
/// ([`Replay`], which the docs widget shows for the same log), and the comparison's.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Of a policy of several limits, counted by the policy's answers, each told in the
    /// words of the limit nearest to refusing.
    pub replay: Replay,
    /// The policy, when it holds several limits: the summary names it, not one limit.
    pub policy: Option<Policy>,
    /// With `--compare`: how the reference's answers differed (two more lines).
    pub compared: Option<Accuracy>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = self.replay.to_string();
        match &self.policy {
            Some(policy) => {
                let one = format!(" against {} (", self.replay.limit);
                let all = format!(" against {policy} (");
                write!(f, "{}", line.replacen(&one, &all, 1))?;
            }
            None => write!(f, "{line}")?,
        }
        match &self.compared {
            Some(accuracy) => write!(f, "\n{accuracy}"),
            None => Ok(()),
        }
    }
}

/// Why a replay stopped early.
#[derive(Debug)]
pub enum ReplayError {
    Input(InputError),
    Write(io::Error),
    /// `--redis` or `--redis-cluster` could not start.
    RedisSetup(RedisSetupError),
    /// Redis could not decide the request at `t_ms`; the rows before it were written.
    Redis {
        t_ms: u64,
        error: RedisError,
    },
}

impl From<InputError> for ReplayError {
    fn from(error: InputError) -> ReplayError {
        ReplayError::Input(error)
    }
}

impl From<io::Error> for ReplayError {
    fn from(error: io::Error) -> ReplayError {
        ReplayError::Write(error)
    }
}

/// Who answers each request: the limiter alone, the limiter beside a reference, or the
/// Redis scripts deciding in one bucket of their own.
enum Judge {
    Alone(Limiter),
    /// A policy of several limits, all or nothing.
    Policy(Box<PolicyLimiter>),
    Compared(Box<Comparison>),
    Redis(Decide),
}

/// Decides every request of `input` with `Limiter::hit` (and the reference's, with
/// `--compare`) and writes a row for each.
pub fn replay(
    args: &ReplayArgs,
    input: impl Read,
    output: &mut impl Write,
) -> Result<Summary, ReplayError> {
    let policy = &args.policy;
    // The first limit: the only one, but for a policy of several, whose summary is
    // counted in each answer's nearest limit and names the policy.
    let limit = policy.first();
    let mut judge = match (&args.redis, args.compare) {
        _ if policy.len() > 1 => Judge::Policy(Box::new(PolicyLimiter::with_algorithm(
            args.algorithm,
            policy.clone(),
        ))),
        (Some(target), _) => {
            Judge::Redis(connect(target, args.algorithm, limit).map_err(ReplayError::RedisSetup)?)
        }
        (None, None) => Judge::Alone(Limiter::with_algorithm(args.algorithm, limit)),
        (None, Some(reference)) => {
            Judge::Compared(Box::new(Comparison::new(limit, args.algorithm, reference)))
        }
    };
    let mut log = RequestLog::new(input)?;
    let mut summary = Summary {
        replay: Replay::new(limit, args.algorithm),
        policy: (policy.len() > 1).then(|| policy.clone()),
        compared: None,
    };

    match judge {
        Judge::Alone(_) | Judge::Redis(_) => writeln!(output, "{OUTPUT_HEADER}")?,
        Judge::Compared(_) => writeln!(output, "{OUTPUT_HEADER},{REFERENCE_COLUMNS}")?,
        Judge::Policy(_) => {
            write!(output, "{OUTPUT_HEADER},{ANSWERED_BY_COLUMN}")?;
            for (name, _) in policy.iter() {
                write!(output, ",used:{name},remaining:{name},next_token_ms:{name}")?;
            }
            writeln!(output)?;
        }
    }
    while let Some(request) = log.next_request()? {
        match &mut judge {
            Judge::Alone(limiter) => {
                let decision = limiter.hit(request.t_ms, request.cost);
                summary.replay.count(&decision);
                write_decision(output, request.t_ms, &decision)?;
                writeln!(output)?;
            }
            Judge::Redis(decide) => {
                let decision =
                    decide(request.t_ms, request.cost).map_err(|error| ReplayError::Redis {
                        t_ms: request.t_ms,
                        error,
                    })?;
                summary.replay.count(&decision);
                write_decision(output, request.t_ms, &decision)?;
                writeln!(output)?;
            }
            Judge::Policy(limiter) => {
                let answer = limiter.hit(request.t_ms, request.cost);
                let nearest = answer.decisions()[answer.nearest()];
                summary.replay.count(&nearest);
                write_decision(output, request.t_ms, &nearest)?;
                write_limits(output, limiter.policy(), &answer)?;
            }
            Judge::Compared(comparison) => {
                let verdict = comparison.hit(request.t_ms, request.cost);
                summary.replay.count(&verdict.approximation);
                write_decision(output, request.t_ms, &verdict.approximation)?;
                write_reference(output, &verdict)?;
            }
        }
    }
    if let Judge::Compared(comparison) = &judge {
        summary.compared = Some(comparison.accuracy());
    }
    Ok(summary)
}

/// `,answered_by` (the name of the limit that refused, empty when allowed), then
/// `,used,remaining,next_token_ms` of each limit (`next_token_ms` empty when every token of
/// that limit is free), and the line's end.
fn write_limits(
    output: &mut impl Write,
    policy: &Policy,
    answer: &PolicyDecision,
) -> io::Result<()> {
    let answered_by = answer.answered_by().map_or("", |index| policy.name(index));
    write!(output, ",{answered_by}")?;
    for (index, own) in answer.decisions().iter().enumerate() {
        write!(output, ",{},{},", own.used, own.remaining())?;
        if let Some(ms) = answer.next_token_ms(index) {
            write!(output, "{ms}")?;
        }
    }
    writeln!(output)
}

/// `,reference_allowed,reference_used,disagreement` and the line's end; `disagreement` is
/// empty when both agree.
fn write_reference(output: &mut impl Write, verdict: &Verdict) -> io::Result<()> {
    writeln!(
        output,
        ",{},{},{}",
        verdict.reference.is_allowed(),
        verdict.reference.used,
        verdict
            .disagreement()
            .map_or("", |disagreement| disagreement.name())
    )
}

/// `t_ms,cost,allowed,used,remaining,retry_after_ms`, without the line's end. The log's own
/// time is written, not `decision.at_ms`; they are equal since the log is sorted.
fn write_decision(output: &mut impl Write, t_ms: u64, decision: &Decision) -> io::Result<()> {
    write!(
        output,
        "{t_ms},{},{},{},{},",
        decision.cost,
        decision.is_allowed(),
        decision.used,
        decision.remaining()
    )?;
    match decision.outcome {
        Outcome::Allowed => Ok(()),
        Outcome::Denied { retry_after_ms } => write!(output, "{retry_after_ms}"),
        Outcome::ExceedsLimit => write!(output, "never"),
    }
}
