//! Policies on Redis, against the core: random policies of one to three limits and random
//! traces of peeks, hits, records, reserves and their settles, run through the core's
//! `PolicyLimiter` and through a real redis-server, give the same `PolicyDecision` (every
//! limit's decision, field for field, and when it frees its next token), for all four
//! algorithms (the check itself is policy_parity/mod.rs's, which cluster.rs runs too).
//!
//! Around every step the test reads every limit's hash (and the sliding log's entries): a
//! peek writes nothing; a refused hit or reserve leaves the limits that had room exactly as
//! they were, their expiry too, and the refusing limits' counters as they were (only the
//! time they saw changes, and a sliding log drops entries that no longer count); a record or
//! settle past the exact range writes nothing in any limit; an admitted reserve writes one
//! pending record, its expiry the longest any limit needs, and a settle deletes it. A
//! policy of one limit decides as `RedisLimiter` does, and stores the same fields. Every key
//! of a policy is in one Redis Cluster slot, and its script runs on a Cluster node.

mod common;
mod policy_parity;
mod traces;

use common::{slot, RedisServer};
use policy_parity::policies_decide_as_the_core;
use redis::Connection;
use trickle_core::flow::policy_reservation;
use trickle_core::{Algorithm, Op, Policy, PolicyLimiter};
use trickle_redis::RedisPolicyLimiter;

/// Cases per algorithm, each up to 40 steps; the four tests run side by side.
const CASES: u32 = 96;

/// Runs `CASES` random traces of `algorithm` through the core and through a private
/// redis-server (one for every case; each case has a key of its own).
fn redis_decides_policies_as_the_core(algorithm: Algorithm) {
    let server = RedisServer::start();
    policies_decide_as_the_core(algorithm, &mut server.connect(), CASES, file!());
}

#[test]
fn redis_decides_floating_window_policies_exactly_as_the_core() {
    redis_decides_policies_as_the_core(Algorithm::Floating);
}

#[test]
fn redis_decides_fixed_window_policies_exactly_as_the_core() {
    redis_decides_policies_as_the_core(Algorithm::Fixed);
}

#[test]
fn redis_decides_token_bucket_policies_exactly_as_the_core() {
    redis_decides_policies_as_the_core(Algorithm::TokenBucket);
}

#[test]
fn redis_decides_sliding_log_policies_exactly_as_the_core() {
    redis_decides_policies_as_the_core(Algorithm::SlidingLog);
}

fn keyslot(conn: &mut Connection, key: &str) -> u16 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(conn)
        .expect("CLUSTER KEYSLOT")
}

/// Every key one decision of a policy touches (each limit's bucket, the sliding log's
/// entries, the pending record) is in the slot of the hash tag `PREFIX:KEY`, on the
/// server's reckoning, and no two limits share a key.
#[test]
fn every_key_of_a_policy_is_in_one_cluster_slot() {
    let server = RedisServer::start_cluster_node();
    let mut conn = server.connect();
    let policy: Policy = "burst=10/1s 1000/1h 10000/24h".parse().unwrap();
    for algorithm in Algorithm::ALL {
        let limiter = RedisPolicyLimiter::new(algorithm, policy.clone(), "api").unwrap();
        for id in ["user-42", "}abc", "v2:alice", "{x}", ""] {
            let tag = format!(
                "api:{}",
                id.replace(':', "%3A")
                    .replace('{', "%7B")
                    .replace('}', "%7D")
            );
            let own = keyslot(&mut conn, &tag);
            let mut every = limiter.redis_keys(id);
            every.push(limiter.reservation_key(id, 0x1234));
            let mut distinct = every.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), every.len(), "{algorithm} {id:?}: {every:?}");
            for key in &every {
                assert_eq!(keyslot(&mut conn, key), own, "{key}");
                assert_eq!(slot(key), own, "{key}");
            }
        }
    }
}

/// On a Redis Cluster node holding every slot, a script whose keys span two slots is
/// refused (CROSSSLOT); a policy's reserve and settle, over all its limits' keys and its
/// pending record, run.
#[test]
fn a_policys_script_runs_on_a_cluster_node() {
    let server = RedisServer::start_cluster_node();
    let mut conn = server.connect();
    let () = redis::cmd("CLUSTER")
        .arg("ADDSLOTSRANGE")
        .arg(0)
        .arg(16383)
        .query(&mut conn)
        .expect("CLUSTER ADDSLOTSRANGE");
    // The node takes its slots at once, but says so in CLUSTER INFO a moment later.
    let ready = (0..500).any(|_| {
        let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut conn).unwrap();
        let ok = info.contains("cluster_state:ok");
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        ok
    });
    assert!(ready, "the cluster node never reached cluster_state:ok");
    let crossing: redis::RedisResult<i64> = redis::cmd("EVAL")
        .arg("return 1")
        .arg(2)
        .arg("{a}x")
        .arg("{b}x")
        .query(&mut conn);
    let err = crossing.expect_err("keys of two slots in one script");
    assert!(
        err.to_string().to_lowercase().contains("crossslot"),
        "{err}"
    );

    let policy: Policy = "burst=2/1s 5/1m".parse().unwrap();
    for algorithm in Algorithm::ALL {
        let limiter = RedisPolicyLimiter::new(algorithm, policy.clone(), "api").unwrap();
        let mut core = PolicyLimiter::with_algorithm(algorithm, policy.clone());
        let reserve = Op::Reserve { ticket: 9 };
        let got = limiter
            .decide(&mut conn, "v2:alice", reserve, 1_000, 2)
            .unwrap();
        assert_eq!(got, core.decide(reserve, 1_000, 2), "{algorithm}");
        let settle = Op::settle(policy_reservation(&got, 9).expect("admitted"));
        let got = limiter
            .decide(&mut conn, "v2:alice", settle, 1_010, 1)
            .unwrap();
        assert_eq!(got, core.decide(settle, 1_010, 1), "{algorithm}");
        let got = limiter.hit(&mut conn, "v2:alice", 1_020, 2).unwrap();
        assert_eq!(got, core.hit(1_020, 2), "{algorithm}");
        assert_eq!(got.answered_by(), Some(0), "{algorithm}: the burst refuses");
    }
}
