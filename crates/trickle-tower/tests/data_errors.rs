//! A data error is no outage: a bucket's key holding a string (another program SET it)
//! gets 500 with a JSON error naming the problem and an ERROR log line under every failure
//! rule, open, closed and fallback, without reaching the handler; other keys keep being
//! decided by Redis, and the fallback's breaker does not open.

#[path = "../../trickle-redis/tests/common/mod.rs"]
mod common;
mod logs;
mod support;

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use common::RedisServer;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Commands;
use support::{runtime, serve, Server};
use trickle_core::Algorithm;
use trickle_redis::RedisPolicyLimiter;
use trickle_tower::{BreakerState, Fallback, OnFailure, Redis, Share};

const LIMIT: &str = "4/1h";

fn limiter(prefix: &str) -> RedisPolicyLimiter {
    RedisPolicyLimiter::new(Algorithm::Floating, LIMIT.parse().unwrap(), prefix).unwrap()
}

fn redis_backend(runtime: &tokio::runtime::Runtime, redis: &RedisServer, prefix: &str) -> Redis {
    let client = redis::Client::open(redis.address()).expect("a client for the test's Redis");
    // Long enough that a Redis starved of CPU on a loaded machine is not an outage.
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_response_timeout(Some(Duration::from_secs(5)))
        .set_number_of_retries(1);
    let conn = runtime
        .block_on(ConnectionManager::new_with_config(client, config))
        .expect("connect to the test's Redis");
    Redis::new(conn).with_group("fitting", limiter(prefix))
}

/// Sets the bucket of `client` under `prefix` to a string, as a stray `SET` would.
fn break_key(redis: &RedisServer, prefix: &str, client: &str) {
    let mut conn = redis.connect();
    let () = conn
        .set(&limiter(prefix).limit_keys(client, 0)[0], "not a bucket")
        .unwrap();
}

/// `broken`'s requests get 500, the handler never runs for them, an ERROR line names the
/// key and WRONGTYPE; `fine`'s are decided by Redis.
fn check(server: &Server, broken: &str, fine: &str) {
    for _ in 0..5 {
        let answer = server.get("/status/200", Some(broken), None);
        assert_eq!(answer.status, 500, "{answer:?}");
        assert_eq!(
            error_message(&answer.body),
            "the rate limiter cannot decide this request: a Redis key of this bucket holds a \
             value of the wrong type (WRONGTYPE): another program wrote it",
            "{}",
            answer.body
        );
        assert_eq!(answer.limit.as_deref(), Some(LIMIT));
        assert_eq!(answer.remaining, None);
    }
    assert_eq!(server.calls(), 0, "no broken request reached the handler");
    let lines = logs::lines_with(broken);
    assert!(
        lines.iter().any(|line| line.contains("ERROR")
            && line.contains("WRONGTYPE")
            && line.contains("answering 500")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|line| line.contains("WARN")),
        "a data error is not logged as an outage: {lines:#?}"
    );

    let answer = server.get("/status/200", Some(fine), None);
    assert_eq!(
        (answer.status, answer.remaining.as_deref()),
        (200, Some("2"))
    );
    assert_eq!(server.calls(), 1);
}

#[test]
fn a_wrongtype_key_gets_500_under_fail_open() {
    logs::capture();
    let redis = RedisServer::start();
    break_key(&redis, "open", "broken-open");
    let runtime = runtime();
    let backend = redis_backend(&runtime, &redis, "open");
    let server = serve(runtime, backend, 0, |layer| {
        layer.on_failure(OnFailure::Open)
    });
    check(&server, "broken-open", "fine-open");
}

#[test]
fn a_wrongtype_key_gets_500_under_fail_closed() {
    logs::capture();
    let redis = RedisServer::start();
    break_key(&redis, "closed", "broken-closed");
    let runtime = runtime();
    let backend = redis_backend(&runtime, &redis, "closed");
    let server = serve(runtime, backend, 0, |layer| {
        layer.on_failure(OnFailure::Closed)
    });
    check(&server, "broken-closed", "fine-closed");
}

/// Under the fallback rule too: five broken requests, more than the three outages that
/// would open the breaker, leave it closed, and the fallback decides nothing.
#[test]
fn a_wrongtype_key_gets_500_under_the_fallback_and_does_not_open_the_breaker() {
    logs::capture();
    let redis = RedisServer::start();
    break_key(&redis, "fallback", "broken-fallback");
    let runtime = runtime();
    let backend: Fallback<Redis> = redis_backend(&runtime, &redis, "fallback")
        .fallback(Share::new(1, 2).unwrap())
        .unwrap()
        .with_breaker(NonZeroU32::new(3).unwrap(), Duration::from_secs(2));
    let backend = Arc::new(backend);
    let server = serve(runtime, Arc::clone(&backend), 0, |layer| layer);
    check(&server, "broken-fallback", "fine-fallback");
    assert_eq!(backend.breaker(), BreakerState::Closed);
    let counts = backend.counts("fitting").unwrap();
    assert_eq!(
        (counts.fallback_decisions, counts.outages),
        (0, 0),
        "{counts:?}"
    );
}

/// The `detail` of the layer's own problem (RFC 9457), checking its other members: a 500
/// is no rate-limit problem, so its type is `about:blank` and its title the status's own.
fn error_message(body: &str) -> String {
    let problem: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|error| panic!("not JSON ({error}): {body}"));
    assert_eq!(problem["type"], "about:blank", "{body}");
    assert_eq!(problem["title"], "Internal Server Error", "{body}");
    assert_eq!(problem["status"], 500, "{body}");
    problem["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("no detail: {body}"))
        .to_string()
}
