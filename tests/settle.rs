//! Reserve, then settle (src/algorithms/reservation.rs), against an independent model of what a settle
//! means, for the four algorithms: random traces of hits, peeks, records, reserves and
//! settles (at the reserve, more, less, zero; at once, later, across window edges and
//! rolls), some reservations never settled, as a request whose client hung up. Then the
//! same traces through every in-process store, and real threads reserving and settling on
//! one key at once.
// proptest has no random source on wasm32; these run natively only.
#![cfg(not(target_arch = "wasm32"))]

use std::num::NonZeroUsize;
use std::sync::{Arc, Barrier};
use std::thread;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use trickle_core::state::{FixedState, FloatingState, SlidingLogState, State, TokenBucketState};
use trickle_core::{
    Admission, Algorithm, Bucket, ConcurrentKeyedLimiter, Decision, KeyedLimiter, Limit, Limiter,
    Outcome, Reservation,
};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/settle.txt",
        ))),
        ..ProptestConfig::default()
    }
}

/// One step of a trace, after the clock has moved by `step` ms.
#[derive(Debug, Clone, Copy)]
enum Request {
    Hit(u64),
    Peek(u64),
    Record(u64),
    Reserve(u64),
    /// Settles the open reservation `pick % open` (the oldest first) at `Final`.
    Settle {
        pick: usize,
        cost: Final,
    },
}

/// A settle's final cost, relative to what was reserved.
#[derive(Debug, Clone, Copy)]
enum Final {
    Equal,
    Zero,
    Less(u64),
    More(u64),
}

impl Final {
    fn of(self, reserved: u64) -> u64 {
        match self {
            Final::Equal => reserved,
            Final::Zero => 0,
            Final::Less(tokens) => reserved.saturating_sub(tokens),
            Final::More(tokens) => reserved + tokens,
        }
    }
}

#[derive(Debug, Clone)]
struct Trace {
    limit: Limit,
    start_ms: u64,
    steps: Vec<(u64, Request)>,
}

impl Trace {
    /// Each request with the caller's `now`.
    fn timed(&self) -> impl Iterator<Item = (u64, Request)> + '_ {
        let mut now = self.start_ms;
        self.steps.iter().map(move |&(step, request)| {
            now += step;
            (now, request)
        })
    }
}

fn request(tokens: u64) -> impl Strategy<Value = Request> {
    let cost = prop_oneof![
        1 => Just(0),
        4 => 1..=tokens.min(3),
        2 => Just(tokens),
        1 => Just(tokens + 1),
    ];
    let settle_cost = prop_oneof![
        Just(Final::Equal),
        Just(Final::Zero),
        (1..=3u64).prop_map(Final::Less),
        (1..=tokens + 2).prop_map(Final::More),
    ];
    prop_oneof![
        3 => cost.clone().prop_map(Request::Hit),
        1 => cost.clone().prop_map(Request::Peek),
        1 => cost.clone().prop_map(Request::Record),
        4 => cost.prop_map(Request::Reserve),
        4 => (any::<usize>(), settle_cost).prop_map(|(pick, cost)| Request::Settle { pick, cost }),
    ]
}

/// Small limits, so that the model can look for a retry millisecond by millisecond and a
/// trace crosses many windows; steps that land on, just before and just after window edges.
fn trace() -> impl Strategy<Value = Trace> {
    (1..=8u64, 1..=40u64, 0..=1_000_000u64).prop_flat_map(|(tokens, window_ms, start_ms)| {
        let step = prop_oneof![
            3 => Just(0u64),
            3 => 1..=3u64,
            3 => 1..=(window_ms / 2).max(1),
            3 => window_ms - 1..=window_ms + 1,
            1 => window_ms * 2..=window_ms * 3,
        ];
        let limit = Limit::new(tokens, window_ms).expect("tokens and window ≥ 1");
        (
            Just(limit),
            Just(start_ms),
            prop::collection::vec((step, request(tokens)), 1..80),
        )
            .prop_map(|(limit, start_ms, steps)| Trace {
                limit,
                start_ms,
                steps,
            })
    })
}

