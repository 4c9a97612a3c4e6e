//! What the benchmarks share: one limit, governor's quota for the same limit, and request
//! streams generated once, so that every limiter decides the same requests at the same
//! times and only the decision is timed.
//!
//! Time is free for both sides: ours takes it as an argument, governor reads a
//! `FakeRelativeClock` that the replay moves forward only when the stream's time moves.

// Each benchmark is its own crate and uses only some of these helpers.
#![allow(dead_code)]

use std::hint::black_box;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use governor::Quota;
use trickle_core::Limit;

/// The limit every benchmark uses: the widget's default, 6 tokens per 8 s.
pub const LIMIT: &str = "6/8s";

/// How much faster than the limit the streams ask: 1.5 × N per W, so that once the first
/// window is spent about a third of the requests are denied.
const OVERLOAD: (u64, u64) = (3, 2);

pub fn limit() -> Limit {
    LIMIT.parse().expect("a valid limit")
}

/// governor's GCRA quota for the same limit: a burst of N, one token back every W / N.
pub fn governor_quota(limit: Limit) -> Quota {
    let tokens = u32::try_from(limit.tokens()).expect("a benchmark limit fits in u32");
    let per_token = Duration::from_millis(limit.window_ms()) / tokens;
    Quota::with_period(per_token)
        .expect("a non-zero period")
        .allow_burst(NonZeroU32::new(tokens).expect("a non-zero limit"))
}

/// One request of a stream: whose it is, and how long after the one before it comes.
pub struct Step<K> {
    pub key: K,
    pub gap_ms: u64,
}

/// A stream replayed round and round, from where the last run stopped, so that criterion's
/// many short runs do not keep hitting the same first keys while their buckets are hot.
pub struct Replay<K> {
    steps: Vec<Step<K>>,
    position: usize,
}

impl<K> Replay<K> {
    pub fn new(steps: Vec<Step<K>>) -> Replay<K> {
        Replay { steps, position: 0 }
    }

    /// Feeds the next `count` requests to `decide` (which answers whether it allowed one)
    /// and returns how many were allowed.
    pub fn run(&mut self, count: u64, mut decide: impl FnMut(&K, u64) -> bool) -> u64 {
        let mut allowed = 0;
        for _ in 0..count {
            let step = &self.steps[self.position];
            allowed += u64::from(decide(&step.key, step.gap_ms));
            self.position += 1;
            if self.position == self.steps.len() {
                self.position = 0;
            }
        }
        allowed
    }

    /// Times `count` decisions, for criterion's `iter_custom`, on this thread's CPU clock.
    pub fn time(&mut self, count: u64, decide: impl FnMut(&K, u64) -> bool) -> Duration {
        let start = thread_cpu_time();
        black_box(self.run(count, decide));
        thread_cpu_time().saturating_sub(start)
    }
}

/// The CPU time this thread has used. The benchmarks time with it rather than the wall
/// clock: on a shared machine the wall clock also counts the time the scheduler gives to
/// other processes, which landed unevenly on the two sides of a ratio (criterion runs them
/// one after the other) and moved ratios by 2× between runs.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a pointer to a live local.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "the thread's CPU clock is readable");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// xorshift64*: a fixed, dependency-free pseudo-random source, so every run and every
/// limiter sees the same stream.
pub struct Random(u64);

impl Random {
    pub fn new(seed: u64) -> Random {
        Random(seed | 1)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % bound
    }
}

/// One bucket's stream: gaps drawn evenly from 0 to twice the mean gap that asks
/// 1.5 × N per W.
pub fn direct_stream(limit: Limit, len: usize) -> Vec<Step<()>> {
    let mean_gap_ms = limit.window_ms() * OVERLOAD.1 / (limit.tokens() * OVERLOAD.0);
    let mut random = Random::new(0x5eed);
    (0..len)
        .map(|_| Step {
            key: (),
            gap_ms: random.below(2 * mean_gap_ms + 1),
        })
        .collect()
}

/// An ESI-shaped key: (application, character).
pub type Key = (u32, u64);

/// The `index`-th of the distinct keys a stream draws from.
pub fn key(index: u64) -> Key {
    (7, 90_000_000 + index)
}

/// A stream over `keys` keys in `rounds` rounds: each round asks every key once, in a
/// shuffled order, so that every key is in the table and asks 1.5 × N per W. The requests
/// are spaced evenly in time; with many keys most gaps are 0 ms, as on a busy server where
/// many requests share a millisecond.
pub fn keyed_stream(limit: Limit, keys: u64, rounds: u64) -> Vec<Step<Key>> {
    let requests_per_window = requests_in_windows(limit, keys, 1);
    let mut random = Random::new(0xcafe);
    let mut order: Vec<u64> = (0..keys).collect();
    let mut steps = Vec::with_capacity((keys * rounds) as usize);
    for round in 0..rounds {
        shuffle(&mut order, &mut random);
        for (n, &index) in (round * keys..).zip(&order) {
            // Gaps between evenly spaced times, rounded down to whole milliseconds.
            let gap_ms = (n + 1) * limit.window_ms() / requests_per_window
                - n * limit.window_ms() / requests_per_window;
            steps.push(Step {
                key: key(index),
                gap_ms,
            });
        }
    }
    steps
}

/// Fisher–Yates.
fn shuffle(items: &mut [u64], random: &mut Random) {
    for last in (1..items.len()).rev() {
        let other = random.below(last as u64 + 1) as usize;
        items.swap(last, other);
    }
}

/// How many requests of a keyed stream make `windows` whole windows.
pub fn requests_in_windows(limit: Limit, keys: u64, windows: u64) -> u64 {
    windows * keys * limit.tokens() * OVERLOAD.0 / OVERLOAD.1
}

/// Says what share of a stream a limiter allowed, to show that both sides of a ratio decide
/// a similar mix of allowed and denied requests, and writes it to
/// `target/bench/allowed/GROUP.NAME.json` for `make bench`'s figures (benches/report.mjs),
/// which the docs quote beside the times.
pub fn report_share(group: &str, name: &str, allowed: u64, requests: u64) {
    println!(
        "{group}/{name}: {:.1}% of {requests} requests allowed",
        100.0 * allowed as f64 / requests as f64
    );
    let folder = target_dir().join("bench").join("allowed");
    let path = folder.join(format!("{group}.{name}.json"));
    let json = format!("{{ \"allowed\": {allowed}, \"requests\": {requests} }}\n");
    if let Err(err) = std::fs::create_dir_all(&folder).and_then(|()| std::fs::write(&path, json)) {
        eprintln!("cannot write {}: {err}", path.display());
    }
}

/// Cargo's target folder, where `benches/report.mjs` reads `bench/`.
fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}

/// Criterion settings that keep `make bench` to a few minutes on a 2-core machine.
pub fn criterion() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40)
}
