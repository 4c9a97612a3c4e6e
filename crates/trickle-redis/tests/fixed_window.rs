//! The fixed window on a real redis-server: rows worked by hand (most from the core's own
//! table, tests/fixed_window.rs, within the limits Redis holds exactly), what the script
//! writes and how long it keeps it, records at the edge of 2^53, and the limits refused at
//! construction.

mod common;

use common::Op::{H, R};
use common::{
    assert_denial_leaves_no_key, assert_expires_near, check_rows, limit, stored, RedisServer, Row,
};
use trickle_core::{Algorithm, Limit, Limiter, Outcome};
use trickle_redis::{RedisError, RedisLimitError, RedisLimiter, EXPIRY_GRACE_MS};

const ALLOWED: Outcome = Outcome::Allowed;
const EXCEEDS: Outcome = Outcome::ExceedsLimit;
const MAX: u64 = u64::MAX;
/// 2^53, the latest time a request may bring.
const LAST_MS: u64 = 1 << 53;

const fn denied(retry_after_ms: u64) -> Outcome {
    Outcome::Denied { retry_after_ms }
}

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("first hit",                                 "6/8s", &[],                (0, 1),        ALLOWED,        "1.000", 5),
    ("kW − 1: the window's last ms",              "6/8s", &[H(0, 6)],         (7_999, 1),    denied(1),      "6.000", 0),
    ("kW: the next window starts empty",          "6/8s", &[H(0, 6)],         (8_000, 6),    ALLOWED,        "6.000", 0),
    // The known flaw: 12 tokens within 2 ms across a boundary.
    ("2N in 2 ms across a boundary",              "6/8s", &[H(7_999, 6)],     (8_000, 6),    ALLOWED,        "6.000", 0),
    ("denied early waits for the window's end",   "6/8s", &[H(0, 6)],         (100, 1),      denied(7_900),  "6.000", 0),
    ("cost N on a partly used window",            "6/8s", &[H(0, 1)],         (1, 6),        denied(7_999),  "1.000", 5),
    ("cost above N",                              "6/8s", &[],                (0, 7),        EXCEEDS,        "0.000", 6),
    ("cost u64::MAX never fits",                  "6/8s", &[H(0, 2)],         (8, MAX),      EXCEEDS,        "2.000", 4),
    ("cost 0 with the window full",               "6/8s", &[H(0, 6)],         (100, 0),      ALLOWED,        "6.000", 0),
    ("cost 0 past the limit after record",        "6/8s", &[R(0, 20)],        (10, 0),       ALLOWED,        "20.000", 0),
    // However far past the limit, everything is forgotten at the next window.
    ("record past the limit, then the wait",      "6/8s", &[R(100, 50)],      (200, 1),      denied(7_800),  "50.000", 0),
    ("a gap of several windows",                  "6/8s", &[H(0, 6), H(8_000, 6)], (40_005, 6), ALLOWED,     "6.000", 0),
    // Decided at 9000, in window 1, which ends at 16000: 15900 after the caller's 100.
    ("time backwards: decided at the latest",     "6/8s", &[H(9_000, 6)],     (100, 1),      denied(15_900), "6.000", 0),
    // The hit at 7000 is taken as 9000, so it lands in window 1 too.
    ("backwards hits land in the latest window",  "6/8s", &[H(9_000, 3), H(7_000, 3)], (8_500, 1), denied(7_500), "6.000", 0),
    // N × W = 2^53 − 1, the largest allowed: N tokens a ms.
    ("N × W = 2^53 − 1, full",                    "9007199254740991/1ms", &[H(0, 9_007_199_254_740_991)], (0, 1), denied(1), "9007199254740991.000", 0),
    ("N × W = 2^53 − 1, the next 1 ms window",    "9007199254740991/1ms", &[H(0, 9_007_199_254_740_991)], (1, 9_007_199_254_740_991), ALLOWED, "9007199254740991.000", 0),
    ("N × W = 2^53 − 1, cost N + 1",              "9007199254740991/1ms", &[],  (0, 9_007_199_254_740_992), EXCEEDS, "0.000", 9_007_199_254_740_991),
    // 2^53 mod 8000 = 4992: the window ends 3008 ms later.
    ("at 2^53 ms, the latest time",               "6/8s", &[H(LAST_MS, 6)],   (LAST_MS, 1),  denied(3_008),  "6.000", 0),
];

#[test]
fn table_rows_worked_by_hand_match_redis_and_the_core() {
    check_rows(Algorithm::Fixed, ROWS);
}

