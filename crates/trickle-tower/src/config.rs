//! What a layer and every service it makes share: one `Arc` of it, so that applying the
//! layer again (axum does, per route) costs a clone of a pointer.

use std::sync::Arc;

use trickle_core::flow::Pricing;

use crate::answers::HeaderDialect;
use crate::failure::OnFailure;
use crate::free_runs::FreeRuns;
use crate::observe::Observer;

/// The clock decisions are made on, in ms since the Unix epoch.
pub(crate) type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What the layer and each service it makes share: the backend and the subject function
/// behind an `Arc` each, so the layer is cheap to clone and to apply.
pub(crate) struct Config<B, F> {
    pub(crate) backend: Arc<B>,
    pub(crate) subject: Arc<F>,
    pub(crate) pricing: Pricing,
    pub(crate) on_failure: OnFailure,
    pub(crate) clock: Clock,
    /// Decide and count, but never refuse ([`RateLimitLayer::shadow`](crate::RateLimitLayer::shadow)).
    pub(crate) shadow: bool,
    /// The budget of answers that cost nothing ([`RateLimitLayer::free_runs`](crate::RateLimitLayer::free_runs)).
    pub(crate) free_runs: Option<Arc<FreeRuns>>,
    /// Each group's counters, when the `metrics` feature is on; nothing otherwise.
    pub(crate) observer: Arc<Observer>,
    /// Which rate-limit headers the answers carry.
    pub(crate) headers: HeaderDialect,
}

impl<B, F> Clone for Config<B, F> {
    fn clone(&self) -> Self {
        Config {
            backend: Arc::clone(&self.backend),
            subject: Arc::clone(&self.subject),
            pricing: self.pricing.clone(),
            on_failure: self.on_failure,
            clock: Arc::clone(&self.clock),
            shadow: self.shadow,
            free_runs: self.free_runs.clone(),
            observer: Arc::clone(&self.observer),
            headers: self.headers,
        }
    }
}
