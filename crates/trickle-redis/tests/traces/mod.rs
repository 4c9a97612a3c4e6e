//! The random request traces the parity tests (parity.rs, and sliding_log.rs's own) run
//! through the core and through Redis: how time moves between requests, what a request
//! costs, and where a trace starts.

#![allow(dead_code)]

use proptest::prelude::*;
use trickle_redis::MAX_TIME_MS;

/// How time moves before a request.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// Forward by this many ms.
    Forward(u64),
    /// To the next window edge k·W, moved by −1, 0 or +1 ms.
    Edge(i8),
    /// Backwards by this many ms (not below 0).
    Back(u64),
}

pub fn step(window_ms: u64) -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Forward(0)),
        3 => (1..=3u64).prop_map(Step::Forward),
        3 => (1..=(window_ms / 2).max(1)).prop_map(Step::Forward),
        4 => (-1..=1i8).prop_map(Step::Edge),
        1 => (window_ms.saturating_mul(2)..=window_ms.saturating_mul(50)).prop_map(Step::Forward),
        2 => (1..=window_ms.saturating_mul(2)).prop_map(Step::Back),
    ]
}

/// A hit's or peek's cost: 0, small, the whole limit, anything up to it, one more than it
/// (never fits), and `u64::MAX`.
pub fn cost(tokens: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(0),
        3 => 1..=tokens.min(3),
        2 => Just(tokens),
        2 => 1..=tokens,
        1 => Just(tokens + 1),
        1 => Just(u64::MAX),
    ]
}

/// Where a trace starts: at 0, early, or within four windows of the latest time a request
/// may bring.
pub fn start_ms(window_ms: u64) -> impl Strategy<Value = u64> {
    let near_end = MAX_TIME_MS.saturating_sub(window_ms.saturating_mul(4));
    prop_oneof![Just(0), 0..=1_000_000u64, near_end..=MAX_TIME_MS]
}

/// The time of the request after one at `now`.
pub fn next_ms(now: u64, step: Step, window_ms: u64) -> u64 {
    let next = match step {
        Step::Forward(ms) => now.saturating_add(ms),
        Step::Edge(offset) => {
            let edge = (now / window_ms + 1).saturating_mul(window_ms);
            edge.saturating_add_signed(i64::from(offset))
        }
        Step::Back(ms) => now.saturating_sub(ms),
    };
    next.min(MAX_TIME_MS)
}
