#![cfg(not(target_arch = "wasm32"))]
//! `trickle serve --redis`: two servers on one private redis-server share each client's
//! bucket and admit exactly what one limiter would; when Redis goes away mid-test, each
//! `--on-failure` does what it says (`fallback`: exactly this server's share of the
//! limit), nothing crashes, and decisions resume once Redis is back; a client id cannot
//! reach another bucket's key; a Redis that cannot be used at startup is an error.

mod binary;
#[path = "../../trickle-redis/tests/common/mod.rs"]
mod common;

use std::thread;
use std::time::{Duration, Instant};

use binary::{
    burst, client, counts, in_one_window_each, now_ms, trickle, trickle_within,
    wait_inside_windows, within_windows, ConfigFile, Counts, Http, Reply, Server,
};
use common::RedisServer;
use redis::Commands;
use trickle_core::flow::{Answer, Pricing};
use trickle_core::{Admission, Algorithm, FloatingWindow};
use trickle_redis::RedisPolicyLimiter;

/// One group with a window long enough that no test's requests straddle its end.
const SHARED: &str = r#"
[[group]]
name = "shared"
limit = "10/1h"
routes = ["/shared"]
"#;

fn url(server: &RedisServer) -> String {
    format!("redis+unix://{}", server.socket().display())
}

/// What ESI's flow on one bucket of the core answers: a reserve of 1, then a settle at the
/// status's cost; every request at one moment, as in the servers' hour-long window.
fn expected(statuses: &[u16]) -> Vec<Counts> {
    let mut bucket = FloatingWindow::new("10/1h".parse().unwrap());
    let esi = Pricing::esi();
    statuses
        .iter()
        .map(|&status| match bucket.reserve(0, esi.reserve_cost()) {
            Admission::Refused(refusal) => (429, Some(refusal.remaining()), Some(0)),
            Admission::Admitted { reservation, .. } => {
                let (cost, _) = esi.charge(Answer::Status(status));
                let settled = bucket.settle(reservation, 0, cost);
                (status, Some(settled.remaining()), Some(settled.spent()))
            }
        })
        .collect()
}

/// One group of 10 tokens a minute, a 2XX costing 1 (or ESI's table, with `esi`).
fn burst_config(costs: &str) -> ConfigFile {
    ConfigFile::new(&format!(
        "\n[[group]]\nname = \"burst\"\nlimit = \"10/1m\"\ncosts = \"{costs}\"\nroutes = [\"/burst\"]\n"
    ))
}

/// The tokens spent in the burst group's bucket of `client` (its two counters, whole, as a
/// burst may straddle a minute's edge), read from Redis under the servers' key prefix at
/// the latest time they decided at: a peek at time 0 on the caller's clock is decided there.
fn spent_in_redis(redis: &RedisServer, client: &str) -> u128 {
    let policy = "10/1m".parse().unwrap();
    let limiter =
        RedisPolicyLimiter::new(Algorithm::Floating, policy, "trickle-serve:burst").unwrap();
    let mut conn = redis.connect();
    let decision = limiter.peek(&mut conn, client, 0, 0).unwrap().decisions()[0];
    let counters = decision.counters.expect("the floating window's counters");
    counters.previous + counters.current
}

/// 200 parallel clients on one key, through two `trickle serve` processes on one
/// redis-server, a 2XX costing 1: exactly 10 get through and the bucket holds 10. (With a
/// peek before the handler and a charge after, as before reserve-then-settle, most of the
/// burst passed the same peek.)
#[test]
fn a_burst_of_200_through_two_servers_on_one_redis_admits_exactly_the_limit() {
    let redis = RedisServer::start();
    let config = burst_config("2xx:1 3xx:1 4xx:5 429:0 5xx:0");
    let url = url(&redis);
    let servers = [
        Server::start(&config, &["--redis", &url]),
        Server::start(&config, &["--redis", &url]),
    ];
    let paths = vec!["/burst".to_string(); 200];
    let urls = [servers[0].url.as_str(), servers[1].url.as_str()];
    let answers = burst(&urls, &paths, &client("one-key"));
    let admitted = answers.iter().filter(|(status, ..)| *status == 200).count();
    let refused = answers.iter().filter(|(status, ..)| *status == 429).count();
    assert_eq!((admitted, refused), (10, 190), "{answers:?}");
    assert_eq!(spent_in_redis(&redis, "one-key"), 10);
}

