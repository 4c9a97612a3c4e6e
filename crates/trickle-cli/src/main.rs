//! The `trickle` command: `trickle replay` replays a request log against a limit to answer
//! "would my application have hit this limit?"; `trickle serve` runs a demo API behind
//! trickle-tower's rate limits, for a docs page to call.
//!
//! The limiter itself is the library; replay only reads arguments and CSV, feeds each
//! request to [`trickle_core::Limiter::hit`] and writes one CSV row per decision, and serve only
//! reads a config file and puts trickle-tower's layer in front of a handler. Failures end
//! with a message on stderr and an exit code: 2 for a wrong command line, 1 for input (a
//! log, a config file) that cannot be read or is malformed, or a server that cannot start.

mod cli;

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use cli::args::{Command, Input, ReplayArgs, UsageError};
use cli::log::InputError;
use cli::replay::{replay, ReplayError};

fn main() -> ExitCode {
    match cli::args::parse(lexopt::Parser::from_env()) {
        Ok(Command::Help) => print(&cli::help::help()),
        Ok(Command::Version) => print(&format!(
            "{} {}\n",
            env!("CARGO_BIN_NAME"),
            env!("CARGO_PKG_VERSION")
        )),
        Ok(Command::Replay(args)) => run_replay(&args),
        Ok(Command::Serve(args)) => match cli::serve::serve(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                report(&format!("trickle: {error}"));
                ExitCode::from(error.exit_code())
            }
        },
        Err(error) => usage_failure(&error),
    }
}

/// Replays the log, streaming rows to stdout, and reports how it ended.
fn run_replay(args: &ReplayArgs) -> ExitCode {
    let input = match open(&args.input) {
        Ok(input) => input,
        Err(error) => return input_failure(&error),
    };
    let mut stdout = BufWriter::new(io::stdout().lock());
    let result = replay(args, input, &mut stdout);
    // Rows decided before a bad line are already written; flush them before the error
    // message, so a terminal shows them in order.
    let flushed = stdout.flush();
    match (result, flushed) {
        (Err(ReplayError::Input(error)), _) => input_failure(&error),
        (Err(ReplayError::RedisSetup(error)), _) => {
            report(&format!("trickle: {error}"));
            ExitCode::from(if error.is_usage() { 2 } else { 1 })
        }
        (Err(ReplayError::Redis { t_ms, error }), _) => {
            report(&format!(
                "trickle: Redis could not decide the request at t_ms {t_ms}: {error}; the rows \
                 before it are written"
            ));
            ExitCode::from(1)
        }
        (Err(ReplayError::Write(error)), _) | (Ok(_), Err(error)) => write_failure(&error),
        (Ok(summary), Ok(())) => {
            report(&summary.to_string());
            ExitCode::SUCCESS
        }
    }
}

fn open(input: &Input) -> Result<Box<dyn Read>, InputError> {
    match input {
        Input::Stdin => Ok(Box::new(io::stdin().lock())),
        Input::Path(path) => match File::open(path) {
            Ok(file) => Ok(Box::new(file)),
            Err(error) => Err(InputError::Open {
                path: path.clone(),
                error,
            }),
        },
    }
}

/// Writes `text` to stdout; a reader that went away early is not a failure.
fn print(text: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => write_failure(&error),
    }
}

fn usage_failure(error: &UsageError) -> ExitCode {
    report(&format!(
        "trickle: {error}\nRun 'trickle --help' for the options, the input format and examples."
    ));
    ExitCode::from(2)
}

fn input_failure(error: &InputError) -> ExitCode {
    report(&format!("trickle: {error}"));
    ExitCode::from(1)
}

/// A closed stdout (`trickle replay … | head`) is a normal end: whoever reads has all the
/// rows they wanted.
fn write_failure(error: &io::Error) -> ExitCode {
    if error.kind() == io::ErrorKind::BrokenPipe {
        return ExitCode::SUCCESS;
    }
    report(&format!("trickle: cannot write the output: {error}"));
    ExitCode::from(1)
}

/// One line to stderr. `eprintln!` would panic if stderr were closed; there is nowhere
/// left to say anything then, so the error is dropped.
fn report(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}
