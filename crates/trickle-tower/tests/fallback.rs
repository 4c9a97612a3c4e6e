//! The fallback rule through real HTTP against a private redis-server that the tests pause
//! (SIGSTOP), kill and restart: while Redis is away the fallback admits exactly its share
//! and no more, the circuit breaker stops requests from waiting on Redis, decisions return
//! to Redis once it is back, and a settle goes where its reserve was made.
//!
//! The bursts are real parallel clients: connections of their own, released at once by a
//! barrier. The layer's clock is frozen, so every bucket is decided at one moment and the
//! counts are exact.

#[path = "../../trickle-redis/tests/common/mod.rs"]
mod common;
mod logs;

use std::future::Future;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use common::RedisServer;
use http::Request;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Semaphore;
use trickle_core::{Algorithm, Op};
use trickle_redis::RedisPolicyLimiter;
use trickle_tower::{
    Backend, BreakerState, Fallback, InProcess, RateLimitLayer, Redis, Rejection, Share, Subject,
};

/// How long a request waits for Redis: its connection and response timeouts.
const TIMEOUT: Duration = Duration::from_millis(500);
/// The breaker's cool-down: long enough that no probe goes while a test measures.
const COOL_DOWN: Duration = Duration::from_secs(2);
/// The layer's frozen clock.
const NOW_MS: u64 = 1_000_000;
/// Redis's limit, and the fallback's half of it.
const LIMIT: &str = "10/1h";
const SHARE: &str = "1/2";
const FALLBACK_TOKENS: usize = 5;

/// A server behind the layer over a fallback on `redis`, with `/status/{code}` and `/gate`,
/// whose handler waits until the test lets it go.
struct Rig {
    runtime: tokio::runtime::Runtime,
    address: SocketAddr,
    backend: Arc<Fallback<Redis>>,
    prefix: String,
    /// One permit lets one `/gate` handler answer.
    gate: Arc<Semaphore>,
    /// How many `/gate` handlers have started.
    gated: Arc<AtomicUsize>,
}

fn subject(request: &Request<axum::body::Body>) -> Result<Option<Subject>, Rejection> {
    let client = request
        .headers()
        .get("x-client-id")
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| Rejection::bad_request("send your client id in X-Client-Id"))?;
    Ok(Some(Subject::new("api", client)))
}

fn limiter(prefix: &str) -> RedisPolicyLimiter {
    RedisPolicyLimiter::new(Algorithm::Floating, LIMIT.parse().unwrap(), prefix).unwrap()
}

fn rig(redis: &RedisServer, prefix: &str) -> Rig {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let client = redis::Client::open(redis.address()).expect("a client for the test's Redis");
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(100));
    let conn = runtime
        .block_on(ConnectionManager::new_with_config(client, config))
        .expect("connect to the test's Redis");
    let backend = Redis::new(conn)
        .with_group("api", limiter(prefix))
        .fallback(SHARE.parse::<Share>().unwrap())
        .expect("5 of 10 tokens")
        .with_breaker(NonZeroU32::new(3).unwrap(), COOL_DOWN);
    let backend = Arc::new(backend);
    let gate = Arc::new(Semaphore::new(0));
    let gated = Arc::new(AtomicUsize::new(0));
    let layer = RateLimitLayer::new(Arc::clone(&backend), subject)
        .costs("2xx:1 3xx:1 4xx:5 429:0 5xx:0".parse().unwrap())
        .clock(|| NOW_MS);
    let app = Router::new()
        .route(
            "/status/{code}",
            get(|Path(code): Path<u16>| async move { StatusCode::from_u16(code).unwrap() }),
        )
        .route("/gate", get(gated_answer))
        .layer(layer)
        .with_state((Arc::clone(&gate), Arc::clone(&gated)));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind a port on 127.0.0.1");
    let address = listener.local_addr().expect("the bound address");
    runtime.spawn(async move { axum::serve(listener, app).await });
    Rig {
        runtime,
        address,
        backend,
        prefix: prefix.to_string(),
        gate,
        gated,
    }
}

async fn gated_answer(
    State((gate, gated)): State<(Arc<Semaphore>, Arc<AtomicUsize>)>,
) -> &'static str {
    gated.fetch_add(1, Ordering::SeqCst);
    gate.acquire().await.expect("the gate stays open").forget();
    "let through"
}