/// The same burst under ESI's costs (200: 2, 304: 1, 404: 5) with a reserve of 1: at most
/// 10 are admitted, and the bucket ends at exactly the sum of what they were charged.
#[test]
fn a_burst_under_esis_costs_through_two_servers_charges_exactly_what_was_admitted() {
    let redis = RedisServer::start();
    let config = burst_config("esi");
    let url = url(&redis);
    let servers = [
        Server::start(&config, &["--redis", &url]),
        Server::start(&config, &["--redis", &url]),
    ];
    let statuses = [200, 304, 404];
    let paths: Vec<String> = (0..200)
        .map(|i| format!("/burst?status={}", statuses[i % statuses.len()]))
        .collect();
    let urls = [servers[0].url.as_str(), servers[1].url.as_str()];
    let answers = burst(&urls, &paths, &client("one-key"));
    let admitted: Vec<_> = answers
        .iter()
        .filter(|(status, ..)| *status != 429)
        .collect();
    assert!(
        !admitted.is_empty() && admitted.len() <= 10,
        "{} admitted: {answers:?}",
        admitted.len()
    );
    let charged: u64 = admitted
        .iter()
        .map(|(_, _, used)| used.expect("X-Ratelimit-Used"))
        .sum();
    let priced: u64 = admitted
        .iter()
        .map(|(status, ..)| Pricing::esi().cost(Answer::Status(*status)).unwrap())
        .sum();
    assert_eq!(charged, priced);
    assert_eq!(spent_in_redis(&redis, "one-key"), u128::from(charged));
}

#[test]
fn two_servers_on_one_redis_admit_exactly_what_one_limiter_would() {
    let redis = RedisServer::start();
    let config = ConfigFile::new(SHARED);
    let url = url(&redis);
    let servers = [
        Server::start(&config, &["--redis", &url]),
        Server::start(&config, &["--redis", &url]),
    ];
    let http = Http::new();

    let statuses = [200, 404, 200, 503, 200, 200, 200, 304, 200];
    let seen: Vec<_> = statuses
        .iter()
        .enumerate()
        .map(|(i, status)| {
            let server = &servers[i % 2];
            let reply = http.get(
                &format!("{}/shared?status={status}", server.url),
                &client("alternating"),
            );
            assert_eq!(reply.header("x-ratelimit-group"), Some("shared"));
            assert_eq!(reply.header("x-ratelimit-limit"), Some("10/1h"));
            counts(&reply)
        })
        .collect();
    assert_eq!(seen, expected(&statuses));
    // The same, worked by hand: 2 + 5 + 2 + 0 + 2 = 11 spent, and the reserve of 1 fails.
    assert_eq!(
        seen,
        [
            (200, Some(8), Some(2)),
            (404, Some(3), Some(5)),
            (200, Some(1), Some(2)),
            (503, Some(1), Some(0)),
            (200, Some(0), Some(2)),
            (429, Some(0), Some(0)),
            (429, Some(0), Some(0)),
            (429, Some(0), Some(0)),
            (429, Some(0), Some(0)),
        ]
    );

    // The bucket is Redis's, under the documented key; another client's is its own.
    let mut conn = redis.connect();
    let exists: bool = conn
        .exists("{trickle-serve:shared:alternating}:floating:limit:10/1h")
        .unwrap();
    assert!(exists);
    let other = http.get(&format!("{}/shared", servers[1].url), &client("other"));
    assert_eq!(counts(&other), (200, Some(8), Some(2)));

    // A client id holding the hash tag's and the prefix's characters is escaped into a
    // key of its own, in a Cluster slot of its own.
    let odd = http.get(&format!("{}/shared", servers[0].url), &client("}a:b%"));
    assert_eq!(counts(&odd), (200, Some(8), Some(2)));
    let exists: bool = conn
        .exists("{trickle-serve:shared:%7Da%3Ab%25}:floating:limit:10/1h")
        .unwrap();
    assert!(exists);
}

