//! What the layer costs a request in CPU, without a network: an axum router with a trivial
//! handler called directly as a tower service, bare and behind the layer over the
//! in-process backend, in alternating rounds on one thread. Every request is admitted (1,000
//! keys, a limit none reaches), so what is timed is the path a normal request takes.
//!
//! `cargo run --release -p trickle-tower --example layer_cost`; the HTTP benchmark
//! (`benches/http_load.rs`) shows what this becomes over loopback. With `--json PATH`
//! (as `make bench` runs it) it also writes the figures there, for benches/report.mjs.

use std::time::Instant;

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use http::Request;
use tower_service::Service;
use trickle_core::Algorithm;
use trickle_tower::{InProcess, RateLimitLayer, Rejection, Subject};

const REQUESTS: usize = 200_000;
const KEYS: usize = 1_000;
const ROUNDS: usize = 5;

fn subject(request: &Request<Body>) -> Result<Option<Subject>, Rejection> {
    let client = request
        .headers()
        .get("x-client-id")
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| Rejection::bad_request("send X-Client-Id"))?;
    Ok(Some(Subject::new("bench", client)))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let router = Router::new().route("/hello", get(|| async { "ok" }));
    let backend = InProcess::new().with_group(
        "bench",
        Algorithm::Floating,
        "1000000/1h".parse().expect("a valid limit"),
    );
    let mut bare = router.clone().into_service::<Body>();
    let mut layered = router
        .layer(RateLimitLayer::new(backend, subject))
        .into_service::<Body>();

    let mut added = Vec::new();
    for round in 0..ROUNDS {
        let mut per_request = [0.0; 2];
        for (index, service) in [&mut bare, &mut layered].into_iter().enumerate() {
            let started = Instant::now();
            for i in 0..REQUESTS {
                let request = Request::get("/hello")
                    .header("x-client-id", format!("{round}-{}", i % KEYS))
                    .body(Body::empty())
                    .expect("a valid request");
                let response = service.call(request).await.expect("infallible");
                assert_eq!(response.status(), 200, "every request is admitted");
            }
            per_request[index] = started.elapsed().as_secs_f64() * 1e6 / REQUESTS as f64;
        }
        println!(
            "round {}: bare {:.2} µs, behind the layer {:.2} µs a request",
            round + 1,
            per_request[0],
            per_request[1]
        );
        added.push(per_request[1] - per_request[0]);
    }
    added.sort_by(f64::total_cmp);
    let median = added[added.len() / 2];
    println!("the layer adds {median:.2} µs a request (median of {ROUNDS} rounds)");

    let mut args = std::env::args().skip(1);
    if let (Some(flag), Some(path)) = (args.next(), args.next()) {
        assert_eq!(flag, "--json", "usage: layer_cost [--json PATH]");
        let json = format!(
            "{{ \"requests\": {REQUESTS}, \"keys\": {KEYS}, \"rounds\": {ROUNDS}, \"addedUs\": {median:.3} }}\n"
        );
        std::fs::write(&path, json).unwrap_or_else(|err| panic!("cannot write {path}: {err}"));
    }
}
