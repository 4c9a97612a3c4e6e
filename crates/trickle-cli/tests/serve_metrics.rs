#![cfg(not(target_arch = "wasm32"))]
//! `trickle serve --metrics`, against the real binary on free ports of 127.0.0.1:
//! `/metrics` scraped during a run shows each counter moving by exactly what the requests
//! did, a group in shadow mode admits everything and counts its would-be refusals, a group
//! with a budget of free answers runs the handler exactly the budget's times, and an
//! address that cannot be had, or a bad key, stops serve before it listens.

mod binary;
#[path = "../../trickle-redis/tests/common/mod.rs"]
mod common;
#[path = "../../trickle-tower/tests/scrape/mod.rs"]
mod scrape;

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use binary::{client, trickle_within, ConfigFile, Http, Server};
use common::RedisServer;
use scrape::Scrape;
use trickle_tower::BREAKER_COOL_DOWN;

/// A 2XX costs 1 in `api` and `shadowed`, so that 10/1m admits exactly 10 requests;
/// `budget` keeps ESI's table (5XX costs nothing) with a budget of 5 free answers a minute.
const CONFIG: &str = r#"
[[group]]
name = "api"
limit = "10/1m"
costs = "2xx:1 4xx:5 429:0 5xx:0"
routes = ["/api"]

[[group]]
name = "shadowed"
limit = "10/1m"
costs = "2xx:1 4xx:5 429:0 5xx:0"
shadow = true
routes = ["/shadowed"]

[[group]]
name = "budget"
limit = "150/15m"
free_runs = "5/1m"
routes = ["/budget"]
"#;

/// The `/metrics` URL the server logs once it listens.
fn metrics_url(server: &Server) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = server.stderr();
        if let Some(url) = log
            .lines()
            .find_map(|line| line.split("metrics on ").nth(1))
        {
            return url.trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no `metrics on URL` in the log: {log}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// One scrape of `url`, whose answer must be Prometheus's text.
fn scrape(http: &Http, url: &str) -> Scrape {
    let reply = http.get(url, &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply
            .header("content-type")
            .is_some_and(|value| value.starts_with("text/plain; version=0.0.4")),
        "{:?}",
        reply.headers
    );
    Scrape::parse(&reply.body)
}

/// The whole run, scraped after each step: the counters of every group move by exactly
/// what that step's requests did, and no other group's do.
#[test]
fn metrics_scraped_during_a_run_move_exactly_with_the_requests() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &["--metrics", "127.0.0.1:0"]);
    let metrics = metrics_url(&server);
    assert!(metrics.starts_with("http://127.0.0.1:"), "{metrics}");
    assert!(metrics.ends_with("/metrics"), "{metrics}");
    let http = Http::new();
    let url = |path: &str| format!("{}{path}", server.url);
    let statuses = |path: &str, client_id: &str, times: usize| -> Vec<u16> {
        (0..times)
            .map(|_| http.get(&url(path), &client(client_id)).status)
            .collect()
    };

    let before = scrape(&http, &metrics);
    assert_eq!(
        before.get("trickle_decisions_total", &[("group", "api")]),
        None
    );
    assert_eq!(before.live_keys("api"), 0.0);

    // 15 requests on 10/1m: decided 15, admitted 10, refused 5.
    let api = statuses("/api", "a", 15);
    assert_eq!(api, [[200; 10].as_slice(), &[429; 5]].concat());
    let seen = scrape(&http, &metrics);
    assert_eq!(seen.counts("api"), [15.0, 10.0, 5.0, 0.0, 0.0, 0.0]);
    assert_eq!(
        (seen.timed("api", "reserve"), seen.timed("api", "settle")),
        (15.0, 10.0)
    );
    assert_eq!(seen.live_keys("api"), 1.0);
    assert_eq!(
        seen.get("trickle_decisions_total", &[("group", "shadowed")]),
        None
    );
    for (op, kind) in [
        ("reserve", "outage"),
        ("settle", "outage"),
        ("reserve", "data"),
    ] {
        let labels = [("group", "api"), ("op", op), ("kind", kind)];
        assert_eq!(seen.value("trickle_failures_total", &labels), 0.0);
    }
    assert_eq!(statuses("/api", "b", 1), [200]);
    assert_eq!(statuses("/api", "c", 1), [200]);
    let seen = scrape(&http, &metrics);
    assert_eq!(seen.counts("api"), [17.0, 12.0, 5.0, 0.0, 0.0, 0.0]);
    assert_eq!(seen.live_keys("api"), 3.0);

    // The same 15 in shadow mode: every one answered by the handler, the last 5 marked,
    // and counted as would-be refusals, not refusals.
    let mut marked = 0;
    for i in 0..15 {
        let reply = http.get(&url("/shadowed"), &client("a"));
        assert_eq!(reply.status, 200, "request {i}");
        if let Some(shadow) = reply.header("x-ratelimit-shadow") {
            assert!(i >= 10, "request {i} marked: {shadow}");
            assert!(
                shadow.starts_with("would-refuse;reason=limit;retry-after="),
                "{shadow}"
            );
            assert_eq!(reply.header("retry-after"), None);
            assert_eq!(reply.header("x-ratelimit-remaining"), Some("0"));
            marked += 1;
        }
    }
    assert_eq!(marked, 5);
    let seen = scrape(&http, &metrics);
    assert_eq!(seen.counts("shadowed"), [15.0, 10.0, 0.0, 0.0, 5.0, 0.0]);
    assert_eq!(seen.counts("api"), [17.0, 12.0, 5.0, 0.0, 0.0, 0.0]);

    // 40 requests answered 500 under ESI's table with a budget of 5/1m: the handler (whose
    // answer is the 500) runs exactly 5 times; the 35 refusals never ask the store.
    let budget = statuses("/budget?status=500", "a", 40);
    assert_eq!(budget, [[500; 5].as_slice(), &[429; 35]].concat());
    let seen = scrape(&http, &metrics);
    assert_eq!(seen.counts("budget"), [40.0, 5.0, 0.0, 35.0, 0.0, 0.0]);
    assert_eq!(seen.timed("budget", "reserve"), 5.0);

    // /metrics is not a route of the API, and the metrics address serves nothing else.
    assert_eq!(http.get(&url("/metrics"), &client("a")).status, 404);
    let elsewhere = metrics.replace("/metrics", "/api");
    assert_eq!(http.get(&elsewhere, &[]).status, 404);
    let seen = scrape(&http, &metrics);
    assert_eq!(seen.counts("api"), [17.0, 12.0, 5.0, 0.0, 0.0, 0.0]);
}

