//! What a caller sees when Redis fails under it, against a real server that each test stops,
//! pauses, flushes or restarts: always an error it can act on (fail open or fail closed),
//! never a panic, and never a decision made up from nothing.

mod common;
mod failure_rule;

use std::time::Duration;

use common::RedisServer;
use failure_rule::{Admission, OnFailure};
use trickle_core::{Algorithm, Limit, Outcome};
use trickle_redis::{RedisError, RedisLimiter};

fn bucket() -> RedisLimiter {
    RedisLimiter::new(
        Algorithm::Floating,
        "6/8s".parse::<Limit>().unwrap(),
        "faults",
    )
    .unwrap()
}

fn is_redis_error(result: &Result<trickle_core::Decision, RedisError>) -> bool {
    matches!(result, Err(RedisError::Redis(_)))
}

#[test]
fn a_server_that_refuses_connections_is_an_error_when_connecting() {
    let server = RedisServer::start();
    let socket = server.socket().to_path_buf();
    drop(server);
    let client = redis::Client::open(redis::ConnectionAddr::Unix(socket)).unwrap();
    assert!(client.get_connection().is_err(), "no server, no connection");
}

/// A server that stops answering times out at the caller's read timeout. The request was
/// sent, so the server still decides it once it runs again: a timeout means "unknown", and
/// the tokens may well be spent. Failing closed on a timeout is therefore the safe side.
#[test]
fn a_paused_server_times_out_and_decides_the_request_later() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = bucket();
    for t in 0..3 {
        assert!(bucket.hit(&mut conn, "k", t, 1).unwrap().is_allowed());
    }
    conn.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    server.pause();
    let timed_out = bucket.hit(&mut conn, "k", 10, 1);
    server.resume();
    match &timed_out {
        Err(RedisError::Redis(err)) => assert!(err.is_timeout(), "a timeout: {err}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    // The paused request is applied once the server wakes: 4 tokens in use, not 3. A new
    // connection may be served before the old one's queued request, so look for a while.
    let mut fresh = server.connect();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let used = loop {
        let used = bucket.hit(&mut fresh, "k", 20, 0).unwrap().used.to_string();
        if used == "4.000" || std::time::Instant::now() > deadline {
            break used;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(used, "4.000");
}

/// FLUSHALL (or an eviction) loses the buckets: the next decision starts from an empty
/// one, which lets in up to N more. The Function library survives as far as callers can
/// tell: the next decision loads it again when FCALL says "Function not found".
#[test]
fn a_flush_mid_run_starts_the_buckets_afresh() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = bucket();
    for t in 0..6 {
        assert!(bucket.hit(&mut conn, "k", t, 1).unwrap().is_allowed());
    }
    assert!(!bucket.hit(&mut conn, "k", 6, 1).unwrap().is_allowed());
    redis::cmd("FLUSHALL").exec(&mut conn).unwrap();
    redis::cmd("FUNCTION").arg("FLUSH").exec(&mut conn).unwrap();
    let decision = bucket.hit(&mut conn, "k", 7, 1).unwrap();
    assert_eq!(decision.outcome, Outcome::Allowed);
    assert_eq!(decision.used.to_string(), "1.000");
}

/// A restart breaks the open connection (an error on its next use) and, with nothing
/// persisted, loses the buckets; a new connection decides again from empty buckets.
#[test]
fn a_restart_breaks_the_connection_and_a_new_one_decides_again() {
    let mut server = RedisServer::start();
    let mut conn = server.connect();
    let bucket = bucket();
    for t in 0..6 {
        assert!(bucket.hit(&mut conn, "k", t, 1).unwrap().is_allowed());
    }
    server.restart();
    assert!(
        is_redis_error(&bucket.hit(&mut conn, "k", 7, 1)),
        "the old connection fails"
    );
    let mut fresh = server.connect();
    let decision = bucket.hit(&mut fresh, "k", 8, 1).unwrap();
    assert_eq!(decision.outcome, Outcome::Allowed);
    assert_eq!(decision.used.to_string(), "1.000");
}

/// The caller's policy turns a failure into an answer and keeps the error: fail open lets
/// the request through, fail closed refuses it; a decision Redis made passes unchanged.
#[test]
fn the_failure_policy_answers_for_a_server_that_is_down_or_paused() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    conn.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let bucket = bucket();
    for t in 0..6 {
        assert!(bucket.hit(&mut conn, "k", t, 1).unwrap().is_allowed());
    }
    // Up: the decision is Redis's, a denial under both policies.
    for policy in [OnFailure::Open, OnFailure::Closed] {
        let admission = policy.admit(bucket.hit(&mut conn, "k", 6, 1));
        assert!(!admission.is_allowed(), "{policy:?}: full bucket");
        assert!(admission.decision().is_some());
    }

    server.pause();
    let open = OnFailure::Open.admit(bucket.hit(&mut conn, "k", 7, 1));
    server.resume();
    match &open {
        Admission::Failed {
            allowed: true,
            error: RedisError::Redis(err),
        } => {
            assert!(err.is_timeout(), "{err}")
        }
        other => panic!("fail open on a paused server: {other:?}"),
    }

    drop(conn);
    drop(server);
    let server = RedisServer::start();
    let mut conn = server.connect();
    drop(server);
    let closed = OnFailure::Closed.admit(bucket.hit(&mut conn, "k", 8, 1));
    assert!(
        !closed.is_allowed(),
        "fail closed on a server gone: {closed:?}"
    );
    assert!(closed.decision().is_none());
    let open = OnFailure::Open.admit(bucket.hit(&mut conn, "k", 8, 1));
    assert!(open.is_allowed(), "fail open on a server gone: {open:?}");
}

/// A timeout is an outage, which failing open lets through; a time past 2^53 is no outage,
/// and is refused under either rule, with the error kept.
#[test]
fn the_failure_policy_lets_through_only_an_outage() {
    let timed_out: Result<trickle_core::Decision, RedisError> = Err(RedisError::Redis(
        std::io::Error::from(std::io::ErrorKind::TimedOut).into(),
    ));
    assert!(OnFailure::Open.admit(timed_out).is_allowed());
    for policy in [OnFailure::Open, OnFailure::Closed] {
        let failed = Err(RedisError::TimeTooLarge { now_ms: u64::MAX });
        let admission = policy.admit(failed);
        assert!(!admission.is_allowed(), "{policy:?}");
        assert!(matches!(admission, Admission::Failed { .. }), "{policy:?}");
    }
}
