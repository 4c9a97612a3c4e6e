//! The layer: how it is configured, and the [`Layer`] that wraps each service in a
//! [`RateLimit`].

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;

use tower_layer::Layer;
use trickle_core::flow::Pricing;
use trickle_core::{CostTable, Limit};

use crate::answers::HeaderDialect;
use crate::backend::Backend;
use crate::clock::system_ms;
use crate::config::Config;
use crate::failure::OnFailure;
use crate::free_runs::FreeRuns;
use crate::service::RateLimit;

/// How many keys the budget of free runs keeps a bucket for unless told otherwise
/// ([`RateLimitLayer::free_runs_with_max_keys`]).
pub const FREE_RUN_KEYS: NonZeroUsize = NonZeroUsize::new(100_000).unwrap();

/// A [`Layer`] that limits each request per [`Subject`](crate::Subject) with ESI's flow, the core's
/// [`trickle_core::flow`]:
///
/// 1. the subject function picks the bucket from the request (or rejects it, or lets it
///    through unlimited);
/// 2. before the handler, the layer **reserves** 1 token ([`reserve`](RateLimitLayer::reserve)
///    to change it). If it does not fit, it answers **429** with `Retry-After` (whole
///    seconds, rounded up), charges nothing, and the handler never runs;
/// 3. the handler answers, and the layer **settles** the reservation at what the answer's
///    status costs under the cost table ([`CostTable::esi`] by default: 2XX 2, 3XX 1, 4XX
///    5, 429 0, 5XX 0): the difference is charged (the bucket may pass the limit; later
///    requests then wait) or refunded. A handler that returns an error or panics is priced
///    as a 500 (its panic goes on once the bucket is settled); a request dropped before it
///    is settled (the client hung up, an outer timeout) keeps its reserve;
/// 4. every response of a limited request carries the rate-limit headers
///    ([`headers`](RateLimitLayer::headers)): by default ESI's `X-Ratelimit-Limit`
///    (`150/15m`), `X-Ratelimit-Remaining`, `X-Ratelimit-Used` (what this request cost) and
///    `X-Ratelimit-Group` ([`trickle_core::esi::headers`] and the group); or the IETF's
///    `RateLimit-Policy` and `RateLimit`, one item per limit of the group's policy. A
///    refusal's body is an RFC 9457 problem (`application/problem+json`).
///
/// A group's policy may hold several limits (`burst=10/1s 1000/1h`): a request is
/// reserved in every limit or in none, and refused with the wait until all of them have
/// room.
///
/// The reserve is spent before the handler runs, so requests that arrive together cannot
/// all pass step 2: with a reserve of 1 and a limit of N, at most N of a key's are
/// admitted, and once settled the bucket holds exactly what they cost. (A rate limit, not a
/// cap on requests in flight: a handler that outlasts the window, or the bucket's refill,
/// no longer holds its token.)
///
/// ```
/// use http::Request;
/// use trickle_core::Algorithm;
/// use trickle_tower::{InProcess, RateLimitLayer, Rejection, Subject};
///
/// let backend = InProcess::new().with_group("fitting", Algorithm::Floating, "6/8s".parse().unwrap());
/// let layer = RateLimitLayer::new(backend, |request: &Request<String>| {
///     let Some(client) = request.headers().get("x-client-id") else {
///         return Err(Rejection::bad_request("send your client id in X-Client-Id"));
///     };
///     let client = client.to_str().map_err(|_| Rejection::bad_request("X-Client-Id must be visible ASCII"))?;
///     Ok(Some(Subject::new("fitting", client)))
/// });
/// # let _ = layer;
/// ```
pub struct RateLimitLayer<B, F> {
    /// Shared with every service the layer makes: axum, for one, applies a layer again for
    /// each route, so applying it must cost no more than an `Arc` clone.
    config: Arc<Config<B, F>>,
}

impl<B, F> Clone for RateLimitLayer<B, F> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            config: Arc::clone(&self.config),
        }
    }
}

impl<B, F> fmt::Debug for RateLimitLayer<B, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("pricing", &self.config.pricing)
            .field("on_failure", &self.config.on_failure)
            .field("shadow", &self.config.shadow)
            .field(
                "free_runs",
                &self.config.free_runs.as_ref().map(|runs| runs.limit()),
            )
            .finish_non_exhaustive()
    }
}

impl<B: Backend, F> RateLimitLayer<B, F> {
    /// A layer over `backend`, whose buckets `subject` picks for each request: ESI's
    /// pricing (a reserve of 1 token, ESI's cost table), [`OnFailure::Open`], and the layer's
    /// clock ([`system_ms`](crate::system_ms): the wall clock anchored once, moved on by a
    /// monotonic one).
    ///
    /// `subject` returns `Ok(Some(_))` for a request to limit, `Ok(None)` for one to let
    /// through unlimited (a health check), and `Err(Rejection)` for one to answer at once
    /// (a missing API key).
    pub fn new(backend: B, subject: F) -> RateLimitLayer<B, F> {
        RateLimitLayer {
            config: Arc::new(Config {
                backend: Arc::new(backend),
                subject: Arc::new(subject),
                pricing: Pricing::esi(),
                on_failure: OnFailure::default(),
                clock: Arc::new(system_ms),
                shadow: false,
                free_runs: None,
                observer: Arc::default(),
                headers: HeaderDialect::default(),
            }),
        }
    }

