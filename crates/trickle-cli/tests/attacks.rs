#![cfg(not(target_arch = "wasm32"))]
//! `trickle serve` under the attacks of a hostile client, over real HTTP on 127.0.0.1: a
//! flood of distinct client ids against the server's memory. Each loop is bounded.

mod binary;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use binary::{client, ConfigFile, Http, Server};

/// The server's resident memory, in bytes, from /proc.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kilobytes: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|number| number.trim().parse().ok())
        .expect("a VmRSS line");
    kilobytes * 1024
}

/// Sends `count` GETs of `path`, each with a client id of its own (64 characters, the most
/// serve takes), over `connections` keep-alive connections at once; returns how many were
/// answered with each status, as (200s, 429s, others).
fn flood(
    url: &str,
    path: &str,
    count: usize,
    connections: usize,
    tag: &str,
) -> (usize, usize, usize) {
    let host = url
        .strip_prefix("http://")
        .expect("an http:// URL")
        .to_string();
    let threads: Vec<_> = (0..connections)
        .map(|connection| {
            let (host, path, tag) = (host.clone(), path.to_string(), tag.to_string());
            thread::spawn(move || {
                let stream = TcpStream::connect(&host).expect("connect");
                stream
                    .set_read_timeout(Some(Duration::from_secs(20)))
                    .expect("a read timeout");
                let mut writer = stream.try_clone().expect("a second handle");
                let mut reader = BufReader::new(stream);
                let mut counts = (0, 0, 0);
                let ids: Vec<usize> = (connection..count).step_by(connections).collect();
                // Pipelined, a batch written before its answers are read: one request at a
                // time would wait out the delayed acknowledgements of every answer.
                for batch in ids.chunks(PIPELINE) {
                    let mut requests = String::new();
                    for n in batch {
                        let id = format!("{tag}-{n:0>width$}", width = 63 - tag.len());
                        requests.push_str(&format!(
                            "GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Client-Id: {id}\r\n\r\n"
                        ));
                    }
                    writer.write_all(requests.as_bytes()).expect("send");
                    for _ in batch {
                        match read_answer(&mut reader) {
                            200 => counts.0 += 1,
                            503 => counts.1 += 1,
                            _ => counts.2 += 1,
                        }
                    }
                }
                counts
            })
        })
        .collect();
    threads.into_iter().fold((0, 0, 0), |total, thread| {
        let counts = thread.join().expect("a client thread");
        (total.0 + counts.0, total.1 + counts.1, total.2 + counts.2)
    })
}

/// How many requests a connection sends before it reads their answers.
const PIPELINE: usize = 64;

/// Reads one answer on a keep-alive connection; its status.
fn read_answer(reader: &mut BufReader<TcpStream>) -> u16 {
    let mut line = String::new();
    reader.read_line(&mut line).expect("a status line");
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {line:?}"));
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("a header line");
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().expect("a length");
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the body");
    status
}

/// 200,000 requests, each with a client id never seen before, against a group capped at
/// 20,000 keys: the cap's worth are admitted, every other gets 503 with `Retry-After`, the
/// server's memory grows by what 20,000 buckets take and not by what 200,000 would, and
/// known clients are still decided.
#[test]
fn a_flood_of_new_client_ids_is_held_at_the_cap() {
    let config = ConfigFile::new(
        "\n[[group]]\nname = \"flood\"\nlimit = \"10/15m\"\nroutes = [\"/flood\"]\n",
    );
    let server = Server::start(&config, &["--max-keys", "20000"]);
    let before = rss_bytes(server.pid());
    let (admitted, full, other) = flood(&server.url, "/flood", 200_000, 8, "flood");
    let grown = rss_bytes(server.pid()).saturating_sub(before);
    // Each shard holds its share of the cap rounded up: at most one key a shard more.
    assert!(
        (20_000..20_064).contains(&admitted) && admitted + full == 200_000 && other == 0,
        "{admitted} admitted, {full} answered 503, {other} other"
    );
    // Well above what 20,000 buckets take and well below what 200,000 would (`make bench`
    // measures both: `flood.rss` in docs/figures/bench.json).
    assert!(grown < 12 * 1024 * 1024, "the server grew by {grown} bytes");

    let http = Http::new();
    let refused = http.get(&format!("{}/flood", server.url), &client("someone-new"));
    assert_eq!(refused.status, 503, "{refused:?}");
    let wait: u64 = refused
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=900).contains(&wait), "{wait}");
    let problem = refused.json();
    assert_eq!(
        problem["type"],
        "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
    );
    assert!(problem["detail"]
        .as_str()
        .unwrap()
        .contains("as many clients as it may"));
    let known = format!("flood-{:0>58}", 0);
    assert_eq!(
        http.get(&format!("{}/flood", server.url), &client(&known))
            .status,
        200
    );
}

/// What the flood costs the server's memory with the cap and without one worth the name
/// (every id a bucket, as before the cap): the figures the docs give. `make bench` runs it
/// and keeps them in target/bench/flood.json for benches/report.mjs.
#[test]
#[ignore = "measures the server's memory under a flood: make bench runs it"]
fn rss_under_a_flood_of_distinct_client_ids() {
    let config = ConfigFile::new(
        "\n[[group]]\nname = \"flood\"\nlimit = \"10/15m\"\nroutes = [\"/flood\"]\n",
    );
    let requests = 200_000;
    let mut runs = Vec::new();
    for (name, max_keys) in [("capped", "20000"), ("uncapped", "100000000")] {
        let server = Server::start(&config, &["--max-keys", max_keys]);
        let before = rss_bytes(server.pid());
        let (admitted, full, other) = flood(&server.url, "/flood", requests, 8, "flood");
        let after = rss_bytes(server.pid());
        println!(
            "--max-keys {max_keys}: {admitted} admitted, {full} answered 503, {other} other; \
             RSS {before} → {after} bytes"
        );
        runs.push(format!(
            "\"{name}\": {{ \"maxKeys\": {max_keys}, \"admitted\": {admitted}, \"full\": {full}, \
             \"other\": {other}, \"rssBefore\": {before}, \"rssAfter\": {after} }}"
        ));
    }
    // Cargo's target folder, where benches/report.mjs reads bench/*.json.
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let folder = tmp.parent().unwrap_or(tmp).join("bench");
    std::fs::create_dir_all(&folder).expect("target/bench");
    let json = format!("{{ \"requests\": {requests}, {} }}\n", runs.join(", "));
    std::fs::write(folder.join("flood.json"), json).expect("target/bench/flood.json");
}
