//! The layer and the service it wraps around the handler: ESI's flow for each request.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body_util::{Either, Full};
use tower_layer::Layer;
use tower_service::Service;
use trickle::{CostTable, Decision, Limit, Op};

use crate::backend::Backend;

/// `X-Ratelimit-Group`: the route group whose bucket the request was charged to.
pub const X_RATELIMIT_GROUP: HeaderName = HeaderName::from_static("x-ratelimit-group");
/// `X-Ratelimit-Limit`: the limit as ESI writes it, `150/15m`.
pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
/// `X-Ratelimit-Remaining`: whole tokens left after the decision.
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// `X-Ratelimit-Used`: the tokens this request spent.
pub const X_RATELIMIT_USED: HeaderName = HeaderName::from_static("x-ratelimit-used");

/// Who pays for a request: the bucket of `key` in `group`. ESI's key is the application
/// and the user (`"7:90000001"`), within a route group (`"fitting"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subject {
    /// The route group, whose limit applies.
    pub group: String,
    /// The bucket within the group.
    pub key: String,
}

impl Subject {
    /// The bucket of `key` in `group`.
    pub fn new(group: impl Into<String>, key: impl Into<String>) -> Subject {
        Subject {
            group: group.into(),
            key: key.into(),
        }
    }
}

/// A request the layer answers itself, without a bucket and without calling the handler:
/// what the subject function returns when a request lacks what its key is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    status: StatusCode,
    message: Cow<'static, str>,
}

impl Rejection {
    /// Answers `status` with `{"error": message}`.
    pub fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> Rejection {
        Rejection {
            status,
            message: message.into(),
        }
    }

    /// Answers 400 Bad Request with `{"error": message}`; say what was missing and what is
    /// allowed.
    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Rejection {
        Rejection::new(StatusCode::BAD_REQUEST, message)
    }

    /// The status it answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message its body carries.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for Rejection {}

/// What to do with a request when the backend cannot decide it (Redis unreachable or
/// timing out). Either way the layer logs a warning with the error, and nothing panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Let it through, uncharged: the limit is not enforced while the store is away, and
    /// the handlers take the load. The response carries `X-Ratelimit-Limit` and
    /// `X-Ratelimit-Group` but no count. The default, as a limiter is a safety net and its
    /// outage should not become the API's.
    #[default]
    Open,
    /// Refuse it with 503 Service Unavailable and `Retry-After: 1`, without calling the
    /// handler: nothing gets through while the store is away.
    Closed,
}

/// The clock decisions are made on, in ms since the Unix epoch.
type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// A [`Layer`] that limits each request per [`Subject`] with ESI's flow:
///
/// 1. the subject function picks the bucket from the request (or rejects it, or lets it
///    through unlimited);
/// 2. before the handler, the layer peeks whether `peek_cost` (1) more token fits; if not,
///    it answers **429** with `Retry-After` (whole seconds, rounded up) and charges
///    nothing, and the handler never runs;
/// 3. otherwise the handler answers, and the layer records what its status costs under the
///    cost table ([`CostTable::esi`] by default: 2XX 2, 3XX 1, 4XX 5, 429 0, 5XX 0), which
///    may take the bucket past the limit: later requests then wait;
/// 4. every response of a limited request carries `X-Ratelimit-Limit` (`150/15m`),
///    `X-Ratelimit-Remaining`, `X-Ratelimit-Used` (what this request spent) and
///    `X-Ratelimit-Group`: [`trickle::esi::headers`] and the group.
///
/// The peek and the record are two decisions, as ESI's are: requests in flight together
/// may all pass the peek and together take the bucket past the limit by their costs.
/// That is the price of charging by an answer not yet known; [`Op::Hit`] before the
/// handler, with a fixed cost, has none.
///
/// ```
/// use http::Request;
/// use trickle::Algorithm;
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

/// What the layer and each service it makes share: the backend and the subject function
/// behind an `Arc` each, so the layer is cheap to clone and to apply.
struct Config<B, F> {
    backend: Arc<B>,
    subject: Arc<F>,
    costs: CostTable,
    peek_cost: u64,
    on_failure: OnFailure,
    clock: Clock,
}

