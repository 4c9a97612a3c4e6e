//! The four algorithms by name, and a limiter whose algorithm is chosen at run time.

use alloc::string::{String, ToString};
use core::fmt;
use core::str::FromStr;

use crate::algorithms::fixed::FixedState;
use crate::algorithms::floating::FloatingState;
use crate::algorithms::sliding_log::SlidingLogState;
use crate::algorithms::state::State;
use crate::algorithms::token_bucket::TokenBucketState;
use crate::values::decision::Decision;
use crate::values::limit::Limit;
use crate::values::text::{error_from_message, Text};

/// One of the four algorithms, named as the CLI and the docs widget name them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// `floating`: the approximated sliding window from two counters.
    #[default]
    Floating,
    /// `sliding-log`: the exact sliding window.
    SlidingLog,
    /// `fixed`: one counter per fixed window.
    Fixed,
    /// `token-bucket`: capacity N refilled at N per window.
    TokenBucket,
}

impl Algorithm {
    /// All four, in the order the docs present them.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Floating,
        Algorithm::SlidingLog,
        Algorithm::Fixed,
        Algorithm::TokenBucket,
    ];

    /// The name used on the command line and in the widget's `algorithm` attribute.
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Floating => "floating",
            Algorithm::SlidingLog => "sliding-log",
            Algorithm::Fixed => "fixed",
            Algorithm::TokenBucket => "token-bucket",
        }
    }

    /// How the algorithm counts `used`, in a sentence for a help text or a table; TOKENS
    /// and WINDOW stand for the limit's N and W.
    pub fn summary(&self) -> &'static str {
        match self {
            Algorithm::Floating => {
                "ESI's floating window (Cloudflare's and Upstash's sliding window): fixed \
                 windows aligned to multiples of WINDOW from time 0, and used = previous \
                 window x its share still inside the last WINDOW ms + current window."
            }
            Algorithm::SlidingLog => {
                "the exact sliding window: tokens count for WINDOW ms after they are spent, \
                 then come back all at once."
            }
            Algorithm::Fixed => "one counter per fixed window, emptied at each multiple of WINDOW.",
            Algorithm::TokenBucket => {
                "a bucket of TOKENS, full at the start, refilled continuously at TOKENS per \
                 WINDOW."
            }
        }
    }

    /// Every name, in the order of [`Algorithm::ALL`] (the default first), joined by
    /// `separator`.
    ///
    /// ```
    /// assert_eq!(trickle_core::Algorithm::names(" "), "floating sliding-log fixed token-bucket");
    /// ```
    pub fn names(separator: &str) -> String {
        let mut names = String::new();
        for (i, algorithm) in Algorithm::ALL.iter().enumerate() {
            if i > 0 {
                names.push_str(separator);
            }
            names.push_str(algorithm.name());
        }
        names
    }
}

impl FromStr for Algorithm {
    type Err = AlgorithmError;

    fn from_str(name: &str) -> Result<Algorithm, AlgorithmError> {
        Algorithm::ALL
            .into_iter()
            .find(|algorithm| algorithm.name() == name)
            .ok_or_else(|| AlgorithmError {
                name: name.to_string(),
            })
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The state of whichever algorithm a [`Limiter`](crate::Limiter) was built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyState {
    Floating(FloatingState),
    SlidingLog(SlidingLogState),
    Fixed(FixedState),
    TokenBucket(TokenBucketState),
}

impl AnyState {
    /// A fresh state for `algorithm`.
    pub fn new(algorithm: Algorithm) -> AnyState {
        match algorithm {
            Algorithm::Floating => AnyState::Floating(FloatingState::default()),
            Algorithm::SlidingLog => AnyState::SlidingLog(SlidingLogState::default()),
            Algorithm::Fixed => AnyState::Fixed(FixedState::default()),
            Algorithm::TokenBucket => AnyState::TokenBucket(TokenBucketState::default()),
        }
    }

    /// Which algorithm this is.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            AnyState::Floating(_) => Algorithm::Floating,
            AnyState::SlidingLog(_) => Algorithm::SlidingLog,
            AnyState::Fixed(_) => Algorithm::Fixed,
            AnyState::TokenBucket(_) => Algorithm::TokenBucket,
        }
    }
}

/// Runs `$body` on whichever state `$any` holds, as `$state`: a `match`, so every call is
/// static and nothing that is never called (a keyed limiter's `is_idle`, say) stays linked
/// in through a vtable.
macro_rules! on_state {
    ($any:expr, $state:ident => $body:expr) => {
        match $any {
            AnyState::Floating($state) => $body,
            AnyState::SlidingLog($state) => $body,
            AnyState::Fixed($state) => $body,
            AnyState::TokenBucket($state) => $body,
        }
    };
}

/// The default algorithm's empty state, as [`Algorithm::default`] names it.
impl Default for AnyState {
    fn default() -> AnyState {
        AnyState::new(Algorithm::default())
    }
}

impl From<FloatingState> for AnyState {
    fn from(state: FloatingState) -> AnyState {
        AnyState::Floating(state)
    }
}

impl From<SlidingLogState> for AnyState {
    fn from(state: SlidingLogState) -> AnyState {
        AnyState::SlidingLog(state)
    }
}

impl From<FixedState> for AnyState {
    fn from(state: FixedState) -> AnyState {
        AnyState::Fixed(state)
    }
}

impl From<TokenBucketState> for AnyState {
    fn from(state: TokenBucketState) -> AnyState {
        AnyState::TokenBucket(state)
    }
}

impl State for AnyState {
    fn hit(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        on_state!(self, state => state.hit(limit, now_ms, cost))
    }

    fn peek(&self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        on_state!(self, state => state.peek(limit, now_ms, cost))
    }

    fn record(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        on_state!(self, state => state.record(limit, now_ms, cost))
    }

    fn settle(
        &mut self,
        limit: &Limit,
        now_ms: u64,
        reserved_at_ms: u64,
        reserved: u64,
        cost: u64,
    ) -> Decision {
        on_state!(self, state => state.settle(limit, now_ms, reserved_at_ms, reserved, cost))
    }

    fn with_window_counters(&self, previous: u64, current: u64, latest_ms: u64) -> Option<Self> {
        on_state!(self, state => Some(state.with_window_counters(previous, current, latest_ms)?.into()))
    }

    fn is_idle(&self, limit: &Limit, now_ms: u64) -> bool {
        on_state!(self, state => state.is_idle(limit, now_ms))
    }

    fn clear(&mut self) {
        on_state!(self, state => state.clear())
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

error_from_message!(AlgorithmError);