    /// Charges responses by `costs` instead of ESI's table, keeping the reserve. A status
    /// the table does not price costs nothing, with a warning in the log.
    pub fn costs(mut self, costs: CostTable) -> Self {
        let config = Arc::make_mut(&mut self.config);
        config.pricing = Pricing::by_status(config.pricing.reserve_cost(), costs);
        self
    }

    /// How many tokens a request reserves before the handler runs (1 by default): what
    /// must be free for it to run, and what it holds until it is settled.
    pub fn reserve(mut self, tokens: u64) -> Self {
        let config = Arc::make_mut(&mut self.config);
        config.pricing = config.pricing.clone().with_reserve(tokens);
        self
    }

    /// The whole pricing at once: the reserve, and what each answer costs
    /// ([`Pricing::fixed`] for a cost known before the handler runs).
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        Arc::make_mut(&mut self.config).pricing = pricing;
        self
    }

    /// What a request the backend cannot decide gets.
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        Arc::make_mut(&mut self.config).on_failure = on_failure;
        self
    }

    /// Shadow mode, to roll out a new limit: every request is decided and charged exactly as
    /// without it, so the buckets and the counters show what the limit would do, but a
    /// request the limit would refuse is let through to its handler instead of answered 429.
    /// Such a request is charged nothing, as the 429 would have been, so the bucket goes on
    /// exactly as a normal layer's; its answer carries the refusal's `X-Ratelimit-*`
    /// headers, no `Retry-After` (a 2XX with one would tell a polite client to wait, which
    /// shadow mode promises not to do), and `X-Ratelimit-Shadow: would-refuse` with the
    /// reason and the wait, as in `would-refuse;reason=limit;retry-after=9`
    /// ([`X_RATELIMIT_SHADOW`](crate::X_RATELIMIT_SHADOW)). With the `metrics` feature it
    /// counts in `trickle_would_refuse_total`, not `trickle_refused_total`. A request the
    /// store cannot decide goes through as [`OnFailure::Open`] lets it, whatever the rule:
    /// shadow mode refuses nothing. Off by default.
    ///
    /// nginx's `limit_req_dry_run` and Envoy's shadow mode do the same.
    pub fn shadow(mut self, shadow: bool) -> Self {
        Arc::make_mut(&mut self.config).shadow = shadow;
        self
    }

    /// A budget of handler runs whose answer costs nothing, per key: at most `limit`'s
    /// tokens such runs per window (a floating window, as `"20/1m"`), in each group. Under
    /// ESI's table a 5XX and a 429 cost nothing, so without a budget a client whose requests
    /// all fail runs the handler without limit. Off by default, which keeps ESI's table as
    /// it is.
    ///
    /// Which answer will cost nothing is known only after the handler, so each request
    /// reserves a run before it (requests arriving together cannot all pass) and gives it
    /// back if its answer cost something. Once the budget is spent, **every** request of
    /// the key gets 429 before the handler, with `Retry-After` for the next free run, the
    /// group's `X-Ratelimit-Limit` and `-Group` but no count (the bucket was not asked),
    /// and a JSON error saying the budget is spent: ESI's error limit refuses all of a
    /// client's requests once it has made too many errors, for the same reason. A key holds
    /// a run per request in flight, so give a budget no smaller than the requests a
    /// well-behaved client has in flight at once.
    ///
    /// The budget lives in this process whatever the backend: behind a load balancer, each
    /// server keeps its own.
    ///
    /// The budget keeps a bucket per key for up to [`FREE_RUN_KEYS`] keys; past it a new key
    /// has no budget until buckets go idle (its requests run unbudgeted, the rate limit
    /// still applies): [`free_runs_with_max_keys`](RateLimitLayer::free_runs_with_max_keys)
    /// sets another cap.
    pub fn free_runs(self, limit: Limit) -> Self {
        self.free_runs_with_max_keys(limit, FREE_RUN_KEYS)
    }

    /// [`free_runs`](RateLimitLayer::free_runs), keeping a budget for at most about
    /// `max_keys` keys: what bounds the budget's memory however many clients come.
    pub fn free_runs_with_max_keys(mut self, limit: Limit, max_keys: NonZeroUsize) -> Self {
        let free_runs = FreeRuns::new(limit, max_keys);
        Arc::make_mut(&mut self.config).free_runs = Some(Arc::new(free_runs));
        self
    }

    /// Which rate-limit headers the answers carry: ESI's `X-Ratelimit-*` (the default), the
    /// IETF's `RateLimit-Policy` and `RateLimit`, or both. See [`HeaderDialect`].
    pub fn headers(mut self, dialect: HeaderDialect) -> Self {
        Arc::make_mut(&mut self.config).headers = dialect;
        self
    }

    /// Decides on `clock` (ms since the Unix epoch) instead of
    /// [`system_ms`](crate::system_ms): for tests, and for servers that keep their own.
    pub fn clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        Arc::make_mut(&mut self.config).clock = Arc::new(clock);
        self
    }

    /// The backend the layer decides on, shared with every service it made.
    pub fn backend(&self) -> &Arc<B> {
        &self.config.backend
    }
}

impl<S, B, F> Layer<S> for RateLimitLayer<B, F> {
    type Service = RateLimit<S, B, F>;

    fn layer(&self, inner: S) -> RateLimit<S, B, F> {
        RateLimit::new(inner, Arc::clone(&self.config))
    }
}
