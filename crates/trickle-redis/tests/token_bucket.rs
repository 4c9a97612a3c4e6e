//! The token bucket on a real redis-server: rows worked by hand (most from the core's own
//! table, tests/token_bucket.rs, within the limits Redis holds exactly), what the script
//! writes and how long it keeps it, records at the edge of 2^53, and the limits refused at
//! construction.
//!
//! After d ms a bucket gets back N × d / W tokens (6/8s: 0.00075 a ms; 3/10ms: 0.3 a ms).

mod common;

use std::collections::HashMap;

use common::Op::{self, H, R};
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
/// 2^22 − 1 tokens per 2^31 ms: N × W = 2^53 − 2^31, near the bound with a long window.
const BIG: u64 = (1 << 22) - 1;

const fn denied(retry_after_ms: u64) -> Outcome {
    Outcome::Denied { retry_after_ms }
}

/// 3/10ms: drained, then a token at 4 (1.2 back, a token borrowed for the 0.2) and at 8.
const THIRDS: &[Op] = &[H(0, 3), H(4, 1), H(8, 1)];

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("full at the first request, however late",   "6/8s", &[],                (1_000_000, 6), ALLOWED,        "6.000", 0),
    // One token takes 8000/6 = 1333.3 ms, so 1334.
    ("empty: one token takes 1334 ms",            "6/8s", &[H(0, 6)],         (0, 1),         denied(1_334),  "6.000", 0),
    // 6 − 1333 × 0.00075 = 5.00025.
    ("1 ms before one token is back",             "6/8s", &[H(0, 6)],         (1_333, 1),     denied(1),      "5.000", 0),
    // 6 − 1334 × 0.00075 + 1 = 5.9995, shown 6.000.
    ("one token back at 1334",                    "6/8s", &[H(0, 6)],         (1_334, 1),     ALLOWED,        "6.000", 0),
    // 3 back after 4000 ms: used 3, and 3 + 6 > 6 until 3 more are back, 4000 ms later.
    ("cost N after a partial refill",             "6/8s", &[H(0, 6)],         (4_000, 6),     denied(4_000),  "3.000", 3),
    ("cost above N when full",                    "6/8s", &[],                (0, 7),         EXCEEDS,        "0.000", 6),
    ("cost u64::MAX never fits",                  "6/8s", &[H(0, 2)],         (0, MAX),       EXCEEDS,        "2.000", 4),
    ("cost 0 with the bucket empty",              "6/8s", &[H(0, 6)],         (0, 0),         ALLOWED,        "6.000", 0),
    // 0.9 back: 2.1 + 1 > 3.
    ("3/10ms at +3: 0.9 < 1",                     "3/10ms", &[H(0, 3)],       (3, 1),         denied(1),      "2.100", 0),
    // 3 → 2.8 at 4 → 1.6 + 1 = 2.6 at 8 → 2.3 at 9, and 2.3 + 1 > 3 by 0.3: one more ms.
    ("fractions carry from hit to hit",           "3/10ms", THIRDS,           (9, 1),         denied(1),      "2.300", 0),
    // 2.6 − 0.6 + 1 = 3.
    ("fractions add up to a whole token",         "3/10ms", THIRDS,           (10, 1),        ALLOWED,        "3.000", 0),
    // The 100 s wait refills to 6, not beyond, so the next token is again 1334 ms away.
    ("never refilled above N",                    "6/8s", &[H(0, 6), H(100_000, 6)], (100_000, 1), denied(1_334), "6.000", 0),
    // 60 − 0.00075 = 59.99925.
    ("cost 0 past the limit after record",        "6/8s", &[R(0, 60)],        (1, 0),         ALLOWED,        "59.999", 0),
    // 1 fits once used ≤ 5: 7 tokens, 7 / 0.00075 = 9333.3 ms, so 9334.
    ("record past the limit, then the wait",      "6/8s", &[R(0, 12)],        (0, 1),         denied(9_334),  "12.000", 0),
    // Decided at 5000, refilled from there: 1334 after 5000 is 5334 after the caller's 1000.
    ("time backwards: decided at the latest",     "6/8s", &[H(5_000, 6)],     (1_000, 1),     denied(5_334),  "6.000", 0),
    // The backwards hit refilled nothing: 1334 ms after 5000 one token is back.
    ("time backwards refills nothing",            "6/8s", &[H(5_000, 6), H(1_000, 1)], (6_334, 1), ALLOWED,   "6.000", 0),
    ("a gap of many windows refills to N",        "6/8s", &[H(0, 6), H(8_000, 6)], (800_000, 6), ALLOWED,    "6.000", 0),
    // One token out is 8000 (scaled); 6 a ms give it back in ceil(8000 / 6) = 1334 ms,
    // when 8004 have come back: full, not past full. 2 are still out 1 ms earlier.
    ("1 ms before full again",                    "6/8s", &[H(0, 1)],         (1_333, 6),     denied(1),      "0.000", 5),
    ("full again the ms N × gap first covers it", "6/8s", &[H(0, 1)],         (1_334, 6),     ALLOWED,        "6.000", 0),
    // N × W = 2^53 − 1, the largest allowed: N tokens back every ms.
    ("N × W = 2^53 − 1, empty",                   "9007199254740991/1ms", &[H(0, 9_007_199_254_740_991)], (0, 1), denied(1), "9007199254740991.000", 0),
    ("N × W = 2^53 − 1, full 1 ms later",         "9007199254740991/1ms", &[H(0, 9_007_199_254_740_991)], (1, 9_007_199_254_740_991), ALLOWED, "9007199254740991.000", 0),
    ("N × W = 2^53 − 1, cost N + 1",              "9007199254740991/1ms", &[],  (0, 9_007_199_254_740_992), EXCEEDS, "0.000", 9_007_199_254_740_991),
    // Half a window gives back N / 2 = 2097151.5: used 2097151.5 + 1.
    ("near the bound, half refilled",             "4194303/2147483648ms", &[H(0, BIG)], (1 << 30, 1), ALLOWED, "2097152.500", 2_097_150),
    // N × 2^53 is far past 2^53: the gap is capped, the bucket simply full.
    ("near the bound, a gap of 2^53 ms",          "4194303/2147483648ms", &[H(0, BIG)], (LAST_MS, BIG), ALLOWED, "4194303.000", 0),
    ("1 per 2^53 − 1 ms: a token takes that long", "1/9007199254740991ms", &[H(0, 1)], (0, 1), denied(9_007_199_254_740_991), "1.000", 0),
    ("1 per 2^53 − 1 ms: back at 2^53 − 1",       "1/9007199254740991ms", &[H(0, 1)], (9_007_199_254_740_991, 1), ALLOWED, "1.000", 0),
    // 1334 ms before the end of time: 1.0005 back.
    ("near the end of time",                      "6/8s", &[H(LAST_MS - 1_334, 6)], (LAST_MS, 1), ALLOWED,   "6.000", 0),
    // 0.99975 back.
    ("near the end of time, 1 ms short",          "6/8s", &[H(LAST_MS - 1_333, 6)], (LAST_MS, 1), denied(1), "5.000", 0),
];

