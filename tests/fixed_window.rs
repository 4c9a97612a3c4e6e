//! The fixed window: one counter for the window [kW, (k+1)W) the request falls in, emptied
//! at every multiple of W.
//!
//! Every expected value below was worked out by hand from that rule.

mod common;

use common::Op::{H, R};
use common::{
    assert_limiter_runs_the_same, assert_peek_changes_nothing, assert_reset_forgets_everything,
    check_table, denied, limit, Row, ALLOWED, EXCEEDS, MAX,
};
use trickle_core::state::FixedState;
use trickle_core::{Algorithm, FixedWindow, Outcome};

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("first hit",                                 "6/8s", &[],                (0, 1),        ALLOWED,        "1.000", 5),
    ("kW − 1: the window's last ms",              "6/8s", &[H(0, 6)],         (7_999, 1),    denied(1),      "6.000", 0),
    ("kW: the next window starts empty",          "6/8s", &[H(0, 6)],         (8_000, 6),    ALLOWED,        "6.000", 0),
    // The known flaw: 12 tokens within 2 ms across a boundary.
    ("2N in 2 ms across a boundary",              "6/8s", &[H(7_999, 6)],     (8_000, 6),    ALLOWED,        "6.000", 0),
    ("denied early waits for the window's end",   "6/8s", &[H(0, 6)],         (100, 1),      denied(7_900),  "6.000", 0),
    ("cost N on a partly used window",            "6/8s", &[H(0, 1)],         (1, 6),        denied(7_999),  "1.000", 5),
    ("cost N on an empty window",                 "6/8s", &[],                (0, 6),        ALLOWED,        "6.000", 0),
    ("cost above N",                              "6/8s", &[],                (0, 7),        EXCEEDS,        "0.000", 6),
    ("cost above N with some used",               "6/8s", &[H(0, 2)],         (8, 7),        EXCEEDS,        "2.000", 4),
    ("cost 0 past the limit after record",        "6/8s", &[R(0, 20)],        (10, 0),       ALLOWED,        "20.000", 0),
    // However far past the limit, everything is forgotten at the next window.
    ("record past the limit, then the wait",      "6/8s", &[R(100, 50)],      (200, 1),      denied(7_800),  "50.000", 0),
    ("a gap of several windows",                  "6/8s", &[H(0, 6), H(8_000, 6)], (40_005, 6), ALLOWED,     "6.000", 0),
    // Decided at 9000, in window 1, which ends at 16000: 15900 after the caller's 100.
    ("time backwards: decided at the latest",     "6/8s", &[H(9_000, 6)],     (100, 1),      denied(15_900), "6.000", 0),
    // The hit at 7000 is taken as 9000, so it lands in window 1 too.
    ("backwards hits land in the latest window",  "6/8s", &[H(9_000, 3), H(7_000, 3)], (8_500, 1), denied(7_500), "6.000", 0),
    ("u64::MAX tokens per 1 ms",                  "18446744073709551615/1ms", &[H(0, MAX)], (0, 1), denied(1), "18446744073709551615.000", 0),
    ("u64::MAX tokens, next 1 ms window",         "18446744073709551615/1ms", &[H(0, MAX)], (1, MAX), ALLOWED, "18446744073709551615.000", 0),
    // Window 0 is [0, MAX): its last ms is MAX − 1, and window 1 begins at MAX.
    ("a u64::MAX ms window, its last ms",         "1/18446744073709551615ms", &[H(0, 1)], (MAX - 1, 1), denied(1), "1.000", 0),
    ("a u64::MAX ms window, the next begins",     "1/18446744073709551615ms", &[H(0, 1)], (MAX, 1), ALLOWED, "1.000", 0),
    // MAX % 8000 = 7615: the last window begins at MAX − 7615.
    ("the last window of the clock begins",       "6/8s", &[H(MAX - 7_616, 6)], (MAX - 7_615, 6), ALLOWED,  "6.000", 0),
    // The next window would begin at MAX + 385, past the clock.
    ("denied in the last window of the clock",    "6/8s", &[H(MAX, 6)],       (MAX, 1),      denied(385),    "6.000", 0),
];

#[test]
fn table() {
    check_table::<FixedState>(ROWS);
}

#[test]
fn record_charges_past_the_limit_and_is_allowed() {
    let mut bucket = FixedWindow::new(limit("6/8s"));
    let recorded = bucket.record(0, 9);
    assert_eq!(recorded.outcome, Outcome::Allowed);
    assert_eq!(recorded.used.to_string(), "9.000");
    assert_eq!(recorded.remaining(), 0);
    assert_eq!(recorded.spent(), 9);
}

#[test]
fn peek_changes_nothing() {
    assert_peek_changes_nothing::<FixedState>();
}

#[test]
fn reset_forgets_everything() {
    assert_reset_forgets_everything::<FixedState>();
}

#[test]
fn limiter_runs_the_same_fixed_window() {
    assert_limiter_runs_the_same::<FixedState>(
        Algorithm::Fixed,
        "6/8s",
        &[(0, 5), (7_999, 1), (7_999, 1), (8_000, 6), (3, 1)],
    );
}
