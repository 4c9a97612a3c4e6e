#![cfg(not(target_arch = "wasm32"))]
//! `trickle serve` with its buckets in process, against the real binary on a free port:
//! ESI's flow with the numbers the core gives, CORS for a docs page on another origin, bad
//! requests and bad config files answered with what is allowed, and a clean stop on a
//! signal.

mod binary;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use binary::{client, counts, trickle_within, ConfigFile, Counts, Http, Server};
use trickle_core::FloatingWindow;

/// Three groups: ESI's fitting limit, and two with windows long enough that no test's
/// requests can straddle a window's end and see earlier tokens fade.
const CONFIG: &str = r#"
[[group]]
name = "fitting"
limit = "6/8s"
routes = ["/fittings", "/fittings/ships"]

[[group]]
name = "market"
limit = "20/1h"
algorithm = "floating"
costs = "esi"
routes = ["/markets"]

[[group]]
name = "search"
limit = "10/1h"
algorithm = "token-bucket"
costs = "2xx:1 4xx:3 429:0 5xx:0"
routes = ["/search"]
"#;

/// The headers the page may read, in either dialect, as CORS lists them.
const EXPOSED: [&str; 8] = [
    "ratelimit",
    "ratelimit-policy",
    "retry-after",
    "x-ratelimit-group",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-shadow",
    "x-ratelimit-used",
];

/// Request headers, as a table row gives them.
type Headers<'a> = &'a [(&'a str, &'a str)];

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since.as_millis()).unwrap()
}

/// The core's Retry-After for the fourth request to 6/8s after three 200s, all at `at_ms`.
fn retry_after_s(at_ms: u64) -> u64 {
    let mut bucket = FloatingWindow::new("6/8s".parse().unwrap());
    for _ in 0..3 {
        assert!(bucket.peek(at_ms, 1).is_allowed());
        bucket.record(at_ms, 2);
    }
    bucket.peek(at_ms, 1).retry_after_s().unwrap()
}

