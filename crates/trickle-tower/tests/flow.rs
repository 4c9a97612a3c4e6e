//! What the reserve-then-settle flow guarantees, in process: a burst of parallel clients
//! on one key gets exactly the limit through, a request whose client hangs up keeps its
//! reserve, and a handler that fails or panics is settled as a 500.
//!
//! The bursts are real: 200 clients on connections of their own, released at once by a
//! barrier, against a server of 8 worker threads whose handler awaits 20 ms (as a database
//! call would), so that every request is in flight while the others are decided.

use std::convert::Infallible;
use std::future::{pending, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tower_layer::Layer;
use tower_service::Service;
use trickle_core::{Algorithm, CostTable, Op, Policy, PolicyDecision};
use trickle_tower::{
    Backend, InProcess, InProcessError, RateLimit, RateLimitLayer, Rejection, Subject, UnknownGroup,
};

const CLIENTS: usize = 200;

fn backend() -> Arc<InProcess> {
    Arc::new(InProcess::new().with_group("api", Algorithm::Floating, "10/1m".parse().unwrap()))
}

fn subject(_: &Request<axum::body::Body>) -> Result<Option<Subject>, Rejection> {
    Ok(Some(Subject::new("api", "one-key")))
}

/// What is in use in the key's bucket now: a peek of 0.
fn used(backend: &InProcess, now_ms: u64) -> String {
    let decision = backend.decide("api", "one-key", Op::Peek, now_ms, 0);
    let mut decision = pin!(decision);
    match decision
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Ok(decision)) => decision.decisions()[0].used.to_string(),
        other => panic!("the in-process backend answers at once: {other:?}"),
    }
}

/// Serves `/status/{code}` (after 20 ms) behind the layer on `backend`, on 8 worker
/// threads; fires [`CLIENTS`] requests at once, the i-th asking for `statuses[i % len]`;
/// returns each answer's status and `X-Ratelimit-Used`.
fn burst(
    backend: Arc<InProcess>,
    costs: CostTable,
    statuses: &[u16],
) -> (Vec<(u16, Option<u64>)>, usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let app = Router::new()
        .route(
            "/status/{code}",
            get(move |Path(code): Path<u16>| {
                let calls = Arc::clone(&counted);
                async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    StatusCode::from_u16(code).expect("a valid status")
                }
            }),
        )
        .layer(
            RateLimitLayer::new(backend, subject)
                .costs(costs)
                .clock(|| 30_000),
        );
    let answers = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a port on 127.0.0.1");
        let address = listener.local_addr().expect("the bound address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let barrier = Arc::clone(&barrier);
                let status = statuses[i % statuses.len()];
                tokio::spawn(async move {
                    // Connected before the barrier, so that the burst is the requests alone.
                    let stream = tokio::net::TcpStream::connect(address)
                        .await
                        .expect("connect");
                    let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
                        .await
                        .expect("an HTTP/1 handshake");
                    tokio::spawn(connection);
                    barrier.wait().await;
                    let request = Request::get(format!("/status/{status}"))
                        .header("host", "127.0.0.1")
                        .body(Empty::<Bytes>::new())
                        .expect("a request");
                    let response = sender.send_request(request).await.expect("an answer");
                    let used = response
                        .headers()
                        .get("x-ratelimit-used")
                        .map(|value| value.to_str().unwrap().parse::<u64>().unwrap());
                    let status = response.status().as_u16();
                    response.into_body().collect().await.expect("the body");
                    (status, used)
                })
            })
            .collect();
        let mut answers = Vec::new();
        for client in clients {
            answers.push(client.await.expect("a client finishes"));
        }
        answers
    });
    (answers, calls.load(Ordering::SeqCst))
}

