//! `trickle serve`'s OpenAPI document, read from the real server: every route's
//! `x-rate-limit` says its group's policy, the answers it lists are the ones the server
//! sends, it is never charged; and an OpenAPI validator nobody on this project wrote
//! (PyPI's openapi-spec-validator) accepts it.
//!
//! The validator comes from `scripts/setup.sh test` (tests/recipes/.venv); `make test` runs
//! that test with `--ignored` once it is there.

mod binary;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use binary::{client, ConfigFile, Http, Reply, Server};
use serde_json::{json, Value};
use trickle_core::Policy;

const CONFIG: &str = r#"
headers = "both"

[[group]]
name = "fitting"
limit = "6/8s"
routes = ["/fittings", "/fittings/ships"]

[[group]]
name = "pair"
limit = "burst=2/10m 6/1h"
algorithm = "fixed"
routes = ["/pair"]

[[group]]
name = "named"
limit = "hourly=150/1h"
routes = ["/named"]

[[group]]
name = "quiet"
limit = "2/1h"
shadow = true
routes = ["/quiet"]
"#;

/// Each route of [`CONFIG`], its group and its group's `limit` as written there.
const ROUTES: [(&str, &str, &str); 5] = [
    ("/fittings", "fitting", "6/8s"),
    ("/fittings/ships", "fitting", "6/8s"),
    ("/pair", "pair", "burst=2/10m 6/1h"),
    ("/named", "named", "hourly=150/1h"),
    ("/quiet", "quiet", "2/1h"),
];

fn document(http: &Http, server: &Server) -> Value {
    let reply = http.get(&format!("{}/openapi.json", server.url), &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"));
    reply.json()
}

/// The policy an `x-rate-limit` value says, read the way a client of ESI's extension would:
/// `MAX-TOKENS/WINDOW-SIZE` for each entry, under its name when that is not the same text.
fn policy_of(extension: &Value, group: &str) -> Policy {
    let entries = match extension {
        Value::Array(entries) => {
            assert!(entries.len() > 1, "an array for one limit: {extension}");
            entries.clone()
        }
        Value::Object(_) => vec![extension.clone()],
        other => panic!("x-rate-limit is neither an object nor an array: {other}"),
    };
    let mut written = Vec::new();
    for entry in &entries {
        assert_eq!(entry["group"], group, "{extension}");
        let tokens = entry["max-tokens"].as_u64().expect("max-tokens a number");
        let window = entry["window-size"].as_str().expect("window-size a string");
        let limit = format!("{tokens}/{window}");
        // A limit given no name is named by its own text, which is written alone.
        match entry.get("name").and_then(Value::as_str) {
            Some(name) if name != limit => written.push(format!("{name}={limit}")),
            _ => written.push(limit),
        }
    }
    written.join(" ").parse().unwrap_or_else(|error| {
        panic!("x-rate-limit {extension} is no policy: {error}");
    })
}

#[test]
fn each_route_s_x_rate_limit_is_its_group_s_policy() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    let document = document(&http, &server);
    assert_eq!(document["openapi"], "3.1.0");

    let paths = document["paths"].as_object().expect("paths");
    let listed: BTreeSet<&str> = paths.keys().map(String::as_str).collect();
    let mut expected: BTreeSet<&str> = ROUTES.iter().map(|(route, ..)| *route).collect();
    expected.insert("/openapi.json");
    assert_eq!(listed, expected);

    for (route, group, limit) in ROUTES {
        let operation = &paths[route]["get"];
        let extension = &operation["x-rate-limit"];
        let configured: Policy = limit.parse().unwrap();
        // A policy of one limit is ESI's object, those three members and no others (so a
        // name given to a lone limit is not carried); several are an array of them, named.
        if configured.len() == 1 {
            let limit = configured.limit(0).unwrap();
            let members: BTreeSet<&str> = extension
                .as_object()
                .unwrap_or_else(|| panic!("{route}: {extension}"))
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                members,
                BTreeSet::from(["group", "max-tokens", "window-size"])
            );
            assert_eq!(
                policy_of(extension, group),
                Policy::single(limit),
                "{route}"
            );
        } else {
            assert_eq!(policy_of(extension, group), configured, "{route}");
        }
        assert_eq!(operation["tags"], json!([group]), "{route}");
    }
    // ESI's own example, member for member.
    assert_eq!(
        paths["/fittings"]["get"]["x-rate-limit"],
        json!({"group": "fitting", "window-size": "8s", "max-tokens": 6})
    );
    assert_eq!(
        paths["/pair"]["get"]["x-rate-limit"],
        json!([
            {"group": "pair", "name": "burst", "window-size": "10m", "max-tokens": 2},
            {"group": "pair", "name": "6/1h", "window-size": "1h", "max-tokens": 6},
        ])
    );
    assert!(paths["/openapi.json"]["get"].get("x-rate-limit").is_none());
}

#[test]
fn the_document_is_uncharged_and_any_page_may_read_it() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &[]);
    let http = Http::new();
    let url = format!("{}/openapi.json", server.url);
    // More fetches than any limit of the file allows, with and without a client id.
    for _ in 0..8 {
        let reply = http.get(&url, &client("reader"));
        assert_eq!(reply.status, 200);
        for (name, _) in &reply.headers {
            let name = name.as_str();
            assert!(!name.contains("ratelimit"), "{name} on the document");
        }
    }
    let reply = http.get(&url, &[("Origin", "https://docs.example.com")]);
    assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
    let head = http.send("HEAD", &url, &[]);
    assert_eq!(head.status, 200);
    // The reader's buckets are untouched: its first request is a full bucket's.
    let reply = http.get(&format!("{}/fittings", server.url), &client("reader"));
    assert_eq!(reply.header("x-ratelimit-remaining"), Some("4"));
}

