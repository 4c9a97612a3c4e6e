//! `decide_async` sends a settle again as `decide` does, on the connection trickle-tower's
//! Redis backend uses, the [`ConnectionManager`]: after a timeout on the same connection,
//! and after a connection dropped mid-reply on the one it reconnects. Either way the bucket
//! changes once, as the core's settle changes it once; for a policy, every limit does. Runs
//! with the `aio` feature
//! (`cargo test -p trickle-redis --features aio`, or the workspace's `make unit`).

#![cfg(feature = "aio")]

mod common;

use std::num::NonZeroU32;
use std::time::Duration;

use common::{limit, script_runs, LosingProxy, RedisServer};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use trickle_core::flow::policy_reservation;
use trickle_core::{Algorithm, Limiter, Op, Policy, PolicyLimiter};
use trickle_redis::{RedisLimiter, RedisPolicyLimiter};

const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::Floating,
    Algorithm::Fixed,
    Algorithm::TokenBucket,
    Algorithm::SlidingLog,
];

/// A connection that waits 10 s for an answer: the redis crate's default, 500 ms, is not
/// enough on a loaded machine, where a hit through the proxy timed out in `make test`. The
/// lost answers these tests make are a dropped connection, which needs no timeout to be seen.
fn patient() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Three hits of one token and a reserve of 2 at 1_000 ms under `ticket`, in Redis and in
/// the core alike; the settle of that reservation at a final cost of 5, and the core once
/// it has applied it.
async fn reserved(
    redis: &RedisLimiter,
    conn: &mut ConnectionManager,
    ticket: u64,
) -> (Limiter, Op) {
    let mut core = Limiter::with_algorithm(redis.algorithm(), redis.limit());
    for t in [0, 100, 200] {
        let decision = redis.decide_async(conn, "k", Op::Hit, t, 1).await.unwrap();
        assert_eq!(decision, core.hit(t, 1));
    }
    let reserve = Op::Reserve { ticket };
    let decision = redis
        .decide_async(conn, "k", reserve, 1_000, 2)
        .await
        .unwrap();
    assert_eq!(
        decision,
        core.decide(reserve, 1_000, 2),
        "{}",
        redis.algorithm()
    );
    assert!(decision.is_allowed());
    let settle = Op::Settle {
        reserved_at_ms: decision.at_ms,
        reserved: 2,
        ticket,
    };
    (core, settle)
}

#[test]
fn an_async_settle_whose_answer_is_lost_is_sent_again_and_applies_once() {
    let server = RedisServer::start_tcp();
    let proxy = LosingProxy::new(&server);
    let mut direct = server.connect();
    runtime().block_on(async {
        let client = redis::Client::open(proxy.address()).unwrap();
        let mut conn = ConnectionManager::new_with_config(client, patient())
            .await
            .unwrap();
        for algorithm in ALGORITHMS {
            let redis = RedisLimiter::new(algorithm, limit("6/8s"), "lost-async").unwrap();
            let (mut core, settle) = reserved(&redis, &mut conn, 51).await;
            let runs = script_runs(&mut direct);
            proxy.lose_next_answer();
            let settled = redis
                .decide_async(&mut conn, "k", settle, 1_500, 5)
                .await
                .unwrap_or_else(|err| panic!("{algorithm}: {err}"));
            assert!(proxy.lost(), "{algorithm}");
            // The first copy applied and its answer was lost; the second, on the
            // reconnected connection, found the reservation settled and changed nothing.
            assert_eq!(script_runs(&mut direct), runs + 2, "{algorithm}");
            assert_eq!(settled, core.decide(settle, 1_500, 5), "{algorithm}");
            let peeked = redis.peek(&mut direct, "k", 1_500, 0).unwrap();
            assert_eq!(peeked, core.peek(1_500, 0), "{algorithm}");
        }
    });
}

