//! A real HTTP server on 127.0.0.1 for the layer's tests: axum on a tokio runtime of its
//! own, a handler that answers the status the path asks for and counts its calls, and a
//! blocking client (ureq) that sees every status as an answer, not an error.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use trickle_core::flow::{self, Pricing};
use trickle_core::{esi, Admission, Limiter};
use trickle_tower::{Backend, RateLimitLayer, Rejection, Subject};

/// The server; dropping it shuts the runtime down, and the server with it.
pub struct Server {
    pub url: String,
    /// How many times the handler ran: a 429 the layer answers must not count.
    pub calls: Arc<AtomicUsize>,
    /// The layer's clock, in ms, set by the test.
    pub clock: Arc<AtomicU64>,
    pub runtime: tokio::runtime::Runtime,
}

/// Who a request is charged to: `X-Client-Id` within the group `X-Group` (default
/// "fitting"); `/free/…` is not limited at all.
pub fn subject(request: &Request<axum::body::Body>) -> Result<Option<Subject>, Rejection> {
    if request.uri().path().starts_with("/free/") {
        return Ok(None);
    }
    let header = |name| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
    };
    let client = header("x-client-id")
        .ok_or_else(|| Rejection::bad_request("send your client id in X-Client-Id"))?;
    Ok(Some(Subject::new(
        header("x-group").unwrap_or("fitting"),
        client,
    )))
}

/// [`subject`] as the layer holds it.
pub type SubjectFn = fn(&Request<axum::body::Body>) -> Result<Option<Subject>, Rejection>;

/// A runtime for a server (and a Redis connection made on it before the server starts).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Serves `/status/{code}` and `/free/{code}` behind the layer `configure` makes from a
/// layer over `backend` on a clock the test sets (starting at `start_ms`).
pub fn serve<B: Backend>(
    runtime: tokio::runtime::Runtime,
    backend: B,
    start_ms: u64,
    configure: impl FnOnce(RateLimitLayer<B, SubjectFn>) -> RateLimitLayer<B, SubjectFn>,
) -> Server {
    let calls = Arc::new(AtomicUsize::new(0));
    let clock = Arc::new(AtomicU64::new(start_ms));
    let time = Arc::clone(&clock);
    let subject: SubjectFn = subject;
    let layer =
        configure(RateLimitLayer::new(backend, subject).clock(move || time.load(Ordering::SeqCst)));
    let app = Router::new()
        .route("/status/{code}", get(answer))
        .route("/free/{code}", get(answer))
        .layer(layer)
        .with_state(Arc::clone(&calls));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind a port on 127.0.0.1");
    let url = format!(
        "http://{}",
        listener.local_addr().expect("the bound address")
    );
    runtime.spawn(async move { axum::serve(listener, app).await });
    Server {
        url,
        calls,
        clock,
        runtime,
    }
}

async fn answer(State(calls): State<Arc<AtomicUsize>>, Path(code): Path<u16>) -> StatusCode {
    calls.fetch_add(1, Ordering::SeqCst);
    StatusCode::from_u16(code).expect("the test asks for a valid status")
}

/// One answer: its status, the headers the layer sets, and the body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub limit: Option<String>,
    pub remaining: Option<String>,
    pub used: Option<String>,
    pub group: Option<String>,
    pub retry_after: Option<String>,
    /// `X-Ratelimit-Shadow`, which shadow mode sets on a request it would have refused.
    pub shadow: Option<String>,
    pub body: String,
}

impl Server {
    pub fn set_time(&self, now_ms: u64) {
        self.clock.store(now_ms, Ordering::SeqCst);
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// GET `path` as `client` (in `group` when given).
    pub fn get(&self, path: &str, client: Option<&str>, group: Option<&str>) -> Answer {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        let mut request = agent.get(format!("{}{path}", self.url));
        if let Some(client) = client {
            request = request.header("x-client-id", client);
        }
        if let Some(group) = group {
            request = request.header("x-group", group);
        }
        let mut response = request.call().expect("the server answers");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|value| value.to_str().expect("an ASCII header").to_string())
        };
        let (limit, remaining, used, group, retry_after, shadow) = (
            header("x-ratelimit-limit"),
            header("x-ratelimit-remaining"),
            header("x-ratelimit-used"),
            header("x-ratelimit-group"),
            header("retry-after"),
            header("x-ratelimit-shadow"),
        );
        Answer {
            status: response.status().as_u16(),
            limit,
            remaining,
            used,
            group,
            retry_after,
            shadow,
            body: response.body_mut().read_to_string().expect("a text body"),
        }
    }
}

/// Checks `answer` against what the core decides for the same request with ESI's flow on
/// `model` at `now_ms`: reserve 1, then, if admitted, settle at what `status` costs.
/// Returns whether the model let the request in.
pub fn assert_as_core(
    answer: &Answer,
    model: &mut Limiter,
    now_ms: u64,
    status: u16,
    context: &str,
) -> bool {
    let esi = Pricing::esi();
    let (admitted, expected_status, decision) = match model.reserve(now_ms, esi.reserve_cost()) {
        Admission::Admitted { reservation, .. } => {
            let (cost, _) = esi.charge(flow::Answer::Status(status));
            (true, status, model.settle(reservation, now_ms, cost))
        }
        Admission::Refused(refusal) => (false, 429, refusal),
    };
    let headers = esi::headers(&decision);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(header, _)| *header == name)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(answer.status, expected_status, "{context}");
    assert_eq!(answer.limit, header("X-Ratelimit-Limit"), "{context}");
    assert_eq!(
        answer.remaining,
        header("X-Ratelimit-Remaining"),
        "{context}"
    );
    assert_eq!(answer.used, header("X-Ratelimit-Used"), "{context}");
    assert_eq!(answer.retry_after, header("Retry-After"), "{context}");
    admitted
}
