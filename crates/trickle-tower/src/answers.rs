//! The answers the layer writes or completes itself: a 429, a 503, a JSON error, and the
//! `X-Ratelimit-*` headers on every limited response.

use std::cell::RefCell;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Response, StatusCode};
use http_body_util::{Either, Full};
use trickle_core::{Decision, Limit};

/// `X-Ratelimit-Group`: the route group whose bucket the request was charged to.
pub const X_RATELIMIT_GROUP: HeaderName = HeaderName::from_static("x-ratelimit-group");
/// `X-Ratelimit-Limit`: the limit as ESI writes it, `150/15m`.
pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
/// `X-Ratelimit-Remaining`: whole tokens left after the decision.
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// `X-Ratelimit-Used`: the tokens this request spent.
pub const X_RATELIMIT_USED: HeaderName = HeaderName::from_static("x-ratelimit-used");
/// `X-Ratelimit-Shadow`: in shadow mode, on the answer to a request a normal layer would
/// have refused: `would-refuse;reason=limit;retry-after=9` (a Structured Field: a token
/// with parameters). `reason` is `limit` or `free_runs`; `retry-after`, the seconds the
/// 429 would have said, is left out for a request that can never fit.
pub const X_RATELIMIT_SHADOW: HeaderName = HeaderName::from_static("x-ratelimit-shadow");

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

/// 429 when the key's budget of answers that cost nothing is spent: `Retry-After` for its
/// next free run, and the group's limit and name but no count, since the bucket was not
/// asked.
pub(crate) fn free_runs_spent<B>(
    refusal: &Decision,
    limit: Limit,
    group: &str,
) -> Response<Body<B>> {
    let wait = match refusal.retry_after_s() {
        Some(seconds) => format!("retry after {seconds} s"),
        None => "retry later".to_string(),
    };
    let message = format!(
        "this client's budget of answers that cost nothing (such as a 5XX or a 429) in \
         group {group}, {}, is spent: {wait}",
        refusal.limit
    );
    let mut response = json_error(StatusCode::TOO_MANY_REQUESTS, &message);
    set_headers(&mut response, None, limit, group);
    if let Some(seconds) = refusal.retry_after_s() {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Shadow mode's marks on the handler's answer to a request a normal layer would have
/// refused for `reason`: the headers that layer's 429 would have had but `Retry-After`,
/// and `X-Ratelimit-Shadow`. `counted` is the bucket's refusal, when the bucket refused
/// (none when the budget did, and the bucket was not asked).
pub(crate) fn mark_would_refuse<B>(
    response: &mut Response<B>,
    refusal: &Decision,
    counted: bool,
    limit: Limit,
    group: &str,
    reason: &str,
) {
    set_counts(response, counted.then_some(refusal), limit, group);
    let value = match refusal.retry_after_s() {
        Some(seconds) => format!("would-refuse;reason={reason};retry-after={seconds}"),
        None => format!("would-refuse;reason={reason}"),
    };
    // Digits, letters, '-', '_', ';' and '=': always a valid header value.
    if let Ok(value) = HeaderValue::try_from(value) {
        response.headers_mut().insert(X_RATELIMIT_SHADOW, value);
    }
}

/// 503 for a new key the store has no room for: `Retry-After` when it may have some.
pub(crate) fn too_many_keys<B>(
    limit: Limit,
    group: &str,
    retry_after_ms: u64,
) -> Response<Body<B>> {
    let seconds = retry_after_ms.div_ceil(1000).max(1);
    let message = format!(
        "the rate limiter of group {group} holds as many clients as it may; retry after {seconds} s"
    );
    let mut response = json_error(StatusCode::SERVICE_UNAVAILABLE, &message);
    set_headers(&mut response, None, limit, group);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
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

/// The headers of [`trickle_core::esi::headers`] for `decision` (only the limit without one, when
/// the store could not decide), and the group. Written here from the decision's own
/// figures rather than from that function's strings, to spare every response a few
/// allocations; the tests hold the two equal.
pub(crate) fn set_headers<B>(
    response: &mut Response<B>,
    decision: Option<&Decision>,
    limit: Limit,
    group: &str,
) {
    set_counts(response, decision, limit, group);
    if let Some(seconds) = decision.and_then(Decision::retry_after_s) {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
}

/// [`set_headers`] but `Retry-After`.
fn set_counts<B>(
    response: &mut Response<B>,
    decision: Option<&Decision>,
    limit: Limit,
    group: &str,
) {
    let map = response.headers_mut();
    let (limit_value, group_value) = group_headers(limit, group);
    map.insert(X_RATELIMIT_LIMIT, limit_value);
    if let Some(value) = group_value {
        map.insert(X_RATELIMIT_GROUP, value);
    }
    if let Some(decision) = decision {
        map.insert(
            X_RATELIMIT_REMAINING,
            HeaderValue::from(decision.remaining()),
        );
        map.insert(X_RATELIMIT_USED, HeaderValue::from(decision.spent()));
    }
}

/// The groups whose headers a thread has made, at most this many: a server has a few.
const GROUPS_KEPT: usize = 64;

/// The `X-Ratelimit-Limit` and `X-Ratelimit-Group` values of `group` under `limit`, made
/// once per thread and then shared: writing a limit's text and copying the group's name
/// took more of a request's time than the rest of the layer. `None` for the group when its
/// name is no valid header value (said once, in the log).
fn group_headers(limit: Limit, group: &str) -> (HeaderValue, Option<HeaderValue>) {
    type Made = Vec<(Limit, Box<str>, HeaderValue, Option<HeaderValue>)>;
    std::thread_local! {
        static MADE: RefCell<Made> = const { RefCell::new(Vec::new()) };
    }
    MADE.with_borrow_mut(|made| {
        if let Some((.., limit_value, group_value)) = made
            .iter()
            .find(|(made_limit, made_group, ..)| *made_limit == limit && **made_group == *group)
        {
            return (limit_value.clone(), group_value.clone());
        }
        // A limit's text is digits and a unit: always a valid header value.
        let limit_value = HeaderValue::from_maybe_shared(Bytes::from(limit.text()))
            .unwrap_or_else(|_| HeaderValue::from_static(""));
        let group_value = HeaderValue::try_from(group).ok();
        if group_value.is_none() {
            tracing::warn!(
                group,
                "group name is not a valid header value; X-Ratelimit-Group left out"
            );
        }
        if made.len() < GROUPS_KEPT {
            made.push((
                limit,
                group.into(),
                limit_value.clone(),
                group_value.clone(),
            ));
        }
        (limit_value, group_value)
    })
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
