//! What a bucket costs in memory, as the README states it: the per-key figure a server
//! operator plans with.

use std::mem::size_of;

use trickle::{FixedState, FloatingState, KeyedLimiter, TokenBucketState};

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
