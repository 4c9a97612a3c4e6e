//! The sliding log on a real redis-server: rows worked by hand, a property test against the
//! core's SlidingLog, what the script writes and how long it keeps it, pruning, Cluster
//! slots, and the limits at and past the 2^53 bound.
//!
//! The rule every expected value follows: tokens spent at s count while s > t − W and come
//! back at exactly s + W.

mod common;
mod traces;

use std::cell::{Cell, RefCell};

use common::{
    assert_denial_leaves_no_key, assert_expires_near, hold_still, limit, pttl, slot, stored_log,
    RedisServer,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis::Commands;
use traces::{check_log_layout, cost, next_ms, start_ms, step, Step};
use trickle_core::{Algorithm, Limit, Op, Outcome, SlidingLog};
use trickle_redis::{
    Clock, RedisError, RedisLimitError, RedisLimiter, EXPIRY_GRACE_MS, MAX_TIME_MS,
};

const ALLOWED: Outcome = Outcome::Allowed;
const EXCEEDS: Outcome = Outcome::ExceedsLimit;
const MAX: u64 = u64::MAX;
/// 2^53, the latest time a request may bring.
const END: u64 = MAX_TIME_MS;

const fn denied(retry_after_ms: u64) -> Outcome {
    Outcome::Denied { retry_after_ms }
}

fn log_limiter(limit: Limit, prefix: &str) -> RedisLimiter {
    RedisLimiter::new(Algorithm::SlidingLog, limit, prefix).expect("within the 2^53 bound")
}

/// name, limit, requests before (op, t, cost), a hit (t, cost), outcome, used shown,
/// remaining, the log's entries after.
type Row = (
    &'static str,
    &'static str,
    &'static [(Op, u64, u64)],
    (u64, u64),
    Outcome,
    &'static str,
    u64,
    &'static [&'static str],
);

const TWO_EVERY_SECOND: &[(Op, u64, u64)] =
    &[(Op::Hit, 0, 2), (Op::Hit, 1_000, 2), (Op::Hit, 2_000, 2)];
const THREE_IN_ONE_MS: &[(Op, u64, u64)] = &[(Op::Hit, 5, 1), (Op::Hit, 5, 2), (Op::Hit, 5, 3)];

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("first hit",                               "6/8s", &[],                 (0, 1),       ALLOWED,         "1.000", 5, &["0:1"]),
    ("cost 0 with the log full",                "6/8s", &[(Op::Hit, 0, 6)],  (100, 0),     ALLOWED,         "6.000", 0, &["0:6"]),
    ("cost above N never fits",                 "6/8s", &[(Op::Hit, 0, 2)],  (100, 7),     EXCEEDS,         "2.000", 4, &["0:2"]),
    ("cost u64::MAX never fits",                "6/8s", &[(Op::Hit, 0, 2)],  (100, MAX),   EXCEEDS,         "2.000", 4, &["0:2"]),
    // used 6; 1 fits once used ≤ 5: the 2 from 0 return at 8000.
    ("the oldest entry makes room",             "6/8s", TWO_EVERY_SECOND,    (3_000, 1),   denied(5_000),   "6.000", 0, &["0:2", "1000:2", "2000:2"]),
    // 3 fits once used ≤ 3: the entries from 0 and 1000 must both return, at 9000.
    ("a larger cost waits for a later entry",   "6/8s", TWO_EVERY_SECOND,    (3_000, 3),   denied(6_000),   "6.000", 0, &["0:2", "1000:2", "2000:2"]),
    ("s + W − 1: still counted",                "6/8s", &[(Op::Hit, 1_000, 6)], (8_999, 1), denied(1),      "6.000", 0, &["1000:6"]),
    ("s + W: back, exactly",                    "6/8s", &[(Op::Hit, 1_000, 6)], (9_000, 6), ALLOWED,        "6.000", 0, &["9000:6"]),
    // At 8500 the 2 from 0 are back (used 4), and the denial drops their entry.
    ("a denial prunes what has come back",      "6/8s", TWO_EVERY_SECOND,    (8_500, 3),   denied(500),     "4.000", 2, &["1000:2", "2000:2"]),
    ("one ms, one entry: hits and a record",    "6/8s", &[(Op::Hit, 5, 1), (Op::Hit, 5, 2), (Op::Record, 5, 1)], (5, 2), ALLOWED, "6.000", 0, &["5:6"]),
    ("a merged entry is still counted at s + W − 1", "6/8s", THREE_IN_ONE_MS, (8_004, 1),  denied(1),       "6.000", 0, &["5:6"]),
    ("a merged entry comes back whole at s + W", "6/8s", THREE_IN_ONE_MS,    (8_005, 6),   ALLOWED,         "6.000", 0, &["8005:6"]),
    // Decided at 5000; the 6 from 5000 return at 13000, 12000 after the caller's 1000.
    ("time backwards: decided at the latest",   "6/8s", &[(Op::Hit, 5_000, 6)], (1_000, 1), denied(12_000), "6.000", 0, &["5000:6"]),
    ("time backwards: logged at the latest",    "6/8s", &[(Op::Hit, 5_000, 3)], (1_000, 3), ALLOWED,        "6.000", 0, &["5000:6"]),
    ("record past the limit waits for its entry", "6/8s", &[(Op::Record, 0, 10)], (10, 1), denied(7_990),   "10.000", 0, &["0:10"]),
    ("a gap of many windows empties the log",   "6/8s", &[(Op::Hit, 0, 6), (Op::Hit, 8_000, 6)], (100_000, 6), ALLOWED, "6.000", 0, &["100000:6"]),
    // N × W = 2^53 − 1, the largest allowed, with W = 1 and with N = 1.
    ("N = 2^53 − 1 per ms, full",               "9007199254740991/1ms", &[(Op::Hit, 0, 9_007_199_254_740_991)], (0, 1), denied(1), "9007199254740991.000", 0, &["0:9007199254740991"]),
    ("N = 2^53 − 1 per ms, cost N + 1",         "9007199254740991/1ms", &[],  (0, 9_007_199_254_740_992), EXCEEDS, "0.000", 9_007_199_254_740_991, &[]),
    ("W = 2^53 − 1 ms, 1 ms before s + W",      "1/9007199254740991ms", &[(Op::Hit, 1, 1)], (END - 1, 1), denied(1), "1.000", 0, &["1:1"]),
    ("W = 2^53 − 1 ms, back at s + W = 2^53",   "1/9007199254740991ms", &[(Op::Hit, 1, 1)], (END, 1), ALLOWED, "1.000", 0, &["9007199254740992:1"]),
    // s + W = 2^53 + 8000 is past what a double holds exactly; the script never adds them.
    ("at 2^53 ms, the latest time",             "6/8s", &[(Op::Hit, END, 6)], (END, 1),    denied(8_000),   "6.000", 0, &["9007199254740992:6"]),
];