#[test]
fn each_answer_is_charged_by_its_status_in_its_groups_bucket_for_its_client() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    let url = |path: &str| format!("{}{path}", server.url);

    // 6/8s, a 200 costing 2: three fit, then the peek of 1 finds none free.
    let before_ms = now_ms();
    let mut replies = Vec::new();
    for _ in 0..4 {
        replies.push(http.get(&url("/fittings"), &client("a")));
    }
    let after_ms = now_ms();
    let seen: Vec<_> = replies.iter().map(counts).collect();
    assert_eq!(
        seen,
        [
            (200, Some(4), Some(2)),
            (200, Some(2), Some(2)),
            (200, Some(0), Some(2)),
            (429, Some(0), Some(0)),
        ]
    );
    for (index, reply) in replies.iter().enumerate() {
        assert_eq!(reply.header("x-ratelimit-limit"), Some("6/8s"));
        assert_eq!(reply.header("x-ratelimit-group"), Some("fitting"));
        // The handler's answers are JSON; the refusal is an RFC 9457 problem.
        let json = if index < 3 {
            "application/json"
        } else {
            "application/problem+json"
        };
        assert_eq!(reply.header("content-type"), Some(json));
    }
    let refusal = replies[3].json();
    assert_eq!(
        (
            &refusal["type"],
            &refusal["status"],
            &refusal["violated-policies"]
        ),
        (
            &serde_json::json!("https://iana.org/assignments/http-problem-types#quota-exceeded"),
            &serde_json::json!(429),
            &serde_json::json!(["6/8s"])
        )
    );
    assert_eq!(
        replies[0].json(),
        serde_json::json!({"group": "fitting", "route": "/fittings", "status": 200})
    );
    // How long depends on where in its window the bucket is: up to the window's end, and
    // then 8/6 s more for the window's 6 tokens to fade to 5 (10 s in all at the window's
    // start, 2 s at its end). The core's answer for the requests at the first moment and
    // at the last bound it.
    let retry_after: u64 = replies[3].header("retry-after").unwrap().parse().unwrap();
    let (earliest, latest) = (retry_after_s(before_ms), retry_after_s(after_ms));
    assert!(
        (earliest.min(latest)..=earliest.max(latest)).contains(&retry_after),
        "Retry-After {retry_after}, expected from {earliest} to {latest}"
    );
    assert!((2..=10).contains(&retry_after));
    assert!(
        replies[3].json()["detail"]
            .as_str()
            .unwrap()
            .contains("rate limit 6/8s of group fitting exceeded"),
        "{}",
        replies[3].body
    );
    assert_eq!(replies[0].header("retry-after"), None);

    // Another route of the same group spends the same bucket; another client has its own.
    assert_eq!(http.get(&url("/fittings/ships"), &client("a")).status, 429);
    let other = http.get(&url("/fittings/ships"), &client("b"));
    assert_eq!(counts(&other), (200, Some(4), Some(2)));
    assert_eq!(other.json()["route"], "/fittings/ships");

    // Another group is another bucket for the same client. ESI's table: 404 costs 5, 503
    // nothing, 304 1, 204 2; the body asks for the status it gets.
    #[rustfmt::skip]
    let rows: [(&str, Counts); 6] = [
        ("",            (200, Some(18), Some(2))),
        ("?status=404", (404, Some(13), Some(5))),
        ("?status=503", (503, Some(13), Some(0))),
        ("?status=304", (304, Some(12), Some(1))),
        ("?status=204", (204, Some(10), Some(2))),
        ("?status=429", (429, Some(10), Some(0))),
    ];
    for (query, want) in rows {
        let reply = http.get(&url(&format!("/markets{query}")), &client("a"));
        assert_eq!(counts(&reply), want, "/markets{query}");
        assert_eq!(reply.header("x-ratelimit-group"), Some("market"));
        assert_eq!(reply.header("x-ratelimit-limit"), Some("20/1h"));
        if matches!(reply.status, 204 | 304) {
            assert_eq!(reply.body, "", "{query}");
        } else {
            assert_eq!(reply.json()["status"], reply.status, "{query}");
        }
    }
    // HEAD is a GET without the body, and charged as one.
    let head = http.send("HEAD", &url("/markets"), &client("a"));
    assert_eq!(counts(&head), (200, Some(8), Some(2)));
    assert_eq!(head.body, "");

    // A group's own cost table: a 200 costs 1 and a 404 3 in the token bucket.
    let search = http.get(&url("/search"), &client("a"));
    assert_eq!(counts(&search), (200, Some(9), Some(1)));
    let search = http.get(&url("/search?status=404"), &client("a"));
    assert_eq!(counts(&search), (404, Some(6), Some(3)));
}

#[test]
fn what_no_route_takes_is_not_charged() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    let url = |path: &str| format!("{}{path}", server.url);

    let unknown = http.get(&url("/nowhere"), &client("c"));
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.header("x-ratelimit-remaining"), None);
    let message = unknown.json()["detail"].as_str().unwrap().to_string();
    assert!(message.contains("/nowhere"), "{message}");
    assert!(message.contains("/fittings, /fittings/ships, /markets, /search"));
    // A route's path with a trailing slash is another path.
    assert_eq!(http.get(&url("/markets/"), &client("c")).status, 404);
    let post = http.send("POST", &url("/markets"), &client("c"));
    assert_eq!(post.status, 405);
    assert_eq!(post.header("x-ratelimit-remaining"), None);

    assert_eq!(
        counts(&http.get(&url("/markets"), &client("c"))),
        (200, Some(18), Some(2))
    );
}

