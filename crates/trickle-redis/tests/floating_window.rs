//! The floating window on a real redis-server: rows worked by hand (the core's own table,
//! tests/floating_window.rs, where it needs only hits and limits Redis holds exactly), what
//! the script writes and how long it keeps it, a lost Function library, NOSCRIPT, Cluster slots (of every
//! algorithm's keys), and the limits refused at construction.

mod common;

use common::{assert_denial_leaves_no_key, assert_expires_near, limit, slot, stored, RedisServer};
use trickle_core::{Algorithm, FloatingWindow, Limit, Outcome};
use trickle_redis::{RedisLimitError, RedisLimiter, EXPIRY_GRACE_MS};

const ALLOWED: Outcome = Outcome::Allowed;
const EXCEEDS: Outcome = Outcome::ExceedsLimit;

const fn denied(retry_after_ms: u64) -> Outcome {
    Outcome::Denied { retry_after_ms }
}

/// name, limit, hits before (t, cost), probe (t, cost), outcome, used shown, remaining,
/// (previous, current, elapsed_ms) after.
type Row = (
    &'static str,
    &'static str,
    &'static [(u64, u64)],
    (u64, u64),
    Outcome,
    &'static str,
    u64,
    (u128, u128, u64),
);

/// The README's worked example: six hits, then the one at 11 s that fills the bucket.
const DOC_HITS_FULL: &[(u64, u64)] = &[
    (0, 1),
    (1_000, 1),
    (2_000, 1),
    (3_000, 1),
    (9_000, 1),
    (10_000, 1),
    (11_000, 1),
];
/// The same without the hit at 11 s.
const DOC_HITS: &[(u64, u64)] = DOC_HITS_FULL.split_at(6).0;

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("first hit at 0",                          "6/8s",  &[],                 (0, 1),        ALLOWED,         "1.000", 5, (0, 1, 0)),
    // 4 × 5000/8000 + 2 = 4.5, + 1 = 5.5 ≤ 6.
    ("README example, allowed at 11 s",         "6/8s",  DOC_HITS,            (11_000, 1),   ALLOWED,         "5.500", 0, (4, 3, 3_000)),
    // 5.5 + 1 > 6; 4 × (8000 − e)/8000 + 3 + 1 ≤ 6 ⇔ e ≥ 4000, at 12000.
    ("README example, the next denied",         "6/8s",  DOC_HITS_FULL,       (11_000, 1),   denied(1_000),   "5.500", 0, (4, 3, 3_000)),
    // 4 × 4001/8000 + 3 = 5.0005, shown rounded half up.
    ("README example, denied at 11999",         "6/8s",  DOC_HITS_FULL,       (11_999, 1),   denied(1),       "5.001", 0, (4, 3, 3_999)),
    // 4 × 4000/8000 + 3 + 1 = 6.
    ("README example, allowed at 12000",        "6/8s",  DOC_HITS_FULL,       (12_000, 1),   ALLOWED,         "6.000", 0, (4, 4, 4_000)),
    ("cost N on an empty window",               "6/8s",  &[],                 (0, 6),        ALLOWED,         "6.000", 0, (0, 6, 0)),
    ("cost above N on an empty window",         "6/8s",  &[],                 (0, 7),        EXCEEDS,         "0.000", 6, (0, 0, 0)),
    ("cost above N with some used",             "6/8s",  &[(0, 1)],           (100, 7),      EXCEEDS,         "1.000", 5, (0, 1, 100)),
    ("cost u64::MAX never fits",                "6/8s",  &[(0, 1)],           (100, u64::MAX), EXCEEDS,       "1.000", 5, (0, 1, 100)),
    ("cost 0 with the window full",             "6/8s",  &[(0, 6)],           (100, 0),      ALLOWED,         "6.000", 0, (0, 6, 100)),
    // 6 × (8000 − e) ≤ 5 × 8000 ⇔ e ≥ 1333.3: 8000 + 1334 = 9334, 1335 after 7999.
    ("kW − 1: the window's last ms",            "6/8s",  &[(0, 6)],           (7_999, 1),    denied(1_335),   "6.000", 0, (0, 6, 7_999)),
    ("kW: previous counts in full",             "6/8s",  &[(0, 6)],           (8_000, 1),    denied(1_334),   "6.000", 0, (6, 0, 0)),
    // 6 × 6667/8000 = 5.00025 and 5.00025 + 1 > 6.
    ("1 ms before enough has slid out",         "6/8s",  &[(0, 6)],           (9_333, 1),    denied(1),       "5.000", 0, (6, 0, 1_333)),
    ("as soon as enough has slid out",          "6/8s",  &[(0, 6)],           (9_334, 1),    ALLOWED,         "6.000", 0, (6, 1, 1_334)),
    // 6 × 4000/8000 = 3, + 6 > 6; with current = 0 the cost fits only once previous is gone.
    ("cost N while previous still overlaps",    "6/8s",  &[(0, 6)],           (12_000, 6),   denied(4_000),   "3.000", 3, (6, 0, 4_000)),
    ("(k+1)W − 1: previous counts 1/W",         "6/8s",  &[(0, 6)],           (15_999, 6),   denied(1),       "0.001", 5, (6, 0, 7_999)),
    ("(k+2)W: two windows on, all forgotten",   "6/8s",  &[(0, 6)],           (16_000, 6),   ALLOWED,         "6.000", 0, (0, 6, 0)),
    // 5 × 1/8000 + 2 = 2.000625, shown 2.001.
    ("one window on, current became previous",  "6/8s",  &[(7_999, 5)],       (15_999, 2),   ALLOWED,         "2.001", 3, (5, 2, 7_999)),
    ("a gap of several windows empties both",   "6/8s",  &[(0, 3), (8_000, 3)], (40_100, 6), ALLOWED,         "6.000", 0, (0, 6, 100)),
    // Decided at 10000 (e = 2000): window 2 needs 6 × (8000 − e) ≤ 40000, e ≥ 1334: 17334 − 9000.
    ("time backwards: decided at the latest",   "6/8s",  &[(10_000, 6)],      (9_000, 1),    denied(8_334),   "6.000", 0, (0, 6, 2_000)),
    // 7000 is taken as 8000, so current = 5; window 2: 5 × (8000 − e) ≤ 32000, e ≥ 1600: 17600 − 100.
    ("time backwards into an earlier window",   "6/8s",  &[(8_000, 3), (7_000, 2)], (100, 2), denied(17_500), "5.000", 1, (0, 5, 0)),
    ("150/15m: half the previous window",       "150/15m", &[(0, 150)],       (1_350_000, 75), ALLOWED,       "150.000", 0, (150, 75, 450_000)),
    ("150/15m: 1 ms before half",               "150/15m", &[(0, 150)],       (1_349_999, 75), denied(1),     "75.000", 74, (150, 0, 449_999)),
    // 7 × (1000 − e) ≤ 6000 ⇔ e ≥ 142.9, so 143.
    ("7/1000ms: previous in full",              "7/1000ms", &[(0, 7)],        (1_000, 1),    denied(143),     "7.000", 0, (7, 0, 0)),
    ("7/1000ms: at the retry",                  "7/1000ms", &[(0, 7)],        (1_143, 1),    ALLOWED,         "6.999", 0, (7, 1, 143)),
    // N × W = 2^52 exactly, the largest allowed: 2^26 × (2^26 − e) ≤ (2^26 − 1) × 2^26 ⇔ e ≥ 1.
    ("N × W = 2^52, cost 1 after N",            "67108864/67108864ms", &[(0, 67_108_864)], (67_108_864, 1), denied(1), "67108864.000", 0, (67_108_864, 0, 0)),
    // 2^26 × (2^26 − 1) + 2^26 = 2^52 = N × W: full again, exactly.
    ("N × W = 2^52, 1 ms into the next window", "67108864/67108864ms", &[(0, 67_108_864)], (67_108_865, 1), ALLOWED, "67108864.000", 0, (67_108_864, 1, 1)),
    // The latest time allowed, 2^53 = 9007199254740992; 2^53 mod 8000 = 4992; the next
    // window begins 3008 ms later, and 6 × (8000 − e) ≤ 5 × 8000 at e = 1334.
    ("at 2^53 ms, the latest time",             "6/8s",  &[(9_007_199_254_740_992, 6)], (9_007_199_254_740_992, 1), denied(3_008 + 1_334), "6.000", 0, (0, 6, 4_992)),
];

