//! The layer through real HTTP on 127.0.0.1, with the in-process backend: ESI's flow, the
//! headers' numbers against the core's own decisions, and the requests it answers itself.

mod support;

use support::{assert_as_core, runtime, serve};
use trickle_core::{Algorithm, CostTable, Limiter};
use trickle_tower::InProcess;

fn backend(algorithm: Algorithm, limit: &str) -> InProcess {
    InProcess::new()
        .with_group("fitting", algorithm, limit.parse().unwrap())
        .with_group("market", Algorithm::Floating, "150/15m".parse().unwrap())
}

#[test]
fn admits_until_the_limit_then_answers_429_with_the_exact_retry_after() {
    let server = serve(
        runtime(),
        backend(Algorithm::Floating, "6/8s"),
        1_000,
        |layer| layer,
    );

    // ESI: a 200 costs 2, so three fill the 6 tokens.
    for remaining in ["4", "2", "0"] {
        let answer = server.get("/status/200", Some("app-7"), None);
        assert_eq!(answer.status, 200);
        assert_eq!(answer.limit.as_deref(), Some("6/8s"));
        assert_eq!(answer.remaining.as_deref(), Some(remaining));
        assert_eq!(answer.used.as_deref(), Some("2"));
        assert_eq!(answer.group.as_deref(), Some("fitting"));
        assert_eq!(answer.retry_after, None);
    }
    assert_eq!(server.calls(), 3);

    let denied = server.get("/status/200", Some("app-7"), None);
    assert_eq!(denied.status, 429);
    // All 6 tokens were spent in the window [0, 8 s). One fits again once 6 × overlap ≤ 5:
    // 1/6 of the next window, 1,334 ms into it, at 9,334 ms: 8,334 ms from now, 9 s rounded
    // up so that a client waiting that long is never early.
    assert_eq!(denied.retry_after.as_deref(), Some("9"));
    assert_eq!(denied.used.as_deref(), Some("0"));
    assert_eq!(denied.remaining.as_deref(), Some("0"));
    assert_eq!(denied.limit.as_deref(), Some("6/8s"));
    assert!(denied.body.contains("retry after 9 s"), "{}", denied.body);
    assert_eq!(
        server.calls(),
        3,
        "a 429 the layer answers never reaches the handler"
    );

    // 1 ms early, still refused; at the moment, admitted.
    server.set_time(9_333);
    assert_eq!(server.get("/status/200", Some("app-7"), None).status, 429);
    server.set_time(9_334);
    assert_eq!(server.get("/status/200", Some("app-7"), None).status, 200);
}

#[test]
fn the_charge_follows_the_status() {
    let server = serve(
        runtime(),
        backend(Algorithm::Floating, "20/1h"),
        0,
        |layer| layer,
    );
    let remaining = |path, client| server.get(path, Some(client), None).remaining.unwrap();

    // A 404 costs 5 under ESI's table, a 5XX and a 3XX the layer sees as 500/304 nothing and 1.
    assert_eq!(remaining("/status/404", "a"), "15");
    assert_eq!(remaining("/status/503", "a"), "15");
    assert_eq!(remaining("/status/500", "a"), "15");
    assert_eq!(remaining("/status/304", "a"), "14");
    assert_eq!(remaining("/status/201", "a"), "12");
    // A 429 the handler itself sends costs nothing either.
    let answer = server.get("/status/429", Some("a"), None);
    assert_eq!((answer.status, answer.used.as_deref()), (429, Some("0")));
    assert_eq!(answer.remaining.as_deref(), Some("12"));
    // Another key, and another group, have buckets of their own.
    assert_eq!(remaining("/status/404", "b"), "15");
    let market = server.get("/status/200", Some("a"), Some("market"));
    assert_eq!(market.remaining.as_deref(), Some("148"));
    assert_eq!(market.limit.as_deref(), Some("150/15m"));
    assert_eq!(market.group.as_deref(), Some("market"));
}

