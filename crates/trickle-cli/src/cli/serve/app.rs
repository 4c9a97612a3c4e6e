//! The demo API `trickle serve` answers: each configured route a GET that answers the status
//! `?status=` asks for, after the wait `?delay_ms=` asks for, behind trickle-tower's rate
//! limit for its group, keyed by the `X-Client-Id` header; CORS around it all, so that a
//! docs page on another origin can call it and read the rate-limit headers.
//!
//! Outside in, a request meets CORS (which answers preflights itself, so they are never
//! charged), the header size check, the router (an unknown path is a 404, uncharged), then
//! the group's rate limit and the handler.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_layer::Layer;
use trickle_tower::{
    Backend, OnFailure, RateLimitLayer, Rejection, Subject, RATELIMIT, RATELIMIT_POLICY,
    X_RATELIMIT_GROUP, X_RATELIMIT_LIMIT, X_RATELIMIT_REMAINING, X_RATELIMIT_SHADOW,
    X_RATELIMIT_USED,
};

use crate::cli::serve::config::{Config, CorsOrigins};
use crate::cli::serve::openapi;
use crate::cli::serve::request::{CLIENT_ID, MAX_CLIENT_ID, MAX_DELAY_MS, MAX_HEADER_BYTES};

/// How long a browser may reuse a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

/// The headers a page on another origin may read: the layer's, in either dialect, and
/// `Retry-After`. Everything else a browser lets a page read by default, or the demo does
/// not send.
const EXPOSED: [HeaderName; 8] = [
    X_RATELIMIT_LIMIT,
    X_RATELIMIT_REMAINING,
    X_RATELIMIT_USED,
    X_RATELIMIT_GROUP,
    X_RATELIMIT_SHADOW,
    RATELIMIT_POLICY,
    RATELIMIT,
    RETRY_AFTER,
];

/// The whole application: every group's routes behind its own layer over the shared
/// `backend` (a zero-cost budget keeping at most `max_keys` keys, as the buckets do), and
/// CORS for `config.cors_origins`.
pub fn app<B: Backend>(
    config: &Config,
    backend: Arc<B>,
    on_failure: OnFailure,
    max_keys: NonZeroUsize,
) -> Router {
    let mut router = Router::new();
    let mut all_routes = Vec::new();
    for group in &config.groups {
        let name = group.name.clone();
        // One layer per group: its cost table, and a subject function that knows the group.
        let layer = RateLimitLayer::new(Arc::clone(&backend), move |request: &Request| {
            subject(&name, request)
        })
        .costs(group.costs.clone())
        .on_failure(on_failure)
        .shadow(group.shadow)
        .headers(config.headers);
        let layer = match group.free_runs {
            Some(budget) => layer.free_runs_with_max_keys(budget, max_keys),
            None => layer,
        };
        for route in &group.routes {
            let (group, path) = (group.name.clone(), route.clone());
            let handler = move |request: Request| demo(group, path, request);
            // route_layer: the limit wraps the GET (and HEAD) handler only, so a POST is a
            // 405 that nobody pays for.
            router = router.route(route, get(handler).route_layer(layer.clone()));
            all_routes.push(route.clone());
        }
    }
    // The document describing the routes, uncharged (the config keeps its path free).
    router = router.route(openapi::PATH, openapi::route(config));
    let not_found = move |uri: Uri| async move { unknown_route(&uri, &all_routes) };
    let routes = router.fallback(not_found);
    // Around the router as a whole, not each route (Router::layer's way): a preflight is
    // answered before routing, whatever its path, and carries nothing the routes add.
    let outer =
        cors(&config.cors_origins).layer(middleware::from_fn(limit_header_bytes).layer(routes));
    Router::new().fallback_service(outer)
}

/// The bucket a request spends: its group's, under its `X-Client-Id`; or a 400 saying what
/// is missing. `?status=` and `?delay_ms=` are checked here too, so that a bad one costs
/// nothing.
fn subject(group: &str, request: &Request) -> Result<Option<Subject>, Rejection> {
    let client = client_id(request.headers())?;
    requested_status(request.uri())?;
    requested_delay(request.uri())?;
    Ok(Some(Subject::new(group, client)))
}

