//! `Clock::Server`: decisions at the Redis server's `TIME`, whatever time the caller
//! passes. The server is on this machine, so its clock is the one `SystemTime` reads.

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::RedisServer;
use trickle_core::{Algorithm, Limit, Limiter};
use trickle_redis::{Clock, RedisLimiter};

fn system_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    u64::try_from(since.as_millis()).expect("ms fit a u64")
}

/// 5 tokens per 2^42 ms (139 years): every window boundary is decades away, and the token
/// bucket gives back far less than a token while the test runs, so N hits in a row fit and
/// the next does not, on any algorithm.
const TOKENS: u64 = 5;
const WINDOW_MS: u64 = 1 << 42;

#[test]
fn the_server_clock_decides_at_redis_time_and_ignores_the_callers() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let limit = Limit::new(TOKENS, WINDOW_MS).unwrap();
    for algorithm in [
        Algorithm::Floating,
        Algorithm::Fixed,
        Algorithm::TokenBucket,
    ] {
        let redis = RedisLimiter::new(algorithm, limit, "server")
            .unwrap()
            .with_clock(Clock::Server);
        assert_eq!(redis.clock(), Clock::Server);
        let mut core = Limiter::with_algorithm(algorithm, limit);
        // The caller's times, ignored: 0, beyond 2^53 (refused on the caller's clock), and
        // one a century away.
        let passed = [0, u64::MAX, 0, 1 << 53, u64::MAX, 4_102_444_800_000, 0];
        for (i, &now_ms) in passed.iter().enumerate() {
            let before = system_ms();
            let peeked = redis.peek(&mut conn, "k", now_ms, 1).unwrap();
            let decision = redis.hit(&mut conn, "k", now_ms, 1).unwrap();
            let after = system_ms();
            for at_ms in [peeked.at_ms, decision.at_ms] {
                assert!(
                    before <= at_ms && at_ms <= after,
                    "{algorithm}: decided at {at_ms}, not between {before} and {after}"
                );
            }
            // Exactly the core's decisions at the server's times.
            assert_eq!(peeked, core.peek(peeked.at_ms, 1), "{algorithm} peek {i}");
            assert_eq!(decision, core.hit(decision.at_ms, 1), "{algorithm} hit {i}");
            assert_eq!(
                decision.is_allowed(),
                (i as u64) < TOKENS,
                "{algorithm}: hit {i} of {TOKENS} tokens"
            );
        }
    }
}
