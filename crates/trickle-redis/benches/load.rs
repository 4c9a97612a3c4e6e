//! The floating window on a real redis-server under load, against the cheapest thing a
//! limiter on Redis could do instead: a plain `INCRBY` round trip on the same connections.
//!
//! A private redis-server on a free port of 127.0.0.1 (started here, stopped when this ends,
//! also on a failure); 8 threads, each with its own connection, each deciding 10,000 requests
//! on one shared key at one frozen time. The benchmark fails unless exactly as many are
//! admitted as the in-process core admits for the same requests: many connections racing on
//! one key must not let one request too many through. Each decision is timed on its own;
//! p50, p99 and decisions per second are compared with the same load of `INCRBY key 1`.
//!
//! Beside them, the same load of requests that reserve before their handler and settle
//! after it (ESI's flow: reserve 1 token, settle at 2), two scripts and two round trips a
//! request, timed together, under a limit that admits them all. The benchmark fails unless
//! the bucket ends holding exactly 2 tokens a request and no pending record is left: 8
//! connections settling on one key must apply every settle once.
//!
//! And the same load of a script that does nothing but return 1 (`EVALSHA` of `return 1`):
//! what running any script costs over an `INCRBY`, before the decision's own work, so that
//! the docs can say how much of the gap is the script's call and how much its body.
//!
//! The four alternate over 3 rounds, each after a warm-up, and the medians are reported,
//! so that whatever else the machine does falls on all alike. Speed is reported as a
//! ratio, never asserted.
//!
//! `cargo bench -p trickle-redis --bench load` writes `target/bench/redis-load.json` (read by
//! `benches/report.mjs`). Run without `--bench` (as `cargo test --benches` does) it makes a
//! short run that checks the admission and writes nothing.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/figures.rs"]
mod figures;
#[path = "support/phase.rs"]
mod phase;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use common::RedisServer;
use figures::{median_figures, target_dir, Figures};
use phase::Phase;
use redis::Connection;
use trickle_core::Limit;

const CONNECTIONS: usize = 8;
const HOUR_MS: u64 = 3_600_000;
/// The frozen clock, 2026-01-01 00:00 UTC: every decision of a round is in one window.
const NOW_MS: u64 = 1_767_225_600_000;

/// One request of a phase on one connection: whether it was admitted.
type Request<'a> = &'a (dyn Fn(&mut Connection, &str) -> Result<bool, String> + Sync);

/// The limiter under test, and the one place that names its type: a request of cost 1 at
/// the frozen clock.
fn floating_window(limit: Limit) -> impl Fn(&mut Connection, &str) -> Result<bool, String> + Sync {
    let limiter =
        trickle_redis::RedisLimiter::new(trickle_core::Algorithm::Floating, limit, "load")
            .expect("within 2^52");
    move |conn, key| {
        limiter
            .hit(conn, key, NOW_MS, 1)
            .map(|decision| decision.is_allowed())
            .map_err(|err| err.to_string())
    }
}

/// What a request reserves before its handler, and what its answer costs (ESI's 2XX).
const RESERVE: u64 = 1;
const SETTLED: u64 = 2;

/// A request that reserves before its handler and settles after it, timed as one: two
/// scripts, two round trips. Tickets come from a counter (the core's `Store::reserve`
/// draws them the same way, mixed with a word of its process), unique within the run.
fn reserve_then_settle(
    limit: Limit,
) -> impl Fn(&mut Connection, &str) -> Result<bool, String> + Sync {
    let limiter =
        trickle_redis::RedisLimiter::new(trickle_core::Algorithm::Floating, limit, "load")
            .expect("within 2^52");
    let tickets = AtomicU64::new(0);
    move |conn, key| {
        let ticket = tickets.fetch_add(1, Ordering::Relaxed);
        let reserve = trickle_core::Op::Reserve { ticket };
        let reserved = limiter
            .decide(conn, key, reserve, NOW_MS, RESERVE)
            .map_err(|err| err.to_string())?;
        if !reserved.is_allowed() {
            return Ok(false);
        }
        let settle = trickle_core::Op::Settle {
            reserved_at_ms: reserved.at_ms,
            reserved: RESERVE,
            ticket,
        };
        limiter
            .decide(conn, key, settle, NOW_MS, SETTLED)
            .map(|_| true)
            .map_err(|err| err.to_string())
    }
}