/// What a settle means, written from the definition rather than from the core's counters:
/// the windows keep every charge with its time, and a settle rewrites its reservation's
/// charge while those tokens still count; the token bucket keeps its debt × W and moves it
/// at the settle's time, within W of the reservation.
struct Model {
    algorithm: Algorithm,
    tokens: u64,
    window_ms: u64,
    latest_ms: u64,
    /// The windows' charges: (time, cost).
    charges: Vec<(u64, u64)>,
    /// The token bucket's tokens out × W, as of `latest_ms`.
    debt: u128,
}

/// A reservation as the model holds it: its time, what it holds, and its charge.
#[derive(Debug, Clone, Copy)]
struct Held {
    at_ms: u64,
    reserved: u64,
    charge: usize,
}

impl Model {
    fn new(algorithm: Algorithm, limit: Limit) -> Model {
        Model {
            algorithm,
            tokens: limit.tokens(),
            window_ms: limit.window_ms(),
            latest_ms: 0,
            charges: Vec::new(),
            debt: 0,
        }
    }

    fn scaled(&self, tokens: u64) -> u128 {
        u128::from(tokens) * u128::from(self.window_ms)
    }

    /// Tokens in use at `at_ms` (no earlier than `latest_ms`), × W.
    fn used_scaled_at(&self, at_ms: u64) -> u128 {
        let window = at_ms / self.window_ms;
        let sum = |keep: &dyn Fn(u64) -> bool| -> u128 {
            self.charges
                .iter()
                .filter(|(spent_ms, _)| keep(*spent_ms))
                .map(|&(_, cost)| u128::from(cost))
                .sum()
        };
        match self.algorithm {
            Algorithm::SlidingLog => self.scaled(1) * sum(&|spent| spent + self.window_ms > at_ms),
            Algorithm::Fixed => self.scaled(1) * sum(&|spent| spent / self.window_ms == window),
            Algorithm::Floating => {
                let previous = sum(&|spent| spent / self.window_ms + 1 == window);
                let current = sum(&|spent| spent / self.window_ms == window);
                previous * u128::from(self.window_ms - at_ms % self.window_ms)
                    + current * self.scaled(1)
            }
            Algorithm::TokenBucket => self
                .debt
                .saturating_sub(u128::from(self.tokens) * u128::from(at_ms - self.latest_ms)),
        }
    }

    fn counters(&self, at_ms: u64) -> Option<(u128, u128)> {
        let window = at_ms / self.window_ms;
        let spent_in = |index: u64| -> u128 {
            self.charges
                .iter()
                .filter(|(spent_ms, _)| spent_ms / self.window_ms == index)
                .map(|&(_, cost)| u128::from(cost))
                .sum()
        };
        (self.algorithm == Algorithm::Floating).then(|| {
            let previous = window.checked_sub(1).map_or(0, spent_in);
            (previous, spent_in(window))
        })
    }

    fn fits(&self, at_ms: u64, cost: u64) -> bool {
        self.used_scaled_at(at_ms) + self.scaled(cost) <= self.scaled(self.tokens)
    }

    /// Moves the clock to `at_ms`: the bucket refills on the way.
    fn advance(&mut self, at_ms: u64) {
        self.debt = self.used_scaled_at(at_ms);
        if self.algorithm != Algorithm::TokenBucket {
            self.debt = 0;
        }
        self.latest_ms = at_ms;
    }

    fn charge(&mut self, at_ms: u64, cost: u64) -> usize {
        self.debt += self.scaled(cost);
        self.charges.push((at_ms, cost));
        self.charges.len() - 1
    }

    /// The outcome of a hit of `cost` at `now`, by the rule, searching for the retry.
    fn outcome(&self, now: u64, at_ms: u64, cost: u64) -> Outcome {
        if cost == 0 || (cost <= self.tokens && self.fits(at_ms, cost)) {
            Outcome::Allowed
        } else if cost > self.tokens {
            Outcome::ExceedsLimit
        } else {
            let first = (at_ms + 1..)
                .find(|&later| self.fits(later, cost))
                .expect("everything is back within three windows");
            Outcome::Denied {
                retry_after_ms: first - now,
            }
        }
    }

