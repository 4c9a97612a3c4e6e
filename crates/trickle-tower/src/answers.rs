//! The answers the layer writes or completes itself: a 429, a 503, an RFC 9457 problem, and
//! the rate-limit headers (ESI's `X-Ratelimit-*`, the IETF's `RateLimit-Policy` and
//! `RateLimit`, or both) on every limited response.

use std::cell::RefCell;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Response, StatusCode};
use http_body_util::{Either, Full};
use trickle_core::ietf::{self, QuotaUnit};
use trickle_core::{Decision, Limit, Policy, PolicyDecision};

use crate::structured;

/// `X-Ratelimit-Group`: the route group whose bucket the request was charged to.
pub const X_RATELIMIT_GROUP: HeaderName = HeaderName::from_static("x-ratelimit-group");
/// `X-Ratelimit-Limit`: the limit as ESI writes it, `150/15m`.
pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
/// `X-Ratelimit-Remaining`: whole tokens left after the decision.
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// `X-Ratelimit-Used`: the tokens this request spent.
pub const X_RATELIMIT_USED: HeaderName = HeaderName::from_static("x-ratelimit-used");
/// `RateLimit-Policy`: each limit of the group's policy, its quota and window
/// (draft-ietf-httpapi-ratelimit-headers-11).
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`: each limit's remaining quota, and the seconds until more is made available.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// `X-Ratelimit-Shadow`: in shadow mode, on the answer to a request a normal layer would
/// have refused: `would-refuse;reason=limit;retry-after=9` (a Structured Field: a token
/// with parameters). `reason` is `limit` or `free_runs`; `retry-after`, the seconds the
/// 429 would have said, is left out for a request that can never fit.
pub const X_RATELIMIT_SHADOW: HeaderName = HeaderName::from_static("x-ratelimit-shadow");

/// The body of a response: the handler's, or the short JSON one the layer wrote itself.
pub type Body<B> = Either<B, Full<Bytes>>;

/// Which rate-limit headers the layer writes on the answers of limited requests
/// ([`RateLimitLayer::headers`](crate::RateLimitLayer::headers)). `Retry-After` goes on
/// every refusal whichever is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HeaderDialect {
    /// ESI's `X-Ratelimit-Limit`, `-Remaining`, `-Used` and `-Group`, of the limit nearest to
    /// refusing ([`PolicyDecision::nearest`]).
    #[default]
    Esi,
    /// The IETF's `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11),
    /// every limit of the group's policy, as Structured Fields.
    Ietf,
    /// Both.
    Both,
}

impl HeaderDialect {
    /// Every dialect, by the name a configuration writes.
    pub const ALL: [(HeaderDialect, &'static str); 3] = [
        (HeaderDialect::Esi, "esi"),
        (HeaderDialect::Ietf, "ietf"),
        (HeaderDialect::Both, "both"),
    ];

    fn esi(self) -> bool {
        self != HeaderDialect::Ietf
    }

    fn ietf(self) -> bool {
        self != HeaderDialect::Esi
    }
}

impl std::str::FromStr for HeaderDialect {
    type Err = String;

    /// `esi`, `ietf` or `both`.
    fn from_str(text: &str) -> Result<HeaderDialect, String> {
        HeaderDialect::ALL
            .iter()
            .find(|(_, name)| *name == text)
            .map(|(dialect, _)| *dialect)
            .ok_or_else(|| format!("unknown header dialect {text:?}; expected esi, ietf or both"))
    }
}

/// What every answer of one group's request is written with: the group, its policy, the
/// dialect, and what the quotas count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group<'a> {
    pub(crate) name: &'a str,
    pub(crate) policy: &'a Policy,
    pub(crate) dialect: HeaderDialect,
    pub(crate) unit: QuotaUnit,
}

