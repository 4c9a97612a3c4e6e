//! `trickle replay`: every request of a log through one limiter, one CSV row per decision.
//!
//! Rows are written as requests are decided, so a large log streams through in constant
//! memory (the sliding log aside, which keeps a window of history), and a bad line late
//! in it comes after the rows it did not stop.

use std::fmt;
use std::io::{self, Read, Write};

use trickle::{Algorithm, Decision, Limit, Limiter, Outcome};

use crate::cli::args::ReplayArgs;
use crate::cli::log::{InputError, RequestLog};

/// The output's header; the help text shows the same line.
pub const OUTPUT_HEADER: &str = "t_ms,cost,allowed,used,remaining,retry_after_ms";

/// How a replay went, for the line on stderr after the rows.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub limit: Limit,
    pub algorithm: Algorithm,
    pub allowed: u64,
    pub denied: u64,
    pub never_fit: u64,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let requests = self.allowed + self.denied + self.never_fit;
        write!(
            f,
            "replayed {requests} request{} against {} ({}): {} allowed, {} denied, {} never fit",
            if requests == 1 { "" } else { "s" },
            self.limit,
            self.algorithm,
            self.allowed,
            self.denied,
            self.never_fit
        )
    }
}

/// Why a replay stopped early.
#[derive(Debug)]
pub enum ReplayError {
    Input(InputError),
    Write(io::Error),
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

/// Decides every request of `input` with `Limiter::hit` and writes a row for each.
pub fn replay(
    args: &ReplayArgs,
    input: impl Read,
    output: &mut impl Write,
) -> Result<Summary, ReplayError> {
    let mut log = RequestLog::new(input)?;
    let mut limiter = Limiter::with_algorithm(args.algorithm, args.limit);
    let mut summary = Summary {
        limit: args.limit,
        algorithm: args.algorithm,
        allowed: 0,
        denied: 0,
        never_fit: 0,
    };

    writeln!(output, "{OUTPUT_HEADER}")?;
    while let Some(request) = log.next_request()? {
        let decision = limiter.hit(request.t_ms, request.cost);
        match decision.outcome {
            Outcome::Allowed => summary.allowed += 1,
            Outcome::Denied { .. } => summary.denied += 1,
            Outcome::ExceedsLimit => summary.never_fit += 1,
        }
        write_row(output, request.t_ms, &decision)?;
    }
    Ok(summary)
}

/// `t_ms,cost,allowed,used,remaining,retry_after_ms`. The log's own time is written, not
/// `decision.at_ms`; they are equal since the log is sorted.
fn write_row(output: &mut impl Write, t_ms: u64, decision: &Decision) -> io::Result<()> {
    write!(
        output,
        "{t_ms},{},{},{},{},",
        decision.cost,
        decision.is_allowed(),
        decision.used,
        decision.remaining()
    )?;
    match decision.outcome {
        Outcome::Allowed => writeln!(output),
        Outcome::Denied { retry_after_ms } => writeln!(output, "{retry_after_ms}"),
        Outcome::ExceedsLimit => writeln!(output, "never"),
    }
}
