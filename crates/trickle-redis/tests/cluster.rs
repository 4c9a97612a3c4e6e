//! trickle-redis on a real Redis Cluster (the `cluster` feature): three masters with a
//! replica each, shared by this binary's tests (redis_cluster/mod.rs), reached through the
//! redis crate's `ClusterConnection`, which sends each script to the master of its key's
//! slot and follows MOVED and ASK.
//!
//! - Policies decide as the core on random traces (policy.rs's check, over every
//!   algorithm), on keys that land on every master: every key of a decision is in one slot,
//!   or the cluster would refuse the script (CROSSSLOT).
//! - A busy key's slot is moved to another master in the middle of a run, step by step as
//!   `redis-cli --cluster reshard` does (IMPORTING, MIGRATING, MIGRATE key by key, NODE):
//!   every decision is still the core's, so none was lost, doubled or failed, and the
//!   tokens charged add up to the core's.

#![cfg(feature = "cluster")]

mod common;
mod policy_parity;
mod redis_cluster;
mod traces;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::ScopedJoinHandle;

use policy_parity::policies_decide_as_the_core;
use redis_cluster::{Cluster, MASTERS};
use trickle_core::{Algorithm, Policy, PolicyLimiter};
use trickle_redis::{RedisError, RedisPolicyLimiter};

/// Cases per algorithm, each up to 40 steps: fewer than policy.rs's, whose check this is;
/// the point here is the routing, and every case is a fresh key on some master.
const CASES: u32 = 32;

/// Runs `CASES` random traces of `algorithm` through the core and through the cluster, and
/// checks their keys landed on every master, on the cluster's own word (CLUSTER KEYSLOT,
/// CLUSTER NODES).
fn cluster_decides_policies_as_the_core(algorithm: Algorithm) {
    let cluster = Cluster::shared();
    let mut conn = cluster.connect();
    let buckets = policies_decide_as_the_core(algorithm, &mut conn, CASES, file!());
    let masters = cluster.masters();
    let reached: BTreeSet<u16> = buckets
        .iter()
        .map(|bucket| {
            let slot = cluster.keyslot(bucket);
            assert_eq!(slot, common::slot(bucket), "{bucket}");
            masters
                .iter()
                .find(|master| master.holds(slot))
                .map_or(0, |master| master.port)
        })
        .collect();
    let all: BTreeSet<u16> = masters.iter().map(|master| master.port).collect();
    assert_eq!(all.len(), MASTERS, "{masters:?}");
    assert_eq!(reached, all, "{algorithm}: the cases' keys missed a master");
}

#[test]
fn a_cluster_decides_floating_window_policies_as_the_core() {
    cluster_decides_policies_as_the_core(Algorithm::Floating);
}

#[test]
fn a_cluster_decides_fixed_window_policies_as_the_core() {
    cluster_decides_policies_as_the_core(Algorithm::Fixed);
}

#[test]
fn a_cluster_decides_token_bucket_policies_as_the_core() {
    cluster_decides_policies_as_the_core(Algorithm::TokenBucket);
}

#[test]
fn a_cluster_decides_sliding_log_policies_as_the_core() {
    cluster_decides_policies_as_the_core(Algorithm::SlidingLog);
}

/// A plain connection to one master answers MOVED for a key of another's: what every
/// client of ours met before the cluster feature, and what the cluster client follows.
#[test]
fn a_single_node_client_meets_moved() {
    let cluster = Cluster::shared();
    let limiter = RedisPolicyLimiter::new(Algorithm::Floating, "5/1s".parse().unwrap(), "moved")
        .expect("a limiter");
    let key = "elsewhere";
    let slot = cluster.keyslot(&limiter.redis_keys(key)[0]);
    let other = cluster
        .masters()
        .into_iter()
        .find(|master| !master.holds(slot))
        .expect("another master");
    let err = limiter
        .hit(&mut cluster.node(other.port), key, 1_000, 1)
        .expect_err("MOVED");
    let moved = redis::ErrorKind::Server(redis::ServerErrorKind::Moved);
    assert!(
        matches!(&err, RedisError::Redis(err) if err.kind() == moved),
        "{err}"
    );
    assert!(!err.is_outage(), "{err}");
    let decision = limiter
        .hit(&mut cluster.connect(), key, 1_000, 1)
        .expect("the cluster client follows MOVED");
    assert!(decision.is_allowed());
}

/// A master that lost the Function library (a restart without persistence, a
/// `FUNCTION FLUSH`) makes the next decision load it again, on every master at once: after
/// one decision every master has it, replicas too, by replication.
#[test]
fn a_lost_function_library_is_loaded_on_every_master() {
    let cluster = Cluster::start();
    let limiter = RedisPolicyLimiter::new(Algorithm::Floating, "5/1s".parse().unwrap(), "lost")
        .expect("a limiter");
    let mut conn = cluster.connect();
    assert!(limiter.hit(&mut conn, "a", 1_000, 1).unwrap().is_allowed());
    let libraries = |cluster: &Cluster, port: u16| -> usize {
        let listed: redis::Value = redis::cmd("FUNCTION")
            .arg("LIST")
            .arg("LIBRARYNAME")
            .arg("trickle_floating_*")
            .query(&mut cluster.node(port))
            .expect("FUNCTION LIST");
        match listed {
            redis::Value::Array(libraries) => libraries.len(),
            other => panic!("FUNCTION LIST answered {other:?}"),
        }
    };
    for master in cluster.masters() {
        redis::cmd("FUNCTION")
            .arg("FLUSH")
            .exec(&mut cluster.node(master.port))
            .expect("FUNCTION FLUSH");
        assert_eq!(libraries(&cluster, master.port), 0, "flushed");
    }
    let decision = limiter.hit(&mut conn, "a", 1_001, 1).unwrap();
    assert_eq!(decision.decisions()[0].used.to_string(), "2.000");
    for master in cluster.masters() {
        assert_eq!(
            libraries(&cluster, master.port),
            1,
            "node {} of {:?}",
            master.port,
            cluster
                .masters()
                .iter()
                .map(|m| (m.port, libraries(&cluster, m.port)))
                .collect::<Vec<_>>()
        );
    }
    // Every key, whichever master holds it, decides at once.
    for key in ["b", "c", "d", "e", "f", "g"] {
        assert!(limiter.hit(&mut conn, key, 1_002, 1).unwrap().is_allowed());
    }
}

