//! A caller's clock that jumps back, stalls, or leaps forward by days, on every algorithm and
//! on the keyed limiter: nothing panics, nothing gets in beyond what the same requests on a
//! clock that never went back would let in, retry times stay exact, and after a leap the
//! answers (and the numbers a display shows) are those of a fresh bucket.

use trickle_core::state::FloatingState;
use trickle_core::{Algorithm, Decision, KeyedLimiter, Limit, Limiter, Outcome};

const DAY_MS: u64 = 86_400_000;

fn limit(text: &str) -> Limit {
    text.parse().expect("a valid limit")
}

/// The same request sent at `now + retry_after_ms` fits, and 1 ms earlier it does not; when
/// that moment lies past the end of the u64 clock, nothing the clock can name fits.
fn assert_retry_exact(limiter: &Limiter, now: u64, cost: u64, decision: &Decision, case: &str) {
    let Outcome::Denied { retry_after_ms } = decision.outcome else {
        return;
    };
    let Some(due) = now.checked_add(retry_after_ms) else {
        assert!(!limiter.peek(u64::MAX, cost).is_allowed(), "{case}");
        return;
    };
    assert!(
        limiter.peek(due, cost).is_allowed(),
        "{case}: not allowed at {due}"
    );
    assert!(
        !limiter.peek(due - 1, cost).is_allowed(),
        "{case}: already allowed at {}",
        due - 1
    );
}

/// A trace whose clock mostly moves forwards but every fifth request jumps back up to 9 s,
/// and every 97th by more than everything seen, to 0: (now, cost).
fn jumpy_trace() -> Vec<(u64, u64)> {
    let mut now = 0u64;
    (0..3_000u64)
        .map(|i| {
            now = match i {
                _ if i % 97 == 96 => 0,
                _ if i % 5 == 4 => now.saturating_sub(i * 7 % 9_000),
                _ => now + i * 13 % 700,
            };
            (now, 1 + i % 3)
        })
        .collect()
}

/// A clock that goes back is read as the latest time seen: each decision is the one the
/// same request gets at that latest time, so a jump back never lets anything more in; the
/// retry is counted from the caller's own `now`.
#[test]
fn a_clock_that_goes_back_decides_as_at_the_latest_time() {
    for algorithm in Algorithm::ALL {
        let mut jumpy = Limiter::with_algorithm(algorithm, limit("6/8s"));
        let mut steady = Limiter::with_algorithm(algorithm, limit("6/8s"));
        let (mut latest, mut went_back, mut denied) = (0, 0, 0);
        for (now, cost) in jumpy_trace() {
            went_back += u32::from(now < latest);
            latest = latest.max(now);
            let decision = jumpy.hit(now, cost);
            let mut expected = steady.hit(latest, cost);
            if let Outcome::Denied { retry_after_ms } = &mut expected.outcome {
                *retry_after_ms += latest - now;
                denied += 1;
            }
            let case = format!("{algorithm} at {now} (latest {latest})");
            assert_eq!(decision, expected, "{case}");
            assert_retry_exact(&jumpy, now, cost, &decision, &case);
        }
        // The trace really went back, and really met the limit.
        assert!(went_back > 600, "{algorithm}: {went_back} jumps back");
        assert!(denied > 300, "{algorithm}: {denied} denials");
    }
}

/// On the sliding log, the exact one, jumps back cannot squeeze more than N tokens into
/// any W ms of the times the decisions were made at.
#[test]
fn a_clock_that_goes_back_never_lets_more_than_n_into_a_window() {
    let mut log = Limiter::with_algorithm(Algorithm::SlidingLog, limit("6/8s"));
    let mut allowed: Vec<(u64, u64)> = Vec::new();
    for (now, cost) in jumpy_trace() {
        let decision = log.hit(now, cost);
        if decision.is_allowed() {
            allowed.push((decision.at_ms, cost));
            let at = decision.at_ms;
            let in_window: u64 = allowed
                .iter()
                .filter(|(spent, _)| spent + 8_000 > at)
                .map(|(_, cost)| cost)
                .sum();
            assert!(in_window <= 6, "{in_window} tokens in the 8 s up to {at}");
        }
    }
}

/// A clock that stalls (every request in the same millisecond) lets exactly N tokens in,
/// then gives every denial the same exact retry: the moment the algorithm frees a token.
#[test]
fn a_stalled_clock_admits_n_then_gives_one_exact_retry() {
    // 6/8s at 5 s: floating waits for the next window (3 s) and then until
    // 6 × (8000 − e)/8000 + 1 ≤ 6, e = 1334; sliding-log until the tokens of 5 s come back at
    // 13 s; fixed until the window ends at 8 s; token-bucket ⌈8000/6⌉ ms for one token.
    #[rustfmt::skip]
    let retries = [
        (Algorithm::Floating, 4_334),
        (Algorithm::SlidingLog, 8_000),
        (Algorithm::Fixed, 3_000),
        (Algorithm::TokenBucket, 1_334),
    ];
    for (algorithm, retry_after_ms) in retries {
        let mut limiter = Limiter::with_algorithm(algorithm, limit("6/8s"));
        let decisions: Vec<Decision> = (0..18).map(|_| limiter.hit(5_000, 1)).collect();
        let allowed = decisions.iter().filter(|d| d.is_allowed()).count();
        assert_eq!(allowed, 6, "{algorithm}");
        assert!(
            decisions[..6].iter().all(Decision::is_allowed),
            "{algorithm}"
        );
        for decision in &decisions[6..] {
            assert_eq!(
                decision.outcome,
                Outcome::Denied { retry_after_ms },
                "{algorithm}"
            );
            assert_eq!(decision.used.to_string(), "6.000", "{algorithm}");
            assert_eq!(decision.remaining(), 0, "{algorithm}");
            assert_retry_exact(&limiter, 5_000, 1, decision, &algorithm.to_string());
        }
    }
}

