//! `Comparison`: two limiters fed the same requests, the disagreements counted each way (each
//! on its own history, and on the reference's), and the most tokens each let into any W ms.
//! The tables are worked out by hand; the properties check the counts against limiters
//! replayed on their own and the worst window against a brute-force count over every
//! interval.
// proptest has no random source on wasm32; these run natively only.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use trickle_core::compare::{Accuracy, Comparison, Disagreement};
use trickle_core::{Algorithm, Limit, Limiter};

use Algorithm::{Fixed, Floating, SlidingLog, TokenBucket};
use Disagreement::{WronglyAllowed, WronglyLimited};

fn limit(text: &str) -> Limit {
    text.parse().expect("a valid limit")
}

/// Feeds `requests` (time, cost) to a fresh comparison and returns every disagreement (None
/// when both agreed) and what it added up to.
fn compare(
    limit: Limit,
    approximation: Algorithm,
    reference: Algorithm,
    requests: &[(u64, u64)],
) -> (Vec<Option<Disagreement>>, Accuracy) {
    let (verdicts, _, accuracy) = compare_both(limit, approximation, reference, requests);
    (verdicts, accuracy)
}

/// As [`compare`], with every disagreement on the reference's history too.
fn compare_both(
    limit: Limit,
    approximation: Algorithm,
    reference: Algorithm,
    requests: &[(u64, u64)],
) -> (
    Vec<Option<Disagreement>>,
    Vec<Option<Disagreement>>,
    Accuracy,
) {
    let mut comparison = Comparison::new(limit, approximation, reference);
    let (own, same) = requests
        .iter()
        .map(|&(now, cost)| {
            let verdict = comparison.hit(now, cost);
            (verdict.disagreement(), verdict.same_history_disagreement())
        })
        .unzip();
    (own, same, comparison.accuracy())
}

/// One hand-worked case: the requests, each one's disagreement with each limiter on its own
/// history, then on the reference's, and the worst windows of the approximation and the
/// reference in tokens.
type Case = (
    &'static str,
    &'static str,
    Algorithm,
    Algorithm,
    &'static [(u64, u64)],
    &'static [Option<Disagreement>],
    &'static [Option<Disagreement>],
    (u128, u128),
);

const WA: Option<Disagreement> = Some(WronglyAllowed);
const WL: Option<Disagreement> = Some(WronglyLimited);

