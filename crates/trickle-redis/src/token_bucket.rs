//! The token bucket as one Lua script: capacity N, refilled continuously at N tokens per
//! W ms, before the check.
//!
//! The script (`token_bucket.lua`, beside this file) keeps the core's state, the tokens
//! taken out as whole tokens plus a fraction in 1/W units, and refills it as
//! `src/algorithms/token_bucket.rs` does, borrowing a whole token when the fraction is too small, so
//! that no fraction of a token is lost. The refill `N × gap` is only worked out for gaps
//! shorter than the time to fill the bucket, which keeps it below `used × W ≤ 2^53`.

/// 2^53 − 1: the largest `N × W` a token bucket may have. The script's largest numbers are
/// `used × W = owed × W + fraction ≤ N × W` after hits, the refill `N × gap`, which is
/// below that (longer gaps fill the bucket and are not multiplied), and the cost of a
/// request that can never fit, which the script sees as N + 1; all stay within the
/// integers a double holds exactly (up to 2^53) when `N × W < 2^53`. A `record` that would
/// take `used × W` past 2^53 is refused.
pub(crate) const MAX_SCALED: u128 = (1 << 53) - 1;

pub(crate) const SCRIPT: &str = concat!(
    include_str!("prelude.lua"),
    include_str!("token_bucket.lua"),
    include_str!("decide.lua")
);
