//! The integers a Redis script holds exactly. Lua's numbers in Redis are doubles, exact for
//! integers up to 2^53, so the limiter refuses what would leave that range before a script
//! runs, and the errors name the bound it kept to.

/// 2^53: the latest time, in ms, a request may bring (about 285,000 years after 1970).
pub const MAX_TIME_MS: u64 = 1 << 53;

/// `2^k` or `2^k − 1` for the bounds the scripts have, else the number itself: how an error
/// message names a bound.
pub(crate) fn power_of_two(n: u128) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.ilog2())
    } else if (n + 1).is_power_of_two() {
        format!("2^{} − 1", (n + 1).ilog2())
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_named_as_powers_of_two() {
        assert_eq!(power_of_two(1 << 52), "2^52");
        assert_eq!(power_of_two((1 << 53) - 1), "2^53 − 1");
        assert_eq!(power_of_two(1000), "1000");
    }
}