/// `#/components/...` resolved in `document`.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference.strip_prefix('#').expect("a local reference");
            document
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{reference} resolves to nothing"))
        }
        None => value,
    }
}

/// The rate-limit headers of a reply, lowercase.
fn rate_limit_headers(reply: &Reply) -> BTreeSet<String> {
    reply
        .headers
        .keys()
        .map(|name| name.as_str().to_string())
        .filter(|name| name.contains("ratelimit") || name == "retry-after")
        .collect()
}

/// Checks `reply` against what the document says `route`'s GET answers with its status:
/// the response is listed (or the default one), its content type is the one listed, every rate-limit header it
/// carries is listed, and every listed one is there but those in `optional`.
fn check_documented(document: &Value, route: &str, reply: &Reply, optional: &[&str]) {
    let responses = &document["paths"][route]["get"]["responses"];
    let status = reply.status.to_string();
    let response = responses
        .get(&status)
        .or_else(|| responses.get("default"))
        .map(|response| resolve(document, response))
        .unwrap_or_else(|| panic!("{route}: {status} is not documented: {responses}"));
    let content_type = reply.header("content-type").expect("a content type");
    assert!(
        response["content"].get(content_type).is_some(),
        "{route} {status}: {content_type} is not documented: {response}"
    );
    let listed: BTreeSet<String> = response
        .get("headers")
        .and_then(Value::as_object)
        .map(|headers| {
            for header in headers.values() {
                assert!(resolve(document, header)["schema"].is_object());
            }
            headers
                .keys()
                .map(|name| name.to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    let sent = rate_limit_headers(reply);
    assert!(
        sent.is_subset(&listed),
        "{route} {status}: sent {sent:?}, documented {listed:?}"
    );
    let missing: Vec<&String> = listed
        .difference(&sent)
        .filter(|name| !optional.contains(&name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{route} {status}: documented but not sent: {missing:?}"
    );
}

#[test]
fn the_answers_listed_are_those_the_server_sends() {
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(&config, &["--max-keys", "1"]);
    let http = Http::new();
    let document = document(&http, &server);
    let get = |route: &str, headers: &[(&str, &str)]| {
        http.get(&format!("{}{route}", server.url), headers)
    };

    let mut seen: BTreeMap<(&str, u16), usize> = BTreeMap::new();
    let mut check = |route: &'static str, reply: Reply, optional: &[&str]| {
        check_documented(&document, route, &reply, optional);
        *seen.entry((route, reply.status)).or_default() += 1;
    };
    // 200 until the burst is spent, then 429, on a two-limit group; the one client the
    // server keeps a bucket for.
    check("/pair", get("/pair", &client("one")), &[]);
    check("/pair", get("/pair", &client("one")), &[]);
    // A 400 costs nothing and carries no rate-limit header.
    check("/pair", get("/pair", &[]), &[]);
    // New clients until the table is full (--max-keys 1 is about one key a shard): 503.
    for index in 0..1_000 {
        let reply = get("/fittings", &client(&format!("client-{index}")));
        let status = reply.status;
        check("/fittings", reply, &[]);
        if status == 503 {
            break;
        }
    }
    // What ?status= asks for: the default response.
    check("/named", get("/named?status=418", &client("one")), &[]);
    // Shadow mode never refuses, and marks the answer it would have refused.
    let quiet = &document["paths"]["/quiet"]["get"]["responses"];
    assert!(
        quiet.get("429").is_none() && quiet.get("503").is_none(),
        "{quiet}"
    );
    check(
        "/quiet",
        get("/quiet", &client("one")),
        &["x-ratelimit-shadow"],
    );
    check("/quiet", get("/quiet", &client("one")), &[]);

    let statuses: Vec<(&str, u16)> = seen.keys().copied().collect();
    assert_eq!(
        statuses,
        [
            ("/fittings", 200),
            ("/fittings", 503),
            ("/named", 418),
            ("/pair", 200),
            ("/pair", 400),
            ("/pair", 429),
            ("/quiet", 200)
        ]
    );
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// openapi-spec-validator's verdict on `document`: its output when it refuses it.
fn validate(document: &str) -> Result<(), String> {
    let program = root().join("tests/recipes/.venv/bin/openapi-spec-validator");
    let mut child = Command::new(&program)
        .args(["--schema", "3.1", "--validation-errors", "all", "-"])
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
    child
        .stdin
        .take()
        .unwrap()
        .write_all(document.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    match output.status.success() {
        true => Ok(()),
        false => Err(said),
    }
}

#[test]
#[ignore = "needs openapi-spec-validator from `scripts/setup.sh test`; make test runs it"]
fn an_openapi_validator_nobody_here_wrote_accepts_the_document() {
    let example = std::fs::read_to_string(root().join("examples/serve.toml")).unwrap();
    let ietf = format!("headers = \"ietf\"\n{example}");
    for (name, text) in [
        ("CONFIG", CONFIG),
        ("the example", &example),
        ("ietf", &ietf),
    ] {
        let config = ConfigFile::new(text);
        let server = Server::start(&config, &[]);
        let reply = Http::new().get(&format!("{}/openapi.json", server.url), &[]);
        assert_eq!(reply.status, 200);
        if let Err(said) = validate(&reply.body) {
            panic!("openapi-spec-validator refuses the document of {name}:\n{said}");
        }
    }
    // The validator does refuse a document that is wrong, so its yes means something.
    let broken = r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"responses": {"200": {"description": "x",
        "content": {"application/json": {"schema": {"type": "integr"}}}}}}}}}"#;
    assert!(validate(broken).is_err());
}