    /// (outcome, used × W after, time decided at, counters), and the reservation a reserve
    /// made.
    fn apply(&mut self, now: u64, request: Request, open: &mut Vec<Held>) -> Expected {
        let at_ms = now.max(self.latest_ms);
        let outcome = match request {
            Request::Hit(cost) | Request::Reserve(cost) | Request::Peek(cost) => {
                self.outcome(now, at_ms, cost)
            }
            Request::Record(_) | Request::Settle { .. } => Outcome::Allowed,
        };
        let at_ms = match request {
            Request::Peek(_) => return self.expected(outcome, at_ms),
            Request::Settle { pick, .. } if !open.is_empty() => {
                at_ms.max(open[pick % open.len()].at_ms)
            }
            _ => at_ms,
        };
        self.advance(at_ms);
        match request {
            Request::Hit(cost) | Request::Reserve(cost) if outcome == Outcome::Allowed => {
                let charge = self.charge(at_ms, cost);
                if matches!(request, Request::Reserve(_)) {
                    open.push(Held {
                        at_ms,
                        reserved: cost,
                        charge,
                    });
                }
            }
            Request::Record(cost) => {
                self.charge(at_ms, cost);
            }
            Request::Settle { pick, cost } if !open.is_empty() => {
                let held = open.remove(pick % open.len());
                self.settle(at_ms, held, cost.of(held.reserved));
            }
            _ => {}
        }
        self.expected(outcome, at_ms)
    }

    fn settle(&mut self, at_ms: u64, held: Held, cost: u64) {
        let window = |t: u64| t / self.window_ms;
        let counts = match self.algorithm {
            Algorithm::Floating => window(held.at_ms) + 1 >= window(at_ms),
            Algorithm::Fixed => window(held.at_ms) == window(at_ms),
            Algorithm::SlidingLog | Algorithm::TokenBucket => held.at_ms + self.window_ms > at_ms,
        };
        if !counts {
            return;
        }
        if self.algorithm == Algorithm::TokenBucket {
            self.debt = if cost >= held.reserved {
                self.debt + self.scaled(cost - held.reserved)
            } else {
                self.debt.saturating_sub(self.scaled(held.reserved - cost))
            };
        } else {
            self.charges[held.charge].1 = cost;
        }
    }

    fn expected(&self, outcome: Outcome, at_ms: u64) -> Expected {
        (
            outcome,
            self.used_scaled_at(at_ms),
            at_ms,
            self.counters(at_ms),
        )
    }
}

type Expected = (Outcome, u128, u64, Option<(u128, u128)>);

fn seen(decision: &Decision) -> Expected {
    (
        decision.outcome,
        decision.used.numerator(),
        decision.at_ms,
        decision
            .counters
            .map(|counters| (counters.previous, counters.current)),
    )
}

/// Runs `trace` through `run`, which applies one request (a settle names the index of the
/// open reservation it settles) and returns the decision, keeping the reservations a
/// reserve admits in the order they were made.
fn replay<R>(
    trace: &Trace,
    mut reserve: impl FnMut(u64, u64) -> Admission,
    mut settle: impl FnMut(Reservation, u64, u64) -> Decision,
    mut other: impl FnMut(u64, Request) -> Decision,
    mut check: impl FnMut(usize, u64, Request, &Decision) -> Result<R, TestCaseError>,
) -> Result<(), TestCaseError> {
    let mut open: Vec<Reservation> = Vec::new();
    for (i, (now, request)) in trace.timed().enumerate() {
        let decision = match request {
            Request::Reserve(cost) => match reserve(now, cost) {
                Admission::Admitted {
                    reservation,
                    decision,
                } => {
                    open.push(reservation);
                    decision
                }
                Admission::Refused(decision) => decision,
            },
            Request::Settle { pick, cost } if !open.is_empty() => {
                let reservation = open.remove(pick % open.len());
                let final_cost = cost.of(reservation.cost());
                settle(reservation, now, final_cost)
            }
            // With nothing to settle, a settle is a peek at what is in use.
            Request::Settle { .. } => other(now, Request::Peek(0)),
            request => other(now, request),
        };
        check(i, now, request, &decision)?;
    }
    Ok(())
}

