//! Decisions per second with keys spread, on one redis-server and on a three-master Redis
//! Cluster: what `docs/src/redis.md`'s deployment section reasons from.
//!
//! `load.rs` puts every request on one key, the worst case for a limiter (one slot, one
//! master, every script waiting on the one before). Real traffic spreads over many buckets,
//! so here 8 threads, each with its own connection, decide requests over 4,096 keys at one
//! frozen time, each thread walking the keys from its own place. The same load runs on one
//! private redis-server, then on a private cluster (three masters with a replica each,
//! `tests/redis_cluster`), each beside the same load of `INCRBY` on the same keys through
//! the same kind of connection. Every decision is timed on its own; p50, p99 and decisions
//! per second are medians over rounds that alternate the four phases. Both layouts share
//! this machine's cores with each other's servers and with the clients, so the cluster's
//! figure here is what three masters do on those cores, not three machines' worth.
//!
//! Every round is also checked: each key admits exactly what the in-process core admits
//! for that key's requests, summed over the keys, on one node and across the cluster.
//!
//! `cargo bench -p trickle-redis --features cluster --bench spread` writes
//! `target/bench/redis-spread.json` (read by `benches/report.mjs`). Run without `--bench` it
//! makes a short run that checks the admissions and writes nothing.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/figures.rs"]
mod figures;
#[path = "support/phase.rs"]
mod phase;
#[path = "../tests/redis_cluster/mod.rs"]
mod redis_cluster;

use std::fmt::Write as _;
use std::process::ExitCode;

use common::RedisServer;
use figures::{median_figures, target_dir, Figures};
use phase::Phase;
use redis::ConnectionLike;
use redis_cluster::{Cluster, MASTERS};
use trickle_core::{Algorithm, Limit};

const CONNECTIONS: usize = 8;
const KEYS: usize = 4_096;
const HOUR_MS: u64 = 3_600_000;
/// The frozen clock, 2026-01-01 00:00 UTC: every decision of a round is in one window.
const NOW_MS: u64 = 1_767_225_600_000;
/// Each key's limit: about half of a full run's requests on a key fit.
const TOKENS: u64 = 10;

/// The key a thread's `i`-th request goes to: every thread walks all the keys, each from
/// its own eighth of them, so the threads rarely meet on a key but every key is shared.
fn key_index(thread: usize, i: usize) -> usize {
    (thread * KEYS / CONNECTIONS + i) % KEYS
}

/// One request: whether it was admitted.
type Request<'a, C> = &'a (dyn Fn(&mut C, &str) -> Result<bool, String> + Sync);

fn floating_window<C: ConnectionLike>() -> impl Fn(&mut C, &str) -> Result<bool, String> + Sync {
    let limit = Limit::new(TOKENS, HOUR_MS).expect("a valid limit");
    let limiter =
        trickle_redis::RedisLimiter::new(Algorithm::Floating, limit, "spread").expect("bounds");
    move |conn, key| {
        limiter
            .hit(conn, key, NOW_MS, 1)
            .map(|decision| decision.is_allowed())
            .map_err(|err| err.to_string())
    }
}

fn incrby<C: ConnectionLike>(conn: &mut C, key: &str) -> Result<bool, String> {
    redis::cmd("INCRBY")
        .arg(key)
        .arg(1)
        .query::<i64>(conn)
        .map(|_| true)
        .map_err(|err| err.to_string())
}

/// Every connection makes `count` requests at once, each on its own thread, on the keys
/// `PREFIX-0` to `PREFIX-4095`.
fn phase<C: ConnectionLike + Send>(
    connections: &mut [C],
    prefix: &str,
    count: usize,
    request: Request<C>,
) -> Result<Phase, String> {
    let keys: Vec<String> = (0..KEYS).map(|i| format!("{prefix}-{i}")).collect();
    phase::run(connections, count, &|conn, thread, i| {
        request(conn, &keys[key_index(thread, i)])
    })
}

