//! The keyed limiter under a million distinct keys, of which only those of the last two
//! windows are active: how many buckets it keeps and what its table takes, against a table
//! that holds all the million keys at once (all active in one window), measured in the same
//! run. It prints CSV, one row a pace (the million in one window first), which `make bench`
//! keeps in target/bench/keyed-load.csv for the docs' table (benches/report.mjs).
//!
//! Run with `cargo run --release --example keyed_load`.

use trickle_core::KeyedLimiter;

const KEYS: u64 = 1_000_000;
const WINDOW_MS: u64 = 8_000;

/// Drives `KEYS` distinct keys through a 6/8s keyed limiter, `per_window` new ones in each
/// window, and returns (most buckets held, most table bytes, table bytes at the end).
fn drive(per_window: u64) -> (usize, usize, usize) {
    let mut limiter: KeyedLimiter<u64> = KeyedLimiter::new("6/8s".parse().expect("a limit"));
    let (mut most_keys, mut most_bytes) = (0, 0);
    for key in 0..KEYS {
        let (window, i) = (key / per_window, key % per_window);
        let now = window * WINDOW_MS + i * WINDOW_MS / per_window;
        limiter.hit(key, now, 1);
        most_keys = most_keys.max(limiter.len());
        most_bytes = most_bytes.max(limiter.table_bytes());
    }
    (most_keys, most_bytes, limiter.table_bytes())
}

fn main() {
    println!("keys_per_window,most_buckets,most_table_bytes,end_table_bytes");
    for per_window in [KEYS, 1_000, 10_000, 100_000] {
        let (most_keys, most_bytes, end_bytes) = drive(per_window);
        println!("{per_window},{most_keys},{most_bytes},{end_bytes}");
    }
}
