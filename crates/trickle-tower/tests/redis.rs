//! The layer over the Redis backend through real HTTP, against a private redis-server: the
//! same headers as the core's decisions, two servers sharing buckets, and what each
//! failure rule does when Redis is gone.

#[path = "../../trickle-redis/tests/common/mod.rs"]
mod common;
mod support;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::RedisServer;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use support::{assert_as_core, runtime, serve, Server};
use trickle_core::{Algorithm, Limiter};
use trickle_redis::RedisPolicyLimiter;
use trickle_tower::{OnFailure, Redis};

/// A backend on `redis` with the group "fitting" under `limit`; `prefix` keeps tests apart.
fn backend(
    runtime: &tokio::runtime::Runtime,
    redis: &RedisServer,
    algorithm: Algorithm,
    limit: &str,
    prefix: &str,
) -> Redis {
    let client = redis::Client::open(redis.address()).expect("a client for the test's Redis");
    // One retry, and timeouts long enough that a Redis starved of CPU on a loaded machine
    // is not taken for an outage: the outages here are a stopped server, whose connections
    // are refused at once.
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_response_timeout(Some(Duration::from_secs(5)))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(100));
    let conn = runtime
        .block_on(ConnectionManager::new_with_config(client, config))
        .expect("connect to the test's Redis");
    let limiter = RedisPolicyLimiter::new(algorithm, limit.parse().unwrap(), prefix).unwrap();
    Redis::new(conn).with_group("fitting", limiter)
}

fn server(
    redis: &RedisServer,
    algorithm: Algorithm,
    limit: &str,
    prefix: &str,
    on_failure: OnFailure,
) -> Server {
    let runtime = runtime();
    let backend = backend(&runtime, redis, algorithm, limit, prefix);
    serve(runtime, backend, 0, |layer| layer.on_failure(on_failure))
}

/// Two servers on one Redis, requests alternating between them on one key, each algorithm:
/// every answer is the one a single core limiter gives for the same requests.
#[test]
fn two_servers_sharing_redis_answer_as_one_core_limiter() {
    let redis = RedisServer::start();
    let statuses = [200, 404, 200, 304, 503, 200, 201, 400];
    for algorithm in Algorithm::ALL {
        let limit = "12/10s";
        let prefix = format!("shared-{algorithm}");
        let servers = [
            server(&redis, algorithm, limit, &prefix, OnFailure::Closed),
            server(&redis, algorithm, limit, &prefix, OnFailure::Closed),
        ];
        let mut model = Limiter::with_algorithm(algorithm, limit.parse().unwrap());
        let (mut now_ms, mut admitted, mut denied) = (0, 0, 0);
        for step in 0..90u64 {
            now_ms += (step * step * 53 + step * 7) % 1_900;
            let server = &servers[(step % 2) as usize];
            server.set_time(now_ms);
            let status = statuses[(step as usize * 5) % statuses.len()];
            let answer = server.get(&format!("/status/{status}"), Some("one-key"), None);

            let context = format!("{algorithm} step {step} at {now_ms} ms, status {status}");
            if assert_as_core(&answer, &mut model, now_ms, status, &context) {
                admitted += 1;
            } else {
                denied += 1;
            }
        }
        assert!(
            admitted > 10 && denied > 10,
            "{algorithm}: {admitted} admitted, {denied} denied"
        );
    }
}

/// What the layer logged, from every thread: the runtime's workers log, not the test.
fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        logs
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logged_about(key: &str) -> Vec<String> {
    let logs = logs().lock().unwrap();
    String::from_utf8_lossy(&logs)
        .lines()
        .filter(|line| line.contains(key))
        .map(str::to_string)
        .collect()
}

#[test]
fn failing_open_lets_requests_through_uncharged_while_redis_is_gone() {
    logs();
    let mut redis = RedisServer::start();
    let server = server(&redis, Algorithm::Floating, "4/1h", "open", OnFailure::Open);
    let first = server.get("/status/200", Some("open-key"), None);
    assert_eq!((first.status, first.remaining.as_deref()), (200, Some("2")));

    redis.stop();
    for _ in 0..3 {
        let answer = server.get("/status/200", Some("open-key"), None);
        assert_eq!(answer.status, 200, "{answer:?}");
        // What is known without Redis: the limit and the group, no count.
        assert_eq!(answer.limit.as_deref(), Some("4/1h"));
        assert_eq!(answer.group.as_deref(), Some("fitting"));
        assert_eq!((answer.remaining, answer.used), (None, None));
    }
    assert_eq!(server.calls(), 4, "the handler ran for every request");
    let lines = logged_about("open-key");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("WARN") && line.contains("failing open")),
        "{lines:#?}"
    );
    // One warning a request: a request let through uncharged is not charged afterwards.
    assert!(
        !lines.iter().any(|line| line.contains("could not charge")),
        "{lines:#?}"
    );

    // Redis back (empty, as after a restart): the connection comes back by itself, and
    // requests are counted again.
    redis.restart();
    let counted = (0..40).find_map(|_| {
        let answer = server.get("/status/200", Some("open-key"), None);
        std::thread::sleep(Duration::from_millis(50));
        answer.remaining
    });
    assert!(counted.is_some(), "decisions resume once Redis is back");
}

#[test]
fn failing_closed_refuses_with_503_without_calling_the_handler() {
    logs();
    let mut redis = RedisServer::start();
    let server = server(
        &redis,
        Algorithm::Floating,
        "4/1h",
        "closed",
        OnFailure::Closed,
    );
    assert_eq!(
        server.get("/status/200", Some("closed-key"), None).status,
        200
    );

    redis.stop();
    for _ in 0..3 {
        let answer = server.get("/status/200", Some("closed-key"), None);
        assert_eq!(answer.status, 503, "{answer:?}");
        assert_eq!(answer.retry_after.as_deref(), Some("1"));
        assert_eq!(answer.limit.as_deref(), Some("4/1h"));
        assert!(
            answer.body.contains("rate limiter is unavailable"),
            "{}",
            answer.body
        );
    }
    assert_eq!(
        server.calls(),
        1,
        "no request reached the handler while Redis was gone"
    );
    let lines = logged_about("closed-key");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("WARN") && line.contains("failing closed")),
        "{lines:#?}"
    );
    redis.restart();
}