#[test]
fn table_rows_worked_by_hand_match_redis_and_the_core() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let mut failures = Vec::new();
    for (row, &(name, text, hits, (t, cost), outcome, used, remaining, counters)) in
        ROWS.iter().enumerate()
    {
        let limit = limit(text);
        let redis = RedisLimiter::new(Algorithm::Floating, limit, "table").expect("within 2^53");
        let mut core = FloatingWindow::new(limit);
        let key = format!("row-{row}");
        for &(at, spend) in hits {
            let decision = redis.hit(&mut conn, &key, at, spend).expect("redis hit");
            assert_eq!(decision, core.hit(at, spend), "{name}: setting up at {at}");
        }
        let decision = redis.hit(&mut conn, &key, t, cost).expect("redis hit");
        let seen = decision
            .counters
            .expect("the floating window shows its counters");
        let got = (
            decision.outcome,
            decision.used.to_string(),
            decision.remaining(),
            (seen.previous, seen.current, seen.elapsed_ms),
        );
        let want = (outcome, used.to_string(), remaining, counters);
        if got != want {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
        if decision != core.hit(t, cost) {
            failures.push(format!("{name}: Redis and the core differ"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_request_that_spends_nothing_leaves_the_counters_alone() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "quiet").unwrap();
    let key = bucket.redis_key("k");
    for t in [0, 1_000, 2_000, 3_000, 9_000, 10_000, 11_000] {
        assert!(bucket.hit(&mut conn, "k", t, 1).unwrap().is_allowed());
    }
    let before = stored(&mut conn, &key);
    assert_eq!(before["current"], "3");

    // Denied, too large, and cost 0, at the latest time seen and earlier: nothing written.
    for (t, cost) in [
        (11_000, 1),
        (11_000, 7),
        (11_000, 0),
        (10_500, 1),
        (5_000, 6),
    ] {
        let decision = bucket.hit(&mut conn, "k", t, cost).unwrap();
        assert_eq!(decision.spent(), 0, "at {t}, cost {cost}");
        assert_eq!(stored(&mut conn, &key), before, "at {t}, cost {cost}");
    }

    // Denied later: only the latest time seen moves; the counters and their window stay.
    let denied = bucket.hit(&mut conn, "k", 11_500, 1).unwrap();
    assert_eq!(
        denied.outcome,
        Outcome::Denied {
            retry_after_ms: 500
        }
    );
    let after = stored(&mut conn, &key);
    let mut expected = before.clone();
    expected.insert("seen".to_string(), "11500".to_string());
    assert_eq!(after, expected);
}

/// A bucket that trickle-redis 0.2 wrote as a hash decides as the same numbers in a string
/// do (the one-limit hit reads it on the general path), stays a hash while nothing is
/// written, and is a string from its first write on.
#[test]
fn a_bucket_written_as_a_hash_decides_as_its_string_does() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "layout").unwrap();
    for t in [0, 1_000, 2_000, 9_000, 10_000] {
        assert!(bucket.hit(&mut conn, "string", t, 1).unwrap().is_allowed());
    }
    let old = bucket.redis_key("hash");
    let fields = stored(&mut conn, &bucket.redis_key("string"));
    let mut hset = redis::cmd("HSET");
    hset.arg(&old);
    for (name, value) in &fields {
        hset.arg(name).arg(value);
    }
    let _: () = hset.query(&mut conn).expect("HSET");
    let kind = |conn: &mut redis::Connection| -> String {
        redis::cmd("TYPE").arg(&old).query(conn).expect("TYPE")
    };

    // At the latest time seen, denied (3 × 6/8 + 2 + 5 > 6), too large, and free: nothing
    // written, so still a hash. Then admitted, and written as a string.
    for (t, cost, layout) in [
        (10_000, 5, "hash"),
        (10_000, 7, "hash"),
        (10_000, 0, "hash"),
        (10_000, 1, "string"),
        (11_000, 1, "string"),
        (11_000, 1, "string"),
    ] {
        let fresh = bucket.hit(&mut conn, "string", t, cost).unwrap();
        let read = bucket.hit(&mut conn, "hash", t, cost).unwrap();
        assert_eq!(read, fresh, "at {t}, cost {cost}");
        assert_eq!(kind(&mut conn), layout, "after the hit at {t}, cost {cost}");
    }
    assert_eq!(
        stored(&mut conn, &old),
        stored(&mut conn, &bucket.redis_key("string"))
    );
}

#[test]
fn state_expires_when_the_window_after_its_last_write_ends() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "ttl").unwrap();
    let key = bucket.redis_key("k");
    // Counters written at 0 count until 16000; written at 3000, still until 16000.
    for (t, until) in [(0, 16_000), (3_000, 16_000)] {
        bucket.hit(&mut conn, "k", t, 1).unwrap();
        let context = format!("at {t}");
        assert_expires_near(&mut conn, &key, until - t + EXPIRY_GRACE_MS, &context);
    }

    assert_denial_leaves_no_key(&mut conn, &bucket);
}