#[test]
fn cors_lets_any_page_call_the_api_and_read_the_rate_limit_headers() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    let url = format!("{}/markets", server.url);
    let origin = ("Origin", "http://docs.test");

    // The preflight a browser sends before a GET with X-Client-Id: answered by CORS alone,
    // without a client id and without a charge.
    let preflight = http.send(
        "OPTIONS",
        &url,
        &[
            origin,
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "x-client-id"),
        ],
    );
    assert_eq!(preflight.status, 200, "{preflight:?}");
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        preflight.header("access-control-allow-headers"),
        Some("x-client-id")
    );
    assert_eq!(
        preflight.header("access-control-allow-methods"),
        Some("GET,HEAD")
    );
    assert_eq!(preflight.header("access-control-max-age"), Some("600"));
    assert_eq!(preflight.header("access-control-allow-credentials"), None);
    assert_eq!(preflight.header("x-ratelimit-remaining"), None);

    // Every answer to a page exposes exactly the five headers: a 200, a 429, a 400, a 404.
    let [id] = client("cors");
    let mut answers = vec![http.get(&url, &[origin, id])];
    answers.push(http.get(&format!("{}/nowhere", server.url), &[origin, id]));
    answers.push(http.get(&url, &[origin]));
    for _ in 0..10 {
        answers.push(http.get(&url, &[origin, id]));
    }
    assert_eq!(
        counts(&answers[0]),
        (200, Some(18), Some(2)),
        "the preflight was charged"
    );
    assert_eq!(answers[1].status, 404);
    assert_eq!(answers[2].status, 400);
    assert_eq!(answers.last().unwrap().status, 429);
    for answer in &answers {
        assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
        let mut exposed: Vec<String> = answer
            .header("access-control-expose-headers")
            .unwrap_or_else(|| panic!("no expose-headers: {answer:?}"))
            .split(',')
            .map(|name| name.trim().to_ascii_lowercase())
            .collect();
        exposed.sort();
        assert_eq!(exposed, EXPOSED, "{answer:?}");
        assert_eq!(answer.header("access-control-allow-credentials"), None);
    }
}

#[test]
fn cors_answers_only_the_origins_listed() {
    let config = ConfigFile::new(&format!(
        "cors_origins = [\"http://allowed.test\", \"http://localhost:3000\"]\n{CONFIG}"
    ));
    let server = Server::start(&config, &[]);
    let http = Http::new();
    let url = format!("{}/markets", server.url);
    let preflight = |origin| {
        http.send(
            "OPTIONS",
            &url,
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "GET"),
                ("Access-Control-Request-Headers", "x-client-id"),
            ],
        )
    };

    for origin in ["http://allowed.test", "http://localhost:3000"] {
        assert_eq!(
            preflight(origin).header("access-control-allow-origin"),
            Some(origin)
        );
        let answer = http.get(&url, &[("Origin", origin), ("X-Client-Id", origin)]);
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("access-control-allow-origin"), Some(origin));
        // A cache must not hand one origin's answer to another.
        assert!(
            answer.headers.get_all("vary").iter().any(|value| value
                .to_str()
                .unwrap()
                .to_ascii_lowercase()
                .contains("origin")),
            "{answer:?}"
        );
    }
    for origin in ["http://other.test", "http://allowed.test.evil", "null"] {
        assert_eq!(
            preflight(origin).header("access-control-allow-origin"),
            None,
            "{origin}"
        );
        let answer = http.get(&url, &[("Origin", origin), ("X-Client-Id", "other")]);
        assert_eq!(
            answer.header("access-control-allow-origin"),
            None,
            "{origin}"
        );
    }
}

