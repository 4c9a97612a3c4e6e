//! The time one decision takes in a limiter holding 10,000 or 1,000,000 keys: our
//! `KeyedLimiter` (floating window) against governor's keyed limiter with its default store
//! (`DashMap`, `check_key`), on the same stream of keys and times.
//!
//! Both start with every key present and three windows already replayed, so what is timed is
//! the steady state of a busy server: a lookup in a full table and a decision, about a third
//! of them denials. `cargo bench --bench keyed`; `make bench` puts the ratios in a table.
//!
//! Then the limiters threads share, at 1 and 2 threads over 10,000 keys: our
//! `ConcurrentKeyedLimiter` against the same governor limiter, which is shared by threads as
//! it is. The stream is dealt to the threads in turn, and the fake clock is one atomic both
//! threads move forward by their gaps. What is timed is the CPU time all threads spend per
//! decision: contention shows as the extra work it causes (cache lines moving between cores,
//! a lock's retries), while a wait asleep, which costs the machine nothing, is not counted.

mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use common::{
    governor_quota, keyed_stream, limit, report_share, requests_in_windows, Key, Replay, Step,
};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use governor::clock::FakeRelativeClock;
use governor::RateLimiter;
use trickle_core::{ConcurrentKeyedLimiter, KeyedLimiter};

/// Rounds of every key per stream, replayed round and round: enough that a stream is at
/// least 65,536 requests long and has more than one order of keys.
fn rounds(keys: u64) -> u64 {
    (1u64 << 16).div_ceil(keys).max(2)
}

fn ours(group: &mut BenchmarkGroup<'_, WallTime>, keys: u64, stream: Vec<Step<Key>>) {
    let mut limiter: KeyedLimiter<Key> = KeyedLimiter::new(limit());
    let mut replay = Replay::new(stream);
    let mut now_ms = 0;
    let mut decide = |key: &Key, gap_ms: u64| {
        now_ms += gap_ms;
        black_box(limiter.hit(*key, now_ms, 1)).is_allowed()
    };
    warm_up(keys, "floating", &mut replay, &mut decide);
    group.bench_function("floating", |b| {
        b.iter_custom(|iters| replay.time(iters, &mut decide))
    });
}

fn governor_keyed(group: &mut BenchmarkGroup<'_, WallTime>, keys: u64, stream: Vec<Step<Key>>) {
    let clock = FakeRelativeClock::default();
    let limiter = RateLimiter::dashmap_with_clock(governor_quota(limit()), clock.clone());
    let mut replay = Replay::new(stream);
    let mut decide = |key: &Key, gap_ms: u64| {
        if gap_ms > 0 {
            clock.advance(Duration::from_millis(gap_ms));
        }
        black_box(limiter.check_key(key)).is_ok()
    };
    warm_up(keys, "governor", &mut replay, &mut decide);
    group.bench_function("governor", |b| {
        b.iter_custom(|iters| replay.time(iters, &mut decide))
    });
}

/// Replays three windows' worth of requests, which brings in every key and takes both
/// limiters past their first burst (governor's lasts two windows at 1.5 × N per W), and says
/// what share of the third window was allowed (`report_share`).
fn warm_up(
    keys: u64,
    name: &str,
    replay: &mut Replay<Key>,
    mut decide: impl FnMut(&Key, u64) -> bool,
) {
    let window = requests_in_windows(limit(), keys, 1);
    replay.run(2 * window, &mut decide);
    let allowed = replay.run(window, &mut decide);
    report_share(&format!("keyed_{keys}"), name, allowed, window);
}

/// Deals a stream to `threads` threads in turn, so that each sees every key, mixed as the
/// whole stream mixes them, and their requests for one key meet in the limiter.
fn deal(stream: Vec<Step<Key>>, threads: usize) -> Vec<Replay<Key>> {
    let mut dealt: Vec<Vec<Step<Key>>> = (0..threads).map(|_| Vec::new()).collect();
    for (n, step) in stream.into_iter().enumerate() {
        dealt[n % threads].push(step);
    }
    dealt.into_iter().map(Replay::new).collect()
}

