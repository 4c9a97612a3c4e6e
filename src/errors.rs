//! The errors of this crate: bad configuration and impossible input.
//!
//! A denied request is not an error (see [`crate::Outcome`]); these types are only for
//! input that no limiter can be built from. Each `Display` says what was wrong and what
//! is allowed, so it can be shown to a person as it is.

use alloc::string::String;

use crate::algorithm::Algorithm;
use crate::text::{error_from_message, Text};

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

/// A name that is not one of the algorithms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgorithmError {
    pub name: String,
}

impl AlgorithmError {
    /// What `Display` writes: the name, and the algorithms there are (from
    /// [`Algorithm::ALL`]), built without `core::fmt`.
    pub fn message(&self) -> String {
        let mut text = Text::new();
        text.push("unknown algorithm ")
            .quoted(&self.name)
            .push("; use ");
        let count = Algorithm::ALL.len();
        for (i, algorithm) in Algorithm::ALL.iter().enumerate() {
            match i {
                0 => &mut text,
                _ if i + 1 == count => text.push(" or "),
                _ => text.push(", "),
            }
            .push(algorithm.name());
        }
        text.build()
    }
}

/// An HTTP status that ESI's cost table has no price for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusError {
    pub status: u16,
}

impl StatusError {
    /// What `Display` writes, built without `core::fmt`.
    pub fn message(&self) -> String {
        Text::new()
            .push("status ")
            .number(u64::from(self.status))
            .push(" has no cost in ESI's table; expected an HTTP status from 200 to 599")
            .build()
    }
}

error_from_message!(LimitError, AlgorithmError, StatusError);
