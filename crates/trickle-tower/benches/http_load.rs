//! What the layer adds to a request over real HTTP on 127.0.0.1: a trivial handler (it
//! answers "ok") served by axum bare, behind the layer in process, and behind the layer on
//! a private redis-server, under the same closed-loop load from the same client.
//!
//! The server runs on a tokio runtime of its own (one worker); the client on another
//! thread, on keep-alive connections each sending its requests one after the other, timing
//! each from send to the end of its body. Two shapes of load: one connection, where a
//! request's time is the server's work plus the round trip and nothing waits in a queue
//! (the layer's cost shows whole), and 8 connections, which keep the server busy
//! (throughput, and latency with queueing). Every request is admitted (1,000 keys, a
//! limit none of them reaches), so that what is timed is the path every normal request
//! takes: a peek, the handler, a record, four headers. The benchmark fails if any answer is
//! not a 200 with the headers.
//!
//! The three alternate over 5 rounds, each after a warm-up, and each figure's median over
//! the rounds is reported with the ratio to the bare server's, so that whatever else the
//! machine does falls on all alike. The goal (issue 12): the layer in process adds at most
//! 10% to p50. Speed is reported as a ratio, never asserted.
//!
//! `cargo bench -p trickle-tower --features redis --bench http_load` writes
//! `target/bench/http-load.json` (read by `benches/report.mjs`). Run without `--bench` (as
//! `cargo test --benches` does) it makes a short run that checks the answers and writes
//! nothing.

#[path = "../../trickle-redis/tests/common/mod.rs"]
mod common;
#[path = "../../trickle-redis/benches/support/figures.rs"]
mod figures;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use common::RedisServer;
use figures::{median_figures, target_dir, Figures};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use trickle_core::{Algorithm, Limit, Policy};
use trickle_redis::RedisPolicyLimiter;
use trickle_tower::{InProcess, RateLimitLayer, Rejection, Subject};

/// The load shapes: how many connections send at once.
const SHAPES: [usize; 2] = [1, 8];
const KEYS: usize = 1_000;
/// More than any key spends in a run: 2 tokens a request, at most `requests / KEYS` each.
const LIMIT: &str = "1000000/1h";

struct Load {
    rounds: usize,
    /// Requests per phase, split evenly over its connections; a tenth as many warm up.
    requests: usize,
    write_report: bool,
}

#[derive(Clone, Copy)]
enum Variant {
    Bare,
    InProcess,
    Redis,
}

impl Variant {
    const ALL: [Variant; 3] = [Variant::Bare, Variant::InProcess, Variant::Redis];

    fn name(self) -> &'static str {
        match self {
            Variant::Bare => "bare",
            Variant::InProcess => "inProcess",
            Variant::Redis => "redis",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Variant::Bare => "no layer",
            Variant::InProcess => "layer, in process",
            Variant::Redis => "layer, Redis",
        }
    }
}

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    let load = if full {
        Load {
            rounds: 5,
            requests: 8_000,
            write_report: true,
        }
    } else {
        Load {
            rounds: 1,
            requests: 80,
            write_report: false,
        }
    };
    match run(&load) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("http_load: {error}");
            ExitCode::FAILURE
        }
    }
}

fn subject(request: &http::Request<axum::body::Body>) -> Result<Option<Subject>, Rejection> {
    let client = request
        .headers()
        .get("x-client-id")
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| Rejection::bad_request("send X-Client-Id"))?;
    Ok(Some(Subject::new("bench", client)))
}

/// The app of `variant` on a runtime of its own; its address.
fn start(
    variant: Variant,
    redis: &RedisServer,
    runtime: &tokio::runtime::Runtime,
) -> Result<String, String> {
    let router = Router::new().route("/hello", get(|| async { "ok" }));
    let limit: Limit = LIMIT.parse().expect("a valid limit");
    let app = match variant {
        Variant::Bare => router,
        Variant::InProcess => router.layer(RateLimitLayer::new(
            InProcess::new().with_group("bench", Algorithm::Floating, Policy::single(limit)),
            subject,
        )),
        Variant::Redis => {
            let client = redis::Client::open(redis.address()).map_err(|err| err.to_string())?;
            let conn = runtime
                .block_on(redis::aio::ConnectionManager::new(client))
                .map_err(|err| err.to_string())?;
            let limiter =
                RedisPolicyLimiter::new(Algorithm::Floating, Policy::single(limit), "bench")
                    .map_err(|err| err.to_string())?;
            router.layer(RateLimitLayer::new(
                trickle_tower::Redis::new(conn).with_group("bench", limiter),
                subject,
            ))
        }
    };
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|err| err.to_string())?;
    let address = listener
        .local_addr()
        .map_err(|err| err.to_string())?
        .to_string();
    runtime.spawn(async move { axum::serve(listener, app).await });
    Ok(address)
}

