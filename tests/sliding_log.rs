//! The sliding log, the exact sliding window: the tokens of a request allowed at s count
//! while s > t − W, and come back at exactly s + W.
//!
//! Every expected value below was worked out by hand from that rule.

mod common;

use common::Op::{self, H, R};
use common::{
    assert_limiter_runs_the_same, assert_reset_forgets_everything, check_table, denied, limit, Row,
    ALLOWED, EXCEEDS, MAX,
};
use trickle_core::state::SlidingLogState;
use trickle_core::{Algorithm, Outcome, SlidingLog};

const SIX_IN_600_MS: &[Op] = &[
    H(0, 1),
    H(100, 1),
    H(200, 1),
    H(300, 1),
    H(400, 1),
    H(500, 1),
];
const TWO_EVERY_SECOND: &[Op] = &[H(0, 2), H(1_000, 2), H(2_000, 2)];

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("first hit",                                "6/8s", &[],                 (0, 1),        ALLOWED,        "1.000", 5),
    // The token spent at 0 is the first back, at 8000.
    ("the seventh waits for the first",          "6/8s", SIX_IN_600_MS,       (600, 1),      denied(7_400),  "6.000", 0),
    ("s + W − 1: still counted",                 "6/8s", &[H(1_000, 6)],      (8_999, 1),    denied(1),      "6.000", 0),
    ("s + W: back, exactly",                     "6/8s", &[H(1_000, 6)],      (9_000, 6),    ALLOWED,        "6.000", 0),
    // At 8500 the 2 from 0 are back (used 4); 3 fits once used ≤ 3: the 2 from 1000 return at 9000.
    ("tokens come back entry by entry",          "6/8s", TWO_EVERY_SECOND,    (8_500, 3),    denied(500),    "4.000", 2),
    // 4 fits once used ≤ 2: entries 0 and 1000 must both return, at 9000.
    ("a larger cost waits for more entries",     "6/8s", TWO_EVERY_SECOND,    (100, 4),      denied(8_900),  "6.000", 0),
    ("cost N on an empty log",                   "6/8s", &[],                 (0, 6),        ALLOWED,        "6.000", 0),
    ("cost above N on an empty log",             "6/8s", &[],                 (0, 7),        EXCEEDS,        "0.000", 6),
    ("cost above N with some used",              "6/8s", &[H(0, 2)],          (1, 7),        EXCEEDS,        "2.000", 4),
    ("cost 0 past the limit after record",       "6/8s", &[R(0, 100)],        (5, 0),        ALLOWED,        "100.000", 0),
    ("record past the limit waits for its entry", "6/8s", &[R(0, 10)],        (10, 1),       denied(7_990),  "10.000", 0),
    // used 8; 1 fits once used ≤ 5: the 4 from 0 return at 8000.
    ("records at two times",                     "6/8s", &[R(0, 4), R(1_000, 4)], (2_000, 1), denied(6_000), "8.000", 0),
    // Fixed windows mean nothing to the log: the tokens from 7999 return at 15999.
    ("window boundaries do not matter",          "6/8s", &[H(7_999, 6)],      (8_000, 1),    denied(7_999),  "6.000", 0),
    ("a gap of many windows",                    "6/8s", &[H(0, 6), H(8_000, 6)], (100_000, 6), ALLOWED,    "6.000", 0),
    // Decided at 5000; the 6 from 5000 return at 13000, 12000 after the caller's 1000.
    ("time backwards: decided at the latest",    "6/8s", &[H(5_000, 6)],      (1_000, 1),    denied(12_000), "6.000", 0),
    // The hit at 1000 was logged at 5000, so all 6 return at 13000.
    ("backwards hits are logged at the latest",  "6/8s", &[H(5_000, 3), H(1_000, 3)], (12_999, 1), denied(1), "6.000", 0),
    ("backwards hits return with the latest",    "6/8s", &[H(5_000, 3), H(1_000, 3)], (13_000, 6), ALLOWED,  "6.000", 0),
    ("u64::MAX tokens per 1 ms",                 "18446744073709551615/1ms", &[H(0, MAX)], (0, 1), denied(1), "18446744073709551615.000", 0),
    ("u64::MAX tokens, back 1 ms later",         "18446744073709551615/1ms", &[H(0, MAX)], (1, MAX), ALLOWED, "18446744073709551615.000", 0),
    // s + W = 0 + MAX: back at the last ms the clock has.
    ("a u64::MAX ms window, 1 ms before",        "1/18446744073709551615ms", &[H(0, 1)], (MAX - 1, 1), denied(1), "1.000", 0),
    ("a u64::MAX ms window, back at u64::MAX",   "1/18446744073709551615ms", &[H(0, 1)], (MAX, 1), ALLOWED, "1.000", 0),
    ("u64::MAX per u64::MAX ms, 1 ms before",    "18446744073709551615/18446744073709551615ms", &[H(0, MAX)], (MAX - 1, 1), denied(1), "18446744073709551615.000", 0),
    ("near the end of time: back at u64::MAX",   "6/8s", &[H(MAX - 8_000, 6)], (MAX, 6),     ALLOWED,        "6.000", 0),
    // Back at MAX + 1, past the end of the clock.
    ("near the end of time: back after it",      "6/8s", &[H(MAX - 7_999, 6)], (MAX, 1),     denied(1),      "6.000", 0),
];

