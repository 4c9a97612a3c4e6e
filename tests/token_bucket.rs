//! The token bucket: capacity N, full at the first request, refilled continuously at N
//! tokens per W ms before every check, never above N, and no fraction of a token ever lost.
//!
//! Every expected value below was worked out by hand: after d ms a bucket gets back
//! N × d / W tokens (6/8s: 0.00075 per ms; 3/10ms: 0.3 per ms).

mod common;

use common::Op::{self, H, R};
use common::{
    assert_limiter_runs_the_same, assert_peek_changes_nothing, assert_reset_forgets_everything,
    check_table, denied, limit, Row, ALLOWED, EXCEEDS, MAX,
};
use trickle_core::state::TokenBucketState;
use trickle_core::{Algorithm, Outcome, TokenBucket};

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
    ("cost N when full",                          "6/8s", &[],                (0, 6),         ALLOWED,        "6.000", 0),
    ("cost above N when full",                    "6/8s", &[],                (0, 7),         EXCEEDS,        "0.000", 6),
    ("cost above N with some used",               "6/8s", &[H(0, 2)],         (0, 7),         EXCEEDS,        "2.000", 4),
    // 3/10ms: one token takes 10/3 = 3.3 ms, so 4.
    ("3/10ms empty: one token takes 4 ms",        "3/10ms", &[H(0, 3)],       (0, 1),         denied(4),      "3.000", 0),
    // 0.9 back: 2.1 + 1 > 3.
    ("3/10ms at +3: 0.9 < 1",                     "3/10ms", &[H(0, 3)],       (3, 1),         denied(1),      "2.100", 0),
    // 1.2 back: 1.8 + 1 = 2.8.
    ("3/10ms at +4: 1.2 ≥ 1",                     "3/10ms", &[H(0, 3)],       (4, 1),         ALLOWED,        "2.800", 0),
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
    // u64::MAX tokens come back every ms.
    ("u64::MAX tokens per 1 ms, empty",           "18446744073709551615/1ms", &[H(0, MAX)], (0, 1), denied(1), "18446744073709551615.000", 0),
    ("u64::MAX tokens per 1 ms, full 1 ms later", "18446744073709551615/1ms", &[H(0, MAX)], (1, MAX), ALLOWED, "18446744073709551615.000", 0),
    ("1 per u64::MAX ms: a token takes u64::MAX", "1/18446744073709551615ms", &[H(0, 1)], (0, 1), denied(MAX), "1.000", 0),
    ("1 per u64::MAX ms: back at u64::MAX",       "1/18446744073709551615ms", &[H(0, 1)], (MAX, 1), ALLOWED, "1.000", 0),
    // N = W: one token per ms.
    ("u64::MAX per u64::MAX ms: 2 take 2 ms",     "18446744073709551615/18446744073709551615ms", &[H(0, MAX)], (0, 2), denied(2), "18446744073709551615.000", 0),
    ("u64::MAX per u64::MAX ms: 2 back at 2",     "18446744073709551615/18446744073709551615ms", &[H(0, MAX)], (2, 2), ALLOWED, "18446744073709551615.000", 0),
    // 1334 ms before the end of the clock: 1.0005 back.
    ("near the end of time",                      "6/8s", &[H(MAX - 1_334, 6)], (MAX, 1),     ALLOWED,        "6.000", 0),
    // 0.99975 back; the token would be whole at MAX + 1, past the clock.
    ("near the end of time, 1 ms short",          "6/8s", &[H(MAX - 1_333, 6)], (MAX, 1),     denied(1),      "5.000", 0),
];

#[test]
fn table() {
    check_table::<TokenBucketState>(ROWS);
}

/// 3/10ms drained at 0, then taking a token whenever one is whole: the k-th comes back at
/// exactly ceil(10k / 3) ms, for all 300,000 of them. A bucket that dropped a fraction of a
/// token at any refill would fall behind that schedule for good.
#[test]
fn the_kth_token_comes_back_at_ceil_k_w_over_n_without_drift() {
    let mut bucket = TokenBucket::new(limit("3/10ms"));
    assert!(bucket.hit(0, 3).is_allowed());
    let mut taken: u64 = 0;
    for now in 1..=1_000_000u64 {
        let due = (10 * (taken + 1)).div_ceil(3);
        let decision = bucket.hit(now, 1);
        if now == due {
            assert!(
                decision.is_allowed(),
                "token {} not back at {now}",
                taken + 1
            );
            taken += 1;
        } else {
            assert_eq!(
                decision.outcome,
                Outcome::Denied {
                    retry_after_ms: due - now
                },
                "token {} at {now}",
                taken + 1
            );
        }
    }
    assert_eq!(taken, 300_000);
}

/// The tokens a bucket holds as an exact fraction `level / W`, refilled by `N × elapsed / W`
/// and capped at N: the model the bucket must agree with, written the other way round (it
/// counts what is left, the bucket counts what is used).
struct ExactBucket {
    tokens: u128,
    window_ms: u128,
    level: u128,
    latest_ms: u64,
}

impl ExactBucket {
    fn new(tokens: u64, window_ms: u64) -> ExactBucket {
        let (tokens, window_ms) = (u128::from(tokens), u128::from(window_ms));
        ExactBucket {
            tokens,
            window_ms,
            level: tokens * window_ms,
            latest_ms: 0,
        }
    }