fn one(bucket: &mut Limiter, now: u64, request: Request) -> Decision {
    match request {
        Request::Hit(cost) => bucket.hit(now, cost),
        Request::Peek(cost) => bucket.peek(now, cost),
        Request::Record(cost) => bucket.record(now, cost),
        Request::Reserve(cost) => bucket.hit(now, cost),
        Request::Settle { .. } => bucket.peek(now, 0),
    }
}

/// The bucket of each algorithm decides every request of the trace as the model does.
fn bucket_matches_model(trace: &Trace, algorithm: Algorithm) -> Result<(), TestCaseError> {
    let bucket = std::cell::RefCell::new(Limiter::with_algorithm(algorithm, trace.limit));
    let mut model = Model::new(algorithm, trace.limit);
    let mut held: Vec<Held> = Vec::new();
    replay(
        trace,
        |now, cost| bucket.borrow_mut().reserve(now, cost),
        |reservation, now, cost| bucket.borrow_mut().settle(reservation, now, cost),
        |now, request| one(&mut bucket.borrow_mut(), now, request),
        |i, now, request, decision| {
            // A settle with nothing open was replayed as a peek at 0.
            let request = match request {
                Request::Settle { .. } if held.is_empty() => Request::Peek(0),
                request => request,
            };
            let expected = model.apply(now, request, &mut held);
            prop_assert_eq!(
                seen(decision),
                expected,
                "{} request {} at {} ms: {:?}",
                algorithm,
                i,
                now,
                request
            );
            Ok(())
        },
    )
}

/// Runs the trace on key 7 of `store` and on a bucket, and compares every decision.
fn store_matches_bucket<
    S: State + Default,
    St: trickle_core::Store<u64, Error = std::convert::Infallible>,
>(
    trace: &Trace,
    store: St,
) -> Result<(), TestCaseError> {
    let store = std::cell::RefCell::new(store);
    let mut bucket = Bucket::<S>::new(trace.limit);
    let mut bucket_open: Vec<Reservation> = Vec::new();
    replay(
        trace,
        |now, cost| ok(store.borrow_mut().reserve(&7, now, cost)),
        |reservation, now, cost| ok(store.borrow_mut().settle(&7, reservation, now, cost)),
        |now, request| {
            let op = match request {
                Request::Hit(_) => trickle_core::Op::Hit,
                Request::Record(_) => trickle_core::Op::Record,
                _ => trickle_core::Op::Peek,
            };
            let cost = match request {
                Request::Hit(cost) | Request::Peek(cost) | Request::Record(cost) => cost,
                _ => 0,
            };
            ok(store.borrow_mut().decide(&7, op, now, cost))
        },
        |i, now, request, decision| {
            let expected = match request {
                Request::Reserve(cost) => match bucket.reserve(now, cost) {
                    Admission::Admitted {
                        reservation,
                        decision,
                    } => {
                        bucket_open.push(reservation);
                        decision
                    }
                    Admission::Refused(decision) => decision,
                },
                Request::Settle { pick, cost } if !bucket_open.is_empty() => {
                    let reservation = bucket_open.remove(pick % bucket_open.len());
                    let final_cost = cost.of(reservation.cost());
                    bucket.settle(reservation, now, final_cost)
                }
                Request::Settle { .. } => bucket.peek(now, 0),
                Request::Hit(cost) => bucket.hit(now, cost),
                Request::Peek(cost) => bucket.peek(now, cost),
                Request::Record(cost) => bucket.record(now, cost),
            };
            prop_assert_eq!(
                *decision,
                expected,
                "request {} at {} ms: {:?}",
                i,
                now,
                request
            );
            Ok(())
        },
    )
}

