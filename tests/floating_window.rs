//! The floating window: windows [kW, (k+1)W) aligned to multiples of W from 0, and at e ms
//! into window k, `used = previous × (W − e) / W + current`, decided exactly.
//!
//! Every expected value below was worked out by hand from that formula; the comment on a
//! row shows the arithmetic where it is not obvious.

mod common;

use common::Op::{self, H, R};
use common::{
    assert_limiter_runs_the_same, assert_no_failures, assert_peek_changes_nothing,
    assert_reset_forgets_everything, check_probe, denied, limit, replay, Expected, ALLOWED,
    EXCEEDS, MAX,
};
use trickle_core::state::FloatingState;
use trickle_core::{Algorithm, FloatingWindow, Outcome};

/// name, limit, requests before, probe (t, cost), outcome, used after, remaining,
/// (previous, current, elapsed_ms) after.
type Row = (
    &'static str,
    &'static str,
    &'static [Op],
    (u64, u64),
    Outcome,
    &'static str,
    u64,
    (u64, u64, u64),
);

const DOC_HITS: &[Op] = &[
    H(0, 1),
    H(1_000, 1),
    H(2_000, 1),
    H(3_000, 1),
    H(9_000, 1),
    H(10_000, 1),
];
const DOC_HITS_FULL: &[Op] = &[
    H(0, 1),
    H(1_000, 1),
    H(2_000, 1),
    H(3_000, 1),
    H(9_000, 1),
    H(10_000, 1),
    H(11_000, 1),
];

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("first hit at 0",                          "6/8s",  &[],                 (0, 1),        ALLOWED,         "1.000", 5, (0, 1, 0)),
    // 4 × 5000/8000 + 2 = 4.5, + 1 = 5.5 ≤ 6.
    ("crate doc example, allowed",              "6/8s",  DOC_HITS,            (11_000, 1),   ALLOWED,         "5.500", 0, (4, 3, 3_000)),
    // 5.5 + 1 > 6; 4 × (8000 − e)/8000 + 3 + 1 ≤ 6 ⇔ e ≥ 4000, at 12000.
    ("crate doc example, denied",               "6/8s",  DOC_HITS_FULL,       (11_000, 1),   denied(1_000),   "5.500", 0, (4, 3, 3_000)),
    // 4 × 4001/8000 + 3 = 5.0005, shown rounded half up.
    ("1 ms before the doc example's retry",     "6/8s",  DOC_HITS_FULL,       (11_999, 1),   denied(1),       "5.001", 0, (4, 3, 3_999)),
    // 4 × 4000/8000 + 3 + 1 = 6.
    ("at the doc example's retry",              "6/8s",  DOC_HITS_FULL,       (12_000, 1),   ALLOWED,         "6.000", 0, (4, 4, 4_000)),
    ("cost N on an empty window",               "6/8s",  &[],                 (0, 6),        ALLOWED,         "6.000", 0, (0, 6, 0)),
    ("cost above N on an empty window",         "6/8s",  &[],                 (0, 7),        EXCEEDS,         "0.000", 6, (0, 0, 0)),
    ("cost above N with some used",             "6/8s",  &[H(0, 1)],          (100, 7),      EXCEEDS,         "1.000", 5, (0, 1, 100)),
    // Window 0's last ms: current = 6. Next window: 6 × (8000 − e) ≤ 5 × 8000 ⇔ e ≥ 1333.3, so
    // 8000 + 1334 = 9334, 1335 after 7999.
    ("kW − 1: the window's last ms",            "6/8s",  &[H(0, 6)],          (7_999, 1),    denied(1_335),   "6.000", 0, (0, 6, 7_999)),
    // e = 0: the previous window counts in full, overlap 1.
    ("kW: previous counts in full",             "6/8s",  &[H(0, 6)],          (8_000, 1),    denied(1_334),   "6.000", 0, (6, 0, 0)),
    // 6 × 6667/8000 = 5.00025 and 5.00025 + 1 > 6.
    ("1 ms before enough has slid out",         "6/8s",  &[H(0, 6)],          (9_333, 1),    denied(1),       "5.000", 0, (6, 0, 1_333)),
    // 6 × 6666/8000 + 1 = 5.9995, shown as 6.000 (half up carries into the whole part).
    ("as soon as enough has slid out",          "6/8s",  &[H(0, 6)],          (9_334, 1),    ALLOWED,         "6.000", 0, (6, 1, 1_334)),
    // 6 × 4000/8000 = 3, + 6 > 6; with current = 0 the cost fits only once previous is gone: at 16000.
    ("cost N while previous still overlaps",    "6/8s",  &[H(0, 6)],          (12_000, 6),   denied(4_000),   "3.000", 3, (6, 0, 4_000)),
    // e = 7999: 6 × 1/8000 = 0.00075 still counts, so 6 more does not fit until 16000.
    ("(k+1)W − 1: previous counts 1/W",         "6/8s",  &[H(0, 6)],          (15_999, 6),   denied(1),       "0.001", 5, (6, 0, 7_999)),
    ("(k+2)W: two windows on, all forgotten",   "6/8s",  &[H(0, 6)],          (16_000, 6),   ALLOWED,         "6.000", 0, (0, 6, 0)),
    // 5 × 1/8000 + 2 = 2.000625, shown 2.001.
    ("one window on, current became previous",  "6/8s",  &[H(7_999, 5)],      (15_999, 2),   ALLOWED,         "2.001", 3, (5, 2, 7_999)),
    ("a gap of several windows empties both",   "6/8s",  &[H(0, 3), H(8_000, 3)], (40_100, 6), ALLOWED,        "6.000", 0, (0, 6, 100)),
    ("cost 0 past the limit after record",      "6/8s",  &[R(0, 10)],         (100, 0),      ALLOWED,         "10.000", 0, (0, 10, 100)),
    // current + cost = 13 > 6: next window, 12 × (8000 − e) ≤ 5 × 8000 ⇔ e ≥ 4666.7, so 12667 − 2000.
    ("record past the limit, then the wait",    "6/8s",  &[R(1_000, 12)],     (2_000, 1),    denied(10_667),  "12.000", 0, (0, 12, 2_000)),
    // 100 × (8000 − e) ≤ 0 only at e = 8000: the start of window 2.
    ("record so far past it waits two windows", "6/8s",  &[R(0, 100)],        (0, 6),        denied(16_000),  "100.000", 0, (0, 100, 0)),
    // Decided at 10000 (e = 2000): window 2 needs 6 × (8000 − e) ≤ 40000, e ≥ 1334: 17334 − 9000.
    ("time backwards: decided at the latest",   "6/8s",  &[H(10_000, 6)],     (9_000, 1),    denied(8_334),   "6.000", 0, (0, 6, 2_000)),
    // 7000 is taken as 8000, so current = 5; window 2: 5 × (8000 − e) ≤ 32000, e ≥ 1600: 17600 − 100.
    ("time backwards into an earlier window",   "6/8s",  &[H(8_000, 3), H(7_000, 2)], (100, 2), denied(17_500), "5.000", 1, (0, 5, 0)),
    ("150/15m: half the previous window",       "150/15m", &[H(0, 150)],      (1_350_000, 75), ALLOWED,       "150.000", 0, (150, 75, 450_000)),
    // 150 × 450001/900000 = 75.000167.
    ("150/15m: 1 ms before half",               "150/15m", &[H(0, 150)],      (1_349_999, 75), denied(1),     "75.000", 74, (150, 0, 449_999)),
    // 7 × (1000 − e) ≤ 6000 ⇔ e ≥ 142.9, so 143.
    ("7/1000ms: previous in full",              "7/1000ms", &[H(0, 7)],       (1_000, 1),    denied(143),     "7.000", 0, (7, 0, 0)),
    // 7 × 857/1000 + 1 = 6.999.
    ("7/1000ms: at the retry",                  "7/1000ms", &[H(0, 7)],       (1_143, 1),    ALLOWED,         "6.999", 0, (7, 1, 143)),
    // Window 1 at t = 1: MAX + 1 > MAX; window 2 at t = 2 is empty.
    ("u64::MAX tokens per 1 ms",                "18446744073709551615/1ms", &[H(0, MAX)], (0, 1), denied(2), "18446744073709551615.000", 0, (0, MAX, 0)),
    // Window 1 begins at MAX; previous = 1 counts in full there, and slides out only at 2 × MAX,
    // past the end of the clock.
    ("a u64::MAX ms window at the end of time", "1/18446744073709551615ms", &[H(MAX - 1, 1)], (MAX, 1), denied(MAX), "1.000", 0, (1, 0, 0)),
    ("u64::MAX tokens per u64::MAX ms, cost N", "18446744073709551615/18446744073709551615ms", &[H(0, MAX)], (MAX, MAX), denied(MAX), "18446744073709551615.000", 0, (MAX, 0, 0)),
    // MAX × (MAX − e)/MAX + 1 ≤ MAX ⇔ e ≥ 1, at MAX + 1: past the clock.
    ("u64::MAX per u64::MAX ms, cost 1",        "18446744073709551615/18446744073709551615ms", &[H(0, MAX)], (MAX, 1), denied(1), "18446744073709551615.000", 0, (MAX, 0, 0)),
    // 2 × (MAX − e) ≤ MAX ⇔ e ≥ MAX − floor(MAX/2) = 2^63.
    ("2 per u64::MAX ms: halfway is 2^63",      "2/18446744073709551615ms", &[H(0, 2)], (MAX, 1), denied(9_223_372_036_854_775_808), "2.000", 0, (2, 0, 0)),
    // MAX % 8000 = 7615; MAX − 8000 lies in the window before, so 6 × 385/8000 + 1 = 1.28875.
    ("near the end of time",                    "6/8s",  &[H(MAX - 8_000, 6)], (MAX, 1),     ALLOWED,         "1.289", 4, (6, 1, 7_615)),
    // Next window would begin at MAX + 385; then 1334 more: 1719, past the clock.
    ("denied at the end of time",               "6/8s",  &[H(MAX, 6)],        (MAX, 1),      denied(1_719),   "6.000", 0, (0, 6, 7_615)),
];

