//! What a bucket costs in memory, as the README states it: the per-key figure a server
//! operator plans with.

use std::mem::size_of;

use trickle_core::state::{FixedState, FloatingState, TokenBucketState};
use trickle_core::KeyedLimiter;

#[test]
fn floating_state_is_two_wide_counters_and_a_time() {
    // Two u128 counters and a u64 time, packed to 8-byte alignment: no padding.
    assert_eq!(size_of::<FloatingState>(), 40);
}

#[test]
fn fixed_state_is_one_counter_and_a_time() {
    assert_eq!(size_of::<FixedState>(), 16);
}

#[test]
fn token_bucket_state_is_whole_and_fractional_tokens_and_a_time() {
    assert_eq!(size_of::<TokenBucketState>(), 32);
}

#[test]
fn an_esi_key_slot_is_key_state_and_control_byte() {
    assert_eq!(KeyedLimiter::<(u32, u64)>::SLOT_BYTES, 16 + 40 + 1);
}

#[test]
fn the_table_shrinks_back_after_a_burst_of_keys_goes_idle() {
    let mut limiter: KeyedLimiter<u64> = KeyedLimiter::new("6/8s".parse().unwrap());
    for key in 0..100_000 {
        limiter.hit(key, 0, 1);
    }
    let after_burst = limiter.table_bytes();
    // Two whole windows later the burst's keys hold nothing; one new key arrives.
    limiter.hit(u64::MAX, 16_000, 1);
    assert_eq!(limiter.len(), 1);
    assert!(
        limiter.table_bytes() * 100 < after_burst,
        "table kept {} of {} bytes",
        limiter.table_bytes(),
        after_burst
    );
}

/// A table sized for `keys`, as `table_bytes` counts it: the standard `HashMap` keeps a
/// power-of-two number of slots, at most 7/8 of them full.
fn table_bytes_for(keys: usize) -> usize {
    (keys * 8 / 7).next_power_of_two() * KeyedLimiter::<u64>::SLOT_BYTES
}

/// A million distinct keys over 100 windows, 10,000 new ones in each: the table holds the
/// keys of the last two windows, never more, and its memory is that of a table for those
/// 20,000 keys, not for the million seen. Within a factor of 2: a dropped key leaves a
/// tombstone in the `HashMap` that counts as full until the table is rebuilt, so it grows
/// one size further than the live keys alone would need, and stays there.
#[test]
fn a_million_keys_take_the_memory_of_the_keys_active_in_the_last_two_windows() {
    const WINDOWS: u64 = 100;
    const PER_WINDOW: u64 = 10_000;
    let window_ms = 8_000;
    let mut limiter: KeyedLimiter<u64> = KeyedLimiter::new("6/8s".parse().unwrap());
    let mut peak_bytes = 0;
    for window in 0..WINDOWS {
        for i in 0..PER_WINDOW {
            let key = window * PER_WINDOW + i;
            let now = window * window_ms + i * window_ms / PER_WINDOW;
            assert!(limiter.hit(key, now, 1).is_allowed());
            peak_bytes = peak_bytes.max(limiter.table_bytes());
        }
        // This window's keys, and the last window's, which still count as `previous`.
        let active = PER_WINDOW * (window + 1).min(2);
        assert_eq!(limiter.len() as u64, active, "after window {window}");
    }
    let active = (2 * PER_WINDOW) as usize;
    let seen = (WINDOWS * PER_WINDOW) as usize;
    assert!(
        peak_bytes <= 2 * table_bytes_for(active),
        "peak {peak_bytes} bytes, a table for {active} keys takes {}",
        table_bytes_for(active)
    );
    assert!(peak_bytes * 20 < table_bytes_for(seen));
}
