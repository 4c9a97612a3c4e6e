//! Many buckets under one limit (`KeyedLimiter`), and a limit per group (`GroupedLimiter`):
//! keys never affect each other, idle buckets are dropped so memory follows the keys active
//! lately, the clock is shared by all keys, and a peek stores nothing.

use std::collections::HashSet;

use trickle_core::state::{FixedState, FloatingState, SlidingLogState, State, TokenBucketState};
use trickle_core::{FloatingWindow, GroupedLimiter, KeyedLimiter, Limit, Outcome};

fn limit(text: &str) -> Limit {
    text.parse().expect("a valid limit")
}

#[test]
fn keys_are_independent() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("2/1s"));
    assert!(limiter.hit("a", 0, 1).is_allowed());
    assert!(limiter.hit("a", 0, 1).is_allowed());
    assert!(!limiter.hit("a", 0, 1).is_allowed());
    // a's spending, and a's denial, change nothing for b.
    let decision = limiter.hit("b", 0, 2);
    assert!(decision.is_allowed());
    assert_eq!(decision.used.to_string(), "2.000");
    assert!(!limiter.hit("b", 0, 1).is_allowed());
    assert_eq!(limiter.len(), 2);
}

#[test]
fn each_key_decides_as_its_own_bucket() {
    let mut limiter: KeyedLimiter<u8> = KeyedLimiter::new(limit("6/8s"));
    let mut buckets = [
        FloatingWindow::new(limit("6/8s")),
        FloatingWindow::new(limit("6/8s")),
    ];
    let trace = [
        (0, 0, 4),
        (1, 500, 6),
        (0, 9_000, 2),
        (1, 9_000, 1),
        (0, 11_000, 1),
        (0, 11_000, 1),
        (1, 17_000, 6),
        (0, 30_000, 6),
    ];
    for (key, now, cost) in trace {
        let expected = buckets[usize::from(key)].hit(now, cost);
        assert_eq!(limiter.hit(key, now, cost), expected, "key {key} at {now}");
    }
}

/// The floating window: a key that spent in window k still has `previous` in window k + 1,
/// and holds nothing from window k + 2 on, when the first request of that window drops it.
#[test]
fn floating_drops_a_key_idle_for_two_whole_windows() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("6/1000ms"));
    limiter.hit("once", 999, 3);
    limiter.hit("busy", 1_000, 1);
    // Window 1: "once" still counts 3 × (1000 − e)/1000.
    assert_eq!(limiter.len(), 2);
    limiter.hit("busy", 1_999, 1);
    assert_eq!(limiter.len(), 2);
    assert_eq!(
        limiter.peek(&"once", 1_999, 6).outcome,
        Outcome::Denied { retry_after_ms: 1 }
    );
    // Window 2 begins: "once" has been idle for all of window 1, so both its counters are 0.
    limiter.hit("busy", 2_000, 1);
    assert_eq!(limiter.len(), 1);
    // Coming back, it starts afresh, as its own bucket would.
    let decision = limiter.hit("once", 2_000, 6);
    assert!(decision.is_allowed());
    assert_eq!(
        decision.counters.map(|seen| (seen.previous, seen.current)),
        Some((0, 6))
    );
    assert_eq!(limiter.len(), 2);
}

#[test]
fn floating_keeps_a_key_spent_in_the_last_window() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("6/1000ms"));
    limiter.hit("early", 0, 6);
    limiter.hit("other", 1_000, 1);
    assert_eq!(limiter.len(), 2);
    // Still 6 × 1/1000 at 1999: denied until 2000.
    assert_eq!(
        limiter.hit("early", 1_999, 6).outcome,
        Outcome::Denied { retry_after_ms: 1 }
    );
    assert!(limiter.hit("early", 2_000, 6).is_allowed());
}

/// Only keys that spent something keep a bucket: a key whose only requests were denied, cost
/// 0 or too large holds nothing that counts, and goes at the next window.
#[test]
fn keys_that_spent_nothing_go_at_the_next_window() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("6/1000ms"));
    limiter.hit("free", 10, 0);
    limiter.hit("huge", 10, 7);
    limiter.hit("paid", 10, 1);
    assert_eq!(limiter.len(), 3);
    limiter.hit("paid", 1_000, 1);
    assert_eq!(limiter.len(), 1);
}

#[test]
fn sliding_log_drops_a_key_once_its_tokens_are_back() {
    let mut limiter: KeyedLimiter<&str, SlidingLogState> = KeyedLimiter::new(limit("6/1000ms"));
    limiter.hit("once", 500, 6);
    // Window 1 begins at 1000, but the tokens from 500 count until 1500.
    limiter.hit("busy", 1_000, 1);
    assert_eq!(limiter.len(), 2);
    assert_eq!(
        limiter.hit("once", 1_499, 1).outcome,
        Outcome::Denied { retry_after_ms: 1 }
    );
    // The sweep runs once per window: at 2000 "once" holds nothing and goes.
    limiter.hit("busy", 2_000, 1);
    assert_eq!(limiter.len(), 1);
}