/// 429: the refused reserve's headers (`Retry-After` among them) and a problem body
/// (RFC 9457) of the draft's type `quota-exceeded`, naming the limits that refused it in
/// `violated-policies` and saying how long to wait.
pub(crate) fn too_many_requests<B>(
    refusal: &PolicyDecision,
    group: Group<'_>,
) -> Response<Body<B>> {
    let answering = refusal.nearest();
    let name = group.policy.name(answering);
    let limit = refusal.decisions().get(answering).map(|own| own.limit);
    let limit = limit.map_or_else(|| group.policy.to_string(), |limit| limit.to_string());
    let named = if name == limit {
        limit
    } else {
        format!("{name} ({limit})")
    };
    let detail = match refusal.retry_after_ms() {
        Some(ms) => format!(
            "rate limit {named} of group {} exceeded: retry after {} s",
            group.name,
            ms.div_ceil(1000)
        ),
        None => format!(
            "this request costs more than the rate limit {named} of group {} allows at all",
            group.name
        ),
    };
    let violated = ietf::violated_policies(group.policy, refusal);
    let mut response = problem(
        StatusCode::TOO_MANY_REQUESTS,
        Problem {
            kind: ietf::QUOTA_EXCEEDED,
            title: ietf::QUOTA_EXCEEDED_TITLE,
            detail: &detail,
            violated: Some(&violated),
        },
    );
    set_headers(&mut response, Some(refusal), group);
    response
}

