//! The futures of a request: the one the service returns, and the handler's, with a panic
//! caught so that the request is settled before the panic goes on.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_service::Service;

/// What [`RateLimit`](crate::RateLimit) answers a request with: the flow's `async fn`,
/// boxed, as its state machine has no name to write.
pub(crate) type ResponseFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

pin_project! {
    /// The handler's future, with a panic in it (or in the call that made it) caught as a
    /// value, so that the request is settled before the panic goes on.
    pub(crate) struct Caught<Fut> {
        #[pin]
        future: Option<Fut>,
        panic: Option<Box<dyn Any + Send>>,
    }
}

impl<Fut: Future> Caught<Fut> {
    pub(crate) fn call<S, Request>(inner: &mut S, request: Request) -> Caught<Fut>
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