#[test]
fn table_rows_worked_by_hand_match_redis_and_the_core() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let mut failures = Vec::new();
    for (row, &(name, text, before, (t, cost), outcome, used, remaining, entries)) in
        ROWS.iter().enumerate()
    {
        let limit = limit(text);
        let redis = log_limiter(limit, "table");
        let mut core = SlidingLog::new(limit);
        let key = format!("row-{row}");
        for &(op, at, spend) in before {
            let decision = redis
                .decide(&mut conn, &key, op, at, spend)
                .expect("redis decides");
            let want = match op {
                Op::Record => core.record(at, spend),
                _ => core.hit(at, spend),
            };
            assert_eq!(decision, want, "{name}: setting up at {at}");
        }
        let decision = redis.hit(&mut conn, &key, t, cost).expect("redis hit");
        let got = (
            decision.outcome,
            decision.used.to_string(),
            decision.remaining(),
            stored_log(&mut conn, &redis, &key).entries,
        );
        let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
        let want = (outcome, used.to_string(), remaining, entries);
        if got != want {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
        if decision != core.hit(t, cost) {
            failures.push(format!("{name}: Redis and the core differ"));
        }
        if got.3.len() != core.state().logged_ms() {
            failures.push(format!(
                "{name}: the core logs {} ms",
                core.state().logged_ms()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Mostly small limits, so traces cross many windows; some larger; limits at the bound
/// (N × W = 2^53 − 1 or just under, W = 1 among them); and windows up to 2^53 − 1 ms.
fn any_limit() -> impl Strategy<Value = Limit> {
    let at_bound = (1..=1u64 << 30, 0..=2u64).prop_map(|(window_ms, under)| {
        let tokens = (max_log_scaled() / window_ms).saturating_sub(under).max(1);
        (tokens, window_ms)
    });
    let long_window = (1..=max_log_scaled()).prop_flat_map(|window_ms| {
        let most = (max_log_scaled() / window_ms).min(4);
        (1..=most, Just(window_ms))
    });
    prop_oneof![
        5 => (1..=8u64, 1..=40u64),
        2 => (1..=1_000u64, 1..=100_000u64),
        2 => at_bound,
        1 => long_window,
    ]
    .prop_map(|(tokens, window_ms)| Limit::new(tokens, window_ms).expect("tokens and window ≥ 1"))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![6 => Just(Op::Hit), 1 => Just(Op::Peek), 2 => Just(Op::Record)]
}

#[derive(Debug, Clone)]
struct Trace {
    limit: Limit,
    start_ms: u64,
    requests: Vec<(Step, Op, u64)>,
}

fn trace() -> impl Strategy<Value = Trace> {
    any_limit().prop_flat_map(|limit| {
        let requests = prop::collection::vec(
            (step(limit.window_ms()), op(), cost(limit.tokens())),
            1..=40,
        );
        (Just(limit), start_ms(limit.window_ms()), requests).prop_map(
            |(limit, start_ms, requests)| Trace {
                limit,
                start_ms,
                requests,
            },
        )
    })
}

#[test]
fn redis_decides_every_request_exactly_as_the_core() {
    // One server for every case; each case has a key of its own.
    let server = RedisServer::start();
    let conn = RefCell::new(server.connect());
    let config = Config {
        cases: 128,
        source_file: Some(file!()),
        ..Config::default()
    };
    let case = Cell::new(0u32);
    let result = TestRunner::new(config).run(&trace(), |trace| {
        case.set(case.get() + 1);
        let key = format!("case-{}", case.get());
        let conn = &mut *conn.borrow_mut();
        let limit = trace.limit;
        let redis = log_limiter(limit, "parity");
        let mut core = SlidingLog::new(limit);
        let mut now = trace.start_ms;
        for (i, &(step, op, cost)) in trace.requests.iter().enumerate() {
            if i > 0 {
                now = next_ms(now, step, limit.window_ms());
            }
            // A peek first, every time: it must answer as the core's peek and change
            // nothing the request after it sees.
            let before = stored_log(conn, &redis, &key);
            let got = redis.peek(conn, &key, now, cost).expect("redis peek");
            prop_assert_eq!(
                got,
                core.peek(now, cost),
                "peek {} at {} ms, cost {}",
                i,
                now,
                cost
            );
            prop_assert_eq!(&stored_log(conn, &redis, &key), &before, "peek {} wrote", i);
            for held in redis.redis_keys(&key) {
                let ttl = pttl(conn, &held);
                prop_assert!(
                    ttl < 0,
                    "peek {} set an expiry of {} ms on {}",
                    i,
                    ttl,
                    held
                );
            }

            let got = redis.decide(conn, &key, op, now, cost);
            let want = match op {
                Op::Record => {
                    // Refused, charging nothing, past 2^53 tokens × ms; the core charges.
                    let used = core.peek(now, 0).used.numerator();
                    let scaled = used + u128::from(cost) * u128::from(limit.window_ms());
                    if scaled > u128::from(MAX_TIME_MS) {
                        prop_assert!(
                            matches!(got, Err(RedisError::RecordOutOfRange { .. })),
                            "record {} of {} at {} ms: {:?}",
                            i,
                            cost,
                            now,
                            got
                        );
                        prop_assert_eq!(&stored_log(conn, &redis, &key), &before);
                        continue;
                    }
                    core.record(now, cost)
                }
                op => core.decide(op, now, cost),
            };
            let got = got.expect("redis decides");
            prop_assert_eq!(got, want, "{:?} {} at {} ms, cost {}", op, i, now, cost);
            let after = stored_log(conn, &redis, &key);
            prop_assert_eq!(
                after.entries.len(),
                core.state().logged_ms(),
                "entries {}",
                i
            );
            check_log_layout(&after, limit.window_ms())?;
            // Whatever changed must also have set its expiry; then the expiry is taken off,
            // so that Redis's own clock cannot empty a log the trace's clock still needs.
            let keys = redis.redis_keys(&key);
            for (held, ttl) in keys.iter().zip(hold_still(conn, &keys)) {
                if after != before && ttl != -2 {
                    prop_assert!(ttl > 0, "{:?} {} left {} with PTTL {}", op, i, held, ttl);
                }
            }
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

#[test]
fn a_request_that_spends_nothing_writes_only_a_later_time() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = log_limiter(limit("6/8s"), "quiet");
    for (t, cost) in [(0, 2), (1_000, 2), (2_000, 2)] {
        assert!(bucket.hit(&mut conn, "k", t, cost).unwrap().is_allowed());
    }
    let before = stored_log(&mut conn, &bucket, "k");
    assert_eq!(before.hash["total"], "6");
    assert_eq!(before.hash["seen"], "2000");

    // Denied, too large, and cost 0, at the latest time seen and earlier: nothing written.
    for (t, cost) in [(2_000, 1), (2_000, 7), (2_000, 0), (1_500, 1), (0, 6)] {
        let decision = bucket.hit(&mut conn, "k", t, cost).unwrap();
        assert_eq!(decision.spent(), 0, "at {t}, cost {cost}");
        assert_eq!(
            stored_log(&mut conn, &bucket, "k"),
            before,
            "at {t}, cost {cost}"
        );
    }

    // Denied later: the time moves, and the entry that came back by then goes, as the core
    // forgets it; nothing is logged.
    let decision = bucket.hit(&mut conn, "k", 8_500, 5).unwrap();
    assert_eq!(decision.outcome, denied(1_500));
    let after = stored_log(&mut conn, &bucket, "k");
    assert_eq!(after.entries, ["1000:2", "2000:2"]);
    assert_eq!(after.hash["total"], "4");
    assert_eq!(after.hash["seen"], "8500");
}

#[test]
fn state_expires_when_the_newest_entry_stops_counting() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = log_limiter(limit("6/8s"), "ttl");
    let keys = bucket.redis_keys("k");
    let near = |conn: &mut redis::Connection, most: u64| {
        for key in &keys {
            assert_expires_near(conn, key, most, "the log");
        }
    };
    bucket.hit(&mut conn, "k", 0, 1).unwrap();
    near(&mut conn, 8_000 + EXPIRY_GRACE_MS);
    bucket.hit(&mut conn, "k", 3_000, 1).unwrap();
    near(&mut conn, 8_000 + EXPIRY_GRACE_MS);
    // A later denial keeps the keys only as long as the newest entry, from 3000, counts.
    bucket.hit(&mut conn, "k", 5_000, 5).unwrap();
    near(&mut conn, 6_000 + EXPIRY_GRACE_MS);

    // Once every entry is back, the list is gone and the hash, holding the latest time
    // alone, is kept for the grace.
    bucket.hit(&mut conn, "k", 20_000, 0).unwrap();
    assert!(!conn.exists::<_, bool>(&keys[1]).unwrap());
    let ttl = pttl(&mut conn, &keys[0]);
    assert!(ttl > 0 && ttl <= EXPIRY_GRACE_MS as i64, "PTTL {ttl}");

    // The longest window's keys are kept no longer than 2^53 ms: the script's numbers stay
    // exact there too.
    let longest = log_limiter(limit("1/9007199254740991ms"), "ttl");
    longest.hit(&mut conn, "k", 0, 1).unwrap();
    for key in longest.redis_keys("k") {
        let ttl = pttl(&mut conn, &key);
        assert!(
            ttl > (1 << 53) - 1_000 && ttl <= 1 << 53,
            "{key}: PTTL {ttl}"
        );
    }

    assert_denial_leaves_no_key(&mut conn, &bucket);
}

#[test]
fn after_many_windows_the_log_holds_only_live_entries() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let limit = limit("1000/100ms");
    let bucket = log_limiter(limit, "prune");
    let mut core = SlidingLog::new(limit);
    // One token a millisecond for ten windows: never more than 100 in use.
    for t in 0..=1_000 {
        let decision = bucket.hit(&mut conn, "k", t, 1).unwrap();
        assert_eq!(decision, core.hit(t, 1), "at {t}");
    }
    let held = stored_log(&mut conn, &bucket, "k");
    let live: Vec<String> = (901..=1_000).map(|t| format!("{t}:1")).collect();
    assert_eq!(held.entries, live);
    assert_eq!(held.hash["total"], "100");
    assert_eq!(core.state().logged_ms(), 100);
    // A denial walks the log oldest first: 950 fits once the 50 from 901 to 950 are back.
    let decision = bucket.hit(&mut conn, "k", 1_000, 950).unwrap();
    assert_eq!(decision.outcome, denied(50));
    assert_eq!(decision, core.hit(1_000, 950));

    // Records past the limit are pruned the same way; a gap of many windows leaves one.
    bucket.record(&mut conn, "k", 1_050, 5_000).unwrap();
    bucket.hit(&mut conn, "k", 50_000, 3).unwrap();
    let held = stored_log(&mut conn, &bucket, "k");
    assert_eq!(held.entries, ["50000:3"]);
    assert_eq!(held.hash["total"], "3");
}

#[test]
fn every_key_a_decision_touches_is_in_one_slot() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = log_limiter(limit("6/8s"), "api");
    for key in ["user-42", "", "a}b", "{x}", "é", "42"] {
        let keys = bucket.redis_keys(key);
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0], bucket.redis_key(key));
        assert!(keys.iter().all(|k| slot(k) == slot(&keys[0])), "{keys:?}");

        // The script touches exactly these keys: nothing else appears in Redis.
        bucket.hit(&mut conn, key, 0, 1).unwrap();
        bucket.hit(&mut conn, key, 1, 6).unwrap();
        let mut found: Vec<String> = conn.keys("*").unwrap();
        found.sort();
        let mut want = keys.clone();
        want.sort();
        assert_eq!(found, want, "{key}");
        let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
    }
}

#[test]
fn limits_at_the_2_pow_53_bound_are_exact_and_past_it_refused() {
    // N × W = 2^53 − 1 = 6361 × 69431 × 20394401: accepted however it is split.
    for (tokens, window_ms) in [
        ((1 << 53) - 1, 1),
        (1, (1 << 53) - 1),
        (6_361 * 69_431, 20_394_401),
    ] {
        let limit = Limit::new(tokens, window_ms).unwrap();
        assert!(
            RedisLimiter::new(Algorithm::SlidingLog, limit, "p").is_ok(),
            "{limit}"
        );
    }
    // 2^53 itself, and the floating window's largest limit doubled, are refused.
    for (tokens, window_ms) in [(1 << 53, 1), (1, 1 << 53), (1 << 27, 1 << 26)] {
        let limit = Limit::new(tokens, window_ms).unwrap();
        let err = RedisLimiter::new(Algorithm::SlidingLog, limit, "p").unwrap_err();
        assert_eq!(
            err,
            RedisLimitError::TooLarge {
                algorithm: Algorithm::SlidingLog,
                limit,
                max_scaled: (1 << 53) - 1,
            }
        );
    }
    let err =
        RedisLimiter::new(Algorithm::SlidingLog, limit("9007199254740992/1ms"), "p").unwrap_err();
    assert_eq!(
        err.to_string(),
        "limit 9007199254740992/1ms is too large for the sliding-log algorithm on Redis: \
         tokens × window_ms must be at most 9007199254740991 (2^53 − 1) for its script's \
         numbers to stay within 2^53, where Lua's doubles stop being exact; got \
         9007199254740992 × 1 = 9007199254740992; lower the tokens or the window"
    );

    // At the bound: full, a record up to 2^53 tokens × ms, and one past it refused.
    let server = RedisServer::start();
    let mut conn = server.connect();
    let limit = limit("9007199254740991/1ms");
    let bucket = log_limiter(limit, "bound");
    let mut core = SlidingLog::new(limit);
    let requests = [
        (Op::Hit, 0, (1 << 53) - 1),
        (Op::Hit, 0, MAX),
        (Op::Record, 0, 1),
        (Op::Hit, 0, 0),
    ];
    for (op, t, cost) in requests {
        let want = match op {
            Op::Record => core.record(t, cost),
            _ => core.hit(t, cost),
        };
        assert_eq!(bucket.decide(&mut conn, "k", op, t, cost).unwrap(), want);
    }
    let before = stored_log(&mut conn, &bucket, "k");
    assert_eq!(before.entries, ["0:9007199254740992"]);
    let err = bucket.record(&mut conn, "k", 0, 1).unwrap_err();
    assert!(
        matches!(err, RedisError::RecordOutOfRange { cost: 1 }),
        "{err}"
    );
    assert_eq!(stored_log(&mut conn, &bucket, "k"), before);
    // One ms later all of it is back.
    assert_eq!(
        bucket.hit(&mut conn, "k", 1, (1 << 53) - 1).unwrap(),
        core.hit(1, (1 << 53) - 1)
    );
}

#[test]
fn the_server_clock_decides_and_logs_at_redis_time() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = log_limiter(limit("2/1h"), "server").with_clock(Clock::Server);
    let first = bucket.hit(&mut conn, "k", 0, 1).unwrap();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        first.at_ms.abs_diff(wall) < 10_000,
        "{} vs {wall}",
        first.at_ms
    );
    assert!(bucket.hit(&mut conn, "k", 0, 1).unwrap().is_allowed());
    let third = bucket.hit(&mut conn, "k", 0, 1).unwrap();
    // The oldest entry returns an hour after it was logged.
    let Outcome::Denied { retry_after_ms } = third.outcome else {
        panic!("{third:?}");
    };
    assert_eq!(third.at_ms + retry_after_ms, first.at_ms + 3_600_000);
}

/// 2^53 − 1, the sliding log's largest N × W on Redis.
fn max_log_scaled() -> u64 {
    RedisLimiter::max_scaled(Algorithm::SlidingLog) as u64
}