/// What the in-process core admits for the same requests: each key on its own limiter,
/// every request of cost 1 at the frozen clock.
fn model_allowed(count: usize) -> u64 {
    let limit = Limit::new(TOKENS, HOUR_MS).expect("a valid limit");
    let mut requests = vec![0u64; KEYS];
    for thread in 0..CONNECTIONS {
        for i in 0..count {
            requests[key_index(thread, i)] += 1;
        }
    }
    requests
        .iter()
        .map(|&n| {
            let mut core = trickle_core::FloatingWindow::new(limit);
            (0..n).filter(|_| core.hit(NOW_MS, 1).is_allowed()).count() as u64
        })
        .sum()
}

/// One layout's round: the script's figures and INCRBY's, on fresh keys.
struct Pair {
    script: Figures,
    incrby: Figures,
}

struct Run {
    decisions: usize,
    warmup: usize,
    rounds: usize,
    write_report: bool,
}

/// A layout's script and INCRBY phases for `round`, in an order that alternates by round,
/// with the script's admissions checked against the core.
fn round_on<C: ConnectionLike + Send>(
    connections: &mut [C],
    layout: &str,
    round: usize,
    run: &Run,
    expected: u64,
) -> Result<Pair, String> {
    let script = floating_window::<C>();
    let run_script = |connections: &mut [C]| {
        phase(
            connections,
            &format!("{layout}-warm-{round}"),
            run.warmup,
            &script,
        )?;
        let measured = phase(
            connections,
            &format!("{layout}-load-{round}"),
            run.decisions,
            &script,
        )?;
        if measured.allowed != expected {
            return Err(format!(
                "{layout}, round {}: admitted {} of {} requests over {KEYS} keys; the core admits {expected}",
                round + 1,
                measured.allowed,
                CONNECTIONS * run.decisions
            ));
        }
        Ok(Figures::from_ns(measured.latencies_ns, measured.seconds))
    };
    let run_incrby = |connections: &mut [C]| {
        phase(
            connections,
            &format!("{layout}-incr-warm-{round}"),
            run.warmup,
            &incrby,
        )?;
        let measured = phase(
            connections,
            &format!("{layout}-incr-{round}"),
            run.decisions,
            &incrby,
        )?;
        Ok::<_, String>(Figures::from_ns(measured.latencies_ns, measured.seconds))
    };
    if round.is_multiple_of(2) {
        let script = run_script(connections)?;
        Ok(Pair {
            script,
            incrby: run_incrby(connections)?,
        })
    } else {
        let incrby = run_incrby(connections)?;
        Ok(Pair {
            script: run_script(connections)?,
            incrby,
        })
    }
}

