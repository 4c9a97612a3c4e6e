//! What the layer counts (the `metrics` feature), scraped over real HTTP from a `/metrics`
//! of Prometheus's text, served on a listener of its own beside the limited server, as
//! `trickle serve --metrics` does: each counter moves by exactly what the requests did.
//!
//! The recorder is global to the process, so each test counts in groups of its own.

mod scrape;
mod support;

use std::future::Future;
use std::sync::{Arc, OnceLock};

use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use scrape::Scrape;
use support::{runtime, serve, Server};
use trickle_core::{Algorithm, Op, Policy, PolicyDecision};
use trickle_tower::metrics::{self, STORE_DURATION, STORE_DURATION_BUCKETS};
use trickle_tower::{Backend, InProcess, OnFailure};

/// The recorder, installed once for the whole file, before any request.
fn recorder() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full(STORE_DURATION.to_string()),
                    STORE_DURATION_BUCKETS,
                )
                .expect("bucket bounds")
                .install_recorder()
                .expect("the only recorder of this process");
            metrics::describe();
            handle
        })
        .clone()
}

/// `/metrics` for `server`, on a port of its own: the live keys of `backend` counted, then
/// everything rendered. Returns its URL.
fn serve_metrics(server: &Server, backend: Option<Arc<InProcess>>) -> String {
    let handle = recorder();
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let handle = handle.clone();
            let backend = backend.clone();
            async move {
                if let Some(backend) = backend {
                    metrics::record_live_keys(&backend);
                }
                handle.render()
            }
        }),
    );
    let listener = server
        .runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind a port on 127.0.0.1");
    let url = format!(
        "http://{}/metrics",
        listener.local_addr().expect("the bound address")
    );
    server
        .runtime
        .spawn(async move { axum::serve(listener, app).await });
    url
}

fn scrape(url: &str) -> Scrape {
    let text = ureq::get(url)
        .call()
        .expect("/metrics answers")
        .body_mut()
        .read_to_string()
        .expect("a text body");
    Scrape::parse(&text)
}

fn backend(group: &str, limit: &str) -> Arc<InProcess> {
    Arc::new(InProcess::new().with_group(group, Algorithm::Floating, limit.parse().unwrap()))
}