#[test]
fn sweep_drops_only_idle_buckets() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("6/1000ms"));
    limiter.hit("a", 0, 1);
    limiter.hit("b", 1_500, 1);
    // At 1999 "a" still counts 1/1000 of a token.
    limiter.sweep(1_999);
    assert_eq!(limiter.len(), 2);
    limiter.sweep(2_000);
    assert_eq!(limiter.len(), 1);
    // "b" spent in window 1: it goes at 3000.
    limiter.sweep(3_000);
    assert!(limiter.is_empty());
}

/// A fixed pseudo-random sequence, the same every run.
struct Sequence(u64);

impl Sequence {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// 60,000 requests on 5/100ms over about 4,000 windows, three in four from a key never seen
/// again: after every request, the keys holding a bucket are at most the keys that made a
/// request in the current window or the one before.
fn len_stays_within_the_keys_of_the_last_two_windows<S: State + Default>() {
    let window_ms = 100;
    let mut limiter: KeyedLimiter<u64, S> = KeyedLimiter::new(limit("5/100ms"));
    let mut sequence = Sequence(0x9e37_79b9_7f4a_7c15);
    let (mut now, mut window) = (0u64, 0u64);
    let mut previous_keys: HashSet<u64> = HashSet::new();
    let mut current_keys: HashSet<u64> = HashSet::new();
    // |previous ∪ current|, kept as requests come in.
    let mut active = 0;
    let mut next_one_off = 1_000;
    let mut largest = 0;
    for _ in 0..60_000 {
        now += sequence.below(13);
        if sequence.below(500) == 0 {
            // Now and then a quiet spell of several windows.
            now += 350;
        }
        if now / window_ms != window {
            let next = now / window_ms;
            previous_keys = if next == window + 1 {
                std::mem::take(&mut current_keys)
            } else {
                HashSet::new()
            };
            current_keys.clear();
            active = previous_keys.len();
            window = next;
        }
        let key = if sequence.below(4) == 0 {
            sequence.below(20)
        } else {
            next_one_off += 1;
            next_one_off
        };
        limiter.hit(key, now, sequence.below(3));
        if current_keys.insert(key) && !previous_keys.contains(&key) {
            active += 1;
        }
        assert!(
            limiter.len() <= active,
            "at {now}: {} buckets, {active} keys active in windows {} and {window}",
            limiter.len(),
            window.saturating_sub(1)
        );
        largest = largest.max(limiter.len());
    }
    // Memory follows the recent keys, not the ~45,000 ever seen.
    assert!(next_one_off - 1_000 > 40_000);
    assert!(largest < 100, "largest table: {largest} keys");
}

#[test]
fn floating_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<FloatingState>();
}

#[test]
fn sliding_log_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<SlidingLogState>();
}

#[test]
fn fixed_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<FixedState>();
}

#[test]
fn token_bucket_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<TokenBucketState>();
}

/// The clock is the server's, shared by every key: a request stamped earlier than the latest
/// time any key has seen is decided at that latest time, and its retry is told from the
/// caller's own `now`.
#[test]
fn shared_clock_going_backwards() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("2/1s"));
    limiter.hit("a", 5_000, 1);
    let decision = limiter.hit("b", 1_000, 1);
    assert!(decision.is_allowed());
    assert_eq!(decision.at_ms, 5_000);
    assert!(limiter.hit("b", 1_000, 1).is_allowed());
    // Decided at 5000 (window 5, e = 0) with current = 2: in window 6, 2 × (1000 − e)/1000
    // + 1 ≤ 2 from e = 500, so at 6500: 5500 after the caller's 1000.
    let denied = limiter.hit("b", 1_000, 1);
    assert_eq!(
        denied.outcome,
        Outcome::Denied {
            retry_after_ms: 5_500
        }
    );
    assert_eq!(limiter.peek(&"b", 1_000, 1).outcome, denied.outcome);
    assert!(!limiter.peek(&"b", 6_499, 1).is_allowed());
    assert!(limiter.hit("b", 1_000 + 5_500, 1).is_allowed());
    // However often it asks with its old clock, nothing more goes in.
    for now in [0, 999, 4_999, 5_000, 6_000] {
        assert!(!limiter.hit("b", now, 1).is_allowed(), "at {now}");
    }
}

#[test]
fn shared_clock_moves_a_key_past_its_own_windows() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("2/1s"));
    limiter.hit("a", 0, 2);
    limiter.hit("b", 10_000, 1);
    // "a" asks at 500 by its clock: decided at 10000, where its window 0 is long gone.
    let decision = limiter.hit("a", 500, 2);
    assert!(decision.is_allowed());
    assert_eq!(decision.at_ms, 10_000);
    assert_eq!(decision.used.to_string(), "2.000");
}

