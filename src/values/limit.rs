//! A limit: N tokens per window of W milliseconds, written as ESI writes it (`150/15m`).
//!
//! A [`Limit`] can only be built valid (at least one token, a window of at least 1 ms), so
//! the algorithms never check it again on the hot path.

use alloc::string::{String, ToString};
use core::fmt;
use core::num::NonZeroU64;
use core::str::FromStr;

use crate::values::text::{error_from_message, parse_digits, split_once, Text};
use crate::values::tokens::mul_wide;

/// N tokens per window of W milliseconds.
///
/// ```
/// use trickle_core::Limit;
///
/// let limit: Limit = "150/15m".parse().unwrap();
/// assert_eq!(limit.tokens(), 150);
/// assert_eq!(limit.window_ms(), 15 * 60 * 1000);
/// assert_eq!(limit.to_string(), "150/15m");
///
/// // Bad text says what is allowed.
/// let err = "6/8x".parse::<Limit>().unwrap_err();
/// assert!(err.to_string().contains("unit must be ms, s, m or h"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit {
    tokens: NonZeroU64,
    window_ms: NonZeroU64,
}

/// The units a window may be written in, longest first so that `Display` picks the
/// largest unit that divides the window exactly.
const UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

impl Limit {
    /// `tokens` per `window_ms` milliseconds; both must be at least 1.
    pub fn new(tokens: u64, window_ms: u64) -> Result<Limit, LimitError> {
        Ok(Limit {
            tokens: NonZeroU64::new(tokens).ok_or(LimitError::ZeroTokens)?,
            window_ms: NonZeroU64::new(window_ms).ok_or(LimitError::ZeroWindow)?,
        })
    }

    /// N: how many tokens one window holds.
    pub fn tokens(&self) -> u64 {
        self.tokens.get()
    }

    /// W: the window's length in milliseconds.
    pub fn window_ms(&self) -> u64 {
        self.window_ms.get()
    }

    /// W, for the denominators of exact token amounts.
    pub(crate) fn window(&self) -> NonZeroU64 {
        self.window_ms
    }

    /// N × W, the limit in the scaled units every decision is compared in.
    pub(crate) fn scaled(&self) -> u128 {
        mul_wide(self.tokens(), self.window_ms())
    }

    /// `tokens` × W for a count that fits a `u64`: one widening multiplication, which
    /// cannot overflow.
    #[inline]
    pub(crate) fn scale_tokens(&self, tokens: u64) -> u128 {
        mul_wide(tokens, self.window_ms())
    }

    /// `tokens` × W, an amount in the same scaled units. Saturates: only counts pushed far
    /// past the limit by `record` can get there, and they are over the limit either way.
    /// Counts that fit a `u64` (all but those) take the cheaper widening multiplication.
    #[inline]
    pub(crate) fn scale(&self, tokens: u128) -> u128 {
        match u64::try_from(tokens) {
            Ok(tokens) => self.scale_tokens(tokens),
            Err(_) => tokens.saturating_mul(u128::from(self.window_ms())),
        }
    }
}

impl FromStr for Limit {
    type Err = LimitError;

    /// Parses `TOKENS/WINDOW` where WINDOW is a whole number and a unit `ms`, `s`, `m` or `h`.
    /// Whitespace around the whole text is ignored; inside it is not allowed.
    fn from_str(text: &str) -> Result<Limit, LimitError> {
        let owned = || text.to_string();
        let trimmed = text.trim();
        let (tokens, window) =
            split_once(trimmed, b'/').ok_or_else(|| LimitError::MissingSlash { text: owned() })?;

        let tokens = parse_digits(tokens).ok_or_else(|| LimitError::BadTokens {
            text: owned(),
            tokens: tokens.to_string(),
        })?;

        // Split off the leading digits without byte indexing, which would bring a panic path
        // into the WebAssembly build. Digits are ASCII, so the split is always on a character
        // boundary.
        let digits = window.bytes().take_while(u8::is_ascii_digit).count();
        let (count, unit) = window.split_at_checked(digits).unwrap_or(("", window));
        if count.is_empty() {
            return Err(LimitError::BadWindow {
                text: owned(),
                window: window.to_string(),
            });
        }
        let (_, unit_ms) = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .ok_or_else(|| LimitError::UnknownUnit {
                text: owned(),
                unit: unit.to_string(),
            })?;
        let window_ms = parse_digits(count)
            .and_then(|count| count.checked_mul(*unit_ms))
            .ok_or_else(|| LimitError::WindowTooLong { text: owned() })?;

        Limit::new(tokens, window_ms)
    }
}

