//! The random request traces the parity tests (parity.rs, settle.rs, policy.rs and
//! sliding_log.rs's own) run through the core and through Redis: the limit, how time moves
//! between requests, what a request costs, a settle's final cost, and where a trace starts.

#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use trickle_core::{Algorithm, Limit};
use trickle_redis::{RedisLimiter, MAX_TIME_MS};

use crate::common::LogStored;

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

/// Mostly small limits, so traces cross many windows; some larger; and limits at the
/// algorithm's bound (N × W = max_scaled or just under), with short and long windows.
pub fn limit(algorithm: Algorithm) -> impl Strategy<Value = Limit> {
    let max_scaled = RedisLimiter::max_scaled(algorithm) as u64;
    let at_bound =
        (prop_oneof![1..=16u64, 1..=1u64 << 30], 0..=2u64).prop_map(move |(window_ms, under)| {
            let tokens = (max_scaled / window_ms).saturating_sub(under).max(1);
            (tokens, window_ms)
        });
    let long_window = (1..=4u64, 1..=1u64 << 50);
    prop_oneof![
        5 => (1..=8u64, 1..=40u64),
        2 => (1..=1_000u64, 1..=100_000u64),
        2 => at_bound,
        1 => long_window,
    ]
    .prop_map(|(tokens, window_ms)| Limit::new(tokens, window_ms).expect("tokens and window ≥ 1"))
}

/// A record's cost: as a hit's, and now and then 2^53, the largest a record may bring
/// (it fits an empty bucket of a 1 ms window exactly), or one more.
pub fn record_cost(tokens: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        12 => cost(tokens),
        1 => Just(MAX_TIME_MS),
        1 => Just(MAX_TIME_MS + 1),
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

/// The invariants of what Redis holds for a sliding log (`common::stored_log`): one entry per ms, oldest first,
/// each still counting at `seen` (every write prunes), and `total` their sum.
pub fn check_log_layout(stored: &LogStored, window_ms: u64) -> Result<(), TestCaseError> {
    let entries: Vec<(u64, u64)> = stored
        .entries
        .iter()
        .map(|entry| {
            let (at, cost) = entry.split_once(':').expect("ms:cost");
            (at.parse().expect("ms"), cost.parse().expect("cost"))
        })
        .collect();
    let field = |name: &str| stored.hash.get(name).map_or(0, |v| v.parse().expect(name));
    let (total, seen): (u64, u64) = (field("total"), field("seen"));
    prop_assert_eq!(entries.iter().map(|e| e.1).sum::<u64>(), total, "total");
    prop_assert!(
        entries.windows(2).all(|pair| pair[0].0 < pair[1].0),
        "order"
    );
    prop_assert!(
        entries.iter().all(|e| e.1 > 0 && seen - e.0 < window_ms),
        "live"
    );
    Ok(())
}

/// A settle's final cost, from the reserve it settles.
#[derive(Debug, Clone, Copy)]
pub enum Final {
    /// What was reserved: the settle changes no count.
    Same,
    /// Nothing: all of the reserve comes back (ESI's 429 and 5XX).
    Zero,
    /// This many more tokens than reserved.
    More(u64),
    /// This many fewer (not below 0).
    Less(u64),
    /// This cost, whatever was reserved: up to 2^53, and past it.
    Exactly(u64),
}

impl Final {
    pub fn of(self, reserved: u64) -> u64 {
        match self {
            Final::Same => reserved,
            Final::Zero => 0,
            Final::More(tokens) => reserved.saturating_add(tokens),
            Final::Less(tokens) => reserved.saturating_sub(tokens),
            Final::Exactly(cost) => cost,
        }
    }
}

pub fn final_cost(tokens: u64) -> impl Strategy<Value = Final> {
    prop_oneof![
        2 => Just(Final::Same),
        2 => Just(Final::Zero),
        3 => (1..=3u64).prop_map(Final::More),
        3 => (1..=3u64).prop_map(Final::Less),
        2 => record_cost(tokens).prop_map(Final::Exactly),
    ]
}

/// How long after its reserve, in ms, a reservation's tokens count (the core's settle
/// changes nothing from then on): worked out here from the rule in src/algorithms/reservation.rs,
/// not from the scripts.
pub fn counts_ms(algorithm: Algorithm, limit: Limit, at_ms: u64) -> u64 {
    let window_ms = limit.window_ms();
    match algorithm {
        // To the end of the window after the reservation's.
        Algorithm::Floating => 2 * window_ms - at_ms % window_ms,
        // To the end of its window.
        Algorithm::Fixed => window_ms - at_ms % window_ms,
        Algorithm::SlidingLog | Algorithm::TokenBucket => window_ms,
    }
}
