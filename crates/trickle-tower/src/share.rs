//! How much of each group's limit one server's fallback limiter may admit while the shared
//! store is away: a fraction the operator picks, `1/N` for N servers.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

use trickle_core::Limit;

/// The part of a limit one server admits on its own, between 0 (excluded) and 1.
///
/// A group limited to N tokens per window gets `floor(N × share)` tokens per window in
/// each server's fallback limiter, over the same window and algorithm. **Rounded down**, so
/// that with a share of `1/k` on each of k servers, the servers' limits add up to at most
/// `k × floor(N / k) ≤ N`: while the store is away, the fleet never admits more than the
/// limit in a window, at the price of up to `k − 1` tokens it could have admitted (10
/// tokens on 3 servers: 3 each, 9 in all). A share that leaves a group no whole token is
/// refused when the fallback is built ([`ShareError::NoTokens`]).
///
/// The fallback knows nothing of what the store had counted before it went away, nor the
/// store of what the fallback admitted: in the window an outage starts or ends in, a key
/// may get its store's count and the fallback's share besides.
///
/// ```
/// use trickle_tower::Share;
///
/// let share: Share = "1/3".parse().unwrap();
/// assert_eq!(share.of("10/1m".parse().unwrap()).unwrap().to_string(), "3/1m");
/// assert_eq!("0.5".parse::<Share>().unwrap(), Share::new(1, 2).unwrap());
/// assert!("1/3".parse::<Share>().unwrap().of("2/1s".parse().unwrap()).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    numerator: u64,
    denominator: NonZeroU64,
}

impl Share {
    /// `numerator / denominator`, in lowest terms; refused unless `0 < numerator ≤
    /// denominator`.
    pub fn new(numerator: u64, denominator: u64) -> Result<Share, ShareError> {
        let text = || format!("{numerator}/{denominator}");
        if numerator == 0 || numerator > denominator {
            return Err(ShareError::Invalid { text: text() });
        }
        let common = gcd(numerator, denominator);
        Ok(Share {
            numerator: numerator / common,
            denominator: NonZeroU64::new(denominator / common)
                .ok_or_else(|| ShareError::Invalid { text: text() })?,
        })
    }

    /// `1 / servers`: each of that many servers may admit its equal part.
    pub fn of_servers(servers: NonZeroU64) -> Share {
        Share {
            numerator: 1,
            denominator: servers,
        }
    }

    /// The whole limit: for one server alone.
    pub const WHOLE: Share = Share {
        numerator: 1,
        denominator: NonZeroU64::MIN,
    };

    pub fn numerator(&self) -> u64 {
        self.numerator
    }

    pub fn denominator(&self) -> u64 {
        self.denominator.get()
    }

    /// `floor(N × share)` tokens over `limit`'s window, or `None` when that is 0.
    pub fn of(&self, limit: Limit) -> Option<Limit> {
        let tokens = u128::from(limit.tokens()) * u128::from(self.numerator)
            / u128::from(self.denominator.get());
        // At most N, as the share is at most 1.
        let tokens = u64::try_from(tokens).ok()?;
        Limit::new(tokens, limit.window_ms()).ok()
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

/// Reads `P/Q` (`1/3`) or a decimal (`0.5`, `1`), between 0 (excluded) and 1.
impl FromStr for Share {
    type Err = ShareError;

    fn from_str(text: &str) -> Result<Share, ShareError> {
        let invalid = || ShareError::Invalid {
            text: text.to_string(),
        };
        let digits = |part: &str| -> Result<u64, ShareError> {
            if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(invalid());
            }
            part.parse().map_err(|_| invalid())
        };
        if let Some((numerator, denominator)) = text.split_once('/') {
            return Share::new(digits(numerator)?, digits(denominator)?).map_err(|_| invalid());
        }
        let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
        // Nine decimals are finer than any fleet needs, and keep the numbers small.
        if fraction.len() > 9 {
            return Err(invalid());
        }
        let scale = 10u64.pow(fraction.len() as u32);
        let value = digits(whole)?
            .checked_mul(scale)
            .and_then(|whole| whole.checked_add(digits(fraction).ok()?))
            .ok_or_else(invalid)?;
        Share::new(value, scale).map_err(|_| invalid())
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A share that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareError {
    /// Not a fraction between 0 (excluded) and 1.
    Invalid { text: String },
    /// `floor(N × share)` is 0 for this group's limit: its fallback could admit nothing.
    NoTokens {
        group: String,
        limit: Limit,
        share: Share,
    },
}

impl fmt::Display for ShareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShareError::Invalid { text } => write!(
                f,
                "invalid share {text:?}: expected a fraction P/Q with 0 < P ≤ Q, as 1/3 for \
                 each of 3 servers, or a decimal above 0 and at most 1, as 0.5"
            ),
            ShareError::NoTokens {
                group,
                limit,
                share,
            } => write!(
                f,
                "group {group:?}: a share of {share} of its limit {limit} is less than one \
                 token (shares are rounded down, so that the servers together never admit \
                 more than the limit); raise the limit's tokens or the share"
            ),
        }
    }
}

impl std::error::Error for ShareError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    const READ: &[(&str, Option<(u64, u64)>)] = &[
        ("1/2",        Some((1, 2))),
        ("2/4",        Some((1, 2))),
        ("1/1",        Some((1, 1))),
        ("3/10",       Some((3, 10))),
        ("0.5",        Some((1, 2))),
        ("0.25",       Some((1, 4))),
        ("1",          Some((1, 1))),
        ("1.0",        Some((1, 1))),
        ("0.333",      Some((333, 1000))),
        ("0",          None),
        ("0/3",        None),
        ("4/3",        None),
        ("1.5",        None),
        ("1/0",        None),
        ("-1/2",       None),
        (".5",         None),
        ("0.",         None),
        ("half",       None),
        ("0.1234567891", None),
        ("",           None),
    ];

    #[test]
    fn shares_are_read_as_fractions_or_decimals() {
        for (text, want) in READ {
            let got = text
                .parse::<Share>()
                .ok()
                .map(|s| (s.numerator(), s.denominator()));
            assert_eq!(got, *want, "{text:?}");
        }
    }

    #[test]
    fn a_share_rounds_down_so_the_servers_never_add_up_past_the_limit() {
        let limit: Limit = "10/1m".parse().unwrap();
        for servers in 1..=10u64 {
            let share = Share::of_servers(NonZeroU64::new(servers).unwrap());
            let each = share.of(limit).unwrap();
            assert_eq!(each.window_ms(), limit.window_ms());
            assert_eq!(each.tokens(), 10 / servers);
            assert!(each.tokens() * servers <= 10, "{servers} servers");
        }
        let share = Share::of_servers(NonZeroU64::new(11).unwrap());
        assert_eq!(share.of(limit), None);
        // The product cannot overflow.
        let huge = Limit::new(u64::MAX, 1).unwrap();
        assert_eq!(Share::WHOLE.of(huge), Some(huge));
        assert_eq!(
            Share::new(u64::MAX - 1, u64::MAX)
                .unwrap()
                .of(huge)
                .unwrap()
                .tokens(),
            u64::MAX - 1
        );
    }
}