/// After a reserve-and-settle phase on `key`: every request admitted, the bucket holding
/// exactly what they were settled at, and no pending record left.
fn check_settled(
    conn: &mut Connection,
    limit: Limit,
    key: &str,
    phase: &Phase,
) -> Result<(), String> {
    let requests = phase.latencies_ns.len() as u64;
    if phase.allowed != requests {
        return Err(format!(
            "admitted {} of {requests} reserves under a limit with room for all",
            phase.allowed
        ));
    }
    let limiter =
        trickle_redis::RedisLimiter::new(trickle_core::Algorithm::Floating, limit, "load")
            .expect("within 2^52");
    let used = limiter
        .peek(conn, key, NOW_MS, 0)
        .map_err(|err| err.to_string())?
        .used;
    let want = trickle_core::Tokens::new(
        u128::from(requests * SETTLED) * u128::from(limit.window_ms()),
        std::num::NonZeroU64::new(limit.window_ms()).expect("a window of 1 ms or more"),
    );
    if used != want {
        return Err(format!(
            "{requests} requests settled at {SETTLED} left {used} tokens in use, not {want}"
        ));
    }
    let pattern = format!("{}:reservation:*", limiter.redis_key(key));
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query(conn)
        .map_err(|err| err.to_string())?;
    if !left.is_empty() {
        return Err(format!(
            "{} pending records left after every settle, e.g. {}",
            left.len(),
            left[0]
        ));
    }
    Ok(())
}

/// The least a script can cost: one `EVALSHA` of a script that returns 1 and touches no key.
fn empty_script() -> impl Fn(&mut Connection, &str) -> Result<bool, String> + Sync {
    let script = redis::Script::new("return 1");
    move |conn, _key| {
        script
            .invoke::<i64>(conn)
            .map(|_| true)
            .map_err(|err| err.to_string())
    }
}

/// The baseline: one round trip that changes a key, admitting everything.
fn incrby(conn: &mut Connection, key: &str) -> Result<bool, String> {
    redis::cmd("INCRBY")
        .arg(key)
        .arg(1)
        .query::<i64>(conn)
        .map(|_| true)
        .map_err(|err| err.to_string())
}

struct Load {
    decisions_per_connection: usize,
    warmup_per_connection: usize,
    rounds: usize,
    /// Three eighths of the requests fit, so most of them are decided on a full bucket.
    limit: Limit,
    /// Room for every request of a reserve-and-settle phase, at its final cost.
    roomy: Limit,
    write_report: bool,
}

impl Load {
    fn new(full: bool) -> Load {
        let (decisions, warmup, rounds) = if full {
            (10_000, 1_000, 3)
        } else {
            (400, 50, 1)
        };
        let tokens = (CONNECTIONS * decisions * 3 / 8) as u64;
        Load {
            decisions_per_connection: decisions,
            warmup_per_connection: warmup,
            rounds,
            limit: Limit::new(tokens, HOUR_MS).expect("a valid limit"),
            roomy: Limit::new((CONNECTIONS * decisions) as u64 * SETTLED, HOUR_MS)
                .expect("a valid limit"),
            write_report: full,
        }
    }

    fn total(&self) -> u64 {
        (CONNECTIONS * self.decisions_per_connection) as u64
    }
}

/// What one phase measured: every request's latency, and how many were admitted.
impl Phase {
    fn figures(self) -> Figures {
        Figures::from_ns(self.latencies_ns, self.seconds)
    }
}

/// Every connection makes `count` requests on `key` at once, each on its own thread.
fn phase(
    connections: &mut [Connection],
    key: &str,
    count: usize,
    request: Request,
) -> Result<Phase, String> {
    phase::run(connections, count, &|conn, _, _| request(conn, key))
}

