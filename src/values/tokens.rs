//! An exact, possibly fractional, number of tokens.
//!
//! The floating window and the token bucket produce fractions of a token: 4 × 0.625 + 2
//! = 4.5. Every decision compares such amounts exactly, as integers scaled by the window
//! length W, so a fraction is never rounded away and `f64` is only used to show one.

use core::fmt;
use core::num::NonZeroU64;

/// `numerator / denominator` tokens, where the denominator is the window length in ms.
///
/// ```
/// use trickle_core::{FloatingWindow, Limit};
///
/// let limit: Limit = "6/8s".parse().unwrap();
/// let mut bucket = FloatingWindow::new(limit);
/// for t in [0, 1_000, 2_000, 3_000] {
///     bucket.hit(t, 1);
/// }
/// // 5 s into the next window, 3/8 of the previous one still overlaps: 4 × 3/8 = 1.5.
/// let seen = bucket.peek(13_000, 1);
/// assert_eq!(seen.used.numerator(), 4 * 3_000);
/// assert_eq!(seen.used.denominator(), 8_000);
/// assert_eq!(seen.used.to_string(), "1.500");
/// assert_eq!(seen.used.floor(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tokens {
    numerator: u128,
    denominator: NonZeroU64,
}

impl Tokens {
    /// `numerator / denominator` tokens: for a store outside this crate (such as the Redis
    /// backend, `crates/trickle-redis`) that works out `used × W` itself and reports it in
    /// the same [`crate::Decision`] the core gives.
    pub fn new(numerator: u128, denominator: NonZeroU64) -> Tokens {
        Tokens {
            numerator,
            denominator,
        }
    }

    /// The amount times the window length: what decisions compare.
    pub fn numerator(&self) -> u128 {
        self.numerator
    }

    /// The window length in milliseconds.
    pub fn denominator(&self) -> u64 {
        self.denominator.get()
    }

    /// The whole tokens, rounded down.
    pub fn floor(&self) -> u128 {
        div_rem(self.numerator, self.denominator.get()).0
    }

    /// The amount as a float, for showing it; never use it to decide.
    pub fn as_f64(&self) -> f64 {
        let denominator = self.denominator.get();
        let (whole, part) = div_rem(self.numerator, denominator);
        // Splitting keeps the fraction exact up to f64's precision even when the numerator
        // is far beyond 2^53.
        wide_to_f64(whole) + part as f64 / denominator as f64
    }
}

/// `n / d` and `n % d`. A u128 division is a library call, many times slower than a u64 one
/// on WebAssembly and 32-bit targets, and `n` fits a u64 for every limit whose N × W does.
/// Always inlined: the widget's WebAssembly, built for size, would otherwise call it and
/// pass the pair back through memory, which costs a hit more than the division does (and
/// the module comes out smaller inlined).
#[inline(always)]
pub(crate) fn div_rem(n: u128, d: u64) -> (u128, u64) {
    match u64::try_from(n) {
        Ok(n) => (u128::from(n / d), n % d),
        // The remainder is below d, so it fits a u64.
        Err(_) => {
            let (quotient, remainder) = div_rem_wide(n, u128::from(d));
            (quotient, remainder as u64)
        }
    }
}

/// `n / d` and `n % d` for 128-bit numbers, `d` > 0. On 64-bit targets the compiler's own
/// division. Elsewhere that is a library routine of about a kilobyte, the largest function
/// of the widget's WebAssembly, for amounts past 2^64 that a page all but never meets; this
/// takes numbers that fit 64 bits to one native division, and the rest bit by bit.
#[inline]
pub(crate) fn div_rem_wide(n: u128, d: u128) -> (u128, u128) {
    if cfg!(target_pointer_width = "64") {
        (n / d, n % d)
    } else {
        div_rem_bitwise(n, d)
    }
}