fn client_id(headers: &HeaderMap) -> Result<&str, Rejection> {
    const ALLOWED: &str =
        "1 to 64 visible ASCII characters (no spaces), as in X-Client-Id: docs-demo";
    let mut values = headers.get_all(CLIENT_ID).iter();
    let Some(value) = values.next() else {
        return Err(Rejection::bad_request(format!(
            "send an X-Client-Id header naming your client, {ALLOWED}; each client has a \
             bucket of its own in each route group"
        )));
    };
    if values.next().is_some() {
        return Err(Rejection::bad_request(format!(
            "X-Client-Id is sent more than once; send it once, {ALLOWED}"
        )));
    }
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return Err(Rejection::bad_request(format!(
            "X-Client-Id is empty; it must be {ALLOWED}"
        )));
    }
    if bytes.len() > MAX_CLIENT_ID {
        return Err(Rejection::bad_request(format!(
            "X-Client-Id is {} bytes long; it must be {ALLOWED}",
            bytes.len()
        )));
    }
    match value.to_str() {
        Ok(text) if text.bytes().all(|byte| byte.is_ascii_graphic()) => Ok(text),
        _ => Err(Rejection::bad_request(format!(
            "X-Client-Id holds a space, a control character or a non-ASCII byte; it must \
             be {ALLOWED}"
        ))),
    }
}

/// The status `?status=NNN` asks the demo to answer with, 200 when there is none. Other
/// query parameters are ignored (a page may add one to defeat a cache).
fn requested_status(uri: &Uri) -> Result<StatusCode, Rejection> {
    let Some(value) = query_value(uri, "status", "a status from 200 to 599")? else {
        return Ok(StatusCode::OK);
    };
    value
        .parse::<u16>()
        .ok()
        .filter(|status| (200..=599).contains(status) && value.len() == 3)
        .and_then(|status| StatusCode::from_u16(status).ok())
        .ok_or_else(|| {
            Rejection::bad_request(format!(
                "?status={} is not a status from 200 to 599; give one, as in ?status=404, or \
                 leave it out for 200",
                shorten(value)
            ))
        })
}

/// How long `?delay_ms=N` asks the demo to wait before it answers, none when absent: a
/// slow handler to try timeouts and a stop with a request in flight against.
fn requested_delay(uri: &Uri) -> Result<Duration, Rejection> {
    let allowed = format!("a whole number of milliseconds from 0 to {MAX_DELAY_MS}");
    let Some(value) = query_value(uri, "delay_ms", &allowed)? else {
        return Ok(Duration::ZERO);
    };
    value
        .parse::<u64>()
        .ok()
        .filter(|delay| *delay <= MAX_DELAY_MS && !value.starts_with('+'))
        .map(Duration::from_millis)
        .ok_or_else(|| {
            Rejection::bad_request(format!(
                "?delay_ms={} is not {allowed}; give one, as in ?delay_ms=500, or leave it \
                 out for no wait",
                shorten(value)
            ))
        })
}

/// The value of the query parameter `name`, if given; a 400 if it is given more than once
/// (which one was meant is a guess), saying it must be `allowed`.
fn query_value<'a>(uri: &'a Uri, name: &str, allowed: &str) -> Result<Option<&'a str>, Rejection> {
    let mut found = None;
    for pair in uri.query().unwrap_or("").split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != name {
            continue;
        }
        if found.is_some() {
            return Err(Rejection::bad_request(format!(
                "?{name}= is given more than once; give it once, {allowed}"
            )));
        }
        found = Some(value);
    }
    Ok(found)
}

/// At most 32 characters of something a client sent, for a message.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(32) {
        Some((end, _)) => format!("{}...", text.get(..end).unwrap_or_default()),
        None => text.to_string(),
    }
}

/// The demo's handler: the status asked for, after the wait asked for, and a small JSON body
/// saying who answered.
async fn demo(group: String, route: String, request: Request) -> Response {
    // The subject function has let only valid statuses and delays through.
    let status = requested_status(request.uri()).unwrap_or(StatusCode::OK);
    let delay = requested_delay(request.uri()).unwrap_or(Duration::ZERO);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    // These statuses have no body by definition; hyper would drop one anyway.
    if matches!(status.as_u16(), 204 | 205 | 304) {
        return status.into_response();
    }
    let body = serde_json::json!({
        "group": group,
        "route": route,
        "status": status.as_u16(),
    });
    json(status, &body)
}

/// 404 for a path no group lists, uncharged, with the routes there are.
fn unknown_route(uri: &Uri, routes: &[String]) -> Response {
    let message = format!(
        "no route {}; the routes are {}",
        shorten(uri.path()),
        routes.join(", ")
    );
    problem(StatusCode::NOT_FOUND, &message)
}

