//! The fixed window as one Lua script: one counter, emptied at every multiple of W.
//!
//! The script (`fixed.lua`, beside this file) repeats the core's `src/algorithms/fixed.rs`: find the
//! window the request falls in with one `fmod`, empty the counter if it belongs to an
//! earlier window, compare `current × W` with `(N − cost) × W`, and for a denial wait for
//! the window's end.

/// 2^53 − 1: the largest `N × W` a fixed window may have. The script's largest numbers are
/// `current × W ≤ N × W` after hits and the cost of a request that can never fit, which the
/// script sees as N + 1; both stay within the integers a double holds exactly (up to 2^53)
/// when `N × W < 2^53`. A `record` that would take `current × W` past 2^53 is refused.
pub(crate) const MAX_SCALED: u128 = (1 << 53) - 1;

pub(crate) const SCRIPT: &str = concat!(
    include_str!("prelude.lua"),
    include_str!("fixed.lua"),
    include_str!("decide.lua")
);