#[test]
fn a_request_that_spends_nothing_leaves_the_counter_alone() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Fixed, limit("6/8s"), "quiet").unwrap();
    let key = bucket.redis_key("k");
    assert!(bucket.hit(&mut conn, "k", 1_000, 6).unwrap().is_allowed());
    let before = stored(&mut conn, &key);
    assert_eq!(before["current"], "6");

    // Denied, too large, and cost 0, at the latest time seen and earlier: nothing written.
    for (t, cost) in [(1_000, 1), (1_000, 7), (1_000, 0), (500, 1), (0, 6)] {
        let decision = bucket.hit(&mut conn, "k", t, cost).unwrap();
        assert_eq!(decision.spent(), 0, "at {t}, cost {cost}");
        assert_eq!(stored(&mut conn, &key), before, "at {t}, cost {cost}");
    }

    // Later: only the latest time seen moves, and the key is kept to the window's end.
    let denied = bucket.hit(&mut conn, "k", 3_000, 1).unwrap();
    assert_eq!(
        denied.outcome,
        Outcome::Denied {
            retry_after_ms: 5_000
        }
    );
    let mut expected = before.clone();
    expected.insert("seen".to_string(), "3000".to_string());
    assert_eq!(stored(&mut conn, &key), expected);
    assert_expires_near(&mut conn, &key, 5_000 + EXPIRY_GRACE_MS, "after the spend");
}

#[test]
fn state_expires_at_the_end_of_its_window() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::Fixed, limit("6/8s"), "ttl").unwrap();
    let key = bucket.redis_key("k");
    // Spent at 0 or at 3000, the counter counts until 8000; at 9000, until 16000.
    for (t, until) in [(0, 8_000), (3_000, 8_000), (9_000, 16_000)] {
        bucket.record(&mut conn, "k", t, 1).unwrap();
        let context = format!("at {t}");
        assert_expires_near(&mut conn, &key, until - t + EXPIRY_GRACE_MS, &context);
    }

    assert_denial_leaves_no_key(&mut conn, &bucket);
}

#[test]
fn a_record_past_2_pow_53_is_refused_and_charges_nothing() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    // 1 ms windows: current × W = current, so the count itself may reach 2^53.
    let limit = limit("9007199254740991/1ms");
    let bucket = RedisLimiter::new(Algorithm::Fixed, limit, "record").unwrap();
    let mut core = Limiter::with_algorithm(Algorithm::Fixed, limit);
    let key = bucket.redis_key("k");
    for cost in [9_007_199_254_740_991, 1] {
        let decision = bucket.record(&mut conn, "k", 5, cost).unwrap();
        assert_eq!(decision, core.record(5, cost));
    }
    assert_eq!(stored(&mut conn, &key)["current"], "9007199254740992");
    let before = stored(&mut conn, &key);
    let err = bucket.record(&mut conn, "k", 5, 1).unwrap_err();
    assert!(
        matches!(err, RedisError::RecordOutOfRange { cost: 1 }),
        "{err}"
    );
    assert_eq!(stored(&mut conn, &key), before);
    // The next window forgets it all.
    assert_eq!(bucket.hit(&mut conn, "k", 6, 1).unwrap(), core.hit(6, 1));
}

#[test]
fn limits_at_the_bound_are_taken_and_one_past_it_refused() {
    assert_eq!(RedisLimiter::max_scaled(Algorithm::Fixed), (1 << 53) - 1);
    // (2^27 − 1) × 2^26 = 2^53 − 2^26 and (2^53 − 1) × 1 are in; one token more is out.
    for (tokens, window_ms) in [((1 << 27) - 1, 1 << 26), ((1 << 53) - 1, 1)] {
        let at_bound = Limit::new(tokens, window_ms).unwrap();
        assert!(
            RedisLimiter::new(Algorithm::Fixed, at_bound, "p").is_ok(),
            "{at_bound}"
        );
        let past = Limit::new(tokens + 1, window_ms).unwrap();
        assert_eq!(
            RedisLimiter::new(Algorithm::Fixed, past, "p").unwrap_err(),
            RedisLimitError::TooLarge {
                algorithm: Algorithm::Fixed,
                limit: past,
                max_scaled: (1 << 53) - 1,
            }
        );
    }
    let err = RedisLimiter::new(Algorithm::Fixed, limit("134217728/67108864ms"), "p").unwrap_err();
    assert_eq!(
        err.to_string(),
        "limit 134217728/67108864ms is too large for the fixed algorithm on Redis: \
         tokens × window_ms must be at most 9007199254740991 (2^53 − 1) for its script's \
         numbers to stay within 2^53, where Lua's doubles stop being exact; got 134217728 × \
         67108864 = 9007199254740992; lower the tokens or the window"
    );
}
