//! ESI's flow on Redis: before answering, peek whether one more token fits (if not, answer
//! 429, which costs nothing); after answering, record what the status costs under
//! `CostTable::esi()` (2XX 2, 3XX 1, 4XX 5 but 429 0, 5XX 0), which may push the bucket
//! past the limit. The same responses replayed through Redis and through the core give the
//! same decisions and the same headers, for every algorithm Redis runs.

mod common;

use common::RedisServer;
use trickle_core::esi::{cost_for_status, headers};
use trickle_core::{Algorithm, CostTable, Decision, Limit, Limiter, Op};
use trickle_redis::RedisLimiter;

/// A mix of every class, 429s answered by the application itself, and the same status
/// several times in a row, so that 4XX responses push the bucket past the limit.
const STATUSES: [u16; 16] = [
    200, 304, 404, 429, 500, 200, 201, 301, 403, 503, 200, 404, 404, 200, 204, 418,
];

/// One request at `now_ms` answered with `status`, as the server does it: the decision
/// the headers are built from, and the status actually sent.
fn respond(
    decide: &mut dyn FnMut(Op, u64, u64) -> Decision,
    now_ms: u64,
    status: u16,
) -> (Decision, u16) {
    let charge = cost_for_status(status).expect("an HTTP status");
    let check = decide(Op::Peek, now_ms, 1);
    if check.is_allowed() {
        (decide(Op::Record, now_ms, charge), status)
    } else {
        (check, 429)
    }
}

/// Requests every 700 ms for a while, a step back of 3 s in the middle, then a quiet
/// spell of two windows and more requests.
fn times(window_ms: u64) -> Vec<u64> {
    let mut times: Vec<u64> = (0..40).map(|i| i * 700).collect();
    times.extend((0..20).map(|i| 25_000 + i * 300));
    let late = 31_000 + 2 * window_ms;
    times.extend((0..20).map(|i| late + i * 500));
    times
}

#[test]
fn esi_responses_charged_after_answering_match_the_core() {
    assert_eq!(CostTable::esi().cost(404), Ok(5));
    let server = RedisServer::start();
    let mut conn = server.connect();
    for text in ["6/8s", "150/15m", "10/3s"] {
        let limit: Limit = text.parse().unwrap();
        for algorithm in [
            Algorithm::Floating,
            Algorithm::Fixed,
            Algorithm::TokenBucket,
        ] {
            let redis = RedisLimiter::new(algorithm, limit, "esi").unwrap();
            let mut core = Limiter::with_algorithm(algorithm, limit);
            let key = text.to_string();
            let mut in_redis = |op, now, cost| {
                redis
                    .decide(&mut conn, &key, op, now, cost)
                    .expect("redis decides")
            };
            let mut in_core = |op, now, cost| core.decide(op, now, cost);
            let (mut answered, mut refused, mut over) = (0, 0, 0);
            let scaled = u128::from(limit.tokens()) * u128::from(limit.window_ms());
            let times = times(limit.window_ms());
            for (i, &now) in times.iter().enumerate() {
                let status = STATUSES[i % STATUSES.len()];
                let got = respond(&mut in_redis, now, status);
                let want = respond(&mut in_core, now, status);
                assert_eq!(got, want, "{algorithm} {text}: {status} at {now} ms");
                assert_eq!(headers(&got.0), headers(&want.0));
                if got.1 == status {
                    answered += 1;
                } else {
                    refused += 1;
                }
                if got.0.used.numerator() > scaled {
                    over += 1;
                }
            }
            if text == "6/8s" {
                // The replay reaches every path: answered, refused, and charged past N.
                assert!(answered > 0 && refused > 0 && over > 0, "{algorithm}");
            }
        }
    }
}