#[test]
fn table_rows_worked_by_hand_match_redis_and_the_core() {
    check_rows(Algorithm::TokenBucket, ROWS);
}

#[test]
fn a_request_that_spends_nothing_leaves_the_bucket_alone() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::TokenBucket, limit("6/8s"), "quiet").unwrap();
    let key = bucket.redis_key("k");
    assert!(bucket.hit(&mut conn, "k", 1_000, 6).unwrap().is_allowed());
    let before = stored(&mut conn, &key);
    let fields = |map: &HashMap<String, String>| {
        ["owed", "fraction", "refilled", "seen"]
            .map(|field| map.get(field).map_or("0", String::as_str).to_string())
    };
    assert_eq!(fields(&before), ["6", "0", "1000", "1000"]);

    // Denied, too large, and cost 0, at the latest time seen and earlier: nothing written.
    for (t, cost) in [(1_000, 1), (1_000, 7), (1_000, 0), (500, 1), (0, 6)] {
        let decision = bucket.hit(&mut conn, "k", t, cost).unwrap();
        assert_eq!(decision.spent(), 0, "at {t}, cost {cost}");
        assert_eq!(stored(&mut conn, &key), before, "at {t}, cost {cost}");
    }

    // Later: only the latest time seen moves; the bucket is still refilled from 1000, and
    // kept until it is full: 6 tokens take 8000 ms from 1000, 6000 from 3000.
    let denied = bucket.hit(&mut conn, "k", 3_000, 2).unwrap();
    // 1.5 back; 2 are back at 1000 + 2667.
    assert_eq!(
        denied.outcome,
        Outcome::Denied {
            retry_after_ms: 667
        }
    );
    let mut expected = before.clone();
    expected.insert("seen".to_string(), "3000".to_string());
    assert_eq!(stored(&mut conn, &key), expected);
    assert_expires_near(&mut conn, &key, 6_000 + EXPIRY_GRACE_MS, "after the spend");
}