#[rustfmt::skip]
const CASES: &[Case] = &[
    // The floating window takes the previous window's 2 tokens as spread evenly over it. At
    // 1500 it counts 2 × 0.5 = 1 and allows one more; the log still holds both (back at
    // 1900 and 1950). 900, 950 and 1500 all lie in [900, 1900): 3 tokens.
    ("previous window spent late: too many", "2/1s", Floating, SlidingLog,
        &[(900, 1), (950, 1), (1_500, 1)],
        &[None, None, WA],
        &[None, None, WA], (3, 2)),
    // An echo. On its own history the floating window spent 1500's token, so at 1505
    // (2 × 0.495 + 1 = 1.99, + 1 > 2) it denies, as the log does; at 1950 it still counts
    // 2 × 0.05 + 1 = 1.1 and denies what the log (900 and 950 back) allows. On the log's
    // history, without 1500's token, it allows 1505 (0.99 + 1 ≤ 2), which the log denies,
    // and allows 1950 (0.1 + 1 ≤ 2) like the log.
    ("an echo: its own history and the log's", "2/1s", Floating, SlidingLog,
        &[(900, 1), (950, 1), (1_500, 1), (1_505, 1), (1_950, 1)],
        &[None, None, WA, None, WL],
        &[None, None, WA, WA, None], (3, 2)),
    // Spent at 0 and 10: at 1005 the floating window counts 2 × 995/1000 = 1.99, no room; the
    // log has given back the token of 0 (at 1000) and allows. At 1011, 2 × 989/1000 = 1.978
    // against the log's 1 (10's token is back at 1010, 1005's counts).
    ("previous window spent early: too few", "2/1s", Floating, SlidingLog,
        &[(0, 1), (10, 1), (1_005, 1), (1_011, 1)],
        &[None, None, WL, WL],
        &[None, None, WL, WL], (2, 2)),
    // At 1000 the floating window still counts all of previous: both deny. At 1900 both
    // allow: the log has 900's token back, and the floating window counts 2 × 0.1 = 0.2.
    ("the boundary itself: both deny", "2/1s", Floating, SlidingLog,
        &[(900, 1), (950, 1), (1_000, 1), (1_900, 1)],
        &[None, None, None, None],
        &[None, None, None, None], (2, 2)),
    // The fixed window empties at 1000: 2 more at once. [999, 1999) holds 4 tokens. At 1999
    // the log is empty again (999 + 1000) while the fixed window's second window is full
    // until 2000; at 2000 the fixed window starts afresh and the log holds 1999's 2. On
    // the log's history the fixed window never spent 1000's 2, so it would allow 1998 too.
    ("fixed window across the boundary", "2/1s", Fixed, SlidingLog,
        &[(999, 2), (1_000, 2), (1_998, 2), (1_999, 2), (2_000, 2)],
        &[None, WA, None, WL, WA],
        &[None, WA, WA, None, WA], (4, 2)),
    // A full bucket of 2 at 0 is spent; 500 ms refill 1 token, which the log does not have
    // until 1000. [0, 1000) holds 3 tokens.
    ("token bucket refills as it goes", "2/1s", TokenBucket, SlidingLog,
        &[(0, 2), (500, 1), (1_000, 1)],
        &[None, WA, None],
        &[None, WA, None], (3, 2)),
    // t and t + W − 1 fall in one window of W ms, t and t + W do not: 500 and 1499 together
    // make [500, 1500) hold 4; with 1500 instead, no interval holds more than 3.
    ("t + W − 1 is in the same window", "2/1s", Fixed, Fixed,
        &[(500, 1), (999, 1), (1_000, 1), (1_499, 1)],
        &[None, None, None, None],
        &[None, None, None, None], (4, 4)),
    ("t + W is not", "2/1s", Fixed, Fixed,
        &[(500, 1), (999, 1), (1_000, 1), (1_500, 1)],
        &[None, None, None, None],
        &[None, None, None, None], (3, 3)),
    // Cost 0 always fits and spends nothing; a cost above N never fits, for either.
    ("cost 0 and cost above N never disagree", "2/1s", Floating, SlidingLog,
        &[(0, 0), (0, 3), (10, 2), (20, 0), (30, 3)],
        &[None, None, None, None, None],
        &[None, None, None, None, None], (2, 2)),
    // A clock that goes back is read as the latest time seen: 500 is decided at 1200 by
    // both, where the fixed window has room and the log does not. The shadow on the log's
    // history has seen only 900 (the log denied 1200), yet it too judges 500 at 1200.
    ("time going backwards", "2/1s", Fixed, SlidingLog,
        &[(900, 2), (1_200, 1), (500, 1)],
        &[None, WA, WA],
        &[None, WA, WA], (4, 2)),
    ("the same algorithm twice agrees", "3/10s", Floating, Floating,
        &[(0, 2), (9_000, 1), (10_000, 3), (14_000, 1), (15_000, 1)],
        &[None, None, None, None, None],
        &[None, None, None, None, None], (3, 3)),
];

