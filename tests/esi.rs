//! ESI's conventions: what a response costs by its status, and the headers a decision maps to.

use trickle_core::esi::{cost_for_status, headers};
use trickle_core::{Decision, FixedWindow, FloatingWindow, Limit, Outcome, StatusError};

/// status, cost.
#[rustfmt::skip]
const COSTS: &[(u16, u64)] = &[
    (200, 2), (201, 2), (204, 2), (299, 2),
    (300, 1), (301, 1), (304, 1), (399, 1),
    (400, 5), (401, 5), (404, 5), (420, 5), (428, 5),
    // The limiter's own 429 costs nothing; its neighbours are client errors.
    (429, 0),
    (430, 5), (499, 5),
    // The server's fault costs nothing.
    (500, 0), (502, 0), (503, 0), (599, 0),
];

#[test]
fn cost_by_status() {
    for &(status, cost) in COSTS {
        assert_eq!(cost_for_status(status), Ok(cost), "status {status}");
    }
}

#[test]
fn statuses_outside_200_to_599_have_no_cost() {
    for status in [0, 1, 99, 100, 101, 199, 600, 999, u16::MAX] {
        assert_eq!(cost_for_status(status), Err(StatusError { status }));
    }
    assert_eq!(
        StatusError { status: 101 }.to_string(),
        "status 101 has no cost in ESI's table; expected an HTTP status from 200 to 599"
    );
}

fn header<'a>(headers: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.as_str())
}

/// A denial with exactly `retry_after_ms`: a fixed window of 1 token per 10 s, spent at 0,
/// asked again `10 000 − retry_after_ms` ms later.
fn denied_after(retry_after_ms: u64) -> Decision {
    let mut bucket = FixedWindow::new(Limit::new(1, 10_000).expect("a valid limit"));
    bucket.hit(0, 1);
    let decision = bucket.hit(10_000 - retry_after_ms, 1);
    assert_eq!(decision.outcome, Outcome::Denied { retry_after_ms });
    decision
}

/// retry_after_ms, Retry-After: whole seconds rounded up, so a client is never early.
#[rustfmt::skip]
const RETRY_AFTER: &[(u64, &str)] = &[
    (1,      "1"),
    (999,    "1"),
    (1_000,  "1"),
    (1_001,  "2"),
    (1_334,  "2"),
    (1_999,  "2"),
    (2_000,  "2"),
    (8_000,  "8"),
    (9_999,  "10"),
    (10_000, "10"),
];

#[test]
fn retry_after_rounds_up_to_whole_seconds() {
    for &(retry_after_ms, seconds) in RETRY_AFTER {
        let decision = denied_after(retry_after_ms);
        let sent = headers(&decision);
        assert_eq!(
            header(&sent, "Retry-After"),
            Some(seconds),
            "{retry_after_ms} ms"
        );
    }
}

#[test]
fn retry_after_of_u64_max_ms_rounds_up_without_overflow() {
    let mut bucket = FixedWindow::new(Limit::new(1, u64::MAX).expect("a valid limit"));
    bucket.hit(0, 1);
    let decision = bucket.hit(0, 1);
    assert_eq!(decision.retry_after_ms(), Some(u64::MAX));
    // ceil(18446744073709551615 / 1000)
    assert_eq!(
        header(&headers(&decision), "Retry-After"),
        Some("18446744073709552")
    );
}

#[test]
fn allowed_headers() {
    let mut bucket = FloatingWindow::new("150/15m".parse().expect("a valid limit"));
    bucket.hit(0, 2);
    assert_eq!(
        headers(&bucket.hit(1, 5)),
        [
            ("X-Ratelimit-Limit", "150/15m".to_string()),
            ("X-Ratelimit-Remaining", "143".to_string()),
            ("X-Ratelimit-Used", "5".to_string()),
        ]
    );
}

#[test]
fn denied_headers_spend_nothing_and_say_when_to_retry() {
    let mut bucket = FloatingWindow::new("6/8s".parse().expect("a valid limit"));
    bucket.hit(0, 6);
    // In window 1, 6 × (8000 − e)/8000 + 1 ≤ 6 from e = 1334: 9334 ms, 10 s rounded up.
    assert_eq!(
        headers(&bucket.hit(0, 1)),
        [
            ("X-Ratelimit-Limit", "6/8s".to_string()),
            ("X-Ratelimit-Remaining", "0".to_string()),
            ("X-Ratelimit-Used", "0".to_string()),
            ("Retry-After", "10".to_string()),
        ]
    );
}

#[test]
fn no_retry_after_when_no_wait_would_help() {
    let mut bucket = FloatingWindow::new("6/8s".parse().expect("a valid limit"));
    bucket.hit(0, 2);
    let decision = bucket.hit(0, 7);
    assert_eq!(decision.outcome, Outcome::ExceedsLimit);
    assert_eq!(decision.status(), 429);
    assert_eq!(
        headers(&decision),
        [
            ("X-Ratelimit-Limit", "6/8s".to_string()),
            ("X-Ratelimit-Remaining", "4".to_string()),
            ("X-Ratelimit-Used", "0".to_string()),
        ]
    );
}

#[test]
fn remaining_is_whole_tokens_and_never_negative() {
    let mut bucket = FloatingWindow::new("6/8s".parse().expect("a valid limit"));
    bucket.hit(0, 4);
    bucket.hit(9_000, 1);
    // 4 × 7000/8000 + 1 + 1 = 5.5 → floor(6 − 5.5) = 0
    let decision = bucket.hit(9_000, 1);
    assert_eq!(
        header(&headers(&decision), "X-Ratelimit-Remaining"),
        Some("0")
    );
    // Past the limit after a record: still 0, not negative.
    let decision = bucket.record(9_000, 20);
    assert_eq!(
        headers(&decision),
        [
            ("X-Ratelimit-Limit", "6/8s".to_string()),
            ("X-Ratelimit-Remaining", "0".to_string()),
            ("X-Ratelimit-Used", "20".to_string()),
        ]
    );
}

/// ESI's own flow: charge each response by its status after answering it. Thirty 404s at 5
/// tokens each spend all of 150/15m within 30 ms.
#[test]
fn thirty_not_founds_spend_150_per_15_minutes() {
    let mut bucket = FloatingWindow::new("150/15m".parse().expect("a valid limit"));
    for now in 0..30 {
        let cost = cost_for_status(404).expect("a client error's cost");
        bucket.record(now, cost);
    }
    let decision = bucket.hit(30, cost_for_status(200).expect("a success's cost"));
    // Window 1 (W = 900 000): 150 × (900000 − e)/900000 + 2 ≤ 150 ⇔ e ≥ 12000, so the retry
    // is 900000 + 12000 − 30 = 911970 ms: 912 s rounded up.
    assert_eq!(decision.retry_after_ms(), Some(911_970));
    assert_eq!(header(&headers(&decision), "Retry-After"), Some("912"));
    // A 429 or a 5XX costs nothing, so recording one changes no later decision.
    let before = bucket.clone();
    bucket.record(31, cost_for_status(429).expect("a 429's cost"));
    bucket.record(32, cost_for_status(503).expect("a 503's cost"));
    assert_eq!(bucket.peek(40, 2), before.peek(40, 2));
}
