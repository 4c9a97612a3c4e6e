//! A [tower] middleware that enforces [trickle-core](trickle_core)'s rate limits the way EVE Online's ESI
//! does: a bucket per (route group × application × user), checked before the handler,
//! charged by the response's status after it, and reported in `X-Ratelimit-*` headers.
//!
//! - [`RateLimitLayer`] wraps any tower service over the [`http`] crate's types: axum's
//!   routers, hyper's services, tonic's. A function you give picks each request's
//!   [`Subject`] (group and key), or rejects the request ([`Rejection`]).
//! - [`InProcess`] keeps the buckets in memory, each group a
//!   [`ConcurrentKeyedLimiter`](trickle_core::ConcurrentKeyedLimiter);
//!   `Redis` (the `redis` feature) keeps them in Redis, so that every process behind a
//!   load balancer shares one bucket per key, with decisions identical to the core's.
//! - [`OnFailure`] says what a request gets when Redis cannot be reached: through (open) or
//!   503 (closed), with a log line either way; or [`Fallback`] keeps limiting it in
//!   process, with this server's [`Share`] of the limit, behind a circuit breaker, until
//!   Redis is back. A data error (a key of the wrong type) is no outage: 500, whatever the
//!   rule ([`Failure`]).
//! - [`RateLimitLayer::shadow`] decides and counts without ever refusing, to roll out a new
//!   limit; [`RateLimitLayer::free_runs`] caps the handler runs whose answer costs nothing.
//! - With the `metrics` feature, the layer counts its decisions, refusals and store
//!   failures, and times its store, through the `metrics` facade: names in `metrics`.
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use http::Request;
//! use trickle_core::Algorithm;
//! use trickle_tower::{InProcess, RateLimitLayer, Rejection, Subject};
//!
//! # async fn run() -> std::io::Result<()> {
//! let backend = InProcess::new().with_group("fitting", Algorithm::Floating, "6/8s".parse().unwrap());
//! let app = Router::new()
//!     .route("/fittings", get(|| async { "[]" }))
//!     .layer(RateLimitLayer::new(backend, |request: &Request<axum::body::Body>| {
//!         let client = request
//!             .headers()
//!             .get("x-client-id")
//!             .and_then(|value| value.to_str().ok())
//!             .ok_or_else(|| Rejection::bad_request("send your client id in X-Client-Id"))?;
//!         Ok(Some(Subject::new("fitting", client)))
//!     }));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! [tower]: https://docs.rs/tower

mod answers;
mod backend;
mod breaker;
pub mod clock;
mod config;
mod failure;
mod fallback;
mod flow;
mod free_runs;
mod future;
mod layer;
#[cfg(feature = "metrics")]
pub mod metrics;
mod observe;
mod pending;
#[cfg(feature = "redis")]
mod redis;
mod service;
mod share;
mod structured;
mod subject;

pub use answers::{
    Body, HeaderDialect, RATELIMIT, RATELIMIT_POLICY, X_RATELIMIT_GROUP, X_RATELIMIT_LIMIT,
    X_RATELIMIT_REMAINING, X_RATELIMIT_SHADOW, X_RATELIMIT_USED,
};
pub use backend::{Backend, InProcess, InProcessError, UnknownGroup};
pub use breaker::{BreakerState, BREAKER_COOL_DOWN, BREAKER_FAILURES};
pub use clock::system_ms;
pub use failure::{Failure, OnFailure};
pub use fallback::{Fallback, FallbackCounts, FallbackError, MAX_PENDING};
pub use layer::{RateLimitLayer, FREE_RUN_KEYS};
#[cfg(feature = "redis")]
pub use redis::{Redis, RedisBackendError};
pub use service::RateLimit;
pub use share::{Share, ShareError};
pub use subject::{Rejection, Subject};

// The docs site's chapter on the layer: its examples compile against this crate.
#[doc = include_str!("../../../docs/src/server.md")]
#[cfg(all(doctest, feature = "redis"))]
pub struct ServerChapterDoctests;