#[test]
fn state_expires_when_the_bucket_is_full_again() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = RedisLimiter::new(Algorithm::TokenBucket, limit("6/8s"), "ttl").unwrap();
    let key = bucket.redis_key("k");
    // 3 out at 0: full 4000 ms later. 1000 ms later 0.75 are back and one more out: 3.25,
    // full after 4333.3, so 4334 ms. A record of 12 more: 15.25, full after 20334 ms.
    for (op, until) in [
        (H(0, 3), 4_000),
        (H(1_000, 1), 5_334),
        (R(1_000, 12), 21_334),
    ] {
        let t = match op {
            H(t, cost) => bucket.hit(&mut conn, "k", t, cost).unwrap().at_ms,
            R(t, cost) => bucket.record(&mut conn, "k", t, cost).unwrap().at_ms,
        };
        let context = format!("{op:?}");
        assert_expires_near(&mut conn, &key, until - t + EXPIRY_GRACE_MS, &context);
    }

    assert_denial_leaves_no_key(&mut conn, &bucket);
}

#[test]
fn a_record_past_2_pow_53_is_refused_and_charges_nothing() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    // 1 ms windows: used × W = owed, so the tokens owed may reach 2^53 themselves.
    let limit = limit("9007199254740991/1ms");
    let bucket = RedisLimiter::new(Algorithm::TokenBucket, limit, "record").unwrap();
    let mut core = Limiter::with_algorithm(Algorithm::TokenBucket, limit);
    let key = bucket.redis_key("k");
    for cost in [9_007_199_254_740_991, 1] {
        let decision = bucket.record(&mut conn, "k", 5, cost).unwrap();
        assert_eq!(decision, core.record(5, cost));
    }
    assert_eq!(stored(&mut conn, &key)["owed"], "9007199254740992");
    let before = stored(&mut conn, &key);
    let err = bucket.record(&mut conn, "k", 5, 1).unwrap_err();
    assert!(
        matches!(err, RedisError::RecordOutOfRange { cost: 1 }),
        "{err}"
    );
    assert_eq!(stored(&mut conn, &key), before);
    // 1 ms gives N back: 1 owed, and N − 1 more fit.
    let expected = core.hit(6, 9_007_199_254_740_990);
    assert!(expected.is_allowed());
    assert_eq!(
        bucket
            .hit(&mut conn, "k", 6, 9_007_199_254_740_990)
            .unwrap(),
        expected
    );
}

#[test]
fn limits_at_the_bound_are_taken_and_one_past_it_refused() {
    assert_eq!(
        RedisLimiter::max_scaled(Algorithm::TokenBucket),
        (1 << 53) - 1
    );
    // (2^27 − 1) × 2^26 = 2^53 − 2^26 and (2^53 − 1) × 1 are in; one token more is out.
    for (tokens, window_ms) in [((1 << 27) - 1, 1 << 26), ((1 << 53) - 1, 1)] {
        let at_bound = Limit::new(tokens, window_ms).unwrap();
        assert!(
            RedisLimiter::new(Algorithm::TokenBucket, at_bound, "p").is_ok(),
            "{at_bound}"
        );
        let past = Limit::new(tokens + 1, window_ms).unwrap();
        assert_eq!(
            RedisLimiter::new(Algorithm::TokenBucket, past, "p").unwrap_err(),
            RedisLimitError::TooLarge {
                algorithm: Algorithm::TokenBucket,
                limit: past,
                max_scaled: (1 << 53) - 1,
            }
        );
    }
    let err =
        RedisLimiter::new(Algorithm::TokenBucket, limit("9007199254740992/1ms"), "p").unwrap_err();
    assert_eq!(
        err.to_string(),
        "limit 9007199254740992/1ms is too large for the token-bucket algorithm on Redis: \
         tokens × window_ms must be at most 9007199254740991 (2^53 − 1) for its script's \
         numbers to stay within 2^53, where Lua's doubles stop being exact; got \
         9007199254740992 × 1 = 9007199254740992; lower the tokens or the window"
    );
}