/// The Function library lost (`FUNCTION FLUSH`, as a restart without persistence loses
/// it) is loaded again by the next decision, which then decides as if nothing happened.
#[test]
fn a_function_flush_is_recovered() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "flush").unwrap();
    let mut core = FloatingWindow::new(limit("6/8s"));
    for (t, flush) in [(0, false), (1_000, true), (2_000, false), (3_000, true)] {
        if flush {
            let () = redis::cmd("FUNCTION")
                .arg("FLUSH")
                .query(&mut conn)
                .unwrap();
        }
        assert_eq!(bucket.hit(&mut conn, "k", t, 2).unwrap(), core.hit(t, 2));
    }
}

/// A server without Functions (before Redis 7.0; here FCALL renamed away) runs the same
/// text as a script, loaded again after a `SCRIPT FLUSH` answers NOSCRIPT.
#[test]
fn a_server_without_functions_runs_the_script() {
    let server = RedisServer::start_with(&["--rename-command", "FCALL", ""]);
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "script").unwrap();
    let mut core = FloatingWindow::new(limit("6/8s"));
    for (t, flush) in [(0, false), (1_000, true), (2_000, false), (3_000, true)] {
        if flush {
            let () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut conn).unwrap();
        }
        assert_eq!(bucket.hit(&mut conn, "k", t, 2).unwrap(), core.hit(t, 2));
    }
    let libraries: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query(&mut conn).unwrap();
    assert!(libraries.is_empty(), "no library loaded: {libraries:?}");
}