/// How many of `total` requests of cost 1 at the frozen clock the in-process core admits.
fn model_allowed(limit: Limit, total: u64) -> u64 {
    let mut core = trickle_core::FloatingWindow::new(limit);
    (0..total)
        .filter(|_| core.hit(NOW_MS, 1).is_allowed())
        .count() as u64
}

struct Round {
    script: Figures,
    incrby: Figures,
    reserve_settle: Figures,
    empty_script: Figures,
    allowed: u64,
}

fn run(load: &Load) -> Result<(), String> {
    let server = RedisServer::start_tcp();
    let client = redis::Client::open(server.address()).map_err(|err| err.to_string())?;
    let mut connections = (0..CONNECTIONS)
        .map(|_| client.get_connection())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.to_string())?;
    let script = floating_window(load.limit);
    let expected = model_allowed(load.limit, load.total());
    let pair = reserve_then_settle(load.roomy);
    let empty = empty_script();

    let mut rounds = Vec::with_capacity(load.rounds);
    for round in 0..load.rounds {
        // Each round on fresh keys, so that every round starts from an empty bucket.
        let run_script = |connections: &mut [Connection]| {
            phase(
                connections,
                &format!("warm-{round}"),
                load.warmup_per_connection,
                &script,
            )?;
            phase(
                connections,
                &format!("load-{round}"),
                load.decisions_per_connection,
                &script,
            )
        };
        let run_incrby = |connections: &mut [Connection]| {
            phase(
                connections,
                &format!("incr-warm-{round}"),
                load.warmup_per_connection,
                &incrby,
            )?;
            let key = format!("incr-load-{round}");
            let measured = phase(connections, &key, load.decisions_per_connection, &incrby)?;
            let counted: u64 = redis::cmd("GET")
                .arg(&key)
                .query(&mut connections[0])
                .map_err(|err| err.to_string())?;
            if counted != load.total() {
                return Err(format!(
                    "INCRBY counted {counted} of {} round trips",
                    load.total()
                ));
            }
            Ok(measured)
        };
        let run_pair = |connections: &mut [Connection]| {
            phase(
                connections,
                &format!("settle-warm-{round}"),
                load.warmup_per_connection,
                &pair,
            )?;
            let key = format!("settle-load-{round}");
            let measured = phase(connections, &key, load.decisions_per_connection, &pair)?;
            check_settled(&mut connections[0], load.roomy, &key, &measured)?;
            Ok::<_, String>(measured)
        };
        let run_empty = |connections: &mut [Connection]| {
            phase(
                connections,
                &format!("empty-warm-{round}"),
                load.warmup_per_connection,
                &empty,
            )?;
            phase(
                connections,
                &format!("empty-load-{round}"),
                load.decisions_per_connection,
                &empty,
            )
        };
        // Rotate which goes first, so that none always meets a colder machine.
        let (mut script_phase, mut incrby_phase, mut pair_phase, mut empty_phase) =
            (None, None, None, None);
        for slot in 0..4 {
            match (round + slot) % 4 {
                0 => script_phase = Some(run_script(&mut connections)?),
                1 => incrby_phase = Some(run_incrby(&mut connections)?),
                2 => pair_phase = Some(run_pair(&mut connections)?),
                _ => empty_phase = Some(run_empty(&mut connections)?),
            }
        }
        let (Some(script_phase), Some(incrby_phase), Some(pair_phase), Some(empty_phase)) =
            (script_phase, incrby_phase, pair_phase, empty_phase)
        else {
            return Err("a phase did not run".to_string());
        };
        if script_phase.allowed != expected {
            return Err(format!(
                "round {}: Redis admitted {} of {} requests on one key; the core admits {expected}",
                round + 1,
                script_phase.allowed,
                load.total()
            ));
        }
        rounds.push(Round {
            allowed: script_phase.allowed,
            script: script_phase.figures(),
            incrby: incrby_phase.figures(),
            reserve_settle: pair_phase.figures(),
            empty_script: empty_phase.figures(),
        });
    }

    let script = median_figures(rounds.iter().map(|round| round.script));
    let incrby = median_figures(rounds.iter().map(|round| round.incrby));
    let pair = median_figures(rounds.iter().map(|round| round.reserve_settle));
    let empty = median_figures(rounds.iter().map(|round| round.empty_script));
    print_summary(load, expected, &script, &incrby, &pair, &empty);
    if load.write_report {
        let path = target_dir().join("bench/redis-load.json");
        let json = report_json(load, expected, &rounds, &script, &incrby, &pair, &empty);
        std::fs::create_dir_all(path.parent().expect("a parent folder"))
            .and_then(|()| std::fs::write(&path, json))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn print_summary(
    load: &Load,
    expected: u64,
    script: &Figures,
    incrby: &Figures,
    pair: &Figures,
    empty: &Figures,
) {
    println!(
        "{CONNECTIONS} connections × {} requests on one key at a frozen clock, limit {}, \
         {} round(s), medians:",
        load.decisions_per_connection, load.limit, load.rounds
    );
    println!(
        "  admitted exactly {expected} of {} in every round, as the core does",
        load.total()
    );
    println!(
        "  reserve {RESERVE} + settle at {SETTLED}, limit {}: every settle applied once, no pending record left",
        load.roomy
    );
    for (name, figures) in [
        ("floating window script", script),
        ("reserve + settle", pair),
        ("script `return 1`", empty),
        ("INCRBY round trip", incrby),
    ] {
        println!(
            "  {name:<22} p50 {:>7.1} µs   p99 {:>7.1} µs   {:>8.0} /s",
            figures.p50_us, figures.p99_us, figures.per_second
        );
    }
    for (name, figures) in [
        ("script", script),
        ("reserve + settle", pair),
        ("`return 1`", empty),
    ] {
        println!(
            "  {:<27} p50 {:.2}×, p99 {:.2}×, throughput {:.2}×",
            format!("{name} / INCRBY:"),
            figures.p50_us / incrby.p50_us,
            figures.p99_us / incrby.p99_us,
            figures.per_second / incrby.per_second
        );
    }
}

fn report_json(
    load: &Load,
    expected: u64,
    rounds: &[Round],
    script: &Figures,
    incrby: &Figures,
    pair: &Figures,
    empty: &Figures,
) -> String {
    let allowed: Vec<String> = rounds
        .iter()
        .map(|round| round.allowed.to_string())
        .collect();
    let mut json = String::new();
    let _ = writeln!(json, "{{");
    let _ = writeln!(json, r#"  "connections": {CONNECTIONS},"#);
    let _ = writeln!(
        json,
        r#"  "decisionsPerConnection": {},"#,
        load.decisions_per_connection
    );
    let _ = writeln!(json, r#"  "limit": "{}","#, load.limit);
    let _ = writeln!(json, r#"  "nowMs": {NOW_MS},"#);
    let _ = writeln!(json, r#"  "rounds": {},"#, load.rounds);
    let _ = writeln!(json, r#"  "expectedAllowed": {expected},"#);
    let _ = writeln!(json, r#"  "allowed": [{}],"#, allowed.join(", "));
    let _ = writeln!(json, r#"  "script": {},"#, script.json());
    let _ = writeln!(json, r#"  "incrby": {},"#, incrby.json());
    let _ = writeln!(json, r#"  "reserveSettle": {},"#, pair.json());
    let _ = writeln!(json, r#"  "reserveSettleLimit": "{}","#, load.roomy);
    let _ = writeln!(json, r#"  "emptyScript": {},"#, empty.json());
    let _ = writeln!(json, r#"  "perRound": ["#);
    for (n, round) in rounds.iter().enumerate() {
        let comma = if n + 1 < rounds.len() { "," } else { "" };
        let _ = writeln!(
            json,
            r#"    {{ "script": {}, "incrby": {}, "reserveSettle": {}, "emptyScript": {} }}{comma}"#,
            round.script.json(),
            round.incrby.json(),
            round.reserve_settle.json(),
            round.empty_script.json()
        );
    }
    let _ = writeln!(json, "  ]");
    let _ = writeln!(json, "}}");
    json
}

fn main() -> ExitCode {
    let load = Load::new(std::env::args().any(|arg| arg == "--bench"));
    match run(&load) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("redis load benchmark failed: {err}");
            ExitCode::FAILURE
        }
    }
}