impl<B, F> Clone for Config<B, F> {
    fn clone(&self) -> Self {
        Config {
            backend: Arc::clone(&self.backend),
            subject: Arc::clone(&self.subject),
            costs: self.costs.clone(),
            peek_cost: self.peek_cost,
            on_failure: self.on_failure,
            clock: Arc::clone(&self.clock),
        }
    }
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
            .field("costs", &self.config.costs.to_string())
            .field("peek_cost", &self.config.peek_cost)
            .field("on_failure", &self.config.on_failure)
            .finish_non_exhaustive()
    }
}

impl<B: Backend, F> RateLimitLayer<B, F> {
    /// A layer over `backend`, whose buckets `subject` picks for each request: ESI's cost
    /// table, a peek of 1 token, [`OnFailure::Open`], and the system clock.
    ///
    /// `subject` returns `Ok(Some(_))` for a request to limit, `Ok(None)` for one to let
    /// through unlimited (a health check), and `Err(Rejection)` for one to answer at once
    /// (a missing API key).
    pub fn new(backend: B, subject: F) -> RateLimitLayer<B, F> {
        RateLimitLayer {
            config: Arc::new(Config {
                backend: Arc::new(backend),
                subject: Arc::new(subject),
                costs: CostTable::esi(),
                peek_cost: 1,
                on_failure: OnFailure::default(),
                clock: Arc::new(system_ms),
            }),
        }
    }

    /// Charges responses by `costs` instead of ESI's table. A status the table does not
    /// price costs nothing, with a warning in the log.
    pub fn costs(mut self, costs: CostTable) -> Self {
        Arc::make_mut(&mut self.config).costs = costs;
        self
    }

    /// How many tokens must be free for the handler to run (1 by default).
    pub fn peek_cost(mut self, tokens: u64) -> Self {
        Arc::make_mut(&mut self.config).peek_cost = tokens;
        self
    }

    /// What a request the backend cannot decide gets.
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        Arc::make_mut(&mut self.config).on_failure = on_failure;
        self
    }

    /// Decides on `clock` (ms since the Unix epoch) instead of the system's: for tests, and
    /// for servers that keep their own.
    pub fn clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        Arc::make_mut(&mut self.config).clock = Arc::new(clock);
        self
    }

    /// The backend the layer decides on, shared with every service it made.
    pub fn backend(&self) -> &Arc<B> {
        &self.config.backend
    }
}

