//! What the flow reports as it goes: a request decided, admitted, refused or let through by
//! shadow mode, a store that failed, how long the store took. The flow calls the same
//! methods whether or not the `metrics` feature is on; with it they count through the
//! `metrics` facade ([`crate::metrics`]), without it they are empty and inline away, so a
//! build without the feature pays nothing for them, not even a clock read.

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
    /// The kind of a backend's [`Failure`](crate::Failure).
    pub(crate) fn of(failure: crate::Failure) -> FailureKind {
        match failure {
            crate::Failure::Outage => FailureKind::Outage,
            crate::Failure::Data { .. } => FailureKind::Data,
            crate::Failure::Full { .. } => FailureKind::Full,
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

#[cfg(feature = "metrics")]
pub(crate) use crate::metrics::{Observed, Observer};
#[cfg(not(feature = "metrics"))]
pub(crate) use off::{Observed, Observer};

/// The same interface as [`crate::metrics`]'s, doing nothing.
#[cfg(not(feature = "metrics"))]
mod off {
    use std::future::Future;

    use super::{FailureKind, Reason, StoreOp};

    /// Hands out each group's [`Observed`].
    #[derive(Debug, Default)]
    pub(crate) struct Observer;

    impl Observer {
        #[inline]
        pub(crate) fn group(&self, _group: &str) -> Observed {
            Observed
        }
    }

    /// One group's counters.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Observed;

    #[allow(clippy::unused_self)]
    impl Observed {
        #[inline]
        pub(crate) fn decided(&self) {}
        #[inline]
        pub(crate) fn admitted(&self) {}
        #[inline]
        pub(crate) fn refused(&self, _reason: Reason) {}
        #[inline]
        pub(crate) fn would_refuse(&self, _reason: Reason) {}
        #[inline]
        pub(crate) fn failure(&self, _op: StoreOp, _kind: FailureKind) {}
        #[inline]
        pub(crate) fn timed<F: Future>(&self, _op: StoreOp, decision: F) -> F {
            decision
        }
    }
}