/// The value of an in-process store's answer, which cannot fail.
fn ok<T>(result: Result<T, std::convert::Infallible>) -> T {
    match result {
        Ok(value) => value,
        Err(never) => match never {},
    }
}

fn one_shard() -> NonZeroUsize {
    NonZeroUsize::MIN
}

proptest! {
    #![proptest_config(config(600))]

    /// Every decision of every algorithm, a settle's included, is the model's: outcome
    /// (with the exact retry), tokens in use, time decided at, and the floating window's
    /// counters.
    #[test]
    fn every_algorithm_settles_as_the_model_says(trace in trace()) {
        for algorithm in Algorithm::ALL {
            bucket_matches_model(&trace, algorithm)?;
        }
    }

    /// The keyed limiter and the concurrent one (on its packed words for the floating
    /// window, on whole states for the others) reserve and settle as one bucket does.
    #[test]
    fn every_store_settles_as_one_bucket(trace in trace()) {
        let limit = trace.limit;
        store_matches_bucket::<FloatingState, _>(&trace, KeyedLimiter::<u64, FloatingState>::new(limit))?;
        store_matches_bucket::<SlidingLogState, _>(&trace, KeyedLimiter::<u64, SlidingLogState>::new(limit))?;
        store_matches_bucket::<FixedState, _>(&trace, KeyedLimiter::<u64, FixedState>::new(limit))?;
        store_matches_bucket::<TokenBucketState, _>(&trace, KeyedLimiter::<u64, TokenBucketState>::new(limit))?;
        let packed = ConcurrentKeyedLimiter::<u64, FloatingState>::with_shards(limit, one_shard());
        prop_assert!(packed.is_packed());
        store_matches_bucket::<FloatingState, _>(&trace, Arc::new(packed))?;
        store_matches_bucket::<SlidingLogState, _>(&trace, Arc::new(ConcurrentKeyedLimiter::<u64, SlidingLogState>::new(limit)))?;
        store_matches_bucket::<FixedState, _>(&trace, Arc::new(ConcurrentKeyedLimiter::<u64, FixedState>::new(limit)))?;
        store_matches_bucket::<TokenBucketState, _>(&trace, Arc::new(ConcurrentKeyedLimiter::<u64, TokenBucketState>::new(limit)))?;
    }
}

