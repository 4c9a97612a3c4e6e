//! The errors of this crate: bad configuration and impossible input.
//!
//! A denied request is not an error (see [`crate::Outcome`]); these types are only for
//! input that no limiter can be built from. Each `Display` says what was wrong and what
//! is allowed, so it can be shown to a person as it is.

use std::fmt;

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

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::MissingSlash { text } => {
                write!(f, "limit {text:?} has no '/'; {LIMIT_FORM}")
            }
            LimitError::BadTokens { text, tokens } => write!(
                f,
                "limit {text:?}: tokens {tokens:?} is not a whole number from 1 to {}; {LIMIT_FORM}",
                u64::MAX
            ),
            LimitError::BadWindow { text, window } => write!(
                f,
                "limit {text:?}: window {window:?} is not a whole number followed by a unit; {LIMIT_FORM}"
            ),
            LimitError::UnknownUnit { text, unit } => write!(
                f,
                "limit {text:?}: unknown unit {unit:?}; the unit must be ms, s, m or h, as in 6/8s"
            ),
            LimitError::ZeroTokens => write!(f, "a limit needs at least 1 token per window, got 0"),
            LimitError::ZeroWindow => write!(f, "a window must be at least 1 ms long, got 0"),
            LimitError::WindowTooLong { text } => write!(
                f,
                "limit {text:?}: the window is longer than {} ms, the longest allowed",
                u64::MAX
            ),
        }
    }
}

impl std::error::Error for LimitError {}

/// A name that is not one of the four algorithms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgorithmError {
    pub name: String,
}

impl fmt::Display for AlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown algorithm {:?}; use floating, sliding-log, fixed or token-bucket",
            self.name
        )
    }
}

impl std::error::Error for AlgorithmError {}

/// An HTTP status that ESI's cost table has no price for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusError {
    pub status: u16,
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "status {} has no cost in ESI's table; expected an HTTP status from 200 to 599",
            self.status
        )
    }
}

impl std::error::Error for StatusError {}