/// `a × b`, exact. On 64-bit targets the compiler's own widening multiplication. WebAssembly
/// has no 64 × 64 → 128 instruction, so there it is a library call; when both factors fit
/// 32 bits, as counts, windows and their differences do for every everyday limit, their
/// product fits a `u64` and one native multiplication gives it.
#[inline]
pub(crate) fn mul_wide(a: u64, b: u64) -> u128 {
    if !cfg!(target_pointer_width = "64") && (a | b) >> 32 == 0 {
        u128::from(a * b)
    } else {
        u128::from(a) * u128::from(b)
    }
}

/// [`div_rem_wide`] off 64-bit targets: long division in base 2, exact, in 128 steps at most.
/// Compiled everywhere so that the native tests check it.
fn div_rem_bitwise(n: u128, d: u128) -> (u128, u128) {
    if let (Ok(n), Ok(d)) = (u64::try_from(n), u64::try_from(d)) {
        return (u128::from(n / d), u128::from(n % d));
    }
    if d >> 127 == 1 {
        // d ≥ 2^127: the quotient is 0 or 1, and the remainder could not be doubled below.
        return if n >= d { (1, n - d) } else { (0, n) };
    }
    let (mut quotient, mut remainder) = (0u128, 0u128);
    // The bits of n from the top, a 64-bit half at a time: shifts of 64-bit numbers, and
    // of 128-bit ones by 1, are a few instructions each where a variable 128-bit one is a
    // library call.
    for half in [(n >> 64) as u64, n as u64] {
        for bit in (0..u64::BITS).rev() {
            // remainder < d ≤ 2^127, so doubling it cannot overflow.
            remainder = remainder << 1 | u128::from(half >> bit & 1);
            let fits = remainder >= d;
            if fits {
                remainder -= d;
            }
            quotient = quotient << 1 | u128::from(fits);
        }
    }
    (quotient, remainder)
}

/// A u128 as an f64, for showing it: exact below 2^64, within an ulp above. Built from two
/// u64 → f64 instructions, because `n as f64` is a library call on WebAssembly, and the
/// compiler turns any branch that is exact in both arms back into that call.
#[inline]
pub(crate) fn wide_to_f64(n: u128) -> f64 {
    const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;
    ((n >> 64) as u64) as f64 * TWO_TO_64 + (n as u64) as f64
}

impl fmt::Display for Tokens {
    /// Decimal, rounded half up, with 3 decimals unless the formatter asks for others
    /// (at most 18): `{}` gives `4.500`, `{:.1}` gives `4.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decimals = f.precision().unwrap_or(3);
        write_decimal(f, self.numerator, self.denominator, decimals)
    }
}

/// Writes `numerator / denominator` in decimal with `decimals` digits after the point (at
/// most 18), rounded half up, exactly: no float is involved.
pub(crate) fn write_decimal(
    f: &mut fmt::Formatter<'_>,
    numerator: u128,
    denominator: NonZeroU64,
    decimals: usize,
) -> fmt::Result {
    let decimals = decimals.min(18);
    let denominator = u128::from(denominator.get());
    let mut whole = numerator / denominator;
    let scale = 10u128.pow(decimals as u32);
    // part < 2^64 and scale ≤ 10^18 < 2^60, so this cannot overflow.
    let part = numerator % denominator;
    let mut fraction = (part * scale * 2 + denominator) / (denominator * 2);
    if fraction == scale {
        whole += 1;
        fraction = 0;
    }
    if decimals == 0 {
        write!(f, "{whole}")
    } else {
        write!(f, "{whole}.{fraction:0width$}", width = decimals)
    }
}

#[cfg(test)]
mod tests {
    use super::div_rem_bitwise;

    #[test]
    fn the_bitwise_division_is_the_native_one() {
        let edges: [u128; 14] = [
            0,
            1,
            2,
            3,
            7,
            1_000,
            8_000,
            u64::MAX as u128,
            u64::MAX as u128 + 1,
            u64::MAX as u128 * 3 + 5,
            1 << 100,
            (1 << 127) - 1,
            1 << 127,
            u128::MAX,
        ];
        for n in edges {
            for d in edges.into_iter().filter(|&d| d > 0) {
                assert_eq!(div_rem_bitwise(n, d), (n / d, n % d), "{n} / {d}");
            }
        }
    }
}
