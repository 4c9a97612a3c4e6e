//! Heap bytes per key, counted by the allocator: our `KeyedLimiter` (floating window)
//! against governor's keyed limiter with its default store (`DashMap`), filled with the same
//! ESI-shaped keys (application, character); and our `ConcurrentKeyedLimiter`, the one
//! threads share, beside them.
//!
//! `key_memory` estimates our table from its layout; this counts what was really allocated
//! (the sizes asked of the allocator, not its own bookkeeping), for both. Prints CSV.
//!
//! Run with `cargo run --release --example heap_per_key`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter};
use trickle_core::{ConcurrentKeyedLimiter, KeyedLimiter};

/// The system allocator, counting the bytes live at any moment.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

type Key = (u32, u64);

/// The limit both limiters hold every key to: ESI's 150/15m.
const TOKENS: u32 = 150;
const WINDOW: Duration = Duration::from_secs(15 * 60);

fn key(index: u64) -> Key {
    (7, 90_000_000 + index)
}

/// The heap bytes that `fill` leaves allocated, divided by `keys`.
fn bytes_per_key<T>(keys: u64, fill: impl FnOnce() -> T) -> f64 {
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let limiter = fill();
    let bytes = LIVE_BYTES.load(Ordering::Relaxed) - before;
    drop(limiter);
    bytes as f64 / keys as f64
}

fn ours(keys: u64) -> f64 {
    let limit = trickle_core::Limit::new(u64::from(TOKENS), WINDOW.as_millis() as u64)
        .expect("a valid limit");
    bytes_per_key(keys, || {
        let mut limiter: KeyedLimiter<Key> = KeyedLimiter::new(limit);
        for index in 0..keys {
            limiter.hit(key(index), 0, 1);
        }
        limiter
    })
}

fn concurrent(keys: u64) -> f64 {
    let limit = trickle_core::Limit::new(u64::from(TOKENS), WINDOW.as_millis() as u64)
        .expect("a valid limit");
    bytes_per_key(keys, || {
        let limiter: ConcurrentKeyedLimiter<Key> = ConcurrentKeyedLimiter::new(limit);
        for index in 0..keys {
            limiter.hit(key(index), 0, 1);
        }
        limiter
    })
}

fn governor(keys: u64) -> f64 {
    let quota = Quota::with_period(WINDOW / TOKENS)
        .expect("a non-zero period")
        .allow_burst(NonZeroU32::new(TOKENS).expect("a non-zero limit"));
    bytes_per_key(keys, || {
        let limiter = RateLimiter::dashmap_with_clock(quota, FakeRelativeClock::default());
        for index in 0..keys {
            let _ = limiter.check_key(&key(index));
        }
        limiter
    })
}

fn main() {
    // The concurrent limiter's columns come last, so that readers of the first four
    // columns read them as before.
    println!("keys,ours_bytes_per_key,governor_bytes_per_key,ratio,concurrent_bytes_per_key,concurrent_ratio");
    for keys in [10_000, 1_000_000] {
        let (ours, governor, concurrent) = (ours(keys), governor(keys), concurrent(keys));
        println!(
            "{keys},{ours:.1},{governor:.1},{:.2},{concurrent:.1},{:.2}",
            ours / governor,
            concurrent / governor
        );
    }
}
