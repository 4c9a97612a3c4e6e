//! The floating window as one Lua script: decide, and spend only when allowed, in one
//! round trip.
//!
//! The script (`floating.lua`, beside this file) repeats the core's `src/algorithms/floating.rs`
//! step for step in integers: roll the counters to the request's window, compare
//! `previous × (W − e) + current × W` with `(N − cost) × W`, and for a denial find the first
//! millisecond that fits with the same floor division the core makes.

/// 2^52: the largest `N × W` a floating window may have. The script's largest number is
/// `used × W = previous × (W − e) + current × W ≤ 2 × N × W`, as a hit never lets a counter
/// pass N, and doubles hold every integer up to 2^53 exactly. A `record` that would take
/// `(previous + current) × W` past 2^53 is refused.
pub(crate) const MAX_SCALED: u128 = 1 << 52;

pub(crate) const SCRIPT: &str = concat!(
    include_str!("prelude.lua"),
    include_str!("floating.lua"),
    include_str!("decide.lua")
);
