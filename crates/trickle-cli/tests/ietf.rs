//! `trickle serve`'s IETF RateLimit fields, read over real HTTP by two Structured Fields
//! parsers nobody on this project wrote (PyPI's http-sf, npm's structured-headers), against
//! the core's own decisions for the same requests; and its refusals' RFC 9457 bodies.
//!
//! The server decides on its clock; the test mirrors every request in a core
//! `PolicyLimiter` under the same flow (reserve 1, then settle at ESI's price for the status)
//! at the time it sent it. Fixed windows make the mirror exact: each request is sent well
//! inside every window (never within 150 ms of a boundary), so the server, deciding a few ms
//! later, decides in the same windows on the same counts; an attempt with a round trip that
//! outlasted its window anyway starts over on fresh buckets. Only `t`, the seconds until more
//! quota comes back, moves with the clock: it must lie between the mirror's at the request's
//! sending and at its answer.
//!
//! The parsers come from `scripts/setup.sh test` (tests/recipes/.venv, tests/e2e/node_modules);
//! `make test` runs this with `--ignored` once they are there.

mod binary;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use binary::{
    client, in_one_window_each, now_ms, wait_inside_windows, within_windows, ConfigFile, Http,
    Reply, Server, Straddled,
};
use serde_json::{json, Value};
use trickle_core::flow::Pricing;
use trickle_core::ietf::{self, QuotaUnit};
use trickle_core::{Algorithm, Op, Policy, PolicyDecision, PolicyLimiter, Reservation};

const CONFIG: &str = r#"
headers = "both"

[[group]]
name = "single"
limit = "4/1h"
algorithm = "fixed"
routes = ["/single"]

[[group]]
name = "pair"
limit = "burst=2/1s 6/1h"
algorithm = "fixed"
routes = ["/pair"]
"#;

/// One answer as the server gave it, and the core's for the same request at the two ends
/// of its round trip.
struct Seen {
    group: &'static str,
    reply: Reply,
    policy: Policy,
    early: PolicyDecision,
    late: PolicyDecision,
}

/// Sends `count` requests to `group` for `client_id`, mirroring each in `mirror`.
fn send(
    http: &Http,
    server: &Server,
    group: &'static str,
    mirror: &mut PolicyLimiter,
    client_id: &str,
    count: usize,
    seen: &mut Vec<Seen>,
) -> Result<(), Straddled> {
    let pricing = Pricing::esi();
    // The requests are sent to fall in the same windows, so all are answered within the
    // windows of the first one's sending.
    let first_sent = now_ms();
    for _ in 0..count {
        let sent = now_ms();
        let reply = http.get(&format!("{}/{group}", server.url), &client(client_id));
        let answered = now_ms();
        within_windows(mirror.policy().limits(), first_sent, answered)?;
        let ticket = Reservation::new_ticket();
        let reserve = Op::Reserve { ticket };
        let mut late_mirror = mirror.clone();
        let early = mirror.decide(reserve, sent, pricing.reserve_cost());
        let late = late_mirror.decide(reserve, answered, pricing.reserve_cost());
        assert_eq!(
            early.is_allowed(),
            late.is_allowed(),
            "{group}: a window boundary crossed"
        );
        let (early, late) = match trickle_core::flow::policy_reservation(&early, ticket) {
            None => (early, late),
            Some(reservation) => {
                let cost = pricing
                    .cost(trickle_core::flow::Answer::Status(reply.status))
                    .unwrap();
                let reserved = reservation.cost();
                let early = mirror.decide(Op::settle(reservation), sent, cost);
                let late_reservation = Reservation::from_parts(answered, reserved, ticket);
                let late = late_mirror.decide(Op::settle(late_reservation), answered, cost);
                (early, late)
            }
        };
        seen.push(Seen {
            group,
            reply,
            policy: mirror.policy().clone(),
            early,
            late,
        });
    }
    Ok(())
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `values` parsed by a parser: `program args…` reading them as a JSON array on stdin.
fn parse_with(program: &Path, args: &[&str], dir: &Path, values: &[String]) -> Vec<Value> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| {
            panic!(
                "{} does not start ({error}); run `scripts/setup.sh test` (make test does)",
                program.display()
            )
        });
    let input = serde_json::to_vec(values).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{} failed: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the parser writes a JSON array")
}