/// Sends `requests` over `connections` connections, one after the other on each; returns
/// every request's time and the phase's wall time.
async fn phase(
    address: &str,
    tag: &str,
    connections: usize,
    requests: usize,
    limited: bool,
) -> Result<(Vec<Duration>, Duration), String> {
    let per_connection = requests / connections;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(connections);
    for connection in 0..connections {
        let address = address.to_string();
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(&address)
                .await
                .map_err(|err| err.to_string())?;
            stream.set_nodelay(true).map_err(|err| err.to_string())?;
            let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|err| err.to_string())?;
            tokio::spawn(conn);
            let mut times = Vec::with_capacity(per_connection);
            for i in 0..per_connection {
                let key = format!("{tag}-{}", (connection * per_connection + i) % KEYS);
                let request = http::Request::get("/hello")
                    .header("host", &address)
                    .header("x-client-id", key)
                    .body(Empty::<Bytes>::new())
                    .map_err(|err| err.to_string())?;
                let sent = Instant::now();
                let response = sender
                    .send_request(request)
                    .await
                    .map_err(|err| err.to_string())?;
                let status = response.status();
                let has_headers = response.headers().contains_key("x-ratelimit-remaining");
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|err| err.to_string())?
                    .to_bytes();
                times.push(sent.elapsed());
                if status != 200 || body.as_ref() != b"ok" || has_headers != limited {
                    return Err(format!(
                        "{tag}: answer {status}, headers {has_headers}, body {body:?}"
                    ));
                }
            }
            Ok::<_, String>(times)
        }));
    }
    let mut times = Vec::with_capacity(requests);
    for task in tasks {
        times.extend(task.await.map_err(|err| err.to_string())??);
    }
    Ok((times, started.elapsed()))
}

fn run(load: &Load) -> Result<(), String> {
    let redis = RedisServer::start_tcp();
    let servers: Vec<(tokio::runtime::Runtime, String)> = Variant::ALL
        .iter()
        .map(|&variant| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .map_err(|err| err.to_string())?;
            let address = start(variant, &redis, &runtime)?;
            Ok((runtime, address))
        })
        .collect::<Result<_, String>>()?;
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;

    // Per shape, per round, per variant.
    let mut measured: Vec<Vec<[Figures; 3]>> = Vec::with_capacity(SHAPES.len());
    for (shape, &connections) in SHAPES.iter().enumerate() {
        let mut rounds = Vec::with_capacity(load.rounds);
        for round in 0..load.rounds {
            let mut figures_of = [None; 3];
            // Rotate which goes first, so that none always meets a colder machine.
            for offset in 0..Variant::ALL.len() {
                let index = (round + offset) % Variant::ALL.len();
                let variant = Variant::ALL[index];
                let address = &servers[index].1;
                let limited = !matches!(variant, Variant::Bare);
                // Fresh keys each phase, so that no bucket carries over.
                let tag = format!("{}-{shape}-{round}", variant.name());
                let warm = format!("warm-{tag}");
                client.block_on(phase(
                    address,
                    &warm,
                    connections,
                    load.requests / 10,
                    limited,
                ))?;
                let (times, wall) =
                    client.block_on(phase(address, &tag, connections, load.requests, limited))?;
                figures_of[index] = Some(Figures::from_durations(&times, wall));
            }
            rounds.push(figures_of.map(|figures| figures.expect("every variant measured")));
        }
        measured.push(rounds);
    }

    let medians: Vec<Vec<Figures>> = measured
        .iter()
        .map(|rounds| {
            (0..Variant::ALL.len())
                .map(|index| median_figures(rounds.iter().map(|round| round[index])))
                .collect()
        })
        .collect();
    print_summary(load, &medians);
    if load.write_report {
        let path = target_dir().join("bench/http-load.json");
        std::fs::create_dir_all(path.parent().expect("a parent folder"))
            .and_then(|()| std::fs::write(&path, report_json(load, &measured, &medians)))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        println!("wrote {}", path.display());
    }
    drop(servers);
    Ok(())
}

fn print_summary(load: &Load, medians: &[Vec<Figures>]) {
    for (connections, medians) in SHAPES.iter().zip(medians) {
        println!(
            "{connections} keep-alive connection(s), {} requests over {KEYS} keys, {} round(s), \
             medians (× the bare server's):",
            load.requests, load.rounds
        );
        let bare = medians[0];
        for (variant, figures) in Variant::ALL.iter().zip(medians) {
            println!(
                "  {:<18} p50 {:>7.1} µs ({:.2}×)   p99 {:>7.1} µs ({:.2}×)   {:>7.0} /s ({:.2}×)",
                variant.label(),
                figures.p50_us,
                figures.p50_us / bare.p50_us,
                figures.p99_us,
                figures.p99_us / bare.p99_us,
                figures.per_second,
                figures.per_second / bare.per_second,
            );
        }
    }
}

fn report_json(load: &Load, measured: &[Vec<[Figures; 3]>], medians: &[Vec<Figures>]) -> String {
    let mut json = String::new();
    let _ = writeln!(json, "{{");
    let _ = writeln!(json, r#"  "requests": {},"#, load.requests);
    let _ = writeln!(json, r#"  "keys": {KEYS},"#);
    let _ = writeln!(json, r#"  "rounds": {},"#, load.rounds);
    let _ = writeln!(json, r#"  "shapes": ["#);
    for (shape, connections) in SHAPES.iter().enumerate() {
        let _ = writeln!(json, "    {{");
        let _ = writeln!(json, r#"      "connections": {connections},"#);
        for (variant, figures) in Variant::ALL.iter().zip(&medians[shape]) {
            let _ = writeln!(json, r#"      "{}": {},"#, variant.name(), figures.json());
        }
        let rounds: Vec<String> = measured[shape]
            .iter()
            .map(|round| {
                let parts: Vec<String> = Variant::ALL
                    .iter()
                    .zip(round)
                    .map(|(variant, figures)| {
                        format!(r#""{}": {}"#, variant.name(), figures.json())
                    })
                    .collect();
                format!("{{ {} }}", parts.join(", "))
            })
            .collect();
        let _ = writeln!(json, r#"      "perRound": [{}]"#, rounds.join(", "));
        let comma = if shape + 1 < SHAPES.len() { "," } else { "" };
        let _ = writeln!(json, "    }}{comma}");
    }
    let _ = writeln!(json, "  ]");
    let _ = writeln!(json, "}}");
    json
}