#[test]
fn a_request_without_a_valid_client_id_status_or_delay_is_a_400_and_costs_nothing() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    let url = format!("{}/markets", server.url);
    let long = "x".repeat(65);

    #[rustfmt::skip]
    let cases: [(&str, Headers, &[&str]); 12] = [
        ("", &[], &["send an X-Client-Id header", "1 to 64 visible ASCII characters"]),
        ("", &[("X-Client-Id", "")], &["X-Client-Id is empty", "1 to 64"]),
        ("", &[("X-Client-Id", &long)], &["X-Client-Id is 65 bytes long", "1 to 64"]),
        ("", &[("X-Client-Id", "two words")], &["X-Client-Id holds a space", "1 to 64"]),
        ("", &[("X-Client-Id", "a"), ("X-Client-Id", "b")], &["more than once"]),
        ("?status=abc", &[("X-Client-Id", "s")], &["?status=abc is not a status from 200 to 599"]),
        ("?status=600", &[("X-Client-Id", "s")], &["?status=600", "200 to 599"]),
        ("?status=199", &[("X-Client-Id", "s")], &["?status=199", "200 to 599"]),
        ("?status=200&status=404", &[("X-Client-Id", "s")], &["more than once"]),
        ("?delay_ms=1001", &[("X-Client-Id", "s")], &["?delay_ms=1001 is not a whole number of milliseconds from 0 to 1000"]),
        ("?delay_ms=soon", &[("X-Client-Id", "s")], &["?delay_ms=soon", "0 to 1000"]),
        ("?delay_ms=1&delay_ms=2", &[("X-Client-Id", "s")], &["?delay_ms= is given more than once"]),
    ];
    for (query, headers, expected) in cases {
        let reply = http.get(&format!("{url}{query}"), headers);
        let case = format!("{query} {headers:?}");
        assert_eq!(reply.status, 400, "{case}: {reply:?}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/problem+json")
        );
        assert_eq!(reply.header("x-ratelimit-remaining"), None, "{case}");
        let message = reply.json()["detail"].as_str().unwrap().to_string();
        for text in expected {
            assert!(message.contains(text), "{case}: no {text:?} in {message:?}");
        }
    }
    // The client whose statuses and delays were refused still has a full bucket.
    assert_eq!(
        counts(&http.get(&url, &client("s"))),
        (200, Some(18), Some(2))
    );
    // A wait the demo may make is charged as any answer, after it.
    let started = std::time::Instant::now();
    let slow = http.get(&format!("{url}?delay_ms=300&status=404"), &client("s"));
    assert!(started.elapsed() >= Duration::from_millis(300), "{slow:?}");
    assert_eq!(counts(&slow), (404, Some(13), Some(5)));
    // 64 characters is the most, and any visible ASCII will do.
    let longest = "~".repeat(63) + "!";
    assert_eq!(http.get(&url, &client(&longest)).status, 200);
}

#[test]
fn oversized_headers_get_a_431_and_the_server_stays_up() {
    let config = ConfigFile::new(CONFIG);
    let mut server = Server::start(&config, &[]);
    let http = Http::new();
    let url = format!("{}/markets", server.url);

    // 100 kB: within what hyper reads, so the server's own check answers, with a message.
    let padding = "a".repeat(100_000);
    let reply = http.get(&url, &[("X-Client-Id", "big"), ("X-Padding", &padding)]);
    assert_eq!(reply.status, 431, "{:?}", reply.headers);
    let message = reply.json()["detail"].as_str().unwrap().to_string();
    assert!(message.contains("at most 8192"), "{message}");
    assert_eq!(reply.header("x-ratelimit-remaining"), None);

    // 1 MB: past hyper's read buffer, which answers 431 itself and closes the connection,
    // maybe before the client has sent it all.
    let address = server.url.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let request = format!(
        "GET /markets HTTP/1.1\r\nHost: {address}\r\nX-Client-Id: huge\r\nX-Padding: {}\r\n\r\n",
        "a".repeat(1_000_000)
    );
    let sent = stream.write_all(request.as_bytes());
    let mut answer = String::new();
    let read = stream.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 431") || sent.is_err() || read.is_err() || answer.is_empty(),
        "{answer:?}"
    );

    assert!(server.is_running());
    assert_eq!(
        counts(&http.get(&url, &client("big"))),
        (200, Some(18), Some(2)),
        "a refused request was charged"
    );
}