#[test]
fn hand_worked_cases() {
    let mut failures = Vec::new();
    for &(name, text, approximation, reference, requests, expected, same, worst) in CASES {
        let (verdicts, same_verdicts, accuracy) =
            compare_both(limit(text), approximation, reference, requests);
        if verdicts != expected {
            failures.push(format!("{name}: disagreements {verdicts:?}"));
        }
        if same_verdicts != same {
            failures.push(format!(
                "{name}: disagreements on the same history {same_verdicts:?}"
            ));
        }
        let count = |verdicts: &[Option<Disagreement>], kind| {
            verdicts
                .iter()
                .filter(|&&found| found == Some(kind))
                .count() as u64
        };
        let counts = (
            accuracy.requests,
            accuracy.wrongly_allowed,
            accuracy.wrongly_limited,
            accuracy.same_history_wrongly_allowed,
            accuracy.same_history_wrongly_limited,
        );
        let expected_counts = (
            requests.len() as u64,
            count(expected, WronglyAllowed),
            count(expected, WronglyLimited),
            count(same, WronglyAllowed),
            count(same, WronglyLimited),
        );
        if counts != expected_counts {
            failures.push(format!(
                "{name}: counts {counts:?}, expected {expected_counts:?}"
            ));
        }
        let found = (accuracy.worst_window, accuracy.reference_worst_window);
        if found != worst {
            failures.push(format!(
                "{name}: worst windows {found:?}, expected {worst:?}"
            ));
        }
        if (accuracy.approximation, accuracy.reference) != (approximation, reference) {
            failures.push(format!("{name}: names {accuracy:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn shares_are_exact_and_rounded_half_up() {
    // 1 of 3 wrongly allowed is 33.333…%; the worst window 3 of N = 2 is 1.50 × N.
    let (_, accuracy) = compare(
        limit("2/1s"),
        Floating,
        SlidingLog,
        &[(900, 1), (950, 1), (1_500, 1)],
    );
    assert_eq!(accuracy.disagreements(), 1);
    assert_eq!(accuracy.wrongly_allowed_percent().to_string(), "33.33");
    assert_eq!(
        format!("{:.3}", accuracy.wrongly_allowed_percent()),
        "33.333"
    );
    assert_eq!(
        format!("{:.3}", accuracy.wrongly_limited_percent()),
        "0.000"
    );
    assert_eq!(accuracy.worst_window_share().to_string(), "1.50");
    assert_eq!(accuracy.reference_worst_window_share().to_string(), "1.00");
    assert_eq!(accuracy.worst_window_share().as_f64(), 1.5);

    // 2 of 3 is 66.666…%: half up gives 66.667. 2 tokens with N = 3 are 0.666… × N: 0.67.
    let (_, accuracy) = compare(limit("3/1s"), Floating, Floating, &[(0, 1), (1, 1), (2, 1)]);
    let two_of_three = Accuracy {
        wrongly_limited: 2,
        same_history_wrongly_allowed: 1,
        same_history_wrongly_limited: 2,
        worst_window: 2,
        ..accuracy
    };
    assert_eq!(
        format!("{:.3}", two_of_three.wrongly_limited_percent()),
        "66.667"
    );
    assert_eq!(
        format!("{:.3}", two_of_three.same_history_wrongly_allowed_percent()),
        "33.333"
    );
    assert_eq!(
        format!("{:.3}", two_of_three.same_history_wrongly_limited_percent()),
        "66.667"
    );
    assert_eq!(two_of_three.same_history_disagreements(), 3);
    assert_eq!(two_of_three.worst_window_share().to_string(), "0.67");

    // No requests: no share of them, not a division by zero.
    let (_, empty) = compare(limit("2/1s"), Floating, SlidingLog, &[]);
    assert_eq!(format!("{:.3}", empty.wrongly_allowed_percent()), "0.000");
    assert_eq!(empty.worst_window_share().to_string(), "0.00");
}

#[test]
fn the_summary_lines() {
    // The echo case: on its own history 1500 wrongly allowed and 1950 wrongly limited; on
    // the log's, 1500 and 1505 wrongly allowed.
    let (_, accuracy) = compare(
        limit("2/1s"),
        Floating,
        SlidingLog,
        &[(900, 1), (950, 1), (1_500, 1), (1_505, 1), (1_950, 1)],
    );
    assert_eq!(
        accuracy.to_string(),
        "floating against sliding-log: 5 requests, 1 wrongly allowed (20.000%), 1 wrongly \
         limited (20.000%), at most 3 tokens in any 1000 ms = 1.50 x N (sliding-log: 2 = 1.00 x N)\n\
         floating judged on sliding-log's history: 2 wrongly allowed (40.000%), 0 wrongly \
         limited (0.000%)"
    );
    let (_, one) = compare(limit("6/8s"), Fixed, TokenBucket, &[(0, 7)]);
    assert_eq!(
        one.to_string(),
        "fixed against token-bucket: 1 request, 0 wrongly allowed (0.000%), 0 wrongly \
         limited (0.000%), at most 0 tokens in any 8000 ms = 0.00 x N (token-bucket: 0 = 0.00 x N)\n\
         fixed judged on token-bucket's history: 0 wrongly allowed (0.000%), 0 wrongly \
         limited (0.000%)"
    );
}

#[test]
fn disagreement_names() {
    assert_eq!(WronglyAllowed.name(), "wrongly-allowed");
    assert_eq!(WronglyLimited.name(), "wrongly-limited");
}

/// The most tokens `allowed` (time, cost) puts in any [s, s + W), trying every s that
/// starts at an allowed request (any other s can be moved right to one without losing a
/// request).
fn brute_force_worst(window_ms: u64, allowed: &[(u64, u64)]) -> u128 {
    allowed
        .iter()
        .map(|&(start, _)| {
            allowed
                .iter()
                .filter(|&&(at, _)| {
                    at >= start && u128::from(at) < u128::from(start) + u128::from(window_ms)
                })
                .map(|&(_, cost)| u128::from(cost))
                .sum()
        })
        .max()
        .unwrap_or(0)
}

/// The allowed requests of a limiter replayed alone, at the times it decided them.
fn allowed_alone(limiter: &mut Limiter, requests: &[(u64, u64)]) -> Vec<(bool, (u64, u64))> {
    requests
        .iter()
        .map(|&(now, cost)| {
            let decision = limiter.hit(now, cost);
            (decision.is_allowed(), (decision.at_ms, decision.spent()))
        })
        .collect()
}

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

/// A small limit and a trace whose steps are mostly within a window, sometimes backwards.
fn trace() -> impl Strategy<Value = (Limit, Vec<(u64, u64)>)> {
    (1u64..6, 1u64..2_000).prop_flat_map(|(tokens, window_ms)| {
        let step = prop_oneof![
            6 => 0..window_ms / 2 + 1,
            2 => 0..window_ms * 3,
        ];
        let request = (step, any::<bool>(), 0..tokens + 2);
        prop::collection::vec(request, 0..200).prop_map(move |requests| {
            let mut now = 1_000_000u64;
            let trace = requests
                .into_iter()
                .map(|(step, back, cost)| {
                    // One request in seven or so steps back, as a clock may.
                    now = if back && step % 7 == 0 {
                        now.saturating_sub(step)
                    } else {
                        now + step
                    };
                    (now, cost)
                })
                .collect();
            (Limit::new(tokens, window_ms).unwrap(), trace)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 500,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/compare.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// Each limiter in a comparison answers exactly as it does alone, the counts are those
    /// of its answers, and the worst windows are what a brute-force count over every
    /// interval finds.
    #[test]
    fn a_comparison_is_two_independent_limiters(
        (limit, requests) in trace(),
        approximation in algorithm(),
        reference in algorithm(),
    ) {
        let (verdicts, accuracy) = compare(limit, approximation, reference, &requests);
        let alone = allowed_alone(&mut Limiter::with_algorithm(approximation, limit), &requests);
        let truth = allowed_alone(&mut Limiter::with_algorithm(reference, limit), &requests);

        let expected: Vec<_> = alone.iter().zip(&truth).map(|(&(a, _), &(r, _))| match (a, r) {
            (true, false) => Some(WronglyAllowed),
            (false, true) => Some(WronglyLimited),
            _ => None,
        }).collect();
        prop_assert_eq!(&verdicts, &expected);
        prop_assert_eq!(accuracy.requests, requests.len() as u64);
        prop_assert_eq!(
            accuracy.disagreements() as usize,
            expected.iter().filter(|found| found.is_some()).count()
        );

        let spent = |answers: &[(bool, (u64, u64))]| -> Vec<(u64, u64)> {
            answers.iter().filter(|(allowed, _)| *allowed).map(|&(_, spent)| spent).collect()
        };
        prop_assert_eq!(accuracy.worst_window, brute_force_worst(limit.window_ms(), &spent(&alone)));
        prop_assert_eq!(
            accuracy.reference_worst_window,
            brute_force_worst(limit.window_ms(), &spent(&truth))
        );
    }

    /// On the reference's history, each request is judged by a limiter of the approximation's
    /// algorithm that has spent exactly what the reference allowed before it, at the time the
    /// reference decided it: a fresh limiter replaying those, asked without spending, answers
    /// the same. An algorithm compared with itself so never disagrees on the same history.
    #[test]
    fn the_same_history_is_the_references(
        (limit, requests) in trace(),
        approximation in algorithm(),
        reference in algorithm(),
    ) {
        let mut comparison = Comparison::new(limit, approximation, reference);
        let mut allowed_so_far = Vec::new();
        for &(now, cost) in &requests {
            let verdict = comparison.hit(now, cost);
            let mut replayed = Limiter::with_algorithm(approximation, limit);
            for &(at, spent) in &allowed_so_far {
                replayed.record(at, spent);
            }
            let expected = replayed.peek(verdict.reference.at_ms, cost);
            prop_assert_eq!(verdict.same_history.is_allowed(), expected.is_allowed());
            prop_assert_eq!(verdict.same_history.used, expected.used);
            if approximation == reference {
                prop_assert_eq!(verdict.same_history_disagreement(), None);
            }
            if verdict.reference.is_allowed() {
                allowed_so_far.push((verdict.reference.at_ms, cost));
            }
        }
    }

    /// On the log's history the fixed window and the token bucket never count more than the
    /// log does (the fixed window counts only the part of the last W ms in its window, and a
    /// bucket refills at least what the log gives back), so they never wrongly limit.
    #[test]
    fn on_the_logs_history_fixed_and_bucket_never_wrongly_limit(
        (limit, requests) in trace(),
        approximation in prop::sample::select(vec![Fixed, TokenBucket]),
    ) {
        let (_, same, accuracy) = compare_both(limit, approximation, SlidingLog, &requests);
        prop_assert_eq!(accuracy.same_history_wrongly_limited, 0, "{:?}", same);
    }

    /// The sliding log never lets more than N into any W ms, and any other algorithm never
    /// more than 2N.
    #[test]
    fn worst_windows_are_bounded((limit, requests) in trace(), approximation in algorithm()) {
        let (_, accuracy) = compare(limit, approximation, SlidingLog, &requests);
        prop_assert!(accuracy.reference_worst_window <= u128::from(limit.tokens()));
        prop_assert!(accuracy.worst_window <= 2 * u128::from(limit.tokens()));
    }
}