/// The run: 15 requests on 10/1m (a 2XX costing 1) give decisions 15, admitted 10,
/// refused 5, each admitted one timed twice (reserve, settle), each refused one once, and
/// one live key; two more clients make three. Scraped before, during and after.
#[test]
fn each_counter_moves_exactly_with_the_requests() {
    let group = "counted";
    let buckets = backend(group, "10/1m");
    let server = serve(runtime(), Arc::clone(&buckets), 0, |layer| {
        layer.costs("2xx:1 4xx:5 429:0 5xx:0".parse().unwrap())
    });
    let url = serve_metrics(&server, Some(buckets));
    let get = |client: &str| server.get("/status/200", Some(client), Some(group)).status;

    let before = scrape(&url);
    assert_eq!(
        before.get("trickle_decisions_total", &[("group", group)]),
        None
    );
    assert_eq!(before.value("trickle_live_keys", &[("group", group)]), 0.0);

    for _ in 0..5 {
        assert_eq!(get("a"), 200);
    }
    let during = scrape(&url);
    assert_eq!(during.counts(group), [5.0, 5.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(
        (
            during.timed(group, "reserve"),
            during.timed(group, "settle")
        ),
        (5.0, 5.0)
    );

    let statuses: Vec<u16> = (0..10).map(|_| get("a")).collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
    let after = scrape(&url);
    assert_eq!(after.counts(group), [15.0, 10.0, 5.0, 0.0, 0.0, 0.0]);
    assert_eq!(
        (after.timed(group, "reserve"), after.timed(group, "settle")),
        (15.0, 10.0)
    );
    assert_eq!(
        server.calls(),
        10,
        "the handler ran once per admitted request"
    );
    assert_eq!(after.value("trickle_live_keys", &[("group", group)]), 1.0);
    // The histogram's buckets are Prometheus's: the last holds every observation, and the
    // time spent is more than nothing.
    let all = [("group", group), ("op", "reserve"), ("le", "+Inf")];
    assert_eq!(
        after.value("trickle_store_duration_seconds_bucket", &all),
        15.0
    );
    let spent = after.value(
        "trickle_store_duration_seconds_sum",
        &[("group", group), ("op", "reserve")],
    );
    assert!(
        spent > 0.0 && spent < 1.0,
        "{spent} s for 15 in-process reserves"
    );
    for (op, kind) in [
        ("reserve", "outage"),
        ("reserve", "data"),
        ("settle", "outage"),
        ("settle", "data"),
    ] {
        assert_eq!(after.failures(group, op, kind), 0.0, "{op} {kind}");
    }

    assert_eq!((get("b"), get("c")), (200, 200));
    let more = scrape(&url);
    assert_eq!(more.counts(group), [17.0, 12.0, 5.0, 0.0, 0.0, 0.0]);
    assert_eq!(more.value("trickle_live_keys", &[("group", group)]), 3.0);
}

/// A normal layer and one in shadow mode over identical buckets, the same 120 requests at
/// the same irregular times: the shadow one's `would_refuse` equals the normal one's
/// `refused`, its `admitted` the normal one's, and it refuses nothing.
#[test]
fn shadow_mode_counts_as_would_refuse_exactly_what_a_normal_layer_refuses() {
    let (plain, shadowed) = ("twin-normal", "twin-shadow");
    let normal = serve(runtime(), backend(plain, "8/10s"), 0, |layer| layer);
    let shadow = serve(runtime(), backend(shadowed, "8/10s"), 0, |layer| {
        layer.shadow(true)
    });
    let url = serve_metrics(&normal, None);
    let statuses = [200, 404, 200, 304, 503, 200, 201, 400];
    let mut refused = 0.0;
    let mut now_ms = 0;
    for step in 0..120u64 {
        now_ms += (step * step * 37 + step * 11) % 2_300;
        normal.set_time(now_ms);
        shadow.set_time(now_ms);
        let path = format!("/status/{}", statuses[step as usize % statuses.len()]);
        let client = format!("key-{}", step % 2);
        if normal.get(&path, Some(&client), Some(plain)).status == 429 {
            refused += 1.0;
        }
        assert_ne!(shadow.get(&path, Some(&client), Some(shadowed)).status, 429);
    }
    let seen = scrape(&url);
    let [decided, admitted, ..] = seen.counts(plain);
    assert_eq!(
        seen.counts(plain),
        [120.0, 120.0 - refused, refused, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        seen.counts(shadowed),
        [decided, admitted, 0.0, 0.0, refused, 0.0]
    );
    assert!(refused >= 5.0, "the run must refuse some: {refused}");
    assert_eq!(shadow.calls(), 120);
}

/// A spent budget of free answers counts as `refused{reason="free_runs"}`, and never asks
/// the store: 40 requests answered 500 with a budget of 5/1m are 40 decisions, 5 admitted,
/// 35 refused, 5 reserves timed.
#[test]
fn a_spent_budget_counts_as_refused_for_free_runs_without_asking_the_store() {
    let group = "budgeted";
    let server = serve(runtime(), backend(group, "150/15m"), 0, |layer| {
        layer.free_runs("5/1m".parse().unwrap())
    });
    let url = serve_metrics(&server, None);
    for _ in 0..40 {
        server.get("/status/500", Some("a"), Some(group));
    }
    let seen = scrape(&url);
    assert_eq!(seen.counts(group), [40.0, 5.0, 0.0, 35.0, 0.0, 0.0]);
    assert_eq!(
        (seen.timed(group, "reserve"), seen.timed(group, "settle")),
        (5.0, 5.0)
    );
    assert_eq!(server.calls(), 5);
}

/// A backend whose reserve, or settle, always fails, as a Redis that is away.
struct Failing {
    buckets: InProcess,
    op: &'static str,
}

#[derive(Debug)]
struct Away;

impl std::fmt::Display for Away {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the store is away")
    }
}

impl std::error::Error for Away {}

impl Backend for Failing {
    type Error = Away;

    fn policy(&self, group: &str) -> Option<&Policy> {
        self.buckets.policy(group)
    }

    fn decide(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> impl Future<Output = Result<PolicyDecision, Away>> + Send {
        let fails = match op {
            Op::Reserve { .. } => self.op == "reserve",
            _ => self.op == "settle",
        };
        let decided = self.buckets.decide(group, key, op, now_ms, cost);
        async move {
            let decision = decided
                .await
                .map_err(|_: trickle_tower::InProcessError| Away)?;
            if fails {
                return Err(Away);
            }
            Ok::<_, Away>(decision)
        }
    }
}

/// Every failed store call counts under its op, as an outage, and is timed too; failing
/// open, the handler still runs.
#[test]
fn store_failures_count_by_op_and_are_timed() {
    for (op, group) in [("reserve", "failing-reserve"), ("settle", "failing-settle")] {
        let failing = Failing {
            buckets: InProcess::new().with_group(
                group,
                Algorithm::Floating,
                "10/1m".parse().unwrap(),
            ),
            op,
        };
        let server = serve(runtime(), failing, 0, |layer| {
            layer.on_failure(OnFailure::Open)
        });
        let url = serve_metrics(&server, None);
        for _ in 0..3 {
            assert_eq!(
                server.get("/status/200", Some("a"), Some(group)).status,
                200
            );
        }
        let seen = scrape(&url);
        let admitted = if op == "reserve" { 0.0 } else { 3.0 };
        assert_eq!(
            seen.counts(group),
            [3.0, admitted, 0.0, 0.0, 0.0, 0.0],
            "{op}"
        );
        assert_eq!(seen.failures(group, op, "outage"), 3.0, "{op}");
        assert_eq!(seen.failures(group, op, "data"), 0.0, "{op}");
        assert_eq!(seen.timed(group, op), 3.0, "{op}");
        assert_eq!(server.calls(), 3);
    }
}