#[test]
fn table() {
    let mut failures = Vec::new();
    for &(name, text, ops, probe, outcome, used, remaining, counters) in ROWS {
        let limit = limit(text);
        let mut bucket: FloatingWindow = replay(limit, ops);
        let expected = Expected {
            outcome,
            used,
            remaining,
        };
        let decision = check_probe(name, &mut bucket, probe, &expected, &mut failures);
        let Some(seen) = decision.counters else {
            failures.push(format!("{name}: no counters"));
            continue;
        };
        let (previous, current, elapsed) = counters;
        if (seen.previous, seen.current, seen.elapsed_ms)
            != (u128::from(previous), u128::from(current), elapsed)
        {
            failures.push(format!(
                "{name}: (previous, current, elapsed) = {:?}, expected {counters:?}",
                (seen.previous, seen.current, seen.elapsed_ms)
            ));
        }
        // The exact amount behind the 3-decimal string: previous × (W − e) + current × W over W.
        let window = limit.window_ms();
        let numerator = u128::from(previous) * u128::from(window - elapsed)
            + u128::from(current) * u128::from(window);
        if (decision.used.numerator(), decision.used.denominator()) != (numerator, window) {
            failures.push(format!(
                "{name}: used = {}/{}, expected {numerator}/{window}",
                decision.used.numerator(),
                decision.used.denominator()
            ));
        }
    }
    assert_no_failures(&failures);
}

