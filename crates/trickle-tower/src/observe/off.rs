//! The flow's observer without the `metrics` feature: the same interface as the one
//! beside it in `metrics.rs`, doing nothing.

use std::future::Future;

use super::kinds::{FailureKind, Reason, StoreOp};

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