#[test]
fn a_cost_table_of_the_users_own_prices_the_responses() {
    let costs: CostTable = "2xx:1 404:3 5xx:0".parse().unwrap();
    let server = serve(
        runtime(),
        backend(Algorithm::Floating, "10/1h"),
        0,
        |layer| layer.costs(costs).reserve(3),
    );
    let answer = server.get("/status/404", Some("a"), None);
    assert_eq!(
        (answer.remaining.as_deref(), answer.used.as_deref()),
        (Some("7"), Some("3"))
    );
    // 403 is not in the table: it costs nothing (and the log says so).
    let answer = server.get("/status/403", Some("a"), None);
    assert_eq!((answer.status, answer.used.as_deref()), (403, Some("0")));
    for remaining in ["6", "5", "4", "3"] {
        assert_eq!(
            server
                .get("/status/200", Some("a"), None)
                .remaining
                .as_deref(),
            Some(remaining)
        );
    }
    // 3 tokens left: the reserve of 3 fits and settles at 1; then 2 left and it does not.
    assert_eq!(server.get("/status/200", Some("a"), None).status, 200);
    assert_eq!(server.get("/status/200", Some("a"), None).status, 429);
}

/// Every response's headers are the core's own headers for the same requests: a
/// [`Limiter`] per key that peeks before and records the status's cost after, at the same
/// times, for each algorithm.
#[test]
fn the_headers_numbers_equal_the_cores() {
    let statuses = [200, 200, 404, 304, 503, 200, 201, 400, 200, 302, 200, 500];
    for algorithm in Algorithm::ALL {
        let limit = "12/10s";
        let server = serve(runtime(), backend(algorithm, limit), 0, |layer| layer);
        let mut models = [
            Limiter::with_algorithm(algorithm, limit.parse().unwrap()),
            Limiter::with_algorithm(algorithm, limit.parse().unwrap()),
        ];
        let mut now_ms = 0;
        for step in 0..160u64 {
            // Irregular gaps, from a burst to most of a window, and two keys interleaved.
            now_ms += (step * step * 37 + step * 11) % 2_300;
            server.set_time(now_ms);
            let key = usize::from(step % 3 == 0);
            let status = statuses[(step as usize * 7) % statuses.len()];
            let answer = server.get(
                &format!("/status/{status}"),
                Some(&format!("key-{key}")),
                None,
            );

            let context = format!("{algorithm} step {step} at {now_ms} ms, status {status}");
            assert_as_core(&answer, &mut models[key], now_ms, status, &context);
        }
        let denied = models
            .iter()
            .all(|model| model.peek(now_ms, 0).used.numerator() > 0);
        assert!(
            denied,
            "{algorithm}: the sequence must have spent on both keys"
        );
    }
}

#[test]
fn a_request_without_its_key_gets_400_and_never_reaches_the_handler() {
    let server = serve(
        runtime(),
        backend(Algorithm::Floating, "6/8s"),
        0,
        |layer| layer,
    );
    let answer = server.get("/status/200", None, None);
    assert_eq!(answer.status, 400);
    // An RFC 9457 problem of no rate-limit type: `about:blank`, titled by the status.
    assert_eq!(
        answer.body,
        "{\"type\":\"about:blank\",\"title\":\"Bad Request\",\"status\":400,\
         \"detail\":\"send your client id in X-Client-Id\"}\n"
    );
    assert_eq!(answer.limit, None);
    assert_eq!(server.calls(), 0);
}

#[test]
fn a_request_the_subject_function_lets_through_is_neither_limited_nor_charged() {
    let server = serve(
        runtime(),
        backend(Algorithm::Floating, "1/1h"),
        0,
        |layer| layer,
    );
    for _ in 0..3 {
        let answer = server.get("/free/200", None, None);
        assert_eq!((answer.status, answer.limit), (200, None));
    }
    assert_eq!(server.calls(), 3);
}

#[test]
fn a_group_the_backend_lacks_is_a_500_that_says_so() {
    let server = serve(
        runtime(),
        backend(Algorithm::Floating, "6/8s"),
        0,
        |layer| layer,
    );
    let answer = server.get("/status/200", Some("a"), Some("nope"));
    assert_eq!(answer.status, 500);
    assert!(
        answer.body.contains("rate limit is not configured"),
        "{}",
        answer.body
    );
    assert_eq!(server.calls(), 0);
}
