//! Reserve and settle on Redis, against the core: random traces that mix hits (each after a
//! peek), records, reserves and their settles, run through the core's `Bucket::decide` and
//! through a real redis-server, give the same decision field for field, for all four
//! algorithms.
//!
//! Settles come at a later time than their reserve (or an earlier one: the clock steps
//! back), on and across window edges and after many windows, at a final cost above, below
//! or equal to the reserve, 0, or up to 2^53 and past it; some are sent twice (the second
//! must change nothing), and some reservations are never settled, as a request whose client
//! hung up. Around every step the test checks what Redis holds: a peek and a refused settle
//! write nothing, an admitted reserve writes its pending record (its text and its expiry),
//! a refused one writes none, and a settle deletes it; the sliding log's entries are the
//! core's.

mod common;
mod traces;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use common::{hold_still, past_exact_range, pttl, stored_log, RedisServer};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis::Commands;
use traces::{
    check_log_layout, cost, counts_ms, final_cost, limit, next_ms, record_cost, start_ms, step,
    Final, Step,
};
use trickle_core::state::AnyState;
use trickle_core::{Algorithm, Limit, Limiter, Op};
use trickle_redis::{RedisError, RedisLimiter, EXPIRY_GRACE_MS, MAX_TIME_MS};

/// Cases per algorithm, each up to 40 steps; the four tests run side by side.
const CASES: u32 = 256;

#[derive(Debug, Clone, Copy)]
enum Action {
    /// A peek, then a hit of the same cost.
    Hit(u64),
    /// A record: charged whether it fits or not.
    Record(u64),
    /// A reserve; when admitted, its reservation is open until settled.
    Reserve(u64),
    /// Settles one of the open reservations (`pick` modulo how many are open), or does
    /// nothing when none is; `twice` sends the same settle again at once.
    Settle {
        pick: usize,
        final_cost: Final,
        twice: bool,
    },
}

fn action(limit: Limit) -> impl Strategy<Value = Action> {
    let tokens = limit.tokens();
    prop_oneof![
        3 => cost(tokens).prop_map(Action::Hit),
        1 => record_cost(tokens).prop_map(Action::Record),
        4 => cost(tokens).prop_map(Action::Reserve),
        4 => (any::<usize>(), final_cost(tokens), prop::bool::weighted(0.25)).prop_map(
            |(pick, final_cost, twice)| Action::Settle {
                pick,
                final_cost,
                twice,
            }
        ),
    ]
}

#[derive(Debug, Clone)]
struct Trace {
    limit: Limit,
    start_ms: u64,
    steps: Vec<(Step, Action)>,
}

fn trace(algorithm: Algorithm) -> impl Strategy<Value = Trace> {
    limit(algorithm).prop_flat_map(|limit| {
        let steps = prop::collection::vec((step(limit.window_ms()), action(limit)), 1..=40);
        (Just(limit), start_ms(limit.window_ms()), steps).prop_map(|(limit, start_ms, steps)| {
            Trace {
                limit,
                start_ms,
                steps,
            }
        })
    })
}

/// An admitted reserve not settled yet.
#[derive(Debug, Clone, Copy)]
struct Open {
    at_ms: u64,
    cost: u64,
    ticket: u64,
}

impl Open {
    fn settle(&self) -> Op {
        Op::Settle {
            reserved_at_ms: self.at_ms,
            reserved: self.cost,
            ticket: self.ticket,
        }
    }
}

/// Everything Redis holds for a key but its pending records: the bucket's hash, and for the
/// sliding log its entries.
#[derive(Debug, PartialEq, Eq)]
struct Held {
    hash: HashMap<String, String>,
    entries: Vec<String>,
}

fn held(conn: &mut redis::Connection, redis: &RedisLimiter, key: &str) -> Held {
    let keys = redis.redis_keys(key);
    let entries = match keys.get(1) {
        Some(log) => conn.lrange(log, 0, -1).expect("LRANGE"),
        None => Vec::new(),
    };
    Held {
        hash: common::stored(conn, &keys[0]),
        entries,
    }
}