#[test]
fn counters_show_the_overlap() {
    let mut bucket = FloatingWindow::new(limit("6/8s"));
    bucket.hit(0, 4);
    let counters = bucket
        .peek(11_000, 1)
        .counters
        .expect("the floating window's counters");
    assert_eq!(counters.window_ms, 8_000);
    assert_eq!(counters.elapsed_ms, 3_000);
    assert_eq!(counters.overlap_ms(), 5_000);
    assert_eq!(counters.overlap(), 0.625);
}

#[test]
fn used_shows_any_precision_rounded_half_up() {
    let mut bucket = FloatingWindow::new(limit("6/8s"));
    bucket.hit(0, 4);
    bucket.hit(9_000, 2);
    // 4 × 5000/8000 + 2 = 4.5
    let used = bucket.peek(11_000, 0).used;
    assert_eq!(format!("{used:.1}"), "4.5");
    assert_eq!(format!("{used:.0}"), "5");
    assert_eq!(used.floor(), 4);
    assert_eq!(used.as_f64(), 4.5);
    // 4 × 4001/8000 + 2 = 4.0005
    let used = bucket.peek(11_999, 0).used;
    assert_eq!(format!("{used:.3}"), "4.001");
    assert_eq!(format!("{used:.4}"), "4.0005");
    assert_eq!(format!("{used:.18}"), "4.000500000000000000");
    // More than 18 decimals are not shown.
    assert_eq!(format!("{used:.30}"), "4.000500000000000000");
}