#[test]
fn table() {
    check_table::<SlidingLogState>(ROWS);
}

#[test]
fn requests_in_the_same_millisecond_share_one_entry() {
    let mut log = SlidingLog::new(limit("6/8s"));
    log.hit(0, 1);
    log.hit(0, 2);
    log.record(0, 1);
    log.hit(1, 1);
    assert_eq!(log.state().logged_ms(), 2);
    // A denial logs nothing.
    log.hit(2, 6);
    assert_eq!(log.state().logged_ms(), 2);
}

#[test]
fn entries_that_came_back_are_forgotten() {
    let mut log = SlidingLog::new(limit("6/8s"));
    for t in 0..6 {
        log.hit(t, 1);
    }
    assert_eq!(log.state().logged_ms(), 6);
    // At 8003 the entries of 0..=3 are back (s + 8000 ≤ 8003): 4, 5 and the new one stay.
    assert!(log.hit(8_003, 1).is_allowed());
    assert_eq!(log.state().logged_ms(), 3);
    // A peek forgets nothing: it changes no state.
    let before = log.clone();
    log.peek(1_000_000, 1);
    assert_eq!(log, before);
}

#[test]
fn a_denied_hit_and_a_cost_0_hit_spend_nothing() {
    let mut log = SlidingLog::new(limit("6/8s"));
    log.hit(0, 6);
    let denied = log.hit(100, 1);
    assert_eq!(denied.spent(), 0);
    assert_eq!(denied.used.to_string(), "6.000");
    let free = log.hit(100, 0);
    assert!(free.is_allowed());
    assert_eq!(free.spent(), 0);
    assert_eq!(log.state().logged_ms(), 1);
    // So everything is back at 8000, as if only the first hit had happened.
    assert!(log.hit(8_000, 6).is_allowed());
}

#[test]
fn record_charges_past_the_limit_and_is_allowed() {
    let mut log = SlidingLog::new(limit("6/8s"));
    let recorded = log.record(0, 9);
    assert_eq!(recorded.outcome, Outcome::Allowed);
    assert_eq!(recorded.used.to_string(), "9.000");
    assert_eq!(recorded.remaining(), 0);
    assert!(!log.peek(7_999, 1).is_allowed());
    assert!(log.peek(8_000, 6).is_allowed());
}

#[test]
fn reset_forgets_everything() {
    assert_reset_forgets_everything::<SlidingLogState>();
}

#[test]
fn limiter_runs_the_same_sliding_log() {
    assert_limiter_runs_the_same::<SlidingLogState>(
        Algorithm::SlidingLog,
        "6/8s",
        &[
            (0, 2),
            (1_000, 2),
            (2_000, 2),
            (8_500, 3),
            (9_000, 3),
            (1, 1),
        ],
    );
}

/// Two records of nearly u64::MAX tokens in one millisecond: the log's entry for that
/// millisecond saturates at u64::MAX while its running total keeps the whole sum, so when the
/// entry comes back at s + W the total keeps the excess forever. Every later request of cost
/// ≥ 1 is then denied with `retry_after_ms: 1`, and denied again 1 ms later, without end;
/// the key is never idle either.
#[test]
fn record_overflowing_one_millisecond_entry_locks_the_log_forever() {
    let mut log = SlidingLog::new(limit("1/10ms"));
    log.record(0, MAX);
    log.record(0, 1);
    // Everything charged at 0 comes back at 0 + 10.
    let decision = log.hit(10, 1);
    assert_eq!(
        decision.outcome,
        Outcome::Allowed,
        "used {} at 10",
        decision.used
    );
    assert!(log.hit(1_000_000, 1).is_allowed());
}
