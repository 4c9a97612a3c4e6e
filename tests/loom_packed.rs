//! A loom model of the concurrent keyed limiter's packed buckets: loom runs each test body
//! under every interleaving of its threads' atomic operations and lock acquisitions (the
//! limiter takes its atomics and locks from loom under `--cfg loom`), so what is checked
//! here holds for all of them, not just the ones a stress test happens to meet.
//!
//! `make loom`, which is
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --locked --release --test loom_packed`.
//!
//! Each model checks decisions, not only counts: every thread's whole `Decision`, and the
//! key's bucket afterwards, must be what the sequential `KeyedLimiter` gives for one of the
//! orders in which the requests could have come.
#![cfg(loom)]

use std::num::NonZeroUsize;

use loom::sync::Arc;
use loom::thread;
use trickle::{ConcurrentKeyedLimiter, Decision, KeyedLimiter, Limit};

fn limit(text: &str) -> Limit {
    text.parse().expect("a valid limit")
}

/// One shard, so that every key meets every other in one lock, as in the tightest case.
fn limiter(text: &str) -> Arc<ConcurrentKeyedLimiter<u64>> {
    let limiter = ConcurrentKeyedLimiter::with_shards(limit(text), NonZeroUsize::MIN);
    assert!(limiter.is_packed(), "{text} is packed");
    Arc::new(limiter)
}

/// A request: (now_ms, cost).
type Request = (u64, u64);

/// What the sequential core answers to `before` and then `requests` in this order, for
/// key 7, and what a peek at `peek_ms` sees after them.
fn sequential(
    text: &str,
    before: &[Request],
    requests: &[Request],
    peek_ms: u64,
) -> (Vec<Decision>, Decision) {
    let mut core: KeyedLimiter<u64> = KeyedLimiter::new(limit(text));
    for &(now_ms, cost) in before {
        core.hit(7, now_ms, cost);
    }
    let decisions = requests
        .iter()
        .map(|&(now_ms, cost)| core.hit(7, now_ms, cost))
        .collect();
    (decisions, core.peek(&7, peek_ms, 1))
}

/// Runs `requests` on key 7 from one thread each, after `before` from the main thread, and
/// checks the outcome against the sequential core in every order of the requests.
fn race(text: &str, before: &[Request], requests: &[Request], peek_ms: u64) {
    let requests = requests.to_vec();
    let before = before.to_vec();
    let text = text.to_string();
    loom::model(move || {
        let limiter = limiter(&text);
        for &(now_ms, cost) in &before {
            limiter.hit(7, now_ms, cost);
        }
        let threads: Vec<_> = requests
            .iter()
            .map(|&(now_ms, cost)| {
                let limiter = Arc::clone(&limiter);
                thread::spawn(move || limiter.hit(7, now_ms, cost))
            })
            .collect();
        let decisions: Vec<Decision> = threads
            .into_iter()
            .map(|thread| thread.join().expect("a thread finishes"))
            .collect();
        let after = limiter.peek(&7, peek_ms, 1);

        let orders: Vec<Vec<usize>> = permutations(requests.len());
        let matched = orders.iter().any(|order| {
            let ordered: Vec<Request> = order.iter().map(|&n| requests[n]).collect();
            let (expected, expected_after) = sequential(&text, &before, &ordered, peek_ms);
            expected_after == after
                && order
                    .iter()
                    .zip(&expected)
                    .all(|(&n, decision)| decisions[n] == *decision)
        });
        assert!(
            matched,
            "{text}: {decisions:?} then {after:?} is no order of {requests:?}"
        );
    });
}

fn permutations(count: usize) -> Vec<Vec<usize>> {
    if count == 0 {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for rest in permutations(count - 1) {
        for at in 0..=rest.len() {
            let mut order = rest.clone();
            order.insert(at, count - 1);
            all.push(order);
        }
    }
    all
}

/// Three threads hit one packed key at a frozen clock with room for two: exactly two go in,
/// in every interleaving of their compare-and-swaps.
#[test]
fn three_threads_at_a_frozen_clock_admit_exactly_n() {
    loom::model(|| {
        let limiter = limiter("2/1s");
        // The key exists before the threads start, so that they meet in the compare-and-swap
        // rather than in the write lock that adds a key.
        limiter.hit(7, 500, 0);
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let limiter = Arc::clone(&limiter);
                thread::spawn(move || limiter.hit(7, 500, 1).is_allowed())
            })
            .collect();
        let allowed = threads
            .into_iter()
            .map(|thread| thread.join().expect("a thread finishes"))
            .filter(|&allowed| allowed)
            .count();
        assert_eq!(allowed, 2);
        assert!(!limiter.hit(7, 500, 1).is_allowed());
    });
}

/// Two threads at a frozen clock, one of them adding the key: the write lock that inserts
/// it and the compare-and-swap of the other meet, and still one token goes in, not two.
#[test]
fn a_new_key_added_while_another_thread_decides() {
    race("1/1s", &[], &[(500, 1), (500, 1)], 500);
}

/// A denial at a later time races an allowed hit at an earlier time, in one window: the
/// denial writes its time into the word, so the hit that read the word before it decides
/// again at the later time; neither decision may rest on a word the other changed.
#[test]
fn a_later_denial_races_an_earlier_hit() {
    race("2/1000ms", &[(100, 1)], &[(500, 1), (505, 2)], 505);
}

/// A hit in the next window, which rolls the shard's words under the write lock, races a
/// hit in the current one: the roll sees the hit's spending or the hit is decided in the
/// new window, never both nor neither.
#[test]
fn a_window_roll_races_a_hit() {
    race("3/1000ms", &[(100, 2)], &[(900, 1), (1_100, 1)], 1_100);
}
