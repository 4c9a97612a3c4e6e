//! What the table-driven tests share: replaying a row's earlier requests, and checking the
//! probe against the row's hand-computed expectations, plus the one rule every denial must
//! keep (a retry at `now + retry_after_ms` fits, one millisecond earlier does not).

// Each test file is its own crate and uses only some of these helpers.
#![allow(dead_code)]

use std::fmt::Debug;

use trickle_core::state::State;
use trickle_core::{Algorithm, Bucket, Decision, Limit, Limiter, Outcome};

pub const MAX: u64 = u64::MAX;
pub const ALLOWED: Outcome = Outcome::Allowed;
pub const EXCEEDS: Outcome = Outcome::ExceedsLimit;

pub const fn denied(retry_after_ms: u64) -> Outcome {
    Outcome::Denied { retry_after_ms }
}

/// A request made before the probe: `H(t, cost)` hits, `R(t, cost)` records (charges even
/// past the limit).
#[derive(Debug, Clone, Copy)]
pub enum Op {
    H(u64, u64),
    R(u64, u64),
}

pub fn limit(text: &str) -> Limit {
    text.parse()
        .unwrap_or_else(|error| panic!("{text:?} is not a limit: {error}"))
}

/// A fresh bucket under `limit` that has seen `ops`.
pub fn replay<S: State + Default>(limit: Limit, ops: &[Op]) -> Bucket<S> {
    let mut bucket = Bucket::<S>::new(limit);
    for op in ops {
        match *op {
            Op::H(now, cost) => bucket.hit(now, cost),
            Op::R(now, cost) => bucket.record(now, cost),
        };
    }
    bucket
}

/// What one row expects of its probe.
pub struct Expected<'a> {
    pub outcome: Outcome,
    pub used: &'a str,
    pub remaining: u64,
}

/// Peeks then hits `(now, cost)` on `bucket`, compares with `expected`, and checks that a
/// denial's retry is the exact first moment the request fits. Mismatches are pushed onto
/// `failures` under the row's `name`, so one run shows every failing row.
pub fn check_probe<S: State + Clone>(
    name: &str,
    bucket: &mut Bucket<S>,
    (now, cost): (u64, u64),
    expected: &Expected<'_>,
    failures: &mut Vec<String>,
) -> Decision {
    let mut fail = |what: String| failures.push(format!("{name}: {what}"));
    let peeked = bucket.peek(now, cost);
    let decision = bucket.hit(now, cost);

    if decision.outcome != expected.outcome {
        fail(format!(
            "outcome {:?}, expected {:?}",
            decision.outcome, expected.outcome
        ));
    }
    if peeked.outcome != decision.outcome {
        fail(format!(
            "peek said {:?} but hit said {:?}",
            peeked.outcome, decision.outcome
        ));
    }
    let used = decision.used.to_string();
    if used != expected.used {
        fail(format!("used {used}, expected {}", expected.used));
    }
    if decision.remaining() != expected.remaining {
        fail(format!(
            "remaining {}, expected {}",
            decision.remaining(),
            expected.remaining
        ));
    }
    // `used` is reported after the decision: the peek's plus the cost when allowed.
    let spent_scaled = u128::from(decision.spent()) * u128::from(decision.limit.window_ms());
    if peeked.used.numerator().checked_add(spent_scaled) != Some(decision.used.numerator()) {
        fail(format!(
            "peek used {} + spent {} ≠ hit used {}",
            peeked.used,
            decision.spent(),
            decision.used
        ));
    }
    if let Outcome::Denied { retry_after_ms } = decision.outcome {
        check_retry(bucket, now, cost, retry_after_ms, &mut fail);
    }
    decision
}

/// A denial's `retry_after_ms` counts from the caller's `now`: the request fits at
/// `now + retry_after_ms` and not 1 ms before. When that moment lies past the end of the u64
/// clock, nothing the clock can name may fit.
fn check_retry<S: State>(
    bucket: &Bucket<S>,
    now: u64,
    cost: u64,
    retry_after_ms: u64,
    fail: &mut impl FnMut(String),
) {
    if retry_after_ms == 0 {
        fail("a denial with retry_after_ms 0".to_string());
        return;
    }
    match now.checked_add(retry_after_ms) {
        Some(due) => {
            if !bucket.peek(due, cost).is_allowed() {
                fail(format!("not allowed at now + retry_after = {due}"));
            }
            if bucket.peek(due - 1, cost).is_allowed() {
                fail(format!(
                    "already allowed at now + retry_after − 1 = {}",
                    due - 1
                ));
            }
        }
        None => {
            if bucket.peek(MAX, cost).is_allowed() {
                fail("retry lies past u64::MAX, yet u64::MAX is allowed".to_string());
            }
        }
    }
}

pub fn assert_no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} check(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `reset` leaves the state a new bucket has, and a full limit fits at time 0 again.
pub fn assert_reset_forgets_everything<S: State + Default + PartialEq + Debug>() {
    let mut bucket = Bucket::<S>::new(limit("6/8s"));
    bucket.hit(5_000, 6);
    bucket.reset();
    assert_eq!(bucket.state(), &S::default());
    assert!(bucket.hit(0, 6).is_allowed());
}

/// Peeks at times before, at and after the latest, with costs that fit and do not, change
/// nothing.
pub fn assert_peek_changes_nothing<S: State + Default + Clone + PartialEq + Debug>() {
    let mut bucket = Bucket::<S>::new(limit("6/8s"));
    bucket.hit(100, 4);
    let before = bucket.clone();
    for (now, cost) in [(0, 1), (100, 3), (8_000, 6), (50, 7)] {
        bucket.peek(now, cost);
    }
    assert_eq!(bucket, before);
}

/// A `Limiter` built for `algorithm` decides `requests` exactly as the bucket type `S`.
pub fn assert_limiter_runs_the_same<S: State + Default>(
    algorithm: Algorithm,
    text: &str,
    requests: &[(u64, u64)],
) {
    let mut limiter = Limiter::with_algorithm(algorithm, limit(text));
    let mut bucket = Bucket::<S>::new(limit(text));
    for &(now, cost) in requests {
        assert_eq!(limiter.hit(now, cost), bucket.hit(now, cost), "at {now}");
    }
}

/// A table row for an algorithm without floating counters: name, limit, requests before,
/// probe (t, cost), outcome, used after, remaining.
pub type Row = (
    &'static str,
    &'static str,
    &'static [Op],
    (u64, u64),
    Outcome,
    &'static str,
    u64,
);

/// Runs every row on a fresh bucket of type `S`, collecting all failures before failing.
pub fn check_table<S: State + Default + Clone>(rows: &[Row]) {
    let mut failures = Vec::new();
    for &(name, text, ops, probe, outcome, used, remaining) in rows {
        let mut bucket: Bucket<S> = replay(limit(text), ops);
        let expected = Expected {
            outcome,
            used,
            remaining,
        };
        let decision = check_probe(name, &mut bucket, probe, &expected, &mut failures);
        if decision.counters.is_some() {
            failures.push(format!("{name}: only the floating window has counters"));
        }
    }
    assert_no_failures(&failures);
}