impl Limit {
    /// The limit in its shortest ESI form, `150/15m`, `6/8s`, `7/1500ms`: what `Display`
    /// writes, built without `core::fmt`.
    pub fn text(&self) -> String {
        let window = self.window_ms();
        // The last unit, ms, divides every window.
        let (unit, unit_ms) = UNITS
            .into_iter()
            .find(|(_, unit_ms)| window.is_multiple_of(*unit_ms))
            .unwrap_or(("ms", 1));
        Text::new()
            .number(self.tokens())
            .push("/")
            .number(window / unit_ms)
            .push(unit)
            .build()
    }
}

impl fmt::Display for Limit {
    /// The shortest ESI form: `150/15m`, `6/8s`, `7/1500ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// A limit written as text (`"150/15m"`) or given as numbers could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitError {
    /// The text has no `/` between the tokens and the window.
    MissingSlash { text: String },
    /// The part before `/` is not a whole number.
    BadTokens { text: String, tokens: String },
    /// The part after `/` is not a whole number followed by a unit.
    BadWindow { text: String, window: String },
    /// The window's unit is not one of `ms`, `s`, `m`, `h`.
    UnknownUnit { text: String, unit: String },
    /// A limit of zero tokens admits nothing at all.
    ZeroTokens,
    /// A window of zero milliseconds has no length to spread tokens over.
    ZeroWindow,
    /// The window is longer than `u64::MAX` milliseconds.
    WindowTooLong { text: String },
}

const LIMIT_FORM: &str =
    "write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m";

impl LimitError {
    /// What `Display` writes, built without `core::fmt` so that the WebAssembly build
    /// carries no formatting code.
    pub fn message(&self) -> String {
        let mut text = Text::new();
        match self {
            LimitError::MissingSlash { text: limit } => text
                .push("limit ")
                .quoted(limit)
                .push(" has no '/'; ")
                .push(LIMIT_FORM),
            LimitError::BadTokens {
                text: limit,
                tokens,
            } => text
                .push("limit ")
                .quoted(limit)
                .push(": tokens ")
                .quoted(tokens)
                .push(" is not a whole number from 1 to ")
                .number(u64::MAX)
                .push("; ")
                .push(LIMIT_FORM),
            LimitError::BadWindow {
                text: limit,
                window,
            } => text
                .push("limit ")
                .quoted(limit)
                .push(": window ")
                .quoted(window)
                .push(" is not a whole number followed by a unit; ")
                .push(LIMIT_FORM),
            LimitError::UnknownUnit { text: limit, unit } => text
                .push("limit ")
                .quoted(limit)
                .push(": unknown unit ")
                .quoted(unit)
                .push("; the unit must be ms, s, m or h, as in 6/8s"),
            LimitError::ZeroTokens => text.push("a limit needs at least 1 token per window, got 0"),
            LimitError::ZeroWindow => text.push("a window must be at least 1 ms long, got 0"),
            LimitError::WindowTooLong { text: limit } => text
                .push("limit ")
                .quoted(limit)
                .push(": the window is longer than ")
                .number(u64::MAX)
                .push(" ms, the longest allowed"),
        }
        .build()
    }
}

error_from_message!(LimitError);