/// One answer: its status, `X-Ratelimit-Remaining`, and how long it took.
#[derive(Debug, Clone, Copy)]
struct Answer {
    status: u16,
    remaining: Option<u64>,
    took: Duration,
}

/// GET `path` as `client`, from the test's thread: the answer and its `X-Ratelimit-Limit`.
fn get_with_limit(address: SocketAddr, path: &str, client: &str) -> (Answer, Option<String>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let started = Instant::now();
    let response = agent
        .get(format!("http://{address}{path}"))
        .header("x-client-id", client)
        .call()
        .expect("the server answers");
    let took = started.elapsed();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_string())
    };
    let answer = Answer {
        status: response.status().as_u16(),
        remaining: header("x-ratelimit-remaining").map(|value| value.parse().unwrap()),
        took,
    };
    (answer, header("x-ratelimit-limit"))
}

impl Rig {
    /// GET `path` as `client`, from the test's thread.
    fn get(&self, path: &str, client: &str) -> Answer {
        get_with_limit(self.address, path, client).0
    }

    /// `clients` requests for `path` as `client` at once, each on its own connection.
    fn burst(&self, clients: usize, path: &str, client: &str) -> Vec<Answer> {
        let address = self.address;
        self.runtime.block_on(async move {
            let barrier = Arc::new(tokio::sync::Barrier::new(clients));
            let tasks: Vec<_> = (0..clients)
                .map(|_| {
                    let barrier = Arc::clone(&barrier);
                    let (path, client) = (path.to_string(), client.to_string());
                    tokio::spawn(async move {
                        let stream = tokio::net::TcpStream::connect(address)
                            .await
                            .expect("connect");
                        let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
                            .await
                            .expect("an HTTP/1 handshake");
                        tokio::spawn(connection);
                        barrier.wait().await;
                        let request = Request::get(path)
                            .header("host", "127.0.0.1")
                            .header("x-client-id", client)
                            .body(Empty::<Bytes>::new())
                            .expect("a request");
                        let started = Instant::now();
                        let response = sender.send_request(request).await.expect("an answer");
                        let status = response.status().as_u16();
                        let remaining = response
                            .headers()
                            .get("x-ratelimit-remaining")
                            .map(|value| value.to_str().unwrap().parse().unwrap());
                        response.into_body().collect().await.expect("the body");
                        Answer {
                            status,
                            remaining,
                            took: started.elapsed(),
                        }
                    })
                })
                .collect();
            let mut answers = Vec::with_capacity(clients);
            for task in tasks {
                answers.push(task.await.expect("a client finishes"));
            }
            answers
        })
    }

    /// What `key`'s bucket holds in Redis, read by a peek at the layer's time.
    fn used_in_redis(&self, redis: &RedisServer, key: &str) -> String {
        let mut conn = redis.connect();
        let decision = limiter(&self.prefix)
            .peek(&mut conn, key, NOW_MS, 0)
            .expect("a peek");
        decision.decisions()[0].used.to_string()
    }

    /// What `key`'s bucket holds in the fallback.
    fn used_in_fallback(&self, key: &str) -> String {
        used(self.backend.secondary(), key)
    }