/// 431 for headers past [`MAX_HEADER_BYTES`], before routing or any bucket.
async fn limit_header_bytes(request: Request, next: Next) -> Response {
    // Each header as it travels: name, ": ", value, CRLF.
    let bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if bytes > MAX_HEADER_BYTES {
        let message = format!(
            "the request's headers are {bytes} bytes; at most {MAX_HEADER_BYTES} are allowed"
        );
        return problem(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, &message);
    }
    next.run(request).await
}

/// An error of the server's own as an RFC 9457 problem, as the layer writes its own: the
/// type `about:blank`, titled by the status, `message` as its detail.
fn problem(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({
        "type": "about:blank",
        "title": status.canonical_reason().unwrap_or("Error"),
        "status": status.as_u16(),
        "detail": message,
    });
    let mut response = json(status, &body);
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    response
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(format!("{body}\n")));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// CORS for a docs page calling the demo from another origin, and only that: GET and HEAD,
/// the one request header the demo reads, the rate-limit headers exposed, no credentials.
fn cors(origins: &CorsOrigins) -> CorsLayer {
    let allow_origin = match origins {
        CorsOrigins::Any => AllowOrigin::any(),
        CorsOrigins::List(list) => AllowOrigin::list(
            // The config file checked each is a plain origin, so each is a header value.
            list.iter()
                .filter_map(|origin| HeaderValue::from_str(origin).ok()),
        ),
    };
    CorsLayer::new()
        .allow_origin(allow_origin)
        .allow_methods([Method::GET, Method::HEAD])
        .allow_headers([CLIENT_ID])
        .expose_headers(EXPOSED)
        .max_age(PREFLIGHT_MAX_AGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(uri: &str) -> Result<u16, String> {
        let uri: Uri = uri.parse().unwrap();
        requested_status(&uri)
            .map(|status| status.as_u16())
            .map_err(|rejection| rejection.message().to_string())
    }

    #[rustfmt::skip]
    #[test]
    fn statuses() {
        let cases: [(&str, Option<u16>); 12] = [
            ("/f", Some(200)),
            ("/f?", Some(200)),
            ("/f?status=404", Some(404)),
            ("/f?x=1&status=503&y", Some(503)),
            ("/f?status=599", Some(599)),
            ("/f?status=200", Some(200)),
            ("/f?status=199", None),
            ("/f?status=600", None),
            ("/f?status=", None),
            ("/f?status=abc", None),
            ("/f?status=0404", None),
            ("/f?status=200&status=404", None),
        ];
        for (uri, want) in cases {
            assert_eq!(status_of(uri).ok(), want, "{uri}: {:?}", status_of(uri));
        }
    }

    #[rustfmt::skip]
    #[test]
    fn delays() {
        let cases: [(&str, Option<u64>); 9] = [
            ("/f", Some(0)),
            ("/f?delay_ms=0", Some(0)),
            ("/f?delay_ms=250&status=404", Some(250)),
            ("/f?delay_ms=1000", Some(1000)),
            ("/f?delay_ms=1001", None),
            ("/f?delay_ms=", None),
            ("/f?delay_ms=-1", None),
            ("/f?delay_ms=+5", None),
            ("/f?delay_ms=1&delay_ms=2", None),
        ];
        for (uri, want) in cases {
            let uri: Uri = uri.parse().unwrap();
            let delay = requested_delay(&uri).ok().map(|delay| u64::try_from(delay.as_millis()).unwrap());
            assert_eq!(delay, want, "{uri}");
        }
    }

    #[test]
    fn client_ids() {
        let check = |value: &[u8]| {
            let mut headers = HeaderMap::new();
            headers.insert(CLIENT_ID, HeaderValue::from_bytes(value).unwrap());
            client_id(&headers).map(str::to_string)
        };
        assert_eq!(check(b"docs-demo"), Ok("docs-demo".to_string()));
        assert_eq!(check(&[b'x'; 64]), Ok("x".repeat(64)));
        assert!(check(&[b'x'; 65]).is_err());
        assert!(check(b"").is_err());
        assert!(check(b"a b").is_err());
        assert!(check("é".as_bytes()).is_err());
        assert!(client_id(&HeaderMap::new())
            .unwrap_err()
            .message()
            .contains("X-Client-Id"));
    }

    #[test]
    fn long_text_is_shortened() {
        assert_eq!(shorten("abc"), "abc");
        assert_eq!(shorten(&"x".repeat(40)), format!("{}...", "x".repeat(32)));
    }
}
