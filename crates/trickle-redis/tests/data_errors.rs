//! Outages and data errors told apart on a real server: a paused, a dead and a busy Redis
//! are outages, which a failure rule may answer; a key of the wrong type is a data error,
//! which no rule lets through, while every other key keeps being decided.

mod common;
mod failure_rule;

use std::time::{Duration, Instant};

use common::{limit, RedisServer};
use failure_rule::OnFailure;
use redis::Commands;
use trickle_core::{Algorithm, Op};
use trickle_redis::{RedisError, RedisLimiter};

fn limiter(algorithm: Algorithm) -> RedisLimiter {
    RedisLimiter::new(algorithm, limit("6/8s"), "data").unwrap()
}

/// Another program SETs a bucket's key to a string: every op on that key fails with
/// WRONGTYPE, a data error under both rules, named as such; the key next to it is decided
/// as before.
#[test]
fn a_key_of_the_wrong_type_is_a_data_error_not_an_outage() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    for algorithm in Algorithm::ALL {
        let limiter = limiter(algorithm);
        let () = conn.set(limiter.redis_key("broken"), "a string").unwrap();
        let ticket = 42;
        let ops = [
            Op::Hit,
            Op::Peek,
            Op::Record,
            Op::Reserve { ticket },
            Op::Settle {
                reserved_at_ms: 0,
                reserved: 1,
                ticket,
            },
        ];
        for op in ops {
            let error = limiter
                .decide(&mut conn, "broken", op, 10, 1)
                .expect_err("WRONGTYPE");
            let context = format!("{algorithm} {op:?}: {error}");
            assert!(!error.is_outage(), "{context}");
            assert!(error.to_string().contains("WRONGTYPE"), "{context}");
            assert_eq!(
                error.problem(),
                "a Redis key of this bucket holds a value of the wrong type (WRONGTYPE): \
                 another program wrote it",
                "{context}"
            );
        }
        for rule in [OnFailure::Open, OnFailure::Closed] {
            let admission = rule.admit(limiter.hit(&mut conn, "broken", 10, 1));
            assert!(!admission.is_allowed(), "{algorithm} {rule:?}");
        }
        let fine = limiter.hit(&mut conn, "fine", 10, 1).unwrap();
        assert!(fine.is_allowed(), "{algorithm}");
    }
}

#[test]
fn a_paused_server_and_a_dead_one_are_outages() {
    let mut server = RedisServer::start();
    let mut conn = server.connect();
    conn.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let limiter = limiter(Algorithm::Floating);
    server.pause();
    let timed_out = limiter.hit(&mut conn, "k", 0, 1).expect_err("a timeout");
    server.resume();
    assert!(timed_out.is_outage(), "{timed_out}");
    assert_eq!(
        timed_out.problem(),
        "Redis is unreachable, not ready, or did not answer in time"
    );
    // The open rule lets an outage through.
    assert!(OnFailure::Open
        .admit(Err(RedisError::Redis(redis::RedisError::from(
            std::io::Error::from(std::io::ErrorKind::ConnectionReset)
        ))))
        .is_allowed());

    // Killed under the open connection: its next use fails.
    server.stop();
    let dead = limiter.hit(&mut conn, "k", 0, 1).expect_err("no server");
    assert!(dead.is_outage(), "{dead}");
}

/// A script that runs past the server's time limit blocks every other client, which gets
/// BUSY until it ends: the whole server is away, an outage.
#[test]
fn a_server_busy_with_a_long_script_is_an_outage() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("busy-reply-threshold")
        .arg("50")
        .query(&mut conn)
        .unwrap();
    let mut busy = server.connect();
    // Runs until SCRIPT KILL (or the server is stopped, when the test ends).
    let looping = std::thread::spawn(move || {
        redis::cmd("EVAL")
            .arg("while true do end")
            .arg(0)
            .query::<()>(&mut busy)
    });
    let limiter = limiter(Algorithm::Floating);
    let deadline = Instant::now() + Duration::from_secs(5);
    let error = loop {
        std::thread::sleep(Duration::from_millis(60));
        match limiter.hit(&mut conn, "k", 0, 1) {
            Err(error) => break error,
            // The script had not started yet.
            Ok(_) => assert!(Instant::now() < deadline, "the server never got busy"),
        }
    };
    assert!(error.to_string().contains("BUSY"), "{error}");
    assert!(error.is_outage(), "{error}");
    let () = redis::cmd("SCRIPT").arg("KILL").query(&mut conn).unwrap();
    assert!(looping.join().unwrap().is_err(), "the script was killed");
    assert!(limiter.hit(&mut conn, "k", 1, 1).unwrap().is_allowed());
}

/// What no server can answer wrongly still has its kind: a bad reply and a number past
/// 2^53 are data errors; a settle sent until its outcome is unknown is an outage.
#[test]
fn errors_without_a_server_have_their_kind_too() {
    let bad = RedisError::BadReply {
        reply: "nil".to_string(),
    };
    assert!(!bad.is_outage());
    assert!(!RedisError::TimeTooLarge { now_ms: u64::MAX }.is_outage());
    assert!(!RedisError::RecordOutOfRange { cost: u64::MAX }.is_outage());
    let unknown = RedisError::SettleUnknown {
        attempts: 3,
        error: std::io::Error::from(std::io::ErrorKind::TimedOut).into(),
    };
    assert!(unknown.is_outage());
    assert!(
        unknown.problem().contains("unknown"),
        "{}",
        unknown.problem()
    );
}
