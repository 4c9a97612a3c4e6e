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

use common::{hold_still, past_exact_range, pttl, RedisServer};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use traces::{cost, limit, next_ms, record_cost, start_ms, step, Step};
use trickle_core::{Algorithm, Limit, Limiter};
use trickle_redis::{RedisError, RedisLimiter};

/// Cases per algorithm, each up to 40 requests; the three tests run side by side.
const CASES: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// A peek, then a hit of the same cost.
    Hit,
    /// A record: charged whether it fits or not.
    Record,
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
        let bucket = redis.redis_key(&key);
        let stored = |conn: &mut redis::Connection| -> HashMap<String, String> {
            common::stored(conn, &bucket)
        };
        // Whatever changed the hash must also have set its expiry; then the expiry is taken
        // off, so that Redis's own clock cannot empty a bucket the trace's clock still needs.
        let held = |conn: &mut redis::Connection,
                    before: &HashMap<String, String>,
                    what: &str|
         -> Result<(), TestCaseError> {
            let changed = stored(conn) != *before;
            let ttl = hold_still(conn, std::slice::from_ref(&bucket))[0];
            if changed {
                prop_assert!(ttl > 0, "{} changed the bucket but left PTTL {}", what, ttl);
            }
            Ok(())
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
                    prop_assert_eq!(&stored(conn), &before, "peek {} wrote to the bucket", i);
                    let ttl = pttl(conn, &bucket);
                    prop_assert!(ttl < 0, "peek {} set an expiry of {} ms", i, ttl);
                    let got = redis.hit(conn, &key, now, cost).expect("redis hit");
                    let want = core.hit(now, cost);
                    prop_assert_eq!(got, want, "request {} at {} ms, cost {}", i, now, cost);
                    held(conn, &before, "hit")?;
                }
                Action::Record => {
                    let mut recorded = core.clone();
                    let want = recorded.record(now, cost);
                    match redis.record(conn, &key, now, cost) {
                        Ok(got) => {
                            prop_assert!(!past_exact_range(&want), "record {} within", i);
                            prop_assert_eq!(got, want, "record {} at {} ms, cost {}", i, now, cost);
                            core = recorded;
                            held(conn, &before, "record")?;
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
                            prop_assert_eq!(&stored(conn), &before, "refused record {} wrote", i);
                            let ttl = pttl(conn, &bucket);
                            prop_assert!(ttl < 0, "refused record {} set PTTL {}", i, ttl);
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
