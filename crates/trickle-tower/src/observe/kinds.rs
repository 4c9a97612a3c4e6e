//! The names the flow reports with: why a request was refused, which store call, what kind
//! of failure. Their `name`s are the metrics' label values.

use crate::failure::Failure;

/// Why a request was (or, in shadow mode, would have been) refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// The group's rate limit: its reserve did not fit.
    Limit,
    /// The budget of answers that cost nothing is spent
    /// ([`RateLimitLayer::free_runs`](crate::RateLimitLayer::free_runs)).
    FreeRuns,
}

impl Reason {
    /// Its name in a metric's `reason` label and in `X-Ratelimit-Shadow`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Reason::Limit => "limit",
            Reason::FreeRuns => "free_runs",
        }
    }
}

/// Which of the store's two calls per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreOp {
    /// Before the handler.
    Reserve,
    /// After it.
    Settle,
}

impl StoreOp {
    /// Its name in a metric's `op` label.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn name(self) -> &'static str {
        match self {
            StoreOp::Reserve => "reserve",
            StoreOp::Settle => "settle",
        }
    }
}

/// What kind of failure a store's error is: one that passes (the store is away or slow), or
/// one that does not (the store answered, about data it cannot use, such as Redis's
/// `WRONGTYPE`), as the backend tells them apart ([`Backend::failure`](crate::Backend::failure)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum FailureKind {
    /// The store is down, unreachable or timing out: the outcome is unknown.
    Outage,
    /// The store answered with an error about the data (a key of the wrong type).
    Data,
    /// The store holds as many keys as it may and turned a new one away.
    Full,
}

impl FailureKind {
    /// The kind of a backend's [`Failure`].
    pub(crate) fn of(failure: Failure) -> FailureKind {
        match failure {
            Failure::Outage => FailureKind::Outage,
            Failure::Data { .. } => FailureKind::Data,
            Failure::Full { .. } => FailureKind::Full,
        }
    }

    /// Its name in a metric's `kind` label.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn name(self) -> &'static str {
        match self {
            FailureKind::Outage => "outage",
            FailureKind::Data => "data",
            FailureKind::Full => "full",
        }
    }
}