/// The sliding log's entries are the core's, one per millisecond with spending, and obey
/// the layout's invariants.
fn check_log(
    conn: &mut redis::Connection,
    redis: &RedisLimiter,
    key: &str,
    core: &Limiter,
) -> Result<(), TestCaseError> {
    if let AnyState::SlidingLog(log) = core.state() {
        let stored = stored_log(conn, redis, key);
        prop_assert_eq!(stored.entries.len(), log.logged_ms(), "entries");
        check_log_layout(&stored, core.limit().window_ms())?;
    }
    Ok(())
}

/// Runs `CASES` random traces of `algorithm` through the core and through a private
/// redis-server (one for every case; each case has a key of its own).
fn redis_reserves_and_settles_as_the_core(algorithm: Algorithm) {
    let server = RedisServer::start();
    let conn = RefCell::new(server.connect());
    let config = Config {
        cases: CASES,
        source_file: Some(file!()),
        ..Config::default()
    };
    let case = Cell::new(0u64);
    let result = TestRunner::new(config).run(&trace(algorithm), |trace| {
        case.set(case.get() + 1);
        let key = format!("case-{}", case.get());
        let conn = &mut *conn.borrow_mut();
        let redis = RedisLimiter::new(algorithm, trace.limit, "settle").expect("within the bound");
        let mut core = Limiter::with_algorithm(algorithm, trace.limit);
        let mut open: Vec<Open> = Vec::new();
        let mut now = trace.start_ms;
        for (i, &(step, action)) in trace.steps.iter().enumerate() {
            if i > 0 {
                now = next_ms(now, step, trace.limit.window_ms());
            }
            let before = held(conn, &redis, &key);
            match action {
                Action::Hit(cost) => {
                    let got = redis.peek(conn, &key, now, cost).expect("redis peek");
                    prop_assert_eq!(got, core.peek(now, cost), "peek {} at {} ms", i, now);
                    prop_assert_eq!(held(conn, &redis, &key), before, "peek {} wrote", i);
                    let got = redis.hit(conn, &key, now, cost).expect("redis hit");
                    prop_assert_eq!(got, core.hit(now, cost), "hit {} at {} ms", i, now);
                }
                Action::Record(cost) => {
                    let mut recorded = core.clone();
                    let want = recorded.record(now, cost);
                    match redis.record(conn, &key, now, cost) {
                        Ok(got) => {
                            prop_assert!(!past_exact_range(&want), "record {} within", i);
                            prop_assert_eq!(got, want, "record {} at {} ms", i, now);
                            core = recorded;
                        }
                        Err(RedisError::RecordOutOfRange { .. }) => {
                            prop_assert!(past_exact_range(&want), "record {} refused", i);
                            prop_assert_eq!(held(conn, &redis, &key), before, "record {}", i);
                        }
                        Err(err) => panic!("record {i}: {err}"),
                    }
                }
                Action::Reserve(cost) => {
                    // One ticket per step of the case; the key is the case's own.
                    let ticket = (case.get() << 32) | i as u64;
                    let op = Op::Reserve { ticket };
                    let got = redis
                        .decide(conn, &key, op, now, cost)
                        .expect("redis reserve");
                    let want = core.decide(op, now, cost);
                    prop_assert_eq!(got, want, "reserve {} at {} ms, cost {}", i, now, cost);
                    let pending = redis.reservation_key(&key, ticket);
                    let record: Option<String> = conn.get(&pending).expect("GET");
                    if got.is_allowed() {
                        prop_assert_eq!(record, Some(format!("{}:{}", got.at_ms, cost)));
                        // It counts from the time decided at, which a clock gone back is
                        // behind by `ahead` ms of real time.
                        let counts = counts_ms(algorithm, trace.limit, got.at_ms);
                        let ahead = got.at_ms - now;
                        let most = counts
                            .saturating_add(ahead)
                            .saturating_add(EXPIRY_GRACE_MS)
                            .min(MAX_TIME_MS);
                        let ttl = pttl(conn, &pending);
                        prop_assert!(
                            ttl <= most as i64 && ttl > most as i64 - 1_000,
                            "reserve {}: the pending record expires in {} ms, not {}",
                            i,
                            ttl,
                            most
                        );
                        open.push(Open {
                            at_ms: got.at_ms,
                            cost,
                            ticket,
                        });
                    } else {
                        prop_assert_eq!(record, None, "refused reserve {} wrote a record", i);
                    }
                }
                Action::Settle {
                    pick,
                    final_cost,
                    twice,
                } => {
                    if open.is_empty() {
                        continue;
                    }
                    let index = pick % open.len();
                    let reservation = open[index];
                    let cost = final_cost.of(reservation.cost);
                    let op = reservation.settle();
                    let pending = redis.reservation_key(&key, reservation.ticket);
                    let mut settled = core.clone();
                    let want = settled.decide(op, now, cost);
                    // Hits after records can leave previous + current past 2^53 / W while
                    // every decision stays exact (a hit is judged by what is in use, at most
                    // N); a settle then takes back or charges nothing the script need check.
                    let already_past = past_exact_range(&core.clone().peek(now, 0));
                    match redis.decide(conn, &key, op, now, cost) {
                        Ok(got) => {
                            prop_assert!(cost <= MAX_TIME_MS);
                            prop_assert!(
                                already_past || !past_exact_range(&want),
                                "settle {} at {} ms took the bucket past 2^53",
                                i,
                                now
                            );
                            prop_assert_eq!(
                                got,
                                want,
                                "settle {} at {} ms of {:?} at {}",
                                i,
                                now,
                                reservation,
                                cost
                            );
                            core = settled;
                            open.swap_remove(index);
                            prop_assert!(!conn.exists::<_, bool>(&pending).expect("EXISTS"));
                        }
                        Err(RedisError::SettleOutOfRange {
                            reserved,
                            cost: refused,
                        }) => {
                            prop_assert_eq!((reserved, refused), (reservation.cost, cost));
                            prop_assert!(
                                cost > MAX_TIME_MS || past_exact_range(&want),
                                "settle {} at {} ms of {:?} at {} refused, but the core's {:?} \
                                 is within 2^53",
                                i,
                                now,
                                reservation,
                                cost,
                                want
                            );
                            // Nothing written, and the reservation may still be settled.
                            prop_assert_eq!(held(conn, &redis, &key), before, "settle {}", i);
                            prop_assert!(conn.exists::<_, bool>(&pending).expect("EXISTS"));
                            continue;
                        }
                        Err(err) => panic!("settle {i}: {err}"),
                    }
                    if twice {
                        // Its pending record is gone, so the copy changes no count: the
                        // core's settle with nothing to settle, at the same time.
                        let again = redis.decide(conn, &key, op, now, cost).expect("again");
                        let nothing = Op::Settle {
                            reserved_at_ms: reservation.at_ms,
                            reserved: cost,
                            ticket: reservation.ticket,
                        };
                        let want = core.decide(nothing, now, cost);
                        prop_assert_eq!(again, want, "settle {} sent again", i);
                    }
                }
            }
            check_log(conn, &redis, &key, &core)?;
            // Redis's own clock must not expire what the trace's clock still needs.
            let mut keys = redis.redis_keys(&key);
            keys.extend(open.iter().map(|o| redis.reservation_key(&key, o.ticket)));
            hold_still(conn, &keys);
        }
        // The reservations never settled keep their reserve, and their pending records
        // until those expire.
        for reservation in open {
            let pending = redis.reservation_key(&key, reservation.ticket);
            prop_assert!(conn.exists::<_, bool>(&pending).expect("EXISTS"));
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{algorithm}: {failure}");
    }
}

#[test]
fn redis_reserves_and_settles_the_floating_window_exactly_as_the_core() {
    redis_reserves_and_settles_as_the_core(Algorithm::Floating);
}

#[test]
fn redis_reserves_and_settles_the_fixed_window_exactly_as_the_core() {
    redis_reserves_and_settles_as_the_core(Algorithm::Fixed);
}

#[test]
fn redis_reserves_and_settles_the_token_bucket_exactly_as_the_core() {
    redis_reserves_and_settles_as_the_core(Algorithm::TokenBucket);
}

#[test]
fn redis_reserves_and_settles_the_sliding_log_exactly_as_the_core() {
    redis_reserves_and_settles_as_the_core(Algorithm::SlidingLog);
}
