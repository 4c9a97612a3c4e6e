//! The time one decision takes in one bucket: our four algorithms against governor's direct
//! limiter (GCRA, `check`), all on the same stream of requests under the same limit.
//!
//! `cargo bench --bench decisions`; `make bench` puts the ratios in a table.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{direct_stream, governor_quota, limit, report_share, Replay};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use governor::clock::FakeRelativeClock;
use governor::RateLimiter;
use trickle_core::state::{FixedState, FloatingState, SlidingLogState, State, TokenBucketState};
use trickle_core::Bucket;

/// Long enough that the stream's pattern is not what the branch predictor learns.
const STREAM_LEN: usize = 1 << 16;

fn ours<S: State + Default>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
) {
    let mut bucket: Bucket<S> = Bucket::new(limit());
    let mut replay = Replay::new(direct_stream(limit(), STREAM_LEN));
    let mut now_ms = 0;
    let mut decide = |_: &(), gap_ms: u64| {
        now_ms += gap_ms;
        black_box(bucket.hit(now_ms, 1)).is_allowed()
    };
    let allowed = replay.run(STREAM_LEN as u64, &mut decide);
    report_share("direct", name, allowed, STREAM_LEN as u64);
    group.bench_function(name, |b| {
        b.iter_custom(|iters| replay.time(iters, &mut decide))
    });
}

fn governor_gcra(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let clock = FakeRelativeClock::default();
    let limiter = RateLimiter::direct_with_clock(governor_quota(limit()), clock.clone());
    let mut replay = Replay::new(direct_stream(limit(), STREAM_LEN));
    let mut decide = |_: &(), gap_ms: u64| {
        if gap_ms > 0 {
            clock.advance(Duration::from_millis(gap_ms));
        }
        black_box(limiter.check()).is_ok()
    };
    let allowed = replay.run(STREAM_LEN as u64, &mut decide);
    report_share("direct", "governor", allowed, STREAM_LEN as u64);
    group.bench_function("governor", |b| {
        b.iter_custom(|iters| replay.time(iters, &mut decide))
    });
}

fn direct(c: &mut Criterion) {
    let mut group = c.benchmark_group("direct");
    ours::<FloatingState>(&mut group, "floating");
    ours::<TokenBucketState>(&mut group, "token_bucket");
    ours::<SlidingLogState>(&mut group, "sliding_log");
    ours::<FixedState>(&mut group, "fixed_window");
    governor_gcra(&mut group);
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = direct
}
criterion_main!(benches);