#[test]
fn record_is_always_allowed_and_charges_past_the_limit() {
    let mut bucket = FloatingWindow::new(limit("6/8s"));
    let recorded = bucket.record(1_000, 10);
    assert_eq!(recorded.outcome, Outcome::Allowed);
    assert_eq!(recorded.used.to_string(), "10.000");
    assert_eq!(recorded.remaining(), 0);
    assert_eq!(recorded.spent(), 10);
    // Even a cost above N, which a hit could never spend.
    let recorded = bucket.record(1_000, 7);
    assert_eq!(recorded.outcome, Outcome::Allowed);
    assert_eq!(recorded.used.to_string(), "17.000");
}

#[test]
fn peek_changes_nothing() {
    assert_peek_changes_nothing::<FloatingState>();
}

#[test]
fn time_backwards_is_decided_at_the_latest_time() {
    let mut bucket = FloatingWindow::new(limit("6/8s"));
    bucket.hit(10_000, 6);
    let decision = bucket.hit(9_000, 1);
    assert_eq!(decision.at_ms, 10_000);
    // Nothing goes in beyond the limit, however far back the clock goes.
    for now in [0, 1, 7_999, 8_000, 9_999] {
        assert!(!bucket.hit(now, 1).is_allowed(), "at {now}");
    }
    // The denials moved nothing: the state is as if only the first hit had happened.
    let mut only_forward = FloatingWindow::new(limit("6/8s"));
    only_forward.hit(10_000, 6);
    assert_eq!(bucket, only_forward);
}

#[test]
fn reset_forgets_everything() {
    assert_reset_forgets_everything::<FloatingState>();
}

#[test]
fn limiter_runs_the_same_floating_window() {
    assert_limiter_runs_the_same::<FloatingState>(
        Algorithm::Floating,
        "6/8s",
        &[
            (0, 4),
            (9_000, 2),
            (11_000, 1),
            (11_000, 1),
            (11_999, 1),
            (12_000, 1),
        ],
    );
}

/// `record` adds to `current` with saturation at u64::MAX, so charges past u64::MAX tokens in
/// one window are dropped, and the next window's share of them comes out too small. Here
/// 2 × u64::MAX tokens recorded in window 0 still weigh 2 × u64::MAX / 2^32 ≈ 2^33 tokens in
/// window 1's last ms, so a cost of 2^32 does not fit under 2^33 per window; the window only
/// remembers u64::MAX, weighs it ≈ 2^32, and lets the request in.
#[test]
fn record_past_u64_max_tokens_in_one_window_loses_the_excess() {
    let window_ms = 1 << 32;
    let mut bucket = FloatingWindow::new(limit("8589934592/4294967296ms"));
    bucket.record(0, MAX);
    bucket.record(0, MAX);
    // Window 1's last ms; window 2, where nothing counts any more, begins 1 ms later.
    let decision = bucket.hit(2 * window_ms - 1, 1 << 32);
    assert_eq!(decision.outcome, Outcome::Denied { retry_after_ms: 1 });
}