/// What a field should parse to: each item's name and parameters, as the core says.
fn expected_policy(policy: &Policy) -> Value {
    let items: Vec<Value> = ietf::quota_policies(policy, QuotaUnit::Tokens)
        .iter()
        .map(|item| {
            let mut params = json!({"q": item.quota, "qu": "tokens"});
            if let Some(window) = item.window_s {
                params["w"] = json!(window);
            }
            json!({"name": item.name, "params": params})
        })
        .collect();
    Value::Array(items)
}

/// Checks one parser's reading of a `RateLimit` value against the core at both ends of
/// the round trip: `r` exactly, `t` between the two, present exactly when the core has one.
fn check_limit_field(parsed: &Value, seen: &Seen, parser: &str) {
    let early = ietf::service_limits(&seen.policy, &seen.early);
    let late = ietf::service_limits(&seen.policy, &seen.late);
    let items = parsed
        .as_array()
        .unwrap_or_else(|| panic!("{parser}: RateLimit does not parse: {parsed}"));
    assert_eq!(items.len(), early.len(), "{parser}: {parsed}");
    for ((item, early), late) in items.iter().zip(&early).zip(&late) {
        assert_eq!(item["name"], early.name, "{parser}: {parsed}");
        assert_eq!(item["params"]["r"], early.remaining, "{parser}: {parsed}");
        assert_eq!(early.remaining, late.remaining);
        match (early.reset_s, late.reset_s) {
            (Some(most), Some(least)) => {
                let t = item["params"]["t"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{parser}: no t in {parsed}"));
                assert!(
                    (least..=most).contains(&t),
                    "{parser}: t={t}, core {least}..={most}"
                );
            }
            (None, None) => assert!(item["params"].get("t").is_none(), "{parser}: {parsed}"),
            other => panic!("the core's t changed within a round trip: {other:?}"),
        }
    }
}

/// RFC 9457's members, typed as it says (§3.1), and the draft's extension: a URI type, the
/// HTTP status repeated, a title and a detail; on a 429, `violated-policies`, the names
/// of the limits that refused, as the core names them.
fn check_problem(seen: &Seen) {
    let reply = &seen.reply;
    assert_eq!(
        reply.header("content-type"),
        Some("application/problem+json")
    );
    let problem = reply.json();
    let members = problem.as_object().expect("a problem is a JSON object");
    for (name, value) in members {
        match name.as_str() {
            "type" | "title" | "detail" | "instance" => assert!(value.is_string(), "{problem}"),
            "status" => assert_eq!(value, &json!(reply.status), "{problem}"),
            "violated-policies" => assert!(value.is_array(), "{problem}"),
            other => panic!("a member RFC 9457 and the draft do not define: {other}"),
        }
    }
    assert_eq!(problem["type"], ietf::QUOTA_EXCEEDED);
    assert_eq!(problem["title"], ietf::QUOTA_EXCEEDED_TITLE);
    let violated = ietf::violated_policies(&seen.policy, &seen.early);
    assert_eq!(problem["violated-policies"], json!(violated), "{problem}");
}

#[test]
#[ignore = "needs http-sf and structured-headers from `scripts/setup.sh test`; make test runs it"]
fn parsers_nobody_here_wrote_read_the_fields_as_the_core_decided() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    // Each attempt on fresh buckets: an abandoned one's requests were counted.
    let seen = in_one_window_each(|attempt| {
        let mut seen = Vec::new();
        // One limit: 4 tokens an hour, a success costing 2: two in, then 429s.
        let single: Policy = "4/1h".parse().unwrap();
        let mut mirror = PolicyLimiter::with_algorithm(Algorithm::Fixed, single.clone());
        wait_inside_windows(&single, 2_000);
        let one = format!("one-{attempt}");
        send(&http, &server, "single", &mut mirror, &one, 3, &mut seen)?;

        // Two limits: the burst refuses the second request of each second, until the
        // hour's 6 tokens are spent (three seconds of one success each); then the hour
        // refuses.
        let pair: Policy = "burst=2/1s 6/1h".parse().unwrap();
        let mut mirror = PolicyLimiter::with_algorithm(Algorithm::Fixed, pair.clone());
        let two = format!("two-{attempt}");
        wait_inside_windows(&pair, 300);
        let began = now_ms();
        for _ in 0..4 {
            wait_inside_windows(&pair, 300);
            send(&http, &server, "pair", &mut mirror, &two, 2, &mut seen)?;
            thread::sleep(Duration::from_millis(1_000 - now_ms() % 1_000));
        }
        // And every second of them within the windows longer than a second: the hour's.
        let longer = pair.limits().filter(|limit| limit.window_ms() > 1_000);
        within_windows(longer, began, now_ms())?;
        Ok(seen)
    });

    let answered_by: Vec<(&str, u16, Option<usize>)> = seen
        .iter()
        .map(|seen| (seen.group, seen.reply.status, seen.early.answered_by()))
        .collect();
    assert_eq!(
        answered_by,
        [
            ("single", 200, None),
            ("single", 200, None),
            ("single", 429, Some(0)),
            ("pair", 200, None),
            ("pair", 429, Some(0)),
            ("pair", 200, None),
            ("pair", 429, Some(0)),
            ("pair", 200, None),
            // Both limits are spent now: the hour's wait is the longer, so it answers.
            ("pair", 429, Some(1)),
            ("pair", 429, Some(1)),
            ("pair", 429, Some(1)),
        ],
        "the server's statuses, and the limit that answered in the core"
    );

    let mut values = Vec::new();
    for seen in &seen {
        for name in ["ratelimit-policy", "ratelimit"] {
            let value = seen
                .reply
                .header(name)
                .unwrap_or_else(|| panic!("no {name}: {:?}", seen.reply));
            values.push(value.to_string());
        }
    }
    let python = root().join("tests/recipes/.venv/bin/python");
    let e2e = root().join("tests/e2e");
    let parsers = [
        (
            "http-sf",
            parse_with(&python, &["structured_fields.py"], &e2e, &values),
        ),
        (
            "structured-headers",
            parse_with(Path::new("node"), &["structured-fields.mjs"], &e2e, &values),
        ),
    ];
    for (parser, parsed) in &parsers {
        assert_eq!(parsed.len(), values.len(), "{parser}");
        for (index, seen) in seen.iter().enumerate() {
            let (policy, limit) = (&parsed[2 * index], &parsed[2 * index + 1]);
            assert_eq!(policy, &expected_policy(&seen.policy), "{parser}");
            check_limit_field(limit, seen, parser);
        }
    }
    for seen in seen.iter().filter(|seen| seen.reply.status == 429) {
        check_problem(seen);
        let wait = seen.early.retry_after_ms().unwrap().div_ceil(1000);
        let late = seen.late.retry_after_ms().unwrap().div_ceil(1000);
        let retry_after: u64 = seen.reply.header("retry-after").unwrap().parse().unwrap();
        assert!(
            (late..=wait).contains(&retry_after),
            "{retry_after} not in {late}..={wait}"
        );
    }
    // ESI's dialect beside them speaks of the limit nearest to refusing.
    for seen in &seen {
        let nearest = &seen.early.decisions()[seen.early.nearest()];
        assert_eq!(
            seen.reply.header("x-ratelimit-limit"),
            Some(&*nearest.limit.to_string())
        );
        let remaining = nearest.remaining().to_string();
        assert_eq!(
            seen.reply.header("x-ratelimit-remaining"),
            Some(&*remaining)
        );
    }
}