/// An address already taken stops serve at startup, exit code 1, before it announces
/// anything, with a message naming `--metrics`, the address and what to give instead.
#[test]
fn a_metrics_address_that_cannot_be_had_stops_serve_at_startup() {
    let config = ConfigFile::new(CONFIG);
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind a port on 127.0.0.1");
    let address = taken.local_addr().unwrap().to_string();
    let run = trickle_within(
        &[
            "serve",
            "--config",
            config.arg(),
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            &address,
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing announced");
    assert!(
        run.stderr
            .contains(&format!("cannot serve --metrics on {address}: "))
            && run.stderr.contains("as in --metrics 127.0.0.1:9090"),
        "{}",
        run.stderr
    );
}

/// A malformed `--metrics` is a usage error (exit code 2); a bad `shadow` or `free_runs`
/// in a group stops serve with the file, the line and what is allowed (exit code 1).
#[test]
fn bad_metrics_addresses_and_group_keys_say_what_is_allowed() {
    let config = ConfigFile::new(CONFIG);
    let run = trickle_within(
        &[
            "serve",
            "--config",
            config.arg(),
            "--metrics",
            "localhost:9090",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("invalid --metrics \"localhost:9090\"")
            && run.stderr.contains("127.0.0.1:9090"),
        "{}",
        run.stderr
    );

    #[rustfmt::skip]
    let cases: [(&str, &[&str]); 3] = [
        ("free_runs = \"0/1m\"", &["line 5", "group \"g\": invalid free_runs", "free_runs = \"20/1m\""]),
        ("free_runs = \"lots\"", &["line 5", "invalid free_runs"]),
        ("shadow = \"yes\"", &["line 5", "boolean"]),
    ];
    for (line, expected) in cases {
        let text =
            format!("[[group]]\nname = \"g\"\nlimit = \"6/8s\"\nroutes = [\"/g\"]\n{line}\n");
        let config = ConfigFile::new(&text);
        let run = trickle_within(
            &["serve", "--config", config.arg(), "--listen", "127.0.0.1:0"],
            Duration::from_secs(20),
        );
        assert_eq!(run.code, 1, "{line}: {}", run.stderr);
        for fragment in expected {
            assert!(run.stderr.contains(fragment), "{line}: {}", run.stderr);
        }
    }
}

/// A key of the wrong type counts as a data error; then `--on-failure fallback` with Redis
/// stopped: the fallback decides behind the layer's
/// back, and each scrape reads its own counts: 20 requests on one key (its half of 10
/// admits 5, each settled there too) are 25 fallback decisions; Redis was met down 3
/// times, and then the breaker opened (once) and stayed open, asking it no more.
#[test]
fn the_fallbacks_decisions_and_breaker_are_scraped() {
    let mut redis = RedisServer::start();
    let config = ConfigFile::new(
        "\n[[group]]\nname = \"api\"\nlimit = \"10/1h\"\ncosts = \"2xx:1\"\nroutes = [\"/api\"]\n",
    );
    let url = format!("redis+unix://{}", redis.socket().display());
    let server = Server::start(
        &config,
        &[
            "--redis",
            &url,
            "--on-failure",
            "fallback",
            "--fallback-share",
            "1/2",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let (http, metrics) = (Http::new(), metrics_url(&server));
    let route = format!("{}/api", server.url);
    assert_eq!(http.get(&route, &client("before")).status, 200);
    // A bucket another program overwrote: a data error, counted as one, not an outage.
    let mut conn = redis.connect();
    redis::cmd("SET")
        .arg("{trickle-serve:api:broken}:floating:limit:10/1h")
        .arg("not a bucket")
        .query::<()>(&mut conn)
        .expect("SET");
    assert_eq!(http.get(&route, &client("broken")).status, 500);
    let before = scrape(&http, &metrics);
    let fallback = [("group", "api")];
    let failures = |scrape: &Scrape, kind| {
        scrape.value(
            "trickle_failures_total",
            &[("group", "api"), ("op", "reserve"), ("kind", kind)],
        )
    };
    assert_eq!(
        (failures(&before, "data"), failures(&before, "outage")),
        (1.0, 0.0)
    );
    assert_eq!(
        before.value("trickle_fallback_decisions_total", &fallback),
        0.0
    );
    assert_eq!(before.value("trickle_breaker_state", &[]), 0.0);

    let stopped = Instant::now();
    redis.stop();
    let statuses: Vec<u16> = (0..20)
        .map(|_| http.get(&route, &client("during")).status)
        .collect();
    assert_eq!(statuses.iter().filter(|&&status| status == 200).count(), 5);
    let after = scrape(&http, &metrics);
    let elapsed = stopped.elapsed();
    assert_eq!(
        after.value("trickle_fallback_decisions_total", &fallback),
        25.0
    );
    // Three outages open the breaker; after that only a probe, one per 2 s cool-down,
    // asks Redis: none unless the machine made this take that long.
    let probes = after.value("trickle_fallback_outages_total", &fallback) - 3.0;
    let cool_downs = (elapsed.as_millis() / BREAKER_COOL_DOWN.as_millis()) as f64;
    assert!(
        (0.0..=cool_downs).contains(&probes),
        "{probes} probes in {elapsed:?} after Redis stopped"
    );
    assert_eq!(after.value("trickle_unknown_settles_total", &fallback), 0.0);
    assert_eq!(after.value("trickle_breaker_opened_total", &[]), 1.0);
    assert_eq!(after.value("trickle_breaker_state", &[]), 2.0);
    // The layer saw every one decided, by the fallback: no outage reached it.
    assert_eq!(after.value("trickle_decisions_total", &fallback), 22.0);
    assert_eq!(after.value("trickle_admitted_total", &fallback), 6.0);
    assert_eq!(failures(&after, "outage"), 0.0);
}