/// Runs `count` decisions split between the replays, one thread each, all at once; returns
/// the CPU time they took together, and how many were allowed.
fn run_threads(
    replays: &mut [Replay<Key>],
    count: u64,
    decide: &(impl Fn(&Key, u64) -> bool + Sync),
) -> (Duration, u64) {
    let threads = replays.len() as u64;
    thread::scope(|scope| {
        let workers: Vec<_> = replays
            .iter_mut()
            .enumerate()
            .map(|(n, replay)| {
                // The first thread takes what does not divide evenly.
                let own = count / threads + if n == 0 { count % threads } else { 0 };
                scope.spawn(move || {
                    let mut allowed = 0;
                    let spent = replay.time(own, |key, gap_ms| {
                        let fits = decide(key, gap_ms);
                        allowed += u64::from(fits);
                        fits
                    });
                    (spent, allowed)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a benchmark thread finishes"))
            .fold(
                (Duration::ZERO, 0),
                |(spent, allowed), (own_spent, own_allowed)| {
                    (spent + own_spent, allowed + own_allowed)
                },
            )
    })
}

/// Warms up as `warm_up` does, the threads sharing the three windows, then times.
fn threaded_bench(
    group: &mut BenchmarkGroup<'_, WallTime>,
    keys: u64,
    name: &str,
    mut replays: Vec<Replay<Key>>,
    decide: &(impl Fn(&Key, u64) -> bool + Sync),
) {
    let window = requests_in_windows(limit(), keys, 1);
    run_threads(&mut replays, 2 * window, decide);
    let (_, allowed) = run_threads(&mut replays, window, decide);
    report_share(&format!("threads_{keys}"), name, allowed, window);
    group.bench_function(name, |b| {
        b.iter_custom(|iters| run_threads(&mut replays, iters, decide).0)
    });
}

fn ours_shared(group: &mut BenchmarkGroup<'_, WallTime>, keys: u64, threads: usize) {
    let limiter: ConcurrentKeyedLimiter<Key> = ConcurrentKeyedLimiter::new(limit());
    let clock_ms = AtomicU64::new(0);
    let decide = |key: &Key, gap_ms: u64| {
        // Moved only when the stream's time moves, as governor's fake clock is below.
        let now_ms = if gap_ms > 0 {
            clock_ms.fetch_add(gap_ms, Ordering::Relaxed) + gap_ms
        } else {
            clock_ms.load(Ordering::Relaxed)
        };
        black_box(limiter.hit(*key, now_ms, 1)).is_allowed()
    };
    let replays = deal(keyed_stream(limit(), keys, rounds(keys)), threads);
    threaded_bench(
        group,
        keys,
        &format!("concurrent_{threads}"),
        replays,
        &decide,
    );
}

fn governor_shared(group: &mut BenchmarkGroup<'_, WallTime>, keys: u64, threads: usize) {
    let clock = FakeRelativeClock::default();
    let limiter = RateLimiter::dashmap_with_clock(governor_quota(limit()), clock.clone());
    let decide = |key: &Key, gap_ms: u64| {
        if gap_ms > 0 {
            clock.advance(Duration::from_millis(gap_ms));
        }
        black_box(limiter.check_key(key)).is_ok()
    };
    let replays = deal(keyed_stream(limit(), keys, rounds(keys)), threads);
    threaded_bench(
        group,
        keys,
        &format!("governor_{threads}"),
        replays,
        &decide,
    );
}

fn keyed(c: &mut Criterion) {
    for keys in [10_000, 1_000_000] {
        let mut group = c.benchmark_group(format!("keyed_{keys}"));
        ours(&mut group, keys, keyed_stream(limit(), keys, rounds(keys)));
        governor_keyed(&mut group, keys, keyed_stream(limit(), keys, rounds(keys)));
        group.finish();
    }
    let keys = 10_000;
    let mut group = c.benchmark_group(format!("threads_{keys}"));
    for threads in [1, 2] {
        ours_shared(&mut group, keys, threads);
        governor_shared(&mut group, keys, threads);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = keyed
}
criterion_main!(benches);
