//! Running the real `trickle` binary, shared by the CLI's test files.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::thread;

/// What one run of the binary left behind.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `trickle` with `args`, feeding `stdin` from a thread so that a large input cannot
/// deadlock against a full stdout pipe.
pub fn trickle(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trickle"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the trickle binary starts");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_string();
    // The binary may stop reading early (a usage error, a bad line): a broken pipe here
    // is expected, not a failure of the test.
    let writer = thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Run {
        code: output
            .status
            .code()
            .expect("exited, not killed by a signal"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}
