//! The service the layer wraps around a handler: it hands each request, with the handler,
//! to the flow ([`crate::flow`]) and returns the flow's future.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower_service::Service;

use crate::answers::Body;
use crate::backend::Backend;
use crate::config::Config;
use crate::flow::limit;
use crate::future::ResponseFuture;
use crate::subject::{Rejection, Subject};

/// The service [`RateLimitLayer`](crate::RateLimitLayer) wraps around a handler.
pub struct RateLimit<S, B, F> {
    inner: S,
    config: Arc<Config<B, F>>,
}

impl<S, B, F> RateLimit<S, B, F> {
    pub(crate) fn new(inner: S, config: Arc<Config<B, F>>) -> RateLimit<S, B, F> {
        RateLimit { inner, config }
    }
}

impl<S: Clone, B, F> Clone for RateLimit<S, B, F> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

impl<S: fmt::Debug, B, F> fmt::Debug for RateLimit<S, B, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, B, F, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimit<S, B, F>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    // Held while the request is settled, after a handler that failed.
    S::Error: Send,
    B: Backend,
    F: Fn(&Request<ReqBody>) -> Result<Option<Subject>, Rejection> + Send + Sync + 'static,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<Body<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The clone is not ready yet; the one poll_ready readied goes into the future.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let config = Arc::clone(&self.config);
        Box::pin(limit(config, inner, request))
    }
}