/// 429 when the key's budget of answers that cost nothing is spent: `Retry-After` for its
/// next free run, the group's policy but no count (the buckets were not asked), and a
/// problem body of the draft's type `abnormal-usage-detected`.
pub(crate) fn free_runs_spent<B>(refusal: &Decision, group: Group<'_>) -> Response<Body<B>> {
    let wait = match refusal.retry_after_s() {
        Some(seconds) => format!("retry after {seconds} s"),
        None => "retry later".to_string(),
    };
    let detail = format!(
        "this client's budget of answers that cost nothing (such as a 5XX or a 429) in \
         group {}, {}, is spent: {wait}",
        group.name, refusal.limit
    );
    let mut response = problem(
        StatusCode::TOO_MANY_REQUESTS,
        Problem {
            kind: ietf::ABNORMAL_USAGE_DETECTED,
            title: ietf::ABNORMAL_USAGE_DETECTED_TITLE,
            detail: &detail,
            violated: None,
        },
    );
    set_headers(&mut response, None, group);
    if let Some(seconds) = refusal.retry_after_s() {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Shadow mode's marks on the handler's answer to a request a normal layer would have
/// refused for `reason`: the headers that layer's 429 would have had but `Retry-After`,
/// and `X-Ratelimit-Shadow`. `counted` is the buckets' refusal, when they refused (none
/// when the budget did, and the buckets were not asked); `retry_after_s` is the wait the
/// 429 would have said.
pub(crate) fn mark_would_refuse<B>(
    response: &mut Response<B>,
    counted: Option<&PolicyDecision>,
    retry_after_s: Option<u64>,
    group: Group<'_>,
    reason: &str,
) {
    set_counts(response, counted, group);
    let value = match retry_after_s {
        Some(seconds) => format!("would-refuse;reason={reason};retry-after={seconds}"),
        None => format!("would-refuse;reason={reason}"),
    };
    // Digits, letters, '-', '_', ';' and '=': always a valid header value.
    if let Ok(value) = HeaderValue::try_from(value) {
        response.headers_mut().insert(X_RATELIMIT_SHADOW, value);
    }
}

/// 503 for a new key the store has no room for: `Retry-After` when it may have some, and a
/// problem body of the draft's type `temporary-reduced-capacity`.
pub(crate) fn too_many_keys<B>(group: Group<'_>, retry_after_ms: u64) -> Response<Body<B>> {
    let seconds = retry_after_ms.div_ceil(1000).max(1);
    let detail = format!(
        "the rate limiter of group {} holds as many clients as it may; retry after {seconds} s",
        group.name
    );
    let mut response = reduced_capacity(&detail);
    set_headers(&mut response, None, group);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// 503 while the store is away and the layer fails closed.
pub(crate) fn unavailable<B>(group: Group<'_>) -> Response<Body<B>> {
    let mut response = reduced_capacity("the rate limiter is unavailable; retry shortly");
    set_headers(&mut response, None, group);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn reduced_capacity<B>(detail: &str) -> Response<Body<B>> {
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        Problem {
            kind: ietf::TEMPORARY_REDUCED_CAPACITY,
            title: ietf::TEMPORARY_REDUCED_CAPACITY_TITLE,
            detail,
            violated: None,
        },
    )
}

/// The group's headers in its dialect for `decision` (the policy alone, without counts,
/// when the store could not decide), and `Retry-After` on a refusal.
pub(crate) fn set_headers<B>(
    response: &mut Response<B>,
    decision: Option<&PolicyDecision>,
    group: Group<'_>,
) {
    set_counts(response, decision, group);
    if let Some(seconds) = decision.and_then(PolicyDecision::retry_after_ms) {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds.div_ceil(1000)));
    }
}

/// [`set_headers`] but `Retry-After`.
fn set_counts<B>(response: &mut Response<B>, decision: Option<&PolicyDecision>, group: Group<'_>) {
    if group.dialect.esi() {
        set_esi(response, decision, group);
    }
    if group.dialect.ietf() {
        set_ietf(response, decision, group);
    }
}

/// ESI's headers, of the limit nearest to refusing: [`trickle_core::esi::headers`] for its
/// decision, and the group. Written here from the decision's own figures rather than from
/// that function's strings, to spare every response a few allocations; the tests hold the
/// two equal. Without a decision, `X-Ratelimit-Limit` is the policy as written.
fn set_esi<B>(response: &mut Response<B>, decision: Option<&PolicyDecision>, group: Group<'_>) {
    let own = decision.and_then(|decision| decision.decisions().get(decision.nearest()));
    // The decision's own limit when there is one: a fallback decides under its share, and
    // its counts are of that.
    let limit = own.map(|own| own.limit).or_else(|| {
        (group.policy.len() == 1)
            .then(|| group.policy.limit(0))
            .flatten()
    });
    let (limit_value, group_value) = match limit {
        Some(limit) => group_headers(limit, group.name),
        None => (
            HeaderValue::try_from(group.policy.to_string())
                .unwrap_or_else(|_| HeaderValue::from_static("")),
            HeaderValue::try_from(group.name).ok(),
        ),
    };
    let map = response.headers_mut();
    map.insert(X_RATELIMIT_LIMIT, limit_value);
    if let Some(value) = group_value {
        map.insert(X_RATELIMIT_GROUP, value);
    }
    if let Some(own) = own {
        map.insert(X_RATELIMIT_REMAINING, HeaderValue::from(own.remaining()));
        map.insert(X_RATELIMIT_USED, HeaderValue::from(own.spent()));
    }
}

/// The IETF's fields: `RateLimit-Policy` always, `RateLimit` when there is a decision.
fn set_ietf<B>(response: &mut Response<B>, decision: Option<&PolicyDecision>, group: Group<'_>) {
    let map = response.headers_mut();
    if let Some(value) = header(structured::policy_field(group.policy, group.unit)) {
        map.insert(RATELIMIT_POLICY, value);
    }
    if let Some(decision) = decision {
        if let Some(value) = header(structured::limit_field(group.policy, decision)) {
            map.insert(RATELIMIT, value);
        }
    }
}

/// A serialised Structured Field as a header value: always valid (visible ASCII and
/// spaces), `None` for an empty list, which the field may not be.
fn header(field: Option<String>) -> Option<HeaderValue> {
    HeaderValue::try_from(field?).ok()
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

/// A problem of the layer's own that is no refusal (a request rejected by the subject
/// function, a route without a rate limit): RFC 9457's `about:blank` type, whose title is
/// the status's own phrase, and `message` as its `detail`.
pub(crate) fn json_error<B>(status: StatusCode, message: &str) -> Response<Body<B>> {
    problem(
        status,
        Problem {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("Error"),
            detail: message,
            violated: None,
        },
    )
}

/// An RFC 9457 problem body: its `type`, `title`, `detail` and, for the draft's rate-limit
/// types, `violated-policies`.
struct Problem<'a> {
    kind: &'a str,
    title: &'a str,
    detail: &'a str,
    violated: Option<&'a [&'a str]>,
}

/// `status` with `problem` as `application/problem+json`, its `status` member the status.
fn problem<B>(status: StatusCode, problem: Problem<'_>) -> Response<Body<B>> {
    let mut body = format!(
        "{{\"type\":{},\"title\":{},\"status\":{},\"detail\":{}",
        json_string(problem.kind),
        json_string(problem.title),
        status.as_u16(),
        json_string(problem.detail)
    );
    if let Some(violated) = problem.violated {
        let names: Vec<String> = violated.iter().map(|name| json_string(name)).collect();
        body.push_str(&format!(",\"violated-policies\":[{}]", names.join(",")));
    }
    body.push_str("}\n");
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(body))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
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
