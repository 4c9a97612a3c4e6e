//! The answers the layer writes or completes itself: a 429, a 503, a JSON error, and the
//! `X-Ratelimit-*` headers on every limited response.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Response, StatusCode};
use http_body_util::{Either, Full};
use trickle::{Decision, Limit};

/// `X-Ratelimit-Group`: the route group whose bucket the request was charged to.
pub const X_RATELIMIT_GROUP: HeaderName = HeaderName::from_static("x-ratelimit-group");
/// `X-Ratelimit-Limit`: the limit as ESI writes it, `150/15m`.
pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
/// `X-Ratelimit-Remaining`: whole tokens left after the decision.
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// `X-Ratelimit-Used`: the tokens this request spent.
pub const X_RATELIMIT_USED: HeaderName = HeaderName::from_static("x-ratelimit-used");

/// The body of a response: the handler's, or the short JSON one the layer wrote itself.
pub type Body<B> = Either<B, Full<Bytes>>;

/// 429, as ESI answers it: the refused reserve's headers (`Retry-After` among them) and a
/// JSON body saying how long to wait.
pub(crate) fn too_many_requests<B>(refusal: &Decision, group: &str) -> Response<Body<B>> {
    let message = match refusal.retry_after_s() {
        Some(seconds) => format!(
            "rate limit {} of group {group} exceeded: retry after {seconds} s",
            refusal.limit
        ),
        None => format!(
            "this request costs more than the rate limit {} of group {group} allows at all",
            refusal.limit
        ),
    };
    let mut response = json_error(StatusCode::TOO_MANY_REQUESTS, &message);
    set_headers(&mut response, Some(refusal), refusal.limit, group);
    response
}

/// 503 while the store is away and the layer fails closed.
pub(crate) fn unavailable<B>(limit: Limit, group: &str) -> Response<Body<B>> {
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
pub(crate) fn set_headers<B>(
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