    fn refill(&mut self, now_ms: u64) {
        let now_ms = now_ms.max(self.latest_ms);
        let capacity = self.tokens * self.window_ms;
        self.level = (self.level + self.tokens * u128::from(now_ms - self.latest_ms)).min(capacity);
        self.latest_ms = now_ms;
    }

    /// The outcome of a hit, and the tokens used after it, times W.
    fn hit(&mut self, now_ms: u64, cost: u64) -> (Outcome, u128) {
        self.refill(now_ms);
        let capacity = self.tokens * self.window_ms;
        let cost = u128::from(cost);
        let needed = cost * self.window_ms;
        let outcome = if cost > self.tokens {
            Outcome::ExceedsLimit
        } else if needed <= self.level {
            self.level -= needed;
            Outcome::Allowed
        } else {
            // The first whole ms at which level + N × d ≥ needed.
            let wait = (needed - self.level).div_ceil(self.tokens);
            Outcome::Denied {
                retry_after_ms: (self.latest_ms - now_ms) + wait as u64,
            }
        };
        (outcome, capacity - self.level)
    }
}

/// Small, irregular hits on 7/1000ms for 200,000 requests, time sometimes repeating: every
/// decision, every `used` and every retry agrees with the exact model.
#[test]
fn long_run_of_small_hits_matches_an_exact_rational_model() {
    let mut bucket = TokenBucket::new(limit("7/1000ms"));
    let mut model = ExactBucket::new(7, 1_000);
    // A fixed linear congruential sequence: the same run every time.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |bound: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % bound
    };
    let mut now: u64 = 0;
    let mut allowed = 0;
    for step in 0..200_000 {
        now += next(300);
        let cost = next(4);
        let decision = bucket.hit(now, cost);
        let (outcome, used) = model.hit(now, cost);
        assert_eq!(
            decision.outcome, outcome,
            "step {step} at {now}, cost {cost}"
        );
        assert_eq!(decision.used.numerator(), used, "step {step} at {now}");
        if decision.is_allowed() && cost > 0 {
            allowed += 1;
        }
    }
    // The run must be tight enough to be denied often, and loose enough to pass often.
    assert!(allowed > 50_000 && allowed < 150_000, "allowed {allowed}");
}

#[test]
fn record_charges_past_the_limit_and_is_allowed() {
    let mut bucket = TokenBucket::new(limit("6/8s"));
    let recorded = bucket.record(0, 9);
    assert_eq!(recorded.outcome, Outcome::Allowed);
    assert_eq!(recorded.used.to_string(), "9.000");
    assert_eq!(recorded.remaining(), 0);
    // 9 + 1 − 6 = 4 tokens to come back: 4 / 0.00075 = 5333.3 ms.
    assert_eq!(bucket.peek(0, 1).retry_after_ms(), Some(5_334));
}

#[test]
fn peek_changes_nothing() {
    assert_peek_changes_nothing::<TokenBucketState>();
}

#[test]
fn reset_forgets_everything() {
    assert_reset_forgets_everything::<TokenBucketState>();
}

#[test]
fn limiter_runs_the_same_token_bucket() {
    assert_limiter_runs_the_same::<TokenBucketState>(
        Algorithm::TokenBucket,
        "3/10ms",
        &[(0, 3), (3, 1), (4, 1), (8, 1), (9, 1), (10, 1), (2, 2)],
    );
}

/// With N × W near 2^128 (here both u64::MAX: one token per ms), the wait adds
/// `used + cost × W` in u128 with saturation before subtracting N × W, so the excess above
/// u128::MAX is lost and the retry comes too early. Drained at 0, 3 tokens are back at 3 ms;
/// the bucket says 2, and at 2 it still denies.
#[test]
fn retry_comes_too_early_when_used_plus_cost_overflows_u128() {
    let mut bucket = TokenBucket::new(limit("18446744073709551615/18446744073709551615ms"));
    assert!(bucket.hit(0, MAX).is_allowed());
    let decision = bucket.hit(0, 3);
    assert!(!bucket.peek(2, 3).is_allowed());
    assert!(bucket.peek(3, 3).is_allowed());
    assert_eq!(decision.outcome, Outcome::Denied { retry_after_ms: 3 });
}

/// `record` adds `cost × W` to the used amount with saturation at u128::MAX, so with N × W
/// near 2^128 a second large record is mostly dropped and the bucket refills far too soon.
/// Under u64::MAX per u64::MAX ms (one token per ms), two records of u64::MAX leave
/// 2 × u64::MAX tokens to refill: one token fits again only once used ≤ u64::MAX − 1, at
/// u64::MAX + 1 ms, past the end of the clock. The bucket lets it in at 3 ms.
#[test]
fn record_past_u128_used_loses_the_excess() {
    let mut bucket = TokenBucket::new(limit("18446744073709551615/18446744073709551615ms"));
    bucket.record(0, MAX);
    bucket.record(0, MAX);
    let decision = bucket.hit(3, 1);
    // 2 × MAX − 3 tokens used at 3; room for 1 at MAX + 1, that is MAX − 2 after 3.
    assert_eq!(
        decision.outcome,
        Outcome::Denied {
            retry_after_ms: MAX - 2
        }
    );
}