    /// Waits (boundedly) until `count` `/gate` handlers have started.
    fn wait_for_gated(&self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.gated.load(Ordering::SeqCst) < count {
            assert!(Instant::now() < deadline, "the handler never ran");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn used(backend: &InProcess, key: &str) -> String {
    let decision = backend.decide("api", key, Op::Peek, NOW_MS, 0);
    let mut decision = pin!(decision);
    match decision
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Ok(decision)) => decision.decisions()[0].used.to_string(),
        other => panic!("the in-process backend answers at once: {other:?}"),
    }
}

fn statuses(answers: &[Answer]) -> (usize, usize) {
    let admitted = answers.iter().filter(|a| a.status == 200).count();
    let refused = answers.iter().filter(|a| a.status == 429).count();
    (admitted, refused)
}

/// The median and the longest time taken.
fn latency(answers: &[Answer]) -> (Duration, Duration) {
    let mut took: Vec<Duration> = answers.iter().map(|a| a.took).collect();
    took.sort_unstable();
    (took[took.len() / 2], took[took.len() - 1])
}

/// Checks that, of `answers` given while the breaker was open over `elapsed`, only the
/// cool-downs' probes waited for Redis: each answer that took TIMEOUT or more is one more
/// outage counted since `outages_before`, and there was at most one probe a cool-down.
/// Counted rather than timed alone: a probe falls wherever a cool-down ends, and a busy
/// machine stretches the other answers.
fn waited_only_as_probes(answers: &[Answer], elapsed: Duration, outages_before: u64, rig: &Rig) {
    let waited = answers.iter().filter(|a| a.took >= TIMEOUT).count() as u64;
    let probes = rig.backend.counts("api").unwrap().outages - outages_before;
    let cool_downs = 1 + (elapsed.as_millis() / COOL_DOWN.as_millis()) as u64;
    assert!(
        waited <= probes && probes <= cool_downs,
        "{waited} answers waited for Redis, {probes} probes went to it in {elapsed:?}: {answers:?}"
    );
}

/// Redis paused under a burst, then killed, then back: while it is away exactly the
/// fallback's 5 tokens get through per key, whatever the burst; once the breaker is open a
/// request no longer waits for Redis; and after Redis returns, the breaker closes and a
/// request is charged in Redis again.
#[test]
fn redis_paused_then_killed_under_a_burst_admits_exactly_the_fallbacks_share_then_returns() {
    logs::capture();
    let mut redis = RedisServer::start();
    let rig = rig(&redis, "outage");

    // Up: decided and charged in Redis, 10 tokens.
    for remaining in [9, 8, 7] {
        let (answer, limit) = get_with_limit(rig.address, "/status/200", "k");
        assert_eq!((answer.status, answer.remaining), (200, Some(remaining)));
        assert_eq!(limit.as_deref(), Some("10/1h"));
    }
    assert_eq!(rig.used_in_redis(&redis, "k"), "3.000");

    // Paused: 100 parallel requests wait for Redis until their timeout, then the fallback
    // decides each; its bucket has 5 tokens, so exactly 5 are admitted.
    redis.pause();
    let burst = rig.burst(100, "/status/200", "k");
    assert_eq!(statuses(&burst), (FALLBACK_TOKENS, 95), "{burst:?}");
    assert_eq!(rig.used_in_fallback("k"), "5.000");
    let (median, longest) = latency(&burst);
    eprintln!("paused, breaker closed: a burst of 100, median {median:?}, longest {longest:?}");
    assert!(median >= TIMEOUT, "the burst waited for Redis: {median:?}");
    assert_eq!(rig.backend.breaker(), BreakerState::Open);
    let counts = rig.backend.counts("api").unwrap();
    assert!(counts.outages >= 3, "{counts:?}");

    // Open, Redis still paused: no request waits for it but the one probe each cool-down
    // lets through, which is then counted as an outage. A fresh key gets the fallback's
    // 5 tokens and no more, and its headers say so.
    let outages_before = rig.backend.counts("api").unwrap().outages;
    let started = Instant::now();
    let (first, limit) = get_with_limit(rig.address, "/status/200", "fresh");
    assert_eq!((first.status, first.remaining), (200, Some(4)));
    assert_eq!(limit.as_deref(), Some("5/1h"));
    let mut open: Vec<Answer> = (1..20).map(|_| rig.get("/status/200", "fresh")).collect();
    open.push(first);
    assert_eq!(statuses(&open), (FALLBACK_TOKENS, 15), "{open:?}");
    let (median, longest) = latency(&open);
    eprintln!("paused, breaker open: 20 in a row, median {median:?}, longest {longest:?}");
    // A request that waits for Redis takes at least TIMEOUT, as the burst above did; one
    // that does not is stretched only by the machine's load, which on a loaded machine can
    // be tens of ms, but never to TIMEOUT for most.
    assert!(median < TIMEOUT / 2, "median {median:?}");
    waited_only_as_probes(&open, started.elapsed(), outages_before, &rig);
    assert_eq!(rig.backend.breaker(), BreakerState::Open);

    // Killed: the same, in parallel: nothing more for "k".
    redis.stop();
    let outages_before = rig.backend.counts("api").unwrap().outages;
    let started = Instant::now();
    let killed = rig.burst(50, "/status/200", "k");
    assert_eq!(statuses(&killed), (0, 50), "{killed:?}");
    let (median, longest) = latency(&killed);
    eprintln!("killed, breaker open: a burst of 50, median {median:?}, longest {longest:?}");
    waited_only_as_probes(&killed, started.elapsed(), outages_before, &rig);
    assert_eq!(rig.used_in_fallback("k"), "5.000");

    // Back (empty, as after a crash): within a few cool-downs a probe is answered, the
    // breaker closes, and the next request is Redis's (10 tokens: 9 left, where the
    // fallback would say 4 or fewer), charged in its bucket.
    redis.restart();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(12);
    let back = loop {
        let answer = rig.get("/status/200", "back");
        if answer.remaining == Some(9) {
            break answer;
        }
        assert!(
            Instant::now() < deadline,
            "decisions never returned to Redis"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("back on Redis {:?} after its restart", started.elapsed());
    assert_eq!(back.status, 200);
    assert_eq!(rig.backend.breaker(), BreakerState::Closed);
    assert_eq!(rig.used_in_redis(&redis, "back"), "1.000");
    let next = rig.get("/status/200", "back");
    assert_eq!(next.remaining, Some(8));
    assert_eq!(rig.used_in_redis(&redis, "back"), "2.000");

    let logged = logs::all();
    assert!(logged.contains("circuit breaker open"), "{logged}");
    assert!(logged.contains("circuit breaker closed"), "{logged}");
    let counts = rig.backend.counts("api").unwrap();
    eprintln!("{counts:?}, opened {} times", rig.backend.times_opened());
    assert_eq!(
        counts.pending, 0,
        "every reserve the fallback admitted was settled"
    );
}

/// A reserve made on Redis, Redis killed while the handler runs, then the settle: sent,
/// unanswered, so its outcome is unknown, and it is not applied to the fallback, whose
/// bucket never held the reserve.
#[test]
fn a_settle_of_a_redis_reserve_after_redis_died_is_unknown_and_not_applied_to_the_fallback() {
    logs::capture();
    let mut redis = RedisServer::start();
    let rig = rig(&redis, "died");
    let url = format!("http://{}/gate", rig.address);
    let waiting = std::thread::spawn(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let response = agent.get(url).header("x-client-id", "held-died").call();
        let response = response.expect("the server answers");
        (
            response.status().as_u16(),
            response.headers().get("x-ratelimit-remaining").cloned(),
        )
    });
    rig.wait_for_gated(1);
    assert_eq!(rig.used_in_redis(&redis, "held-died"), "1.000");

    redis.stop();
    rig.gate.add_permits(1);
    let (status, remaining) = waiting.join().unwrap();
    // The answer goes out anyway, without a count.
    assert_eq!((status, remaining), (200, None));
    assert_eq!(rig.used_in_fallback("held-died"), "0.000");
    let counts = rig.backend.counts("api").unwrap();
    assert_eq!(counts.unknown_settles, 1, "{counts:?}");
    assert_eq!(counts.fallback_decisions, 0, "{counts:?}");

    let lines = logs::lines_with("held-died");
    let line = lines
        .iter()
        .find(|line| line.contains("could not settle"))
        .unwrap_or_else(|| panic!("no settle warning: {lines:#?}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("outcome is unknown"), "{line}");
    assert!(
        line.contains("not applied to the fallback limiter"),
        "{line}"
    );
}

/// The same with the breaker open by the time the settle comes: it is not even sent (the
/// reserve stays charged in Redis), and not applied to the fallback either.
#[test]
fn a_settle_held_back_by_the_open_breaker_is_not_applied_to_the_fallback() {
    logs::capture();
    let mut redis = RedisServer::start();
    let rig = rig(&redis, "held");
    let url = format!("http://{}/gate", rig.address);
    let waiting = std::thread::spawn(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let response = agent.get(url).header("x-client-id", "held-open").call();
        response.expect("the server answers").status().as_u16()
    });
    rig.wait_for_gated(1);
    assert_eq!(rig.used_in_redis(&redis, "held-open"), "1.000");

    redis.stop();
    // Three outages in a row open the breaker; each request is decided by the fallback.
    for _ in 0..3 {
        assert_eq!(rig.get("/status/200", "another").status, 200);
    }
    assert_eq!(rig.backend.breaker(), BreakerState::Open);
    rig.gate.add_permits(1);
    assert_eq!(waiting.join().unwrap(), 200);
    assert_eq!(rig.used_in_fallback("held-open"), "0.000");
    let counts = rig.backend.counts("api").unwrap();
    assert_eq!(counts.unsent_settles, 1, "{counts:?}");

    let lines = logs::lines_with("held-open");
    assert!(
        lines.iter().any(|line| line.contains("WARN")
            && line.contains("settle was not sent")
            && line.contains("not applied to the fallback limiter")),
        "{lines:#?}"
    );
}