#[test]
fn every_key_of_a_decision_is_in_the_slot_of_its_hash_tag() {
    // Known slots, as `CLUSTER KEYSLOT` gives them.
    assert_eq!(slot("123456789"), 12_739);
    assert_eq!(slot("{user1000}.following"), slot("{user1000}.followers"));
    let buckets: Vec<RedisLimiter> = Algorithm::ALL
        .into_iter()
        .filter_map(|algorithm| RedisLimiter::new(algorithm, limit("6/8s"), "api").ok())
        .collect();
    assert!(
        buckets.len() >= 3,
        "floating, fixed and token-bucket run on Redis"
    );
    for bucket in &buckets {
        for key in ["user-42", "", "a}b", "{x}", "é", "42"] {
            let redis_key = bucket.redis_key(key);
            assert!(
                redis_key.ends_with(&format!(":{}", bucket.algorithm().name())),
                "{redis_key}"
            );
            // The whole prefix and key, escaped, is the tag: a brace in the key cuts nothing.
            let escaped = key.replace('{', "%7B").replace('}', "%7D");
            let tag = format!("api:{escaped}");
            assert_eq!(
                slot(&redis_key),
                common::crc16(tag.as_bytes()) % 16_384,
                "{redis_key}"
            );
        }
    }
}

#[test]
fn a_limit_beyond_2_pow_53_is_refused_with_what_is_allowed() {
    // 2 × 2^26 × 2^26 = 2^53: the largest allowed. One token or 1 ms more is refused.
    assert_eq!(RedisLimiter::max_scaled(Algorithm::Floating), 1 << 52);
    assert!(RedisLimiter::new(
        Algorithm::Floating,
        Limit::new(1 << 26, 1 << 26).unwrap(),
        "p"
    )
    .is_ok());
    let err = RedisLimiter::new(
        Algorithm::Floating,
        Limit::new((1 << 26) + 1, 1 << 26).unwrap(),
        "p",
    )
    .unwrap_err();
    assert_eq!(
        err,
        RedisLimitError::TooLarge {
            algorithm: Algorithm::Floating,
            limit: Limit::new((1 << 26) + 1, 1 << 26).unwrap(),
            max_scaled: 1 << 52,
        }
    );
    assert_eq!(
        err.to_string(),
        "limit 67108865/67108864ms is too large for the floating algorithm on Redis: \
         tokens × window_ms must be at most 4503599627370496 (2^52) for its script's numbers \
         to stay within 2^53, where Lua's doubles stop being exact; got 67108865 × 67108864 \
         = 4503599694479360; lower the tokens or the window"
    );
    assert!(RedisLimiter::new(
        Algorithm::Floating,
        Limit::new(1 << 26, (1 << 26) + 1).unwrap(),
        "p"
    )
    .is_err());
    let err =
        RedisLimiter::new(Algorithm::Floating, limit("18446744073709551615/1h"), "p").unwrap_err();
    assert!(err
        .to_string()
        .starts_with("limit 18446744073709551615/1h is too large for the floating algorithm"));

    let err = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "a{b").unwrap_err();
    assert_eq!(
        err.to_string(),
        "key prefix \"a{b\" is not allowed: it holds '{'; a prefix is 1 to 128 bytes of \
         ASCII letters, digits, '-', '_', '.', ':' and '/' (no brace, which would cut the \
         keys' Redis Cluster hash tag short)"
    );
    assert!(RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "").is_err());
}

#[test]
fn a_time_beyond_2_pow_53_is_an_error_not_a_panic() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "late").unwrap();
    let err = bucket.hit(&mut conn, "k", (1 << 53) + 1, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "time 9007199254740993 ms is beyond 2^53 = 9007199254740992 ms, the largest time the \
         Redis script holds exactly"
    );
}

#[test]
fn redis_gone_is_an_error_not_a_panic() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    drop(server);
    let bucket = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "gone").unwrap();
    let err = bucket.hit(&mut conn, "k", 0, 1).unwrap_err();
    assert!(matches!(err, trickle_redis::RedisError::Redis(_)), "{err}");
}