/// 200 parallel requests on one key at 10/1m, a 2XX costing 1: exactly 10 get through,
/// every other is a 429 that never reached the handler, and the bucket holds 10. (Before
/// reserve-then-settle, every request in flight passed the same peek.)
#[test]
fn a_burst_of_200_on_one_key_admits_exactly_the_limit() {
    let backend = backend();
    let costs: CostTable = "2xx:1 3xx:1 4xx:5 429:0 5xx:0".parse().unwrap();
    let (answers, calls) = burst(Arc::clone(&backend), costs, &[200]);
    let admitted = answers.iter().filter(|(status, _)| *status == 200).count();
    let refused = answers.iter().filter(|(status, _)| *status == 429).count();
    assert_eq!((admitted, refused), (10, CLIENTS - 10), "{answers:?}");
    assert_eq!(calls, 10, "only the admitted requests reach the handler");
    assert_eq!(used(&backend, 30_000), "10.000");
}

/// The same burst under ESI's costs (2XX 2, 3XX 1, 4XX 5) with a reserve of 1: at most 10
/// are admitted (each holds a token while its handler runs), and the bucket ends at exactly
/// the sum of what the admitted ones were charged, as their `X-Ratelimit-Used` says.
#[test]
fn a_burst_under_esis_costs_admits_at_most_the_limit_and_charges_what_they_cost() {
    let backend = backend();
    let (answers, calls) = burst(Arc::clone(&backend), CostTable::esi(), &[200, 304, 404]);
    let admitted: Vec<_> = answers
        .iter()
        .filter(|(status, _)| *status != 429)
        .collect();
    assert!(
        !admitted.is_empty() && admitted.len() <= 10,
        "{} admitted: {answers:?}",
        admitted.len()
    );
    assert_eq!(calls, admitted.len());
    let charged: u64 = admitted
        .iter()
        .map(|(_, used)| used.expect("X-Ratelimit-Used"))
        .sum();
    let expected: u64 = admitted
        .iter()
        .map(|(status, _)| match status {
            200 => 2,
            304 => 1,
            404 => 5,
            other => panic!("unexpected status {other}"),
        })
        .sum();
    assert_eq!(charged, expected);
    assert_eq!(used(&backend, 30_000), format!("{charged}.000"));
}

/// Every request of the hand-driven tests is charged to one key.
fn one_key(_: &Request<()>) -> Result<Option<Subject>, Rejection> {
    Ok(Some(Subject::new("api", "one-key")))
}

type OneKey = fn(&Request<()>) -> Result<Option<Subject>, Rejection>;

/// The layer over `backend`, pricing by `costs`, at 30 s, around `handler`: a service to
/// call by hand, without a network.
fn layered<B: Backend, H>(backend: B, costs: &str, handler: H) -> RateLimit<H, B, OneKey> {
    let subject: OneKey = one_key;
    RateLimitLayer::new(backend, subject)
        .costs(costs.parse().expect("a cost table"))
        .clock(|| 30_000)
        .layer(handler)
}

/// One request through `service`, run to its end on a runtime of its own.
fn run<S>(service: &mut S) -> Result<Result<S::Response, S::Error>, tokio::task::JoinError>
where
    S: Service<Request<()>>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let call = service.call(Request::new(()));
    runtime.block_on(async move { tokio::spawn(call).await })
}

/// What the panic that ended `joined` said.
fn panic_message<T: std::fmt::Debug>(joined: Result<T, tokio::task::JoinError>) -> &'static str {
    let panic = joined.expect_err("the panic goes on").into_panic();
    *panic.downcast::<&str>().expect("a panic with a message")
}

/// The layer around a handler that never answers, driven by hand: a request polled until it
/// waits in its handler, then dropped (its client hung up, an outer timeout fired) keeps
/// its reserve; nobody dodges the charge by disconnecting.
#[test]
fn a_request_dropped_in_its_handler_keeps_its_reserve() {
    let backend = backend();
    let handler = tower_service_fn(|_request| async {
        pending::<()>().await;
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::new())))
    });
    let mut service = layered(Arc::clone(&backend), "esi", handler);
    let mut waker = Context::from_waker(Waker::noop());
    for dropped in 1..=3 {
        let mut call = Box::pin(service.call(Request::new(())));
        assert!(
            call.as_mut().poll(&mut waker).is_pending(),
            "in its handler"
        );
        drop(call);
        assert_eq!(used(&backend, 30_000), format!("{dropped}.000"));
    }
}

