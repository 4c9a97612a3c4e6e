//! The sliding log as one Lua script: decide, and log the spend only when allowed, in one
//! round trip.
//!
//! The script (`sliding_log.lua`, beside this file) repeats the core's `src/algorithms/sliding_log.rs`
//! step for step: the bucket's hash holds the total and the latest time seen, and a list
//! beside it holds one `ms:cost` entry per millisecond with spending, oldest first. Tokens
//! spent at s count while `s > t − W`; a denial walks the list oldest first to the entry
//! whose return at `s + W` makes room.

/// 2^53 − 1: the largest `N × W` a sliding log may have. The script's largest numbers are
/// `used × W ≤ N × W` after hits, and N + 1, the cost a hit above the limit is sent as;
/// doubles hold every integer up to 2^53 exactly. A `record` that would take `total × W`
/// past 2^53 is refused.
pub(crate) const MAX_SCALED: u128 = (1 << 53) - 1;

pub(crate) const SCRIPT: &str = concat!(
    include_str!("prelude.lua"),
    include_str!("sliding_log.lua"),
    include_str!("decide.lua")
);

/// The list of entries beside the bucket's hash `bucket`, in the same hash tag.
pub(crate) fn entries_key(bucket: &str) -> String {
    format!("{bucket}:entries")
}
