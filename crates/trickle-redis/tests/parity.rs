//! Parity: the same random traces through the core's FloatingWindow and through Redis give
//! the same decision, field for field (outcome, retry, used × W, counters, time decided at),
//! for a peek before every hit and for the hit.
//!
//! Traces land on window edges (k·W − 1, k·W, k·W + 1), skip many windows, step the clock
//! backwards, ask costs from 0 to N + 1 (and u64::MAX), and use limits up to the 2^53 bound.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use common::RedisServer;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis::Commands;
use trickle::{Algorithm, FloatingWindow, Limit};
use trickle_redis::{RedisLimiter, MAX_TIME_MS};

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Forward by this many ms.
    Forward(u64),
    /// To the next window edge k·W, moved by −1, 0 or +1 ms.
    Edge(i8),
    /// Backwards by this many ms (not below 0).
    Back(u64),
}

/// Mostly small limits, so traces cross many windows; some larger; and limits at the 2^53
/// bound (N × W = 2^52 or just under), with short and long windows.
fn limit() -> impl Strategy<Value = Limit> {
    let max_scaled = RedisLimiter::max_scaled(Algorithm::Floating).expect("Redis runs it") as u64;
    let at_bound = (1..=1u64 << 30, 0..=2u64).prop_map(move |(window_ms, under)| {
        let tokens = (max_scaled / window_ms).saturating_sub(under).max(1);
        (tokens, window_ms)
    });
    let long_window = (1..=4u64, 1..=1u64 << 50);
    prop_oneof![
        5 => (1..=8u64, 1..=40u64),
        2 => (1..=1_000u64, 1..=100_000u64),
        2 => at_bound,
        1 => long_window,
    ]
    .prop_map(|(tokens, window_ms)| Limit::new(tokens, window_ms).expect("tokens and window ≥ 1"))
}

fn step(window_ms: u64) -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Forward(0)),
        3 => (1..=3u64).prop_map(Step::Forward),
        3 => (1..=(window_ms / 2).max(1)).prop_map(Step::Forward),
        4 => (-1..=1i8).prop_map(Step::Edge),
        1 => (window_ms.saturating_mul(2)..=window_ms.saturating_mul(50)).prop_map(Step::Forward),
        2 => (1..=window_ms.saturating_mul(2)).prop_map(Step::Back),
    ]
}

fn cost(tokens: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(0),
        3 => 1..=tokens.min(3),
        2 => Just(tokens),
        2 => 1..=tokens,
        1 => Just(tokens + 1),
        1 => Just(u64::MAX),
    ]
}

fn start_ms(window_ms: u64) -> impl Strategy<Value = u64> {
    let near_end = MAX_TIME_MS.saturating_sub(window_ms.saturating_mul(4));
    prop_oneof![Just(0), 0..=1_000_000u64, near_end..=MAX_TIME_MS]
}

#[derive(Debug, Clone)]
struct Trace {
    limit: Limit,
    start_ms: u64,
    requests: Vec<(Step, u64)>,
}

fn trace() -> impl Strategy<Value = Trace> {
    limit().prop_flat_map(|limit| {
        let requests =
            prop::collection::vec((step(limit.window_ms()), cost(limit.tokens())), 1..=40);
        (Just(limit), start_ms(limit.window_ms()), requests).prop_map(
            |(limit, start_ms, requests)| Trace {
                limit,
                start_ms,
                requests,
            },
        )
    })
}

fn next_ms(now: u64, step: Step, window_ms: u64) -> u64 {
    let next = match step {
        Step::Forward(ms) => now.saturating_add(ms),
        Step::Edge(offset) => {
            let edge = (now / window_ms + 1).saturating_mul(window_ms);
            edge.saturating_add_signed(i64::from(offset))
        }
        Step::Back(ms) => now.saturating_sub(ms),
    };
    next.min(MAX_TIME_MS)
}

#[test]
fn redis_decides_every_request_exactly_as_the_core() {
    // One server for every case (stopped when this test ends, also by a failure's unwinding);
    // each case has a key of its own.
    let server = RedisServer::start();
    let conn = RefCell::new(server.connect());
    let config = Config {
        cases: 64,
        source_file: Some(file!()),
        ..Config::default()
    };
    let case = Cell::new(0u32);
    let result = TestRunner::new(config).run(&trace(), |trace| {
        case.set(case.get() + 1);
        let key = format!("case-{}", case.get());
        let conn = &mut *conn.borrow_mut();
        let redis = RedisLimiter::new(Algorithm::Floating, trace.limit, "parity")
            .expect("within the 2^53 bound");
        let mut core = FloatingWindow::new(trace.limit);
        let mut now = trace.start_ms;
        for (i, &(step, cost)) in trace.requests.iter().enumerate() {
            if i > 0 {
                now = next_ms(now, step, trace.limit.window_ms());
            }
            // A peek first, every time: it must answer as the core's peek and change
            // nothing the hit after it sees.
            let stored = |conn: &mut redis::Connection| -> HashMap<String, String> {
                conn.hgetall(redis.redis_key(&key)).expect("HGETALL")
            };
            let before = stored(conn);
            let got = redis.peek(conn, &key, now, cost).expect("redis peek");
            let want = core.peek(now, cost);
            prop_assert_eq!(got, want, "peek {} at {} ms, cost {}", i, now, cost);
            prop_assert_eq!(stored(conn), before, "peek {} wrote to the bucket", i);
            let got = redis.hit(conn, &key, now, cost).expect("redis hit");
            let want = core.hit(now, cost);
            prop_assert_eq!(got, want, "request {} at {} ms, cost {}", i, now, cost);
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}