/// A handler that panics is settled as a 500 (ESI: nothing, so its reserve comes back; a
/// table pricing 5XX at 3: 3), and its panic goes on to whoever polls the request.
#[test]
fn a_panicking_handler_is_settled_as_a_500_and_its_panic_goes_on() {
    for (costs, after) in [("esi", "0.000"), ("2xx:1 5xx:3", "3.000")] {
        let backend = backend();
        let handler = tower_service_fn(|_request| async {
            tokio::task::yield_now().await;
            if true {
                panic!("the handler's own bug");
            }
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::new())))
        });
        let joined = run(&mut layered(Arc::clone(&backend), costs, handler));
        assert_eq!(panic_message(joined), "the handler's own bug");
        assert_eq!(used(&backend, 30_000), after, "costs {costs}");
    }
}

/// A handler whose `call` itself panics, before it makes a future: settled as a 500 too.
#[test]
fn a_handler_that_panics_when_called_is_settled_as_a_500() {
    let backend = backend();
    let handler = tower_service_fn(
        |_request| -> std::future::Ready<Result<Response<Full<Bytes>>, Infallible>> {
            panic!("the call's own bug")
        },
    );
    let joined = run(&mut layered(Arc::clone(&backend), "2xx:1 5xx:2", handler));
    assert_eq!(panic_message(joined), "the call's own bug");
    assert_eq!(used(&backend, 30_000), "2.000");
}

/// A handler that returns an error is settled as a 500, and its error is the answer.
#[test]
fn a_failing_handler_is_settled_as_a_500() {
    let backend = backend();
    let handler = tower_service_fn(|_request| async {
        Err::<Response<Full<Bytes>>, _>("the database is down")
    });
    let answer = run(&mut layered(Arc::clone(&backend), "2xx:1 5xx:4", handler));
    let error = answer.expect("no panic").expect_err("the handler's error");
    assert_eq!(error, "the database is down");
    assert_eq!(used(&backend, 30_000), "4.000");
}

/// The in-process backend with every settle failing, as a Redis gone away after the reserve.
struct SettlesFail(Arc<InProcess>);

impl Backend for SettlesFail {
    type Error = InProcessError;

    fn policy(&self, group: &str) -> Option<&Policy> {
        self.0.policy(group)
    }

    fn decide(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> impl Future<Output = Result<PolicyDecision, InProcessError>> + Send {
        // Any error will do: the trait's default calls every error an outage.
        let decided = match op {
            Op::Settle { .. } => Err(InProcessError::UnknownGroup(UnknownGroup {
                group: "a store that settles nothing".to_string(),
            })),
            op => Ok(self.0.decide(group, key, op, now_ms, cost)),
        };
        async move {
            match decided {
                Ok(decision) => decision.await,
                Err(error) => Err(error),
            }
        }
    }
}

/// A settle the store cannot make: the answer goes out as the handler made it, with the
/// limit and the group but no counts, and the bucket keeps the reserve.
#[test]
fn a_settle_the_store_cannot_make_sends_the_answer_without_counts() {
    let backend = backend();
    let handler = tower_service_fn(|_request| async {
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
    });
    let mut service = layered(SettlesFail(Arc::clone(&backend)), "esi", handler);
    let response = run(&mut service)
        .expect("no panic")
        .expect("the handler's answer");
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap())
    };
    assert_eq!(header("x-ratelimit-limit"), Some("10/1m"));
    assert_eq!(header("x-ratelimit-group"), Some("api"));
    assert_eq!(header("x-ratelimit-remaining"), None);
    assert_eq!(header("x-ratelimit-used"), None);
    assert_eq!(used(&backend, 30_000), "1.000", "the reserve stays charged");
}

/// A tower service from an async function of the request, as `tower::service_fn` makes one.
fn tower_service_fn<F, Fut, T, E>(handler: F) -> ServiceFn<F>
where
    F: FnMut(Request<()>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    ServiceFn(handler)
}

#[derive(Clone)]
struct ServiceFn<F>(F);

impl<F, Fut, T, E> Service<Request<()>> for ServiceFn<F>
where
    F: FnMut(Request<()>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Response = T;
    type Error = E;
    type Future = Fut;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), E>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<()>) -> Fut {
        (self.0)(request)
    }
}