#[test]
fn peek_stores_nothing() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("2/1s"));
    let decision = limiter.peek(&"new", 100, 2);
    assert!(decision.is_allowed());
    assert_eq!(decision.used.to_string(), "0.000");
    assert!(limiter.is_empty());

    limiter.hit("a", 0, 1);
    for _ in 0..3 {
        assert!(limiter.peek(&"a", 0, 1).is_allowed());
    }
    assert_eq!(limiter.len(), 1);
    // The peeks spent nothing: one more token still fits, then none.
    assert!(limiter.hit("a", 0, 1).is_allowed());
    assert!(!limiter.hit("a", 0, 1).is_allowed());
}

#[test]
fn peek_neither_moves_the_shared_clock_nor_sweeps() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("2/1s"));
    limiter.hit("a", 0, 2);
    assert!(limiter.peek(&"a", 5_000, 2).is_allowed());
    assert_eq!(limiter.len(), 1);
    // The clock is still at 0, so 500 is not in the past.
    let decision = limiter.hit("b", 500, 1);
    assert_eq!(decision.at_ms, 500);
    assert!(!limiter.hit("a", 500, 1).is_allowed());
}

#[test]
fn record_charges_one_key_past_the_limit() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("6/8s"));
    let recorded = limiter.record("a", 1_000, 12);
    assert_eq!(recorded.outcome, Outcome::Allowed);
    assert_eq!(recorded.used.to_string(), "12.000");
    // Next window: 12 × (8000 − e) ≤ 5 × 8000 from e = 4667: 12667 − 2000.
    assert_eq!(
        limiter.hit("a", 2_000, 1).outcome,
        Outcome::Denied {
            retry_after_ms: 10_667
        }
    );
    assert!(limiter.hit("b", 2_000, 6).is_allowed());
}

#[test]
fn reset_forgets_one_key() {
    let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new(limit("2/1s"));
    limiter.hit("a", 0, 2);
    limiter.hit("b", 0, 2);
    limiter.reset(&"a");
    assert_eq!(limiter.len(), 1);
    assert!(limiter.hit("a", 0, 2).is_allowed());
    assert!(!limiter.hit("b", 0, 1).is_allowed());
    assert_eq!(limiter.limit(), limit("2/1s"));
}

#[test]
fn groups_have_their_own_limits_and_buckets() {
    let mut esi: GroupedLimiter<&str, (u32, u64)> = GroupedLimiter::new();
    esi.add_group("fitting", limit("150/15m"));
    esi.add_group("market", limit("300/15m"));
    let character = (7, 90_000_001);

    let market = esi.hit(&"market", character, 0, 2).expect("a known group");
    assert_eq!(market.remaining(), 298);
    // The same key in another group has its own bucket and limit.
    let fitting = esi
        .hit(&"fitting", character, 0, 150)
        .expect("a known group");
    assert!(fitting.is_allowed());
    assert!(!esi
        .hit(&"fitting", character, 0, 1)
        .expect("a known group")
        .is_allowed());
    assert!(esi
        .hit(&"market", character, 0, 298)
        .expect("a known group")
        .is_allowed());

    assert_eq!(esi.group(&"market").map(KeyedLimiter::len), Some(1));
    assert_eq!(
        esi.group(&"market").map(KeyedLimiter::limit),
        Some(limit("300/15m"))
    );

    // Peeking stores nothing; recording charges past the limit.
    let peeked = esi.peek(&"market", &(7, 2), 0, 1).expect("a known group");
    assert!(peeked.is_allowed());
    assert_eq!(esi.group(&"market").map(KeyedLimiter::len), Some(1));
    let recorded = esi
        .record(&"market", character, 0, 5)
        .expect("a known group");
    assert_eq!(recorded.used.to_string(), "305.000");
}

#[test]
fn unknown_groups_answer_none() {
    let mut esi: GroupedLimiter<&str, u64> = GroupedLimiter::default();
    esi.add_group("market", limit("300/15m"));
    assert!(esi.hit(&"unknown", 1, 0, 2).is_none());
    assert!(esi.peek(&"unknown", &1, 0, 2).is_none());
    assert!(esi.record(&"unknown", 1, 0, 2).is_none());
    assert!(esi.group(&"unknown").is_none());
}

#[test]
fn adding_a_group_again_replaces_it() {
    let mut esi: GroupedLimiter<&str, u64> = GroupedLimiter::new();
    esi.add_group("market", limit("2/15m"));
    esi.hit(&"market", 1, 0, 2);
    esi.add_group("market", limit("3/15m"));
    assert_eq!(esi.group(&"market").map(KeyedLimiter::len), Some(0));
    assert!(esi
        .hit(&"market", 1, 0, 3)
        .expect("a known group")
        .is_allowed());
}
