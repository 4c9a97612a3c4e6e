//! What the flow reports as it goes: a request decided, admitted, refused or let through by
//! shadow mode, a store that failed, how long the store took. The flow calls the same
//! methods whether or not the `metrics` feature is on; with it they count through the
//! `metrics` facade (the names in [`crate::metrics`]), without it they are empty and inline
//! away, so a build without the feature pays nothing for them, not even a clock read.

mod kinds;
#[cfg(feature = "metrics")]
mod metrics;
#[cfg(not(feature = "metrics"))]
mod off;

pub(crate) use kinds::{FailureKind, Reason, StoreOp};
#[cfg(feature = "metrics")]
pub(crate) use metrics::{Observed, Observer};
#[cfg(not(feature = "metrics"))]
pub(crate) use off::{Observed, Observer};