/// The clock a layer decides on unless given another ([`RateLimitLayer::clock`]): the
/// system's, in ms since the Unix epoch, so that windows start where every other process
/// on that clock (a second server, a docs page in live mode) starts them. A server that
/// sweeps its [`InProcess`](crate::InProcess) buckets should sweep on the same clock.
pub fn system_ms() -> u64 {
    // A clock before 1970 reads as 1970; the core takes no negative time.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

impl<S, B, F> Layer<S> for RateLimitLayer<B, F> {
    type Service = RateLimit<S, B, F>;

    fn layer(&self, inner: S) -> RateLimit<S, B, F> {
        RateLimit {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service [`RateLimitLayer`] wraps around a handler.
pub struct RateLimit<S, B, F> {
    inner: S,
    config: Arc<Config<B, F>>,
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

/// The body of a response: the handler's, or the short JSON one the layer wrote itself.
pub type Body<B> = Either<B, Full<Bytes>>;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, F, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimit<S, B, F>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
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
        Err(rejection) => return Ok(json_error(rejection.status, &rejection.message)),
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
    let now_ms = (config.clock)();
    match backend
        .decide(group, key, Op::Peek, now_ms, config.peek_cost)
        .await
    {
        Ok(check) if !check.is_allowed() => return Ok(too_many_requests(&check, group)),
        Ok(_) => {}
        Err(error) => match config.on_failure {
            OnFailure::Open => {
                tracing::warn!(
                    group = %group, key = %key, %error,
                    "rate limiter could not decide; failing open: the request goes through uncharged"
                );
                // Uncharged: a store that could not peek would most likely fail the charge
                // too, after as long a wait, with a second warning.
                let mut response = inner.call(request).await?.map(Either::Left);
                set_headers(&mut response, None, limit, group);
                return Ok(response);
            }
            OnFailure::Closed => {
                tracing::warn!(
                    group = %group, key = %key, %error,
                    "rate limiter could not decide; failing closed: 503"
                );
                return Ok(unavailable(limit, group));
            }
        },
    }

    let response = inner.call(request).await?;
    let status = response.status().as_u16();
    let cost = config.costs.cost(u64::from(status)).unwrap_or_else(|_| {
        tracing::warn!(status, costs = %config.costs, "the cost table prices no such status; charging nothing");
        0
    });
    let mut response = response.map(Either::Left);
    match backend
        .decide(group, key, Op::Record, (config.clock)(), cost)
        .await
    {
        Ok(charged) => set_headers(&mut response, Some(&charged), limit, group),
        Err(error) => {
            // The answer is already made: send it, with what is known without the store.
            tracing::warn!(
                group = %group, key = %key, status, cost, %error,
                "rate limiter could not charge the response; its cost is lost"
            );
            set_headers(&mut response, None, limit, group);
        }
    }
    Ok(response)
}

/// 429, as ESI answers it: the peek's headers (`Retry-After` among them) and a JSON body
/// saying how long to wait.
fn too_many_requests<B>(check: &Decision, group: &str) -> Response<Body<B>> {
    let message = match check.retry_after_s() {
        Some(seconds) => format!(
            "rate limit {} of group {group} exceeded: retry after {seconds} s",
            check.limit
        ),
        None => format!(
            "this request costs more than the rate limit {} of group {group} allows at all",
            check.limit
        ),
    };
    let mut response = json_error(StatusCode::TOO_MANY_REQUESTS, &message);
    set_headers(&mut response, Some(check), check.limit, group);
    response
}

/// 503 while the store is away and the layer fails closed.
fn unavailable<B>(limit: Limit, group: &str) -> Response<Body<B>> {
    let mut response = json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "the rate limiter is unavailable; retry shortly",
    );
    set_headers(&mut response, None, limit, group);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The headers of [`trickle::esi::headers`] for `decision` (only the limit without one, when
/// the store could not decide), and the group. Written here from the decision's own
/// figures rather than from that function's strings, to spare every response a few
/// allocations; the tests hold the two equal.
fn set_headers<B>(
    response: &mut Response<B>,
    decision: Option<&Decision>,
    limit: Limit,
    group: &str,
) {
    let map = response.headers_mut();
    // A limit's text is digits and a unit: always a valid header value.
    if let Ok(value) = HeaderValue::try_from(limit.to_string()) {
        map.insert(X_RATELIMIT_LIMIT, value);
    }
    if let Some(decision) = decision {
        map.insert(
            X_RATELIMIT_REMAINING,
            HeaderValue::from(decision.remaining()),
        );
        map.insert(X_RATELIMIT_USED, HeaderValue::from(decision.spent()));
        if let Some(seconds) = decision.retry_after_s() {
            map.insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
    }
    match HeaderValue::try_from(group) {
        Ok(value) => {
            map.insert(X_RATELIMIT_GROUP, value);
        }
        Err(_) => tracing::warn!(
            group,
            "group name is not a valid header value; X-Ratelimit-Group left out"
        ),
    }
}

/// A response of the layer's own: `status` with `{"error": message}`.
pub(crate) fn json_error<B>(status: StatusCode, message: &str) -> Response<Body<B>> {
    let body = format!("{{\"error\":{}}}\n", json_string(message));
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(body))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::json_string;

    #[test]
    fn json_strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(json_string(r#"a "b" \c"#), r#""a \"b\" \\c""#);
        assert_eq!(json_string("x\ny\u{1}"), r#""x\ny\u0001""#);
    }
}