#[test]
fn a_policys_async_settle_whose_answer_is_lost_is_sent_again_and_applies_once() {
    let server = RedisServer::start_tcp();
    let proxy = LosingProxy::new(&server);
    let mut direct = server.connect();
    let policy: Policy = "burst=3/1s 6/8s".parse().unwrap();
    runtime().block_on(async {
        let client = redis::Client::open(proxy.address()).unwrap();
        let mut conn = ConnectionManager::new_with_config(client, patient())
            .await
            .unwrap();
        for algorithm in ALGORITHMS {
            let redis = RedisPolicyLimiter::new(algorithm, policy.clone(), "lost-policy").unwrap();
            let mut core = PolicyLimiter::with_algorithm(algorithm, policy.clone());
            for t in [0, 100] {
                let decision = redis.decide_async(&mut conn, "k", Op::Hit, t, 1).await;
                assert_eq!(decision.unwrap(), core.hit(t, 1), "{algorithm}");
            }
            let reserve = Op::Reserve { ticket: 53 };
            let decision = redis.decide_async(&mut conn, "k", reserve, 2_000, 2).await;
            let decision = decision.unwrap_or_else(|err| panic!("{algorithm}: {err}"));
            assert_eq!(decision, core.decide(reserve, 2_000, 2), "{algorithm}");
            let settle = Op::settle(policy_reservation(&decision, 53).expect("admitted"));
            let runs = script_runs(&mut direct);
            proxy.lose_next_answer();
            let settled = redis
                .decide_async(&mut conn, "k", settle, 2_500, 4)
                .await
                .unwrap_or_else(|err| panic!("{algorithm}: {err}"));
            assert!(proxy.lost(), "{algorithm}");
            // The first copy settled both limits and its answer was lost; the second found
            // the one pending record gone and changed neither.
            assert_eq!(script_runs(&mut direct), runs + 2, "{algorithm}");
            assert_eq!(settled, core.decide(settle, 2_500, 4), "{algorithm}");
            let peeked = redis.peek(&mut direct, "k", 2_500, 0).unwrap();
            assert_eq!(peeked, core.peek(2_500, 0), "{algorithm}");
        }
    });
}

#[test]
fn an_async_settle_retried_past_a_paused_server_applies_once() {
    let server = RedisServer::start_tcp();
    let mut direct = server.connect();
    // One runtime, entered once per step: the thread that wakes the server runs beside it.
    let runtime = runtime();
    let client = redis::Client::open(server.address()).unwrap();
    // Only the settle meets the pause, on a connection that gives up on an answer after
    // 250 ms and so sends it again; the requests before it get a connection of their own
    // with time to spare, since on a loaded machine a reply can take longer than 250 ms.
    let config =
        ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_millis(250)));
    let mut conn = runtime
        .block_on(ConnectionManager::new_with_config(client.clone(), config))
        .unwrap();
    let patient =
        ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let mut setup = runtime
        .block_on(ConnectionManager::new_with_config(client, patient))
        .unwrap();
    for algorithm in ALGORITHMS {
        let redis = RedisLimiter::new(algorithm, limit("6/8s"), "paused-async")
            .unwrap()
            .with_settle_attempts(NonZeroU32::new(8).unwrap());
        let (mut core, settle) = runtime.block_on(reserved(&redis, &mut setup, 52));
        let runs = script_runs(&mut direct);
        server.pause();
        let settled = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(400));
                server.resume();
            });
            runtime.block_on(redis.decide_async(&mut conn, "k", settle, 1_500, 5))
        });
        let settled = settled.unwrap_or_else(|err| panic!("{algorithm}: {err}"));
        assert_eq!(settled, core.decide(settle, 1_500, 5), "{algorithm}");
        let copies = script_runs(&mut direct) - runs;
        assert!(copies >= 2, "{algorithm}: sent {copies} times");
        let peeked = redis.peek(&mut direct, "k", 1_500, 0).unwrap();
        assert_eq!(peeked, core.peek(1_500, 0), "{algorithm}");
    }
}
