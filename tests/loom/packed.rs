//! A loom model of the concurrent keyed limiter's packed buckets: loom runs each test body
//! under every interleaving of its threads' atomic operations and lock acquisitions (the
//! limiter takes its atomics and locks from loom under `--cfg loom`), so what is checked
//! here holds for all of them, not just the ones a stress test happens to meet.
//!
//! `make loom`, which is
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --locked --profile loom -p trickle-loom`.
//!
//! Each model checks decisions, not only counts: every thread's whole `Decision`, and the
//! key's bucket afterwards, must be what the sequential `KeyedLimiter` gives for one of the
//! orders in which the requests could have come. The requests are hits, and settles of
//! reservations made before the threads start (refunds and extra charges, which move the
//! word down as well as up).
#![cfg(loom)]

use std::num::NonZeroUsize;

use loom::sync::Arc;
use loom::thread;
use trickle_core::{Admission, ConcurrentKeyedLimiter, Decision, KeyedLimiter, Limit, Reservation};

fn limit(text: &str) -> Limit {
    text.parse().expect("a valid limit")
}

/// One shard, so that every key meets every other in one lock, as in the tightest case.
fn limiter(text: &str) -> Arc<ConcurrentKeyedLimiter<u64>> {
    let limiter = ConcurrentKeyedLimiter::with_shards(limit(text), NonZeroUsize::MIN);
    assert!(limiter.is_packed(), "{text} is packed");
    Arc::new(limiter)
}

/// A reserve made before the threads start: (now_ms, cost).
type Reserve = (u64, u64);

/// What a thread does to key 7.
#[derive(Debug, Clone, Copy)]
enum Request {
    /// A hit: (now_ms, cost).
    Hit(u64, u64),
    /// Settles the `reserve`-th reserve made before the threads started, at `cost`.
    Settle {
        reserve: usize,
        now_ms: u64,
        cost: u64,
    },
}

/// The reservations `before` makes on key 7 of a keyed limiter, in order; each must be
/// admitted.
fn reserved(
    before: &[Reserve],
    mut reserve: impl FnMut(u64, u64) -> Admission,
) -> Vec<Reservation> {
    before
        .iter()
        .map(|&(now_ms, cost)| match reserve(now_ms, cost) {
            Admission::Admitted { reservation, .. } => reservation,
            Admission::Refused(decision) => {
                panic!("the reserve before the race is refused: {decision:?}")
            }
        })
        .collect()
}

/// A copy of a reservation, for replaying one order after another.
fn again(reservation: &Reservation) -> Reservation {
    Reservation::from_parts(
        reservation.at_ms(),
        reservation.cost(),
        reservation.ticket(),
    )
}

/// What the sequential core answers to `before` and then `requests` in this order, for
/// key 7, and what a peek at `peek_ms` sees after them.
fn sequential(
    text: &str,
    before: &[Reserve],
    requests: &[Request],
    peek_ms: u64,
) -> (Vec<Decision>, Decision) {
    let mut core: KeyedLimiter<u64> = KeyedLimiter::new(limit(text));
    let reservations = reserved(before, |now_ms, cost| core.reserve(7, now_ms, cost));
    let decisions = requests
        .iter()
        .map(|&request| match request {
            Request::Hit(now_ms, cost) => core.hit(7, now_ms, cost),
            Request::Settle {
                reserve,
                now_ms,
                cost,
            } => core.settle(7, again(&reservations[reserve]), now_ms, cost),
        })
        .collect();
    (decisions, core.peek(&7, peek_ms, 1))
}

/// Runs `requests` on key 7 from one thread each, after `before` from the main thread, and
/// checks the outcome against the sequential core in every order of the requests.
fn race(text: &str, before: &[Reserve], requests: &[Request], peek_ms: u64) {
    let requests = requests.to_vec();
    let before = before.to_vec();
    let text = text.to_string();
    loom::model(move || {
        let limiter = limiter(&text);
        let mut reservations: Vec<Option<Reservation>> =
            reserved(&before, |now_ms, cost| limiter.reserve(7, now_ms, cost))
                .into_iter()
                .map(Some)
                .collect();
        let threads: Vec<_> = requests
            .iter()
            .map(|&request| {
                let limiter = Arc::clone(&limiter);
                let settling = match request {
                    Request::Settle { reserve, .. } => reservations[reserve].take(),
                    Request::Hit(..) => None,
                };
                thread::spawn(move || match (request, settling) {
                    (Request::Hit(now_ms, cost), _) => limiter.hit(7, now_ms, cost),
                    (Request::Settle { now_ms, cost, .. }, Some(reservation)) => {
                        limiter.settle(7, reservation, now_ms, cost)
                    }
                    (Request::Settle { reserve, .. }, None) => {
                        panic!("reserve {reserve} is settled twice")
                    }
                })
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

/// How many times one execution of the three-thread model may switch threads where a thread
/// could have gone on: loom then explores every interleaving with at most this many, rather
/// than every interleaving of all. Every one took 167 s of a core, most of it the kernel
/// mapping each execution's thread stacks, a quarter of what `make test` may take; 5 takes
/// 11 s (6 takes 30). Loom's documentation finds 2 or 3 enough for most bugs, and a
/// compare-and-swap replaced by a plain store is caught at 2. LOOM_MAX_PREEMPTIONS, when
/// set, is used instead (unset it does not mean unbounded here; a large number does).
const PREEMPTIONS: usize = 5;

/// Three threads hit one packed key at a frozen clock with room for two: exactly two go in,
/// in every interleaving of their compare-and-swaps with at most `PREEMPTIONS` preemptions.
#[test]
fn three_threads_at_a_frozen_clock_admit_exactly_n() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound.get_or_insert(PREEMPTIONS);
    model.check(|| {
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
    race(
        "1/1s",
        &[],
        &[Request::Hit(500, 1), Request::Hit(500, 1)],
        500,
    );
}

/// A denial at a later time races an allowed hit at an earlier time, in one window: the
/// denial writes its time into the word, so the hit that read the word before it decides
/// again at the later time; neither decision may rest on a word the other changed.
#[test]
fn a_later_denial_races_an_earlier_hit() {
    race(
        "2/1000ms",
        &[(100, 1)],
        &[Request::Hit(500, 1), Request::Hit(505, 2)],
        505,
    );
}

/// A hit in the next window, which rolls the shard's words under the write lock, races a
/// hit in the current one: the roll sees the hit's spending or the hit is decided in the
/// new window, never both nor neither.
#[test]
fn a_window_roll_races_a_hit() {
    race(
        "3/1000ms",
        &[(100, 2)],
        &[Request::Hit(900, 1), Request::Hit(1_100, 1)],
        1_100,
    );
}

/// A refund races a hit at a frozen clock on a full bucket: the hit goes in if and only if
/// the refund came first, and the word ends as one of the two orders leaves it. The refund
/// lowers `current`, so the word can change and change back (ABA); the swap is still right.
#[test]
fn a_refund_races_a_hit() {
    race(
        "2/1s",
        &[(500, 1), (500, 1)],
        &[
            Request::Settle {
                reserve: 0,
                now_ms: 500,
                cost: 0,
            },
            Request::Hit(500, 1),
        ],
        500,
    );
}

/// A refund in the reservation's window races a hit in the next one, which rolls the shard
/// under the write lock: the refund lands in `current` before the roll or in `previous`
/// after it, and the hit sees it or not accordingly; never lost, never twice.
#[test]
fn a_refund_races_a_window_roll() {
    race(
        "3/1000ms",
        &[(900, 2)],
        &[
            Request::Settle {
                reserve: 0,
                now_ms: 950,
                cost: 0,
            },
            Request::Hit(1_100, 2),
        ],
        1_100,
    );
}

/// A settle charging more than was reserved races a hit: the hit is decided on the bucket
/// before or after the extra tokens, never on a mix.
#[test]
fn a_settle_charging_more_races_a_hit() {
    race(
        "3/1000ms",
        &[(100, 1)],
        &[
            Request::Settle {
                reserve: 0,
                now_ms: 200,
                cost: 3,
            },
            Request::Hit(300, 1),
        ],
        300,
    );
}