/// Stops the server the way an outage does, without the test's handle on it.
fn shut_down(redis: &RedisServer) {
    let mut conn = redis.connect();
    // Redis closes the connection instead of answering.
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut conn);
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis::Client::open(redis.address())
        .and_then(|client| client.get_connection())
        .is_ok()
    {
        assert!(Instant::now() < deadline, "redis-server still answers");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Redis goes away mid-test: `check` judges each answer while it is away; then it comes
/// back (empty, as nothing is saved) and the next answers are decided and charged again.
fn outage(flags: &[&str], log: &str, check: impl Fn(&Reply)) {
    let mut redis = RedisServer::start();
    let config = ConfigFile::new(SHARED);
    let url = url(&redis);
    let mut server = Server::start(&config, &[&["--redis", url.as_str()][..], flags].concat());
    let http = Http::new();
    let route = format!("{}/shared", server.url);
    let get = |key| http.get(&route, &client(key));
    assert_eq!(counts(&get("before")), (200, Some(8), Some(2)));

    shut_down(&redis);
    for _ in 0..3 {
        let started = Instant::now();
        let reply = get("during");
        check(&reply);
        assert_eq!(reply.header("x-ratelimit-limit"), Some("10/1h"));
        assert_eq!(reply.header("x-ratelimit-group"), Some("shared"));
        assert_eq!(reply.header("x-ratelimit-remaining"), None);
        // A Redis that is away costs a request little, not the redis crate's default
        // retries of seconds.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
    assert!(server.is_running(), "{}", server.stderr());
    let stderr = server.log_containing(&[log]);
    assert!(stderr.contains(log), "no {log:?} in {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Back on the same socket: the connection manager reconnects by itself, within a few
    // requests (the first may find the old connection broken).
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(15);
    let resumed = loop {
        let reply = get("after");
        if reply.header("x-ratelimit-remaining").is_some() {
            break reply;
        }
        check(&reply);
        assert!(Instant::now() < deadline, "decisions did not resume");
        thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(counts(&resumed), (200, Some(8), Some(2)));
    assert_eq!(counts(&get("after")), (200, Some(6), Some(2)));
    assert!(server.is_running());
}

#[test]
fn a_redis_outage_fails_open_by_default_the_handler_answering_uncharged() {
    outage(&[], "failing open", |reply| {
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(
            reply.json(),
            serde_json::json!({"group": "shared", "route": "/shared", "status": 200})
        );
        assert_eq!(reply.header("retry-after"), None);
    });
}

#[test]
fn a_redis_outage_fails_closed_when_told_with_503_and_retry_after() {
    outage(&["--on-failure", "closed"], "failing closed", |reply| {
        assert_eq!(reply.status, 503, "{reply:?}");
        assert_eq!(reply.header("retry-after"), Some("1"));
        assert_eq!(
            reply.json()["detail"],
            "the rate limiter is unavailable; retry shortly"
        );
    });
}

/// One group of 10 tokens an hour, a 2XX costing 1, so that each request admitted is one
/// token: the fallback's share of 1/2 is 5 requests.
const FALLBACK: &str = r#"
[[group]]
name = "fallback"
limit = "10/1h"
costs = "2xx:1 3xx:1 4xx:5 429:0 5xx:0"
routes = ["/fallback"]
"#;

/// The tokens spent in the fallback group's bucket of `client` in Redis, at the latest time
/// Redis decided at (as [`spent_in_redis`]).
fn spent_in_fallback_group(redis: &RedisServer, client: &str) -> u128 {
    let limiter = RedisPolicyLimiter::new(
        Algorithm::Floating,
        "10/1h".parse().unwrap(),
        "trickle-serve:fallback",
    )
    .unwrap();
    let mut conn = redis.connect();
    let decision = limiter.peek(&mut conn, client, 0, 0).unwrap().decisions()[0];
    let counters = decision.counters.expect("the floating window's counters");
    counters.previous + counters.current
}

/// `--on-failure fallback --fallback-share 1/2`: with Redis paused (SIGSTOP: it takes the
/// connections and answers nothing), a burst of 50 parallel requests on one key gets
/// exactly 5 through (this server's half of 10) once each has waited out the timeout, and
/// the breaker opens; with Redis then killed, another key's burst gets exactly 5 too; once
/// Redis is back, decisions and charges are Redis's again.
#[test]
fn a_redis_outage_falls_back_to_this_servers_share_of_the_limit() {
    let mut redis = RedisServer::start();
    let config = ConfigFile::new(FALLBACK);
    let url = url(&redis);
    let mut server = Server::start(
        &config,
        &[
            "--redis",
            &url,
            "--on-failure",
            "fallback",
            "--fallback-share",
            "1/2",
        ],
    );
    let http = Http::new();
    let route = format!("{}/fallback", server.url);
    assert_eq!(
        counts(&http.get(&route, &client("before"))),
        (200, Some(9), Some(1))
    );

    let paths = vec!["/fallback".to_string(); 50];
    let admitted_of = |answers: &[(u16, Option<u64>, Option<u64>)]| {
        let admitted = answers.iter().filter(|(status, ..)| *status == 200).count();
        let refused = answers.iter().filter(|(status, ..)| *status == 429).count();
        (admitted, refused)
    };
    redis.pause();
    let answers = burst(&[server.url.as_str()], &paths, &client("paused"));
    assert_eq!(admitted_of(&answers), (5, 45), "{answers:?}");
    redis.stop();
    let answers = burst(&[server.url.as_str()], &paths, &client("during"));
    assert_eq!(admitted_of(&answers), (5, 45), "{answers:?}");
    // The fallback's own counts and limit: 5 tokens, none left.
    let reply = http.get(&route, &client("during"));
    assert_eq!(counts(&reply), (429, Some(0), Some(0)));
    assert_eq!(reply.header("x-ratelimit-limit"), Some("5/1h"));
    let other = http.get(&route, &client("during-2"));
    assert_eq!(counts(&other), (200, Some(4), Some(1)));
    assert_eq!(other.header("x-ratelimit-limit"), Some("5/1h"));
    let stderr = server.log_containing(&["circuit breaker open", "the fallback limiter decides"]);
    assert!(stderr.contains("circuit breaker open"), "{stderr}");
    assert!(stderr.contains("the fallback limiter decides"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Back, empty: within a few seconds (a cool-down or two) a request is Redis's: 10
    // tokens, 9 left, where the fallback says 4 at most; and it is in Redis's bucket.
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = http.get(&route, &client("after"));
        if counts(&reply) == (200, Some(9), Some(1)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "decisions did not return to Redis"
        );
        thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(spent_in_fallback_group(&redis, "after"), 1);
    let stderr = server.log_containing(&["circuit breaker closed"]);
    assert!(stderr.contains("circuit breaker closed"), "{stderr}");
    assert!(server.is_running());
}

/// A bucket's key SET to a string by another program: 500 with a JSON error naming the
/// problem and an ERROR in the log, under every rule (fail open would have let the key
/// through uncharged for good); the key beside it is decided by Redis.
#[test]
fn a_key_of_the_wrong_type_gets_500_under_every_rule() {
    let redis = RedisServer::start();
    let config = ConfigFile::new(SHARED);
    let url = url(&redis);
    let mut conn = redis.connect();
    let () = conn
        .set(
            "{trickle-serve:shared:broken}:floating:limit:10/1h",
            "not a bucket",
        )
        .unwrap();
    let http = Http::new();
    let rules: [&[&str]; 3] = [
        &[],
        &["--on-failure", "closed"],
        &["--on-failure", "fallback", "--fallback-share", "1/2"],
    ];
    for flags in rules {
        let server = Server::start(&config, &[&["--redis", url.as_str()][..], flags].concat());
        let route = format!("{}/shared", server.url);
        let reply = http.get(&route, &client("broken"));
        assert_eq!(reply.status, 500, "{flags:?}: {reply:?}");
        assert_eq!(
            reply.json()["detail"],
            "the rate limiter cannot decide this request: a Redis key of this bucket holds a \
             value of the wrong type (WRONGTYPE): another program wrote it",
            "{flags:?}"
        );
        let stderr = server.log_containing(&["WRONGTYPE"]);
        assert!(
            stderr
                .lines()
                .any(|line| line.contains("ERROR") && line.contains("WRONGTYPE")),
            "{flags:?}: {stderr}"
        );
        let fine = http.get(&route, &client(&format!("fine{}", flags.len())));
        assert_eq!(counts(&fine), (200, Some(8), Some(2)), "{flags:?}");
    }
}

#[test]
fn the_fallback_needs_a_share_that_leaves_every_group_a_token() {
    let redis = RedisServer::start();
    let config = ConfigFile::new(FALLBACK);
    let url = url(&redis);
    #[rustfmt::skip]
    let cases: &[(&[&str], &str)] = &[
        (&["--on-failure", "fallback"],
            "trickle: --on-failure fallback needs --fallback-share SHARE"),
        (&["--fallback-share", "1/2"],
            "trickle: --fallback-share only applies with --on-failure fallback"),
        (&["--on-failure", "fallback", "--fallback-share", "3/2"],
            "trickle: invalid --fallback-share: invalid share \"3/2\": expected a fraction P/Q"),
        (&["--on-failure", "fallback", "--fallback-share", "1/20"],
            "trickle: invalid --fallback-share: group \"fallback\": a share of 1/20 of its \
             limit 10/1h is less than one token"),
    ];
    for (flags, message) in cases {
        let args = [
            &["serve", "--config", config.arg(), "--redis", &url][..],
            flags,
        ]
        .concat();
        let run = trickle_within(&args, Duration::from_secs(30));
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.starts_with(message), "{flags:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{flags:?}: it listened");
    }
    let help = trickle(&["serve", "--help"], "").stdout;
    assert!(help.contains("--on-failure open|closed|fallback"), "{help}");
    assert!(help.contains("--fallback-share SHARE"), "{help}");
}

#[test]
fn a_redis_that_cannot_be_used_at_startup_is_an_error() {
    let redis = RedisServer::start();
    let config = ConfigFile::new(SHARED);
    let url = url(&redis);
    drop(redis);
    let run = trickle_within(
        &["serve", "--config", config.arg(), "--redis", &url],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .starts_with(&format!("trickle: cannot reach Redis at {url}: ")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--on-failure"), "{}", run.stderr);

    // N × W = 2^60: more than the floating window's script holds exactly. The file's
    // fault, so named with the group's line, before Redis is even asked.
    let config = ConfigFile::new(
        "\n[[group]]\nname = \"huge\"\nlimit = \"1152921504606846976/1ms\"\nroutes = [\"/h\"]\n",
    );
    let run = trickle_within(
        &["serve", "--config", config.arg(), "--redis", &url],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let prefix = format!(
        "trickle: config file {:?}, line 2: group \"huge\": limit 1152921504606846976/1ms is \
         too large for the floating algorithm on Redis",
        config.path()
    );
    assert!(run.stderr.starts_with(&prefix), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// A group of two limits on one Redis, through two `trickle serve` processes taking turns:
/// every answer is the core `PolicyLimiter`'s for the same request (its status, the limit
/// that refused it, each limit's remaining tokens), as if one limiter had stood before both.
/// Fixed windows make the core's mirror exact, each request sent well inside its windows and
/// answered before they end (an attempt where one was not starts over on fresh buckets).
#[test]
fn two_servers_on_one_redis_decide_a_policy_as_the_core_does() {
    use trickle_core::{Op, Policy, PolicyLimiter, Reservation};

    let redis = RedisServer::start();
    let config = ConfigFile::new(
        "headers = \"both\"\n[[group]]\nname = \"pair\"\nlimit = \"burst=2/1s 5/1h\"\n\
         algorithm = \"fixed\"\ncosts = \"2xx:1\"\nroutes = [\"/pair\"]\n",
    );
    let url = url(&redis);
    let servers = [
        Server::start(&config, &["--redis", &url]),
        Server::start(&config, &["--redis", &url]),
    ];
    let http = Http::new();
    let policy: Policy = "burst=2/1s 5/1h".parse().unwrap();
    let seen = in_one_window_each(|attempt| {
        let id = format!("both-{attempt}");
        let mut core = PolicyLimiter::with_algorithm(Algorithm::Fixed, policy.clone());
        let mut seen = Vec::new();
        wait_inside_windows(&policy, 300);
        let began = now_ms();
        for second in 0..4 {
            wait_inside_windows(&policy, 300);
            // A second's three requests are meant for one second: each is answered in it.
            let first_sent = now_ms();
            for turn in 0..3 {
                let server = &servers[(second + turn) % 2];
                let sent = now_ms();
                let reply = http.get(&format!("{}/pair", server.url), &client(&id));
                within_windows(policy.limits(), first_sent, now_ms())?;
                // The server's flow, in the core: reserve 1, then settle at what a 2XX
                // costs (1).
                let ticket = Reservation::new_ticket();
                let mut answer = core.decide(Op::Reserve { ticket }, sent, 1);
                if answer.is_allowed() {
                    let reservation = Reservation::from_parts(sent, 1, ticket);
                    answer = core.decide(Op::settle(reservation), sent, 1);
                }
                let remaining: Vec<String> = answer
                    .decisions()
                    .iter()
                    .zip(policy.iter())
                    .map(|(own, (name, _))| format!("\"{name}\";r={}", own.remaining()))
                    .collect();
                let said: Vec<String> = reply
                    .header("ratelimit")
                    .expect("RateLimit")
                    .split(", ")
                    .map(|item| item.split(";t=").next().unwrap().to_string())
                    .collect();
                assert_eq!(said, remaining, "second {second}, turn {turn}: {reply:?}");
                let nearest = answer.decisions()[answer.nearest()].remaining().to_string();
                assert_eq!(reply.header("x-ratelimit-remaining"), Some(&*nearest));
                let refused_by = answer.answered_by().map(|index| policy.name(index));
                if reply.status == 429 {
                    let violated = reply.json()["violated-policies"].clone();
                    let names = trickle_core::ietf::violated_policies(&policy, &answer);
                    assert_eq!(violated, serde_json::json!(names), "{reply:?}");
                }
                seen.push((reply.status, refused_by));
            }
            thread::sleep(Duration::from_millis(1_000 - now_ms() % 1_000));
        }
        // And the four seconds within the windows longer than a second: the hour's.
        let longer = policy.limits().filter(|limit| limit.window_ms() > 1_000);
        within_windows(longer, began, now_ms())?;
        Ok(seen)
    });
    assert_eq!(
        seen,
        [
            (200, None),
            (200, None),
            (429, Some("burst")),
            (200, None),
            (200, None),
            (429, Some("burst")),
            // The fifth token of the hour, then the hour refuses, whatever the second.
            (200, None),
            (429, Some("5/1h")),
            (429, Some("5/1h")),
            (429, Some("5/1h")),
            (429, Some("5/1h")),
            (429, Some("5/1h")),
        ]
    );
}
