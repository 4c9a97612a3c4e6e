//! Parity: the same random traces through the core's limiter and through Redis give the
//! same decision, field for field (outcome, retry, used × W, counters, time decided at), for
//! the floating window, the fixed window and the token bucket: a peek before every hit
//! (which must write nothing), the hit, and records charged after the fact.
//!
//! Traces land on window edges (k·W − 1, k·W, k·W + 1), skip many windows, step the clock
//! backwards, ask costs from 0 to N + 1 (and u64::MAX), record costs up to 2^53 and beyond,
//! and use limits up to each algorithm's bound, where records soon pass 2^53: Redis must
//! refuse exactly those, writing nothing, and decide every other one as the core.

mod common;
mod traces;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use common::RedisServer;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis::Commands;
use traces::{cost, next_ms, start_ms, step, Step};
use trickle::{Algorithm, Decision, Limit, Limiter};
use trickle_redis::{RedisError, RedisLimiter, MAX_TIME_MS};

/// Cases per algorithm, each up to 40 requests; the three tests run side by side.
const CASES: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// A peek, then a hit of the same cost.
    Hit,
    /// A record: charged whether it fits or not.
    Record,
}

/// Mostly small limits, so traces cross many windows; some larger; and limits at the
/// algorithm's bound (N × W = max_scaled or just under), with short and long windows.
fn limit(algorithm: Algorithm) -> impl Strategy<Value = Limit> {
    let max_scaled = RedisLimiter::max_scaled(algorithm).expect("Redis runs it") as u64;
    let at_bound =
        (prop_oneof![1..=16u64, 1..=1u64 << 30], 0..=2u64).prop_map(move |(window_ms, under)| {
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

/// A record's cost: as a hit's, and now and then 2^53, the largest a record may bring
/// (it fits an empty bucket of a 1 ms window exactly), or one more.
fn record_cost(tokens: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        12 => cost(tokens),
        1 => Just(MAX_TIME_MS),
        1 => Just(MAX_TIME_MS + 1),
    ]
}

fn request(limit: Limit) -> impl Strategy<Value = (Step, Action, u64)> {
    let (tokens, window_ms) = (limit.tokens(), limit.window_ms());
    prop_oneof![
        4 => (step(window_ms), Just(Action::Hit), cost(tokens)),
        1 => (step(window_ms), Just(Action::Record), record_cost(tokens)),
    ]
}

#[derive(Debug, Clone)]
struct Trace {
    limit: Limit,
    start_ms: u64,
    requests: Vec<(Step, Action, u64)>,
}

fn trace(algorithm: Algorithm) -> impl Strategy<Value = Trace> {
    limit(algorithm).prop_flat_map(|limit| {
        let requests = prop::collection::vec(request(limit), 1..=40);
        (Just(limit), start_ms(limit.window_ms()), requests).prop_map(
            |(limit, start_ms, requests)| Trace {
                limit,
                start_ms,
                requests,
            },
        )
    })
}

/// Whether the core's record took the bucket past 2^53 scaled by W, where Redis refuses:
/// the floating window's counters together, the others' usage.
fn past_exact_range(recorded: &Decision) -> bool {
    let window = u128::from(recorded.limit.window_ms());
    let scaled = match recorded.counters {
        Some(counters) => (counters.previous + counters.current) * window,
        None => recorded.used.numerator(),
    };
    scaled > 1 << 53
}

/// Runs `CASES` random traces of `algorithm` through the core and through a private
/// redis-server (one for every case, stopped when the test ends, also by a failure's
/// unwinding; each case has a key of its own).
fn redis_decides_as_the_core(algorithm: Algorithm) {
    let server = RedisServer::start();
    let conn = RefCell::new(server.connect());
    let config = Config {
        cases: CASES,
        source_file: Some(file!()),
        ..Config::default()
    };
    let case = Cell::new(0u32);
    let result = TestRunner::new(config).run(&trace(algorithm), |trace| {
        case.set(case.get() + 1);
        let key = format!("case-{}", case.get());
        let conn = &mut *conn.borrow_mut();
        let redis = RedisLimiter::new(algorithm, trace.limit, "parity").expect("within the bound");
        let stored = |conn: &mut redis::Connection| -> HashMap<String, String> {
            conn.hgetall(redis.redis_key(&key)).expect("HGETALL")
        };
        let mut core = Limiter::with_algorithm(algorithm, trace.limit);
        let mut now = trace.start_ms;
        for (i, &(step, action, cost)) in trace.requests.iter().enumerate() {
            if i > 0 {
                now = next_ms(now, step, trace.limit.window_ms());
            }
            let before = stored(conn);
            match action {
                Action::Hit => {
                    // A peek first, every time: it must answer as the core's peek and change
                    // nothing the hit after it sees.
                    let got = redis.peek(conn, &key, now, cost).expect("redis peek");
                    let want = core.peek(now, cost);
                    prop_assert_eq!(got, want, "peek {} at {} ms, cost {}", i, now, cost);
                    prop_assert_eq!(stored(conn), before, "peek {} wrote to the bucket", i);
                    let got = redis.hit(conn, &key, now, cost).expect("redis hit");
                    let want = core.hit(now, cost);
                    prop_assert_eq!(got, want, "request {} at {} ms, cost {}", i, now, cost);
                }
                Action::Record => {
                    let mut recorded = core.clone();
                    let want = recorded.record(now, cost);
                    match redis.record(conn, &key, now, cost) {
                        Ok(got) => {
                            prop_assert!(!past_exact_range(&want), "record {} within", i);
                            prop_assert_eq!(got, want, "record {} at {} ms, cost {}", i, now, cost);
                            core = recorded;
                        }
                        Err(RedisError::RecordOutOfRange { cost: refused }) => {
                            prop_assert_eq!(refused, cost);
                            prop_assert!(
                                past_exact_range(&want),
                                "record {} at {} ms, cost {} refused, but the core's {:?} \
                                 is within 2^53",
                                i,
                                now,
                                cost,
                                want
                            );
                            prop_assert_eq!(stored(conn), before, "refused record {} wrote", i);
                        }
                        Err(err) => panic!("record {i}: {err}"),
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{algorithm}: {failure}");
    }
}

#[test]
fn redis_decides_the_floating_window_exactly_as_the_core() {
    redis_decides_as_the_core(Algorithm::Floating);
}

#[test]
fn redis_decides_the_fixed_window_exactly_as_the_core() {
    redis_decides_as_the_core(Algorithm::Fixed);
}

#[test]
fn redis_decides_the_token_bucket_exactly_as_the_core() {
    redis_decides_as_the_core(Algorithm::TokenBucket);
}
