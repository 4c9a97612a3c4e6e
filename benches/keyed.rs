//! The time one decision takes in a limiter holding 10,000 or 1,000,000 keys: our
//! `KeyedLimiter` (floating window) against governor's keyed limiter with its default store
//! (`DashMap`, `check_key`), on the same stream of keys and times.
//!
//! Both start with every key present and three windows already replayed, so what is timed is
//! the steady state of a busy server: a lookup in a full table and a decision, about a third
//! of them denials. `cargo bench --bench keyed`; `make bench` puts the ratios in a table.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{governor_quota, keyed_stream, limit, requests_in_windows, Key, Replay, Step};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use governor::clock::FakeRelativeClock;
use governor::RateLimiter;
use trickle::KeyedLimiter;

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
/// what share of the third window was allowed.
fn warm_up(
    keys: u64,
    name: &str,
    replay: &mut Replay<Key>,
    mut decide: impl FnMut(&Key, u64) -> bool,
) {
    let window = requests_in_windows(limit(), keys, 1);
    replay.run(2 * window, &mut decide);
    let allowed = replay.run(window, &mut decide);
    println!(
        "keyed_{keys}/{name}: {:.1}% of the third window's {window} requests allowed",
        100.0 * allowed as f64 / window as f64
    );
}

fn keyed(c: &mut Criterion) {
    for keys in [10_000, 1_000_000] {
        let mut group = c.benchmark_group(format!("keyed_{keys}"));
        ours(&mut group, keys, keyed_stream(limit(), keys, rounds(keys)));
        governor_keyed(&mut group, keys, keyed_stream(limit(), keys, rounds(keys)));
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = keyed
}
criterion_main!(benches);