#[test]
fn sigterm_and_sigint_stop_the_server_cleanly() {
    let config = ConfigFile::new(CONFIG);
    for signal in ["TERM", "INT"] {
        let mut server = Server::start(&config, &[]);
        let http = Http::new();
        // The client keeps its connection open for the next request; the stop must not
        // wait for it.
        assert_eq!(
            http.get(&format!("{}/markets", server.url), &client("x"))
                .status,
            200
        );
        let status = server
            .signal_and_wait(signal, Duration::from_secs(8))
            .unwrap_or_else(|| panic!("still running 8 s after SIG{signal}"));
        assert_eq!(status.code(), Some(0), "SIG{signal}: {}", server.stderr());
        let stderr = server.log_containing(&[&format!("SIG{signal}"), "stopped"]);
        assert!(stderr.contains(&format!("SIG{signal}")), "{stderr}");
        assert!(stderr.contains("stopped"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A config file that cannot be served: exit code 1 before any socket is opened, and one
/// message naming the file, the line to blame and what is allowed.
#[test]
fn bad_config_files_are_refused_with_the_line_and_what_is_allowed() {
    #[rustfmt::skip]
    let cases: [(&str, &str, &[&str]); 21] = [
        ("unknown algorithm",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nalgorithm = \"gcra\"\nroutes = [\"/a\"]\n",
            &["line 4: ", "unknown algorithm \"gcra\"", "floating, sliding-log, fixed or token-bucket"]),
        ("bad limit",
            "[[group]]\nname = \"a\"\nlimit = \"6/8x\"\nroutes = [\"/a\"]\n",
            &["line 3: ", "group \"a\": invalid limit", "unit must be ms, s, m or h"]),
        ("zero limit",
            "[[group]]\nname = \"a\"\nlimit = \"0/8s\"\nroutes = [\"/a\"]\n",
            &["line 3: ", "at least 1 token"]),
        ("invalid TOML",
            "[[group]\nname = \"a\"\n",
            &["line 1: "]),
        ("unknown field in a group",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a\"]\nburst = 3\n",
            &["line 5: ", "unknown field `burst`", "`name`, `limit`, `algorithm`, `costs`, `routes`"]),
        ("unknown field at the top",
            "cors = [\"*\"]\n[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a\"]\n",
            &["line 1: ", "unknown field `cors`", "`cors_origins`, `headers`, `redis_cluster`, `group`"]),
        ("a header dialect nobody speaks",
            "headers = \"draft-7\"\n[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a\"]\n",
            &["line 1: ", "headers = \"draft-7\" is no header dialect", "\"esi\"", "\"ietf\"", "\"both\""]),
        ("a policy naming two limits alike",
            "[[group]]\nname = \"a\"\nlimit = \"10/1s 10/1s\"\nroutes = [\"/a\"]\n",
            &["line 3: ", "two limits named \"10/1s\"", "burst=10/1s"]),
        ("a route in two groups",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a\"]\n\n[[group]]\nname = \"b\"\nlimit = \"6/8s\"\nroutes = [\"/b\", \"/a\"]\n",
            &["line 9: ", "route \"/a\" is in group \"b\" and in group \"a\" (line 4)"]),
        ("a route twice in one group",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a\",\n  \"/a\"]\n",
            &["line 5: ", "lists route \"/a\" twice"]),
        ("no group",
            "cors_origins = [\"*\"]\n",
            &["no route group", "[[group]]"]),
        ("an empty file",
            "",
            &["no route group"]),
        ("no routes",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = []\n",
            &["line 4: ", "group \"a\" has no routes"]),
        ("a route without '/'",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"a\"]\n",
            &["line 4: ", "route \"a\" does not start with '/'", "as in \"/fittings\""]),
        ("a route with a capture, which axum would read as one",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a/{id}\"]\n",
            &["line 4: ", "route \"/a/{id}\" holds a character other than"]),
        ("a route axum would panic on",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a/:id\"]\n",
            &["line 4: ", "route \"/a/:id\""]),
        ("two groups of one name",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a\"]\n[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/b\"]\n",
            &["line 6: ", "a second group named \"a\" (the first is on line 1)"]),
        ("a bad cost table",
            "[[group]]\nname = \"a\"\nlimit = \"6/8s\"\ncosts = \"2xx=2\"\nroutes = [\"/a\"]\n",
            &["line 4: ", "invalid costs", "STATUS:COST"]),
        ("an origin with a path",
            "cors_origins = [\"http://docs.test/\"]\n[[group]]\nname = \"a\"\nlimit = \"6/8s\"\nroutes = [\"/a\"]\n",
            &["line 1: ", "\"http://docs.test/\" is not an origin", "no path or trailing '/'"]),
        ("a window whose keys would never leave",
            "[[group]]\nname = \"a\"\nlimit = \"1/5124095576h\"\nroutes = [\"/a\"]\n",
            &["line 3: ", "limit 1/5124095576h has a window longer than 744h", "two windows", "--max-window"]),
        ("a group name with a space",
            "[[group]]\nname = \"a b\"\nlimit = \"6/8s\"\nroutes = [\"/a\"]\n",
            &["line 2: ", "group name \"a b\" must be 1 to 64 letters, digits"]),
    ];
    for (case, text, expected) in cases {
        let config = ConfigFile::new(text);
        let run = trickle_within(
            &["serve", "--config", config.arg(), "--listen", "127.0.0.1:0"],
            Duration::from_secs(30),
        );
        assert!(!run.stderr.contains("panicked"), "{case}: {}", run.stderr);
        assert_eq!(run.code, 1, "{case}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{case}: it listened");
        let prefix = format!("trickle: config file {:?}", config.path());
        assert!(run.stderr.starts_with(&prefix), "{case}: {}", run.stderr);
        for text in expected {
            assert!(
                run.stderr.contains(text),
                "{case}: no {text:?} in {}",
                run.stderr
            );
        }
    }

    let run = trickle_within(
        &["serve", "--config", "no/such/serve.toml"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("trickle: cannot read the config file \"no/such/serve.toml\": "),
        "{}",
        run.stderr
    );
}

/// Exit code 2 and the hint to --help, as replay's usage errors.
#[test]
fn a_serve_command_line_that_cannot_work_is_a_usage_error() {
    let config = ConfigFile::new(CONFIG);
    let path = config.arg();
    #[rustfmt::skip]
    let cases: [(&[&str], &[&str]); 14] = [
        (&["serve"], &["serve needs --config FILE"]),
        (&["serve", "--config", path, "--listen", "localhost:80"],
            &["invalid --listen \"localhost:80\"", "127.0.0.1:8080"]),
        (&["serve", "--config", path, "--listen", "127.0.0.1"], &["invalid --listen"]),
        (&["serve", "--config", path, "--on-failure", "maybe"],
            &["invalid --on-failure \"maybe\"", "open", "closed"]),
        (&["serve", "--config", path, "extra"], &["unexpected argument \"extra\""]),
        (&["serve", "--config", path, "--config", path], &["--config is given more than once"]),
        (&["serve", "--config", path, "--redis", "localhost:6379"],
            &["invalid --redis \"localhost:6379\"", "redis://HOST:PORT/"]),
        (&["serve", "--config", path, "--header-timeout", "0s"],
            &["invalid --header-timeout \"0s\"", "a unit ms, s, m or h, from 1ms to 24h"]),
        (&["serve", "--config", path, "--idle-timeout", "30"], &["invalid --idle-timeout \"30\""]),
        (&["serve", "--config", path, "--drain-timeout", "25h"], &["invalid --drain-timeout", "to 24h"]),
        (&["serve", "--config", path, "--max-connections", "0"],
            &["invalid --max-connections \"0\"", "from 1 to 1000000"]),
        (&["serve", "--config", path, "--max-connections", "many"], &["invalid --max-connections"]),
        (&["serve", "--config", path, "--max-window", "9000h"],
            &["invalid --max-window \"9000h\"", "from 1ms to 8784h"]),
        (&["serve", "--config", path, "--idle-timeout", "1s", "--idle-timeout", "2s"],
            &["--idle-timeout is given more than once"]),
    ];
    for (args, expected) in cases {
        let run = trickle_within(args, Duration::from_secs(30));
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(run.stderr.starts_with("trickle: "), "{}", run.stderr);
        for text in expected {
            assert!(
                run.stderr.contains(text),
                "{args:?}: no {text:?} in {}",
                run.stderr
            );
        }
    }
}

/// `--max-window` lets a longer window through, for a server whose operator has decided
/// its keys may stay that long.
#[test]
fn max_window_allows_a_longer_window() {
    let config = ConfigFile::new(
        "[[group]]\nname = \"yearly\"\nlimit = \"100000/8784h\"\nroutes = [\"/yearly\"]\n",
    );
    let server = Server::start(&config, &["--max-window", "8784h"]);
    let reply = Http::new().get(&format!("{}/yearly", server.url), &client("y"));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.header("x-ratelimit-limit"), Some("100000/8784h"));
}

#[test]
fn an_address_in_use_is_an_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let config = ConfigFile::new(CONFIG);
    let run = trickle_within(
        &["serve", "--config", config.arg(), "--listen", &address],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with(&format!("trickle: cannot listen on {address}: ")),
        "{}",
        run.stderr
    );
}

/// The sample config file serves, each of its routes in the group it says.
#[test]
fn the_example_config_serves_its_routes() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/serve.toml"
    ))
    .unwrap();
    let config = ConfigFile::new(&text);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    #[rustfmt::skip]
    let routes: [(&str, &str, &str, u64); 5] = [
        ("/fittings", "fitting", "6/8s", 4),
        ("/fittings/ships", "fitting", "6/8s", 2),
        ("/markets/prices", "market", "150/15m", 148),
        ("/markets/orders", "market", "150/15m", 146),
        ("/search", "search", "10/1m", 9),
    ];
    for (route, group, limit, remaining) in routes {
        let reply = http.get(&format!("{}{route}", server.url), &client("example"));
        assert_eq!(reply.status, 200, "{route}");
        assert_eq!(reply.header("x-ratelimit-group"), Some(group), "{route}");
        assert_eq!(reply.header("x-ratelimit-limit"), Some(limit), "{route}");
        assert_eq!(
            reply.header("x-ratelimit-remaining"),
            Some(remaining.to_string().as_str()),
            "{route}"
        );
    }
}

/// The config file the help shows, its comments taken out, is one serve accepts. Its
/// `redis_cluster` line names a cluster this machine does not have, so it is left out here;
/// serve_cluster.rs serves a config with that key on a real cluster.
#[test]
fn the_help_config_example_serves() {
    let help = binary::trickle(&["--help"], "").stdout;
    let start = help.find("  The config file").unwrap();
    let end = start + help[start..].find("  Any other key").unwrap();
    let text: String = help[start..end]
        .lines()
        .skip(1)
        .map(|line| line.split('#').next().unwrap().trim())
        .filter(|line| !line.is_empty())
        .filter(|line| !line.starts_with("redis_cluster = "))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(text.contains("[[group]]\nname = \"fitting\"\n"), "{text}");
    assert!(
        help[start..end].contains("redis_cluster = [\"redis://"),
        "the help shows no redis_cluster"
    );
    let config = ConfigFile::new(&text);
    let server = Server::start(&config, &[]);
    let reply = Http::new().get(&format!("{}/fittings", server.url), &client("help"));
    assert_eq!(counts(&reply), (200, Some(4), Some(2)));
}