/// The windows' settles at the edges, one row per case: reserve `reserved` at `at`, settle
/// at `settle_at` for `cost`, then read what is in use at `settle_at`.
#[test]
fn settles_at_window_edges() {
    #[rustfmt::skip]
    let cases: [(&str, Algorithm, u64, u64, u64, u64, &str); 14] = [
        // name,                               algorithm,                at,  reserved, settle_at, cost, used after
        ("floating: same window, more",        Algorithm::Floating,     100,  1,  200, 5, "5.000"),
        ("floating: same window, refund",      Algorithm::Floating,     100,  3,  999, 1, "1.000"),
        ("floating: next window, in previous", Algorithm::Floating,     100,  1, 1500, 5, "2.500"),
        ("floating: next window's last ms",    Algorithm::Floating,     100,  2, 1999, 0, "0.000"),
        ("floating: two windows on, nothing",  Algorithm::Floating,     100,  1, 2000, 5, "0.000"),
        ("fixed: same window",                 Algorithm::Fixed,        999,  1,  999, 4, "4.000"),
        ("fixed: next window, nothing",        Algorithm::Fixed,        999,  1, 1000, 4, "0.000"),
        ("sliding log: 1 ms before it expires",Algorithm::SlidingLog,   100,  1, 1099, 3, "3.000"),
        ("sliding log: as it expires",         Algorithm::SlidingLog,   100,  1, 1100, 3, "0.000"),
        ("sliding log: refund to zero",        Algorithm::SlidingLog,   100,  2,  500, 0, "0.000"),
        ("token bucket: more at settle time",  Algorithm::TokenBucket,    0,  1,  500, 3, "2.000"),
        ("token bucket: refund, never past full", Algorithm::TokenBucket, 0,  2,  999, 0, "0.000"),
        ("token bucket: refund what is out",   Algorithm::TokenBucket,    0,  4,  500, 2, "0.000"),
        ("token bucket: W later, nothing",     Algorithm::TokenBucket,    0,  1, 1000, 9, "0.000"),
    ];
    let mut failures = Vec::new();
    for (name, algorithm, at, reserved, settle_at, cost, used) in cases {
        let mut bucket = Limiter::with_algorithm(algorithm, "4/1s".parse().expect("a limit"));
        let Admission::Admitted { reservation, .. } = bucket.reserve(at, reserved) else {
            panic!("{name}: an empty bucket admits {reserved}");
        };
        let settled = bucket.settle(reservation, settle_at, cost);
        if settled.used.to_string() != used || settled.cost != cost || !settled.is_allowed() {
            failures.push(format!(
                "{name}: used {} (expected {used}), cost {}",
                settled.used, settled.cost
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A request whose client hung up is never settled: what it reserved stays spent, exactly
/// as an allowed hit of that cost.
#[test]
fn a_dropped_reservation_keeps_its_reserve() {
    for algorithm in Algorithm::ALL {
        let limit: Limit = "3/1s".parse().expect("a limit");
        let mut reserving = Limiter::with_algorithm(algorithm, limit);
        let mut hitting = Limiter::with_algorithm(algorithm, limit);
        for now in [0, 10, 20] {
            // Admitted, and never settled: the request's future was dropped.
            assert!(
                reserving.reserve(now, 1).is_admitted(),
                "{algorithm} at {now}"
            );
            hitting.hit(now, 1);
        }
        assert_eq!(reserving.peek(30, 1), hitting.peek(30, 1), "{algorithm}");
        assert!(
            !reserving.peek(30, 1).is_allowed(),
            "{algorithm}: the reserves still count"
        );
    }
}

/// Real threads, released together by a barrier, each reserve 1 on one key at a frozen
/// clock and hold it, as requests still in their handlers do: exactly N are admitted. Then
/// they settle at once, each at what ESI charges for its answer (200: 2, 304: 1, 404: 5,
/// 500: 0), and the bucket ends at exactly the sum of what they settled.
#[test]
fn a_burst_of_reserves_admits_exactly_n_and_settles_to_the_sum_of_the_costs() {
    let limit: Limit = "10/1m".parse().expect("a limit");
    let costs = [2, 1, 5, 0];
    for round in 0..costs.len() {
        let threads = 16;
        let limiter = Arc::new(ConcurrentKeyedLimiter::<u64>::new(limit));
        limiter.hit(7, 30_000, 0); // the key exists: the threads meet in the compare-and-swap
        let reserving = Arc::new(Barrier::new(threads));
        let settling = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let limiter = Arc::clone(&limiter);
                let (reserving, settling) = (Arc::clone(&reserving), Arc::clone(&settling));
                thread::spawn(move || {
                    reserving.wait();
                    let held: Vec<Reservation> = (0..4)
                        .filter_map(|_| match limiter.reserve(7, 30_000, 1) {
                            Admission::Admitted { reservation, .. } => Some(reservation),
                            Admission::Refused(_) => None,
                        })
                        .collect();
                    settling.wait();
                    let admitted = held.len();
                    let mut settled = 0;
                    for (i, reservation) in held.into_iter().enumerate() {
                        let cost = costs[(t + i + round) % costs.len()];
                        limiter.settle(7, reservation, 30_000, cost);
                        settled += cost;
                    }
                    (admitted, settled)
                })
            })
            .collect();
        let (admitted, settled) = handles
            .into_iter()
            .map(|handle| handle.join().expect("a thread finishes"))
            .fold((0, 0), |(a, s), (admitted, settled)| {
                (a + admitted, s + settled)
            });
        assert_eq!(admitted, 10, "round {round}");
        let used = limiter.peek(&7, 30_000, 0).used;
        assert_eq!(used.to_string(), format!("{settled}.000"), "round {round}");
    }
}

/// Threads reserving and settling at once, each settle racing the others' reserves: a
/// request that cost nothing gives its token back, so every admission beyond N is paid for
/// by an earlier refund, and no charge or refund is lost: the bucket ends at exactly the
/// sum of the settled costs.
#[test]
fn reserves_racing_refunds_lose_nothing() {
    let limit: Limit = "10/1m".parse().expect("a limit");
    let threads = 8;
    let limiter = Arc::new(ConcurrentKeyedLimiter::<u64>::new(limit));
    limiter.hit(7, 30_000, 0);
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let limiter = Arc::clone(&limiter);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                let (mut admitted, mut refunded, mut settled) = (0, 0, 0);
                for i in 0..2_000 {
                    if let Admission::Admitted { reservation, .. } = limiter.reserve(7, 30_000, 1) {
                        admitted += 1;
                        // Every third request costs nothing (a 500), the rest what they reserved.
                        let cost = u64::from((t + i) % 3 != 0);
                        refunded += 1 - cost;
                        settled += cost;
                        limiter.settle(7, reservation, 30_000, cost);
                    }
                }
                (admitted, refunded, settled)
            })
        })
        .collect();
    let (admitted, refunded, settled) = handles
        .into_iter()
        .map(|handle| handle.join().expect("a thread finishes"))
        .fold((0, 0, 0), |(a, r, s), (admitted, refunded, settled)| {
            (a + admitted, r + refunded, s + settled)
        });
    assert!(
        admitted <= 10 + refunded,
        "{admitted} admitted, {refunded} refunded"
    );
    assert_eq!(settled, admitted - refunded);
    assert_eq!(
        limiter.peek(&7, 30_000, 0).used.to_string(),
        format!("{settled}.000")
    );
    assert_eq!(settled, 10, "the bucket fills up by the end");
}

