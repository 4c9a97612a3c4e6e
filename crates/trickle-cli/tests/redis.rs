#![cfg(not(target_arch = "wasm32"))]
//! `trickle replay --redis`: the same log replayed in process and through the Redis scripts
//! on a real redis-server prints the same rows and the same summary, for every algorithm,
//! on the example log and on random ones; and what goes wrong says so.

mod binary;
#[path = "../../trickle-redis/tests/common/mod.rs"]
mod common;

use std::fmt::Write as _;

use binary::trickle;
use common::RedisServer;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use trickle_core::Algorithm;

fn url(server: &RedisServer) -> String {
    format!("redis+unix://{}", server.socket().display())
}

/// Replays `log` in process and through Redis and checks both print the same, and succeed.
fn assert_same(server: &RedisServer, limit: &str, algorithm: &str, log: &str) {
    let args = ["replay", "--limit", limit, "--algorithm", algorithm];
    let local = trickle(&args, log);
    let url = url(server);
    let remote = trickle(&[&args[..], &["--redis", &url]].concat(), log);
    let case = format!("{limit} {algorithm} on\n{log}");
    assert_eq!(local.code, 0, "{case}: in process: {}", local.stderr);
    assert_eq!(remote.code, 0, "{case}: through Redis: {}", remote.stderr);
    assert_eq!(remote.stdout, local.stdout, "{case}: the rows differ");
    assert_eq!(remote.stderr, local.stderr, "{case}: the summaries differ");
}

#[test]
fn the_example_log_replays_the_same_through_redis() {
    let server = RedisServer::start();
    let log = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/esi-burst.csv"
    ))
    .unwrap();
    for algorithm in Algorithm::ALL {
        for limit in ["6/8s", "2/1s", "150/15m", "7/1500ms"] {
            assert_same(&server, limit, algorithm.name(), &log);
        }
    }
}

#[test]
fn each_run_decides_in_a_bucket_of_its_own() {
    let server = RedisServer::start();
    let log = "t_ms,cost\n0,4\n1,4\n";
    let url = url(&server);
    let args = ["replay", "--limit", "6/8s", "--redis", &url];
    let first = trickle(&args, log);
    // Had the second run found the first's 4 tokens, its first request would be denied.
    let second = trickle(&args, log);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(second.stdout, first.stdout);
    assert!(first.stdout.contains("\n0,4,true,"), "{}", first.stdout);
}

/// A random log: times moving forward by small steps, to window edges and across many
/// windows; costs from 0 to N + 1, or ESI statuses.
#[derive(Debug, Clone)]
struct RandomLog {
    tokens: u64,
    window_ms: u64,
    algorithm: Algorithm,
    statuses: bool,
    steps: Vec<(u64, u64)>,
}

impl RandomLog {
    fn limit(&self) -> String {
        format!("{}/{}ms", self.tokens, self.window_ms)
    }

    fn csv(&self) -> String {
        const STATUSES: [u64; 8] = [200, 201, 304, 400, 404, 429, 500, 503];
        let mut text = String::from(if self.statuses {
            "t_ms,status\n"
        } else {
            "t_ms,cost\n"
        });
        let mut t_ms = 0u64;
        for &(gap, pick) in &self.steps {
            t_ms = match gap % 4 {
                // To the next window edge, or a millisecond either side of it.
                0 => (t_ms / self.window_ms + 1) * self.window_ms - 1 + gap % 3,
                1 => t_ms + gap % (3 * self.window_ms),
                2 => t_ms,
                _ => t_ms + 1 + gap % 5,
            }
            .max(t_ms);
            let value = if self.statuses {
                STATUSES[pick as usize % STATUSES.len()]
            } else {
                pick % (self.tokens + 2)
            };
            writeln!(text, "{t_ms},{value}").unwrap();
        }
        text
    }
}

fn random_log() -> impl Strategy<Value = RandomLog> {
    (
        1..=12u64,
        prop_oneof![1..=50u64, 500..=20_000u64],
        prop::sample::select(Algorithm::ALL.to_vec()),
        any::<bool>(),
        prop::collection::vec((any::<u64>(), any::<u64>()), 1..80),
    )
        .prop_map(
            |(tokens, window_ms, algorithm, statuses, steps)| RandomLog {
                tokens,
                window_ms,
                algorithm,
                statuses,
                steps,
            },
        )
}

#[test]
fn random_logs_replay_the_same_through_redis() {
    let server = RedisServer::start();
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&random_log(), |log| {
            assert_same(&server, &log.limit(), log.algorithm.name(), &log.csv());
            Ok(())
        })
        .unwrap();
}

#[test]
fn an_unreachable_server_is_an_error_and_no_rows() {
    let server = RedisServer::start();
    let url = url(&server);
    drop(server);
    let run = trickle(
        &["replay", "--limit", "6/8s", "--redis", &url],
        "t_ms,cost\n0,1\n",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .starts_with(&format!("trickle: cannot reach Redis at {url}: ")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_command_line_redis_cannot_run_is_a_usage_error() {
    let server = RedisServer::start();
    let url = url(&server);
    let cases: [(&[&str], &str); 3] = [
        (
            &["replay", "--limit", "6/8s", "--redis", "localhost:6379"],
            "trickle: invalid --redis \"localhost:6379\": ",
        ),
        (
            &["replay", "--limit", "6/8s", "--compare", "sliding-log", "--redis", &url],
            "trickle: --compare runs both limiters in process and cannot be combined with --redis",
        ),
        (
            // N × W = 2^60: past what the floating window's script holds exactly.
            &["replay", "--limit", "1152921504606846976/1ms", "--redis", &url],
            "trickle: invalid --limit for --redis: limit 1152921504606846976/1ms is too large for the floating algorithm on Redis",
        ),
    ];
    for (args, message) in cases {
        let run = trickle(args, "t_ms,cost\n0,1\n");
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with(message), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

#[test]
fn a_time_redis_cannot_hold_stops_the_replay_after_the_rows_before_it() {
    let server = RedisServer::start();
    let url = url(&server);
    let log = "t_ms,cost\n0,1\n9007199254740993,1\n";
    let run = trickle(&["replay", "--limit", "6/8s", "--redis", &url], log);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "t_ms,cost,allowed,used,remaining,retry_after_ms\n0,1,true,1.000,5,\n"
    );
    assert!(
        run.stderr.starts_with(
            "trickle: Redis could not decide the request at t_ms 9007199254740993: time \
             9007199254740993 ms is beyond 2^53"
        ),
        "{}",
        run.stderr
    );
}