fn run(run: &Run) -> Result<(), String> {
    let expected = model_allowed(run.decisions);

    let server = RedisServer::start_tcp();
    let client = redis::Client::open(server.address()).map_err(|err| err.to_string())?;
    let mut single = (0..CONNECTIONS)
        .map(|_| client.get_connection())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.to_string())?;

    let cluster = Cluster::start();
    let cluster_client = cluster.client();
    let mut spread = (0..CONNECTIONS)
        .map(|_| cluster_client.get_connection())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.to_string())?;
    check_spread(&cluster)?;

    // The server's own time per call, which no client thread competing for the cores
    // stretches: what one node's capacity is reckoned from.
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query::<()>(&mut single[0])
        .map_err(|err| err.to_string())?;
    let mut single_rounds = Vec::with_capacity(run.rounds);
    let mut cluster_rounds = Vec::with_capacity(run.rounds);
    for round in 0..run.rounds {
        // Which layout goes first alternates too, so neither always meets a colder machine.
        if round.is_multiple_of(2) {
            single_rounds.push(round_on(&mut single, "single", round, run, expected)?);
            cluster_rounds.push(round_on(&mut spread, "cluster", round, run, expected)?);
        } else {
            cluster_rounds.push(round_on(&mut spread, "cluster", round, run, expected)?);
            single_rounds.push(round_on(&mut single, "single", round, run, expected)?);
        }
    }
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut single[0])
        .map_err(|err| err.to_string())?;
    let script_server_us = usec_per_call(&stats, "fcall")?;
    let incrby_server_us = usec_per_call(&stats, "incrby")?;
    let medians = |rounds: &[Pair]| Pair {
        script: median_figures(rounds.iter().map(|pair| pair.script)),
        incrby: median_figures(rounds.iter().map(|pair| pair.incrby)),
    };
    let (one, three) = (medians(&single_rounds), medians(&cluster_rounds));
    println!(
        "{CONNECTIONS} connections × {} requests over {KEYS} keys at a frozen clock, \
         limit {TOKENS}/1h a key, {} round(s), medians; every round admitted exactly the \
         core's {expected}:",
        run.decisions, run.rounds
    );
    for (name, pair) in [("one node", &one), ("cluster of 3 masters", &three)] {
        for (what, figures) in [("script", &pair.script), ("INCRBY", &pair.incrby)] {
            println!(
                "  {name:<21} {what:<7} p50 {:>7.1} µs   p99 {:>7.1} µs   {:>8.0} /s",
                figures.p50_us, figures.p99_us, figures.per_second
            );
        }
    }
    println!(
        "  one node's own time per call (INFO commandstats): script {script_server_us:.2} µs, \
         INCRBY {incrby_server_us:.2} µs"
    );
    if run.write_report {
        let mut json = String::new();
        let _ = writeln!(json, "{{");
        let _ = writeln!(json, r#"  "connections": {CONNECTIONS},"#);
        let _ = writeln!(json, r#"  "decisionsPerConnection": {},"#, run.decisions);
        let _ = writeln!(json, r#"  "keys": {KEYS},"#);
        let _ = writeln!(json, r#"  "limit": "{TOKENS}/1h","#);
        let _ = writeln!(json, r#"  "masters": {MASTERS},"#);
        let _ = writeln!(json, r#"  "rounds": {},"#, run.rounds);
        let _ = writeln!(json, r#"  "expectedAllowed": {expected},"#);
        let _ = writeln!(json, r#"  "serverUsPerScript": {script_server_us:.3},"#);
        let _ = writeln!(json, r#"  "serverUsPerIncrby": {incrby_server_us:.3},"#);
        let _ = writeln!(
            json,
            r#"  "single": {{ "script": {}, "incrby": {} }},"#,
            one.script.json(),
            one.incrby.json()
        );
        let _ = writeln!(
            json,
            r#"  "cluster": {{ "script": {}, "incrby": {} }}"#,
            three.script.json(),
            three.incrby.json()
        );
        let _ = writeln!(json, "}}");
        let path = target_dir().join("bench/redis-spread.json");
        std::fs::create_dir_all(path.parent().expect("a parent folder"))
            .and_then(|()| std::fs::write(&path, json))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// `usec_per_call` of `INFO commandstats`'s line for `command`.
fn usec_per_call(stats: &str, command: &str) -> Result<f64, String> {
    let prefix = format!("cmdstat_{command}:");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|fields| {
            fields
                .split(',')
                .find_map(|field| field.strip_prefix("usec_per_call="))
        })
        .and_then(|value| value.trim().parse().ok())
        .ok_or_else(|| format!("INFO commandstats has no usec_per_call for {command}: {stats}"))
}

/// The keys really spread: every master holds some of the buckets' slots.
fn check_spread(cluster: &Cluster) -> Result<(), String> {
    let limiter = trickle_redis::RedisLimiter::new(
        Algorithm::Floating,
        Limit::new(TOKENS, HOUR_MS).expect("a valid limit"),
        "spread",
    )
    .expect("bounds");
    let masters = cluster.masters();
    let mut per_master = vec![0usize; masters.len()];
    for i in 0..KEYS {
        let slot = common::slot(&limiter.redis_key(&format!("cluster-load-0-{i}")));
        if let Some(m) = masters.iter().position(|master| master.holds(slot)) {
            per_master[m] += 1;
        }
    }
    if per_master.iter().sum::<usize>() != KEYS || per_master.iter().any(|&n| n < KEYS / 5) {
        return Err(format!(
            "the {KEYS} keys fall unevenly on the masters: {per_master:?}"
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    let (decisions, warmup, rounds) = if full {
        (10_000, 1_000, 3)
    } else {
        (400, 50, 1)
    };
    let settings = Run {
        decisions,
        warmup,
        rounds,
        write_report: full,
    };
    match run(&settings) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("redis spread benchmark failed: {err}");
            ExitCode::FAILURE
        }
    }
}