/// Decisions made on the busy key so far, and whether the move has ended.
struct Progress {
    decided: AtomicUsize,
    moved: AtomicBool,
}

impl Progress {
    /// Waits until `more` decisions beyond those made so far: each step of the move then
    /// happens between decisions, whatever the machine's speed.
    fn wait_for(&self, more: usize, decider: &ScopedJoinHandle<'_, (u64, u64)>) {
        let until = self.decided.load(Ordering::SeqCst) + more;
        while self.decided.load(Ordering::SeqCst) < until {
            assert!(
                !decider.is_finished(),
                "the decisions stopped during the move"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// A policy of two sliding logs keeps four keys in the busy key's slot (two hashes, two
/// lists), so that the move finds decisions whose keys are split between the two masters
/// (the source answers TRYAGAIN, which the client waits out) as well as all on the source
/// (run there), all on the target (ASK) and after the move (MOVED).
#[test]
fn a_slot_moved_mid_run_loses_doubles_and_fails_no_decision() {
    let cluster = Cluster::shared();
    let policy: Policy = "burst=4/50ms 60/1s".parse().unwrap();
    let limiter =
        RedisPolicyLimiter::new(Algorithm::SlidingLog, policy.clone(), "reshard").unwrap();
    let key = "busy";
    let keys = limiter.redis_keys(key);
    let slot = cluster.keyslot(&keys[0]);
    let source = cluster.master_of(slot);
    let target = cluster
        .masters()
        .into_iter()
        .find(|master| master.port != source.port)
        .expect("a second master");
    let progress = Progress {
        decided: AtomicUsize::new(0),
        moved: AtomicBool::new(false),
    };

    let (charged, charged_by_core) = std::thread::scope(|scope| {
        let decider = scope.spawn(|| {
            let mut conn = cluster.connect();
            let mut core = PolicyLimiter::with_algorithm(Algorithm::SlidingLog, policy.clone());
            let (mut charged, mut charged_by_core) = (0, 0);
            let (mut now, mut after_move) = (1_000_000u64, 0);
            for i in 0u64.. {
                let cost = 1 + i % 3;
                now += (i * 7) % 11;
                let got = limiter
                    .hit(&mut conn, key, now, cost)
                    .unwrap_or_else(|err| panic!("decision {i} failed: {err}"));
                let want = core.hit(now, cost);
                assert_eq!(got, want, "decision {i} at {now} ms, cost {cost}");
                charged += if got.is_allowed() { cost } else { 0 };
                charged_by_core += if want.is_allowed() { cost } else { 0 };
                // Redis's clock must not expire what the run's clock still counts (a
                // TRYAGAIN is waited out for a second or more).
                common::hold_still(&mut conn, &keys);
                progress.decided.fetch_add(1, Ordering::SeqCst);
                if progress.moved.load(Ordering::SeqCst) {
                    after_move += 1;
                    if after_move == 100 {
                        break;
                    }
                }
            }
            (charged, charged_by_core)
        });

        let mut on_source = cluster.node(source.port);
        let mut on_target = cluster.node(target.port);
        let setslot = |conn: &mut redis::Connection, state: &str, id: &str| {
            let () = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg(state)
                .arg(id)
                .query(conn)
                .unwrap_or_else(|err| panic!("CLUSTER SETSLOT {slot} {state}: {err}"));
        };
        progress.wait_for(100, &decider);
        setslot(&mut on_target, "IMPORTING", &source.id);
        progress.wait_for(50, &decider);
        setslot(&mut on_source, "MIGRATING", &target.id);
        // From here, one key at a time, not waiting for decisions: a decision that meets
        // its keys split between the masters, or one of them missing (an emptied log), is
        // answered TRYAGAIN, which the client waits out until all have moved.
        loop {
            let moving: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(1)
                .query(&mut on_source)
                .expect("CLUSTER GETKEYSINSLOT");
            let Some(one) = moving.first() else { break };
            let () = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(target.port)
                .arg(one)
                .arg(0)
                .arg(5_000)
                .query(&mut on_source)
                .unwrap_or_else(|err| panic!("MIGRATE {one}: {err}"));
        }
        progress.wait_for(50, &decider);
        setslot(&mut on_target, "NODE", &target.id);
        setslot(&mut on_source, "NODE", &target.id);
        for master in cluster.masters() {
            if master.port != source.port && master.port != target.port {
                setslot(&mut cluster.node(master.port), "NODE", &target.id);
            }
        }
        progress.moved.store(true, Ordering::SeqCst);
        decider.join().expect("the decisions")
    });
    assert_eq!(charged, charged_by_core, "tokens charged");
    assert!(charged > 0);
    cluster.wait_until("every master agrees where the slot went", |cluster| {
        cluster.master_of(slot).port == target.port
    });
}