/// A settle charging more than a packed word's counters hold moves the key to the
/// concurrent limiter's wide map, from `current` (settled in the reservation's window) and
/// from `previous` (in the next), and decides on as the keyed limiter does. The random
/// traces' limits leave the counters far too much room to get here.
#[test]
fn a_settle_past_the_packed_counters_widens_the_key_and_decides_as_the_core() {
    let admitted = |admission: Admission| match admission {
        Admission::Admitted { reservation, .. } => reservation,
        Admission::Refused(refusal) => panic!("refused: {refusal:?}"),
    };
    #[rustfmt::skip]
    let cases = [
        // limit,                                   reserve at,    settle at,         cost
        (Limit::new(1, 1 << 62).expect("valid"),    0,             10,                3),
        (Limit::new(1, 1 << 62).expect("valid"),    (1 << 62) - 1, (1 << 62) + 5,     4),
        ("6/8s".parse().expect("a limit"),           100,           200,               40_000_000),
        ("6/8s".parse().expect("a limit"),           7_900,         8_100,             40_000_000),
    ];
    for (limit, reserve_at, settle_at, cost) in cases {
        let packed = ConcurrentKeyedLimiter::<u64, FloatingState>::with_shards(limit, one_shard());
        assert!(packed.is_packed());
        let mut keyed = KeyedLimiter::<u64, FloatingState>::new(limit);
        let in_packed = admitted(packed.reserve(7, reserve_at, 1));
        let in_keyed = admitted(keyed.reserve(7, reserve_at, 1));
        assert_eq!(
            packed.settle(7, in_packed, settle_at, cost),
            keyed.settle(7, in_keyed, settle_at, cost),
            "{limit}: the settle"
        );
        for t in [settle_at, settle_at + 1, settle_at + limit.window_ms() / 2] {
            assert_eq!(
                packed.hit(7, t, 1),
                keyed.hit(7, t, 1),
                "{limit}: a hit at {t}"
            );
        }
    }
}
