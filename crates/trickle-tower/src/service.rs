//! The service the layer wraps around a handler, and the flow each request goes through:
//! the core's [`trickle::flow`] (reserve, answer, settle) over an async [`Backend`].

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, StatusCode};
use http_body_util::Either;
use pin_project_lite::pin_project;
use tower_service::Service;
use trickle::flow::Answer;
use trickle::{Admission, Op, Reservation};

use crate::answers::{json_error, set_headers, too_many_requests, unavailable, Body};
use crate::backend::Backend;
use crate::failure::Failure;
use crate::layer::{Config, OnFailure, Rejection, Subject};

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

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

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
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

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

/// One request through the flow. Dropped at any await (the client hung up, an outer
/// timeout), it leaves the bucket as far as it got: a reservation made and not yet settled
/// stays charged.
async fn limit<S, B, F, ReqBody, ResBody>(
    config: Arc<Config<B, F>>,
    mut inner: S,
    request: Request<ReqBody>,
) -> Result<Response<Body<ResBody>>, S::Error>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    B: Backend,
    F: Fn(&Request<ReqBody>) -> Result<Option<Subject>, Rejection>,
{
    let subject = match (config.subject)(&request) {
        Ok(Some(subject)) => subject,
        Ok(None) => return Ok(inner.call(request).await?.map(Either::Left)),
        Err(rejection) => return Ok(json_error(rejection.status(), rejection.message())),
    };
    let Subject { group, key } = &subject;
    let Some(limit) = config.backend.limit(group) else {
        tracing::error!(group = %group, "the subject function named a rate-limit group the backend does not have");
        return Ok(json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "this route's rate limit is not configured",
        ));
    };

    let backend = &config.backend;
    let reserve = config.pricing.reserve_cost();
    let ticket = Reservation::new_ticket();
    let reserved = backend
        .decide(
            group,
            key,
            Op::Reserve { ticket },
            (config.clock)(),
            reserve,
        )
        .await;
    let reservation = match reserved.map(|decision| Admission::new(decision, ticket)) {
        Ok(Admission::Admitted { reservation, .. }) => reservation,
        Ok(Admission::Refused(refusal)) => return Ok(too_many_requests(&refusal, group)),
        Err(error) => match (B::failure(&error), config.on_failure) {
            // Not an outage: the store is up, and this key would fail the same way on every
            // request; failing open would switch its limit off until someone noticed.
            (Failure::Data { problem }, _) => {
                tracing::error!(
                    group = %group, key = %key, %error,
                    "rate limiter cannot decide this request: {problem}; answering 500 (the \
                     failure rule is for outages, and this is none)"
                );
                let message = format!("the rate limiter cannot decide this request: {problem}");
                let mut response = json_error(StatusCode::INTERNAL_SERVER_ERROR, &message);
                set_headers(&mut response, None, limit, group);
                return Ok(response);
            }
            (Failure::Outage, OnFailure::Open) => {
                tracing::warn!(
                    group = %group, key = %key, %error,
                    "rate limiter could not decide; failing open: the request goes through \
                     unreserved (if the store timed out, whether it charged the reserve is \
                     unknown)"
                );
                // Not settled: a store that could not reserve would most likely fail the
                // settle too, after as long a wait, with a second warning. (A reserve that
                // timed out on Redis may still have run: its reserve then stays charged.)
                let mut response = inner.call(request).await?.map(Either::Left);
                set_headers(&mut response, None, limit, group);
                return Ok(response);
            }
            (Failure::Outage, OnFailure::Closed) => {
                tracing::warn!(
                    group = %group, key = %key, %error,
                    "rate limiter could not decide; failing closed: 503 (if the store timed \
                     out, whether it charged the reserve is unknown)"
                );
                return Ok(unavailable(limit, group));
            }
        },
    };

    let outcome = Caught::call(&mut inner, request).await;
    let answer = match &outcome {
        Ok(Ok(response)) => Answer::Status(response.status().as_u16()),
        Ok(Err(_)) | Err(_) => Answer::Failed,
    };
    let (cost, unpriced) = config.pricing.charge(answer);
    if let Some(unpriced) = unpriced {
        tracing::warn!(%unpriced, "the response's status has no price; it costs nothing");
    }
    let reserved = reservation.cost();
    let settled = backend
        .decide(group, key, Op::settle(reservation), (config.clock)(), cost)
        .await
        .inspect_err(|error| match B::failure(error) {
            // The settle may have run before the error: the bucket holds the reserve or the
            // cost, and which is not known here (the error says when it is: a settle never
            // sent).
            Failure::Outage => tracing::warn!(
                group = %group, key = %key, status = answer.status(), reserved, cost, %error,
                "rate limiter could not settle the request; unless the error says it was \
                 not sent, its outcome is unknown: the bucket holds its reserve, or its cost \
                 if the settle ran"
            ),
            Failure::Data { problem } => tracing::error!(
                group = %group, key = %key, status = answer.status(), reserved, cost, %error,
                "rate limiter could not settle the request: {problem}; the bucket holds its \
                 reserve, or its cost if the settle ran before the error"
            ),
        })
        .ok();
    match outcome {
        Ok(Ok(response)) => {
            let mut response = response.map(Either::Left);
            // The decision's own limit when there is one: a fallback decides under its
            // share, and its counts are of that, as its 429s say.
            let decided = settled.as_ref().map_or(limit, |decision| decision.limit);
            set_headers(&mut response, settled.as_ref(), decided, group);
            Ok(response)
        }
        Ok(Err(error)) => Err(error),
        // The handler's panic goes on, now that its request is paid for.
        Err(panic) => resume_unwind(panic),
    }
}

pin_project! {
    /// The handler's future, with a panic in it (or in the call that made it) caught as a
    /// value, so that the request is settled before the panic goes on.
    struct Caught<Fut> {
        #[pin]
        future: Option<Fut>,
        panic: Option<Box<dyn Any + Send>>,
    }
}

impl<Fut: Future> Caught<Fut> {
    fn call<S, Request>(inner: &mut S, request: Request) -> Caught<Fut>
    where
        S: Service<Request, Future = Fut>,
    {
        match catch_unwind(AssertUnwindSafe(|| inner.call(request))) {
            Ok(future) => Caught {
                future: Some(future),
                panic: None,
            },
            Err(panic) => Caught {
                future: None,
                panic: Some(panic),
            },
        }
    }
}

impl<Fut: Future> Future for Caught<Fut> {
    type Output = Result<Fut::Output, Box<dyn Any + Send>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(future) = this.future.as_pin_mut() else {
            let panic = this
                .panic
                .take()
                .unwrap_or_else(|| Box::new("polled again"));
            return Poll::Ready(Err(panic));
        };
        match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}
