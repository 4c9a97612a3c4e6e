#![cfg(not(target_arch = "wasm32"))]
//! `trickle serve` under the attacks of a hostile client, over real HTTP on 127.0.0.1: a
//! flood of distinct client ids against the server's memory. Each loop is bounded.

mod binary;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use binary::{ConfigFile, Server};

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
                for n in (connection..count).step_by(connections) {
                    let id = format!("{tag}-{n:0>width$}", width = 63 - tag.len());
                    write!(
                        writer,
                        "GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Client-Id: {id}\r\n\r\n"
                    )
                    .expect("send");
                    match read_answer(&mut reader) {
                        200 => counts.0 += 1,
                        429 => counts.1 += 1,
                        _ => counts.2 += 1,
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

#[test]
#[ignore = "measures the server's memory under a flood: run with --ignored"]
fn rss_under_a_flood_of_distinct_client_ids() {
    let config = ConfigFile::new(
        "\n[[group]]\nname = \"flood\"\nlimit = \"10/15m\"\nroutes = [\"/flood\"]\n",
    );
    let server = Server::start(&config, &[]);
    let pid = server.pid();
    let before = rss_bytes(pid);
    let counts = flood(&server.url, "/flood", 200_000, 8, "flood");
    let after = rss_bytes(pid);
    println!(
        "{counts:?}: RSS {before} → {after} bytes ({} per id)",
        (after - before) / 200_000
    );
}