/// A full bucket, pushed past its limit by a record, then a leap of three days: every
/// algorithm answers as a bucket that never saw a request, numbers included, and then
/// fills and denies exactly as a fresh one.
#[test]
fn after_a_leap_of_days_every_answer_is_a_fresh_buckets() {
    let leaps = [3 * DAY_MS, 30 * DAY_MS, u64::MAX - 10_000];
    for algorithm in Algorithm::ALL {
        for leap in leaps {
            let mut limiter = Limiter::with_algorithm(algorithm, limit("6/8s"));
            limiter.hit(1_000, 6);
            limiter.record(2_000, 6);
            assert!(!limiter.hit(2_500, 1).is_allowed(), "{algorithm}");

            let mut fresh = Limiter::with_algorithm(algorithm, limit("6/8s"));
            let later = 2_500 + leap;
            let case = format!("{algorithm}, {leap} ms later");
            assert_eq!(limiter.peek(later, 6), fresh.peek(later, 6), "{case}");
            for step in 0..8 {
                let now = later + step;
                let decision = limiter.hit(now, 1);
                assert_eq!(decision, fresh.hit(now, 1), "{case}, +{step} ms");
                assert_retry_exact(&limiter, now, 1, &decision, &case);
            }
            // What a display shows right after the leap: one token in use of six.
            let mut shown = Limiter::with_algorithm(algorithm, limit("6/8s"));
            shown.hit(1_000, 6);
            let first = shown.hit(later, 1);
            assert_eq!(first.used.to_string(), "1.000", "{case}");
            assert_eq!(first.remaining(), 5, "{case}");
            if let Some(counters) = first.counters {
                assert_eq!((counters.previous, counters.current), (0, 1), "{case}");
            }
        }
    }
}

/// A clock set back by days after a leap (an NTP correction, a laptop waking) is read as
/// the latest time: nothing spent after the leap comes back, and the retry counts the days
/// from the caller's `now`.
#[test]
fn a_clock_set_back_by_days_after_a_leap_still_counts_what_was_spent() {
    for algorithm in Algorithm::ALL {
        let mut limiter = Limiter::with_algorithm(algorithm, limit("6/8s"));
        limiter.hit(0, 3);
        let leap = 3 * DAY_MS;
        assert!(limiter.hit(leap, 6).is_allowed(), "{algorithm}");
        let decision = limiter.hit(1_000, 1);
        assert_eq!(decision.at_ms, leap, "{algorithm}");
        let mut steady = Limiter::with_algorithm(algorithm, limit("6/8s"));
        steady.hit(0, 3);
        steady.hit(leap, 6);
        let Outcome::Denied { retry_after_ms } = steady.hit(leap, 1).outcome else {
            panic!("{algorithm}: the full bucket allowed a token");
        };
        assert_eq!(
            decision.outcome,
            Outcome::Denied {
                retry_after_ms: retry_after_ms + leap - 1_000
            },
            "{algorithm}"
        );
        assert_retry_exact(&limiter, 1_000, 1, &decision, &algorithm.to_string());
    }
}

/// The keyed limiter shares one clock among its keys: a key whose caller's clock lags is
/// decided at the latest time any key has seen; a stall admits N per key; a leap of days
/// drops every idle bucket and answers each key as fresh.
#[test]
fn the_keyed_limiter_through_jumps_stalls_and_leaps() {
    let mut limiter: KeyedLimiter<u32, FloatingState> = KeyedLimiter::new(limit("6/8s"));
    // Stall: 20 hits per key in the same millisecond, 6 allowed each.
    for key in 0..100 {
        let allowed = (0..20)
            .filter(|_| limiter.hit(key, 5_000, 1).is_allowed())
            .count();
        assert_eq!(allowed, 6, "key {key}");
    }
    // One key's caller is 4 s behind: decided at 5 s, its retry counted from its own now.
    let lagging = limiter.hit(7, 1_000, 1);
    assert_eq!(lagging.at_ms, 5_000);
    assert_eq!(
        lagging.outcome,
        Outcome::Denied {
            retry_after_ms: 4_334 + 4_000
        }
    );
    assert!(limiter.peek(&7, 1_000 + 8_334, 1).is_allowed());
    assert!(!limiter.peek(&7, 1_000 + 8_333, 1).is_allowed());

    // Three days later: every bucket idle, dropped on the first request, fresh answers.
    let later = 5_000 + 3 * DAY_MS;
    let decision = limiter.hit(7, later, 6);
    assert!(decision.is_allowed());
    assert_eq!(decision.used.to_string(), "6.000");
    assert_eq!(limiter.len(), 1);
    let other = limiter.peek(&8, later, 6);
    assert!(other.is_allowed());
    assert_eq!(other.used.to_string(), "0.000");
    // A clock set back by the three days is read as the latest time: key 7 is still full.
    let back = limiter.hit(7, 5_000, 1);
    assert_eq!(back.at_ms, later);
    assert!(!back.is_allowed());
    assert_eq!(limiter.len(), 1);
}
