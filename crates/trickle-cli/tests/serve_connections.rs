#![cfg(not(target_arch = "wasm32"))]
//! `trickle serve` under hostile connections, against the real binary over real sockets on
//! 127.0.0.1: heads sent halfway and never finished, connections left idle, more
//! connections than the cap, and a stop while all of those are open and one request is in
//! its handler. The timeouts are set low here (hundreds of milliseconds) so that each test
//! takes about as long as the timeout it checks; docs/src/reliability.md states each test's
//! bounds (what it prints is one run's timings, for a person to read).

mod binary;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use binary::{ConfigFile, Server};

/// One roomy group: no test here is about the limit, so every request is a 200.
const CONFIG: &str = r#"
[[group]]
name = "demo"
limit = "10000/1h"
routes = ["/demo"]
"#;

/// The start of a request head, cut off in the middle of a header name.
const HALF_HEAD: &[u8] = b"GET /demo HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Cli";

/// How late after its deadline the server may close a connection and still pass: the
/// machine running the suite may be busy, and the point is "closed", not "to the
/// millisecond".
const MARGIN: Duration = Duration::from_millis(1500);

/// The longest any test waits for anything before it fails.
const PATIENCE: Duration = Duration::from_secs(20);

fn address(server: &Server) -> String {
    server.url.trim_start_matches("http://").to_string()
}

fn connect(address: &str) -> TcpStream {
    let stream = TcpStream::connect(address).expect("connect to the server");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("a read timeout");
    stream
}

/// A whole GET of `path` for `client`, kept alive.
fn request(path: &str, client: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Client-Id: {client}\r\n\r\n")
}

/// An HTTP/1.1 answer read off a socket: the status, the head's lines, the body.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.split("\r\n").skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

/// Reads one answer (its head, then a body of its Content-Length) from `stream`, leaving
/// the connection open for the next; `Err` says what came instead.
fn read_answer(stream: &mut TcpStream) -> Result<Answer, String> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = bytes.windows(4).position(|window| window == b"\r\n\r\n") {
            break end;
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                return Err(format!(
                    "closed after {:?}",
                    String::from_utf8_lossy(&bytes)
                ))
            }
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(error) => return Err(format!("{error} after {bytes:?}")),
        }
    };
    let head = String::from_utf8(bytes[..head_end].to_vec()).map_err(|e| e.to_string())?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status line in {head:?}"))?;
    let mut answer = Answer {
        status,
        head,
        body: String::new(),
    };
    let length: usize = answer
        .header("content-length")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let mut body = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk) {
            Ok(0) => return Err(format!("closed in the body of {answer:?}")),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(error) => return Err(format!("{error} in the body of {answer:?}")),
        }
    }
    answer.body = String::from_utf8(body).map_err(|e| e.to_string())?;
    Ok(answer)
}

/// Sends a whole GET on `stream` and reads its answer, which must be a 200.
fn get_ok(stream: &mut TcpStream, client: &str) {
    stream
        .write_all(request("/demo", client).as_bytes())
        .expect("send a request");
    let answer = read_answer(stream).expect("an answer");
    assert_eq!(answer.status, 200, "{answer:?}");
}

/// Waits on a thread of its own for the server to close `stream` (end of file, or a reset),
/// and sends back when it did; `Err` if it sent bytes instead or did not close within
/// [`PATIENCE`].
fn watch_close(mut stream: TcpStream, closed: mpsc::Sender<Result<Instant, String>>) {
    thread::spawn(move || {
        let mut byte = [0u8; 1];
        let outcome = match stream.read(&mut byte) {
            Ok(0) => Ok(Instant::now()),
            Err(error) if error.kind() == ErrorKind::ConnectionReset => Ok(Instant::now()),
            Ok(_) => Err(format!(
                "the server sent {:?} instead of closing",
                byte[0] as char
            )),
            Err(error) => Err(format!("not closed: {error}")),
        };
        let _ = closed.send(outcome);
    });
}

/// The close times of `count` watched connections, in no order.
fn closes(closed: &mpsc::Receiver<Result<Instant, String>>, count: usize) -> Vec<Instant> {
    (0..count)
        .map(|_| {
            closed
                .recv_timeout(PATIENCE + Duration::from_secs(1))
                .expect("a watcher reports")
                .unwrap_or_else(|error| panic!("{error}"))
        })
        .collect()
}

/// Slowloris: 100 connections each send half a request head and then nothing, and 20 send
/// nothing at all. Every one is closed once the header timeout has passed since it
/// connected, not before, and the server answers the next client as if nothing happened.
#[test]
fn a_hundred_heads_sent_halfway_are_closed_after_the_header_timeout() {
    let timeout = Duration::from_millis(500);
    let config = ConfigFile::new(CONFIG);
    let mut server = Server::start(&config, &["--header-timeout", "500ms"]);
    let address = address(&server);

    let (sender, closed) = mpsc::channel();
    let mut connected = Vec::new();
    for i in 0..120 {
        let at = Instant::now();
        let mut stream = connect(&address);
        if i < 100 {
            stream.write_all(HALF_HEAD).expect("send half a head");
        }
        connected.push(at);
        watch_close(stream, sender.clone());
    }
    let closed = closes(&closed, 120);

    // Each watcher reports only its close time; every connection opened within the span
    // of `connected`, so each close is compared with both ends of it.
    let (first, last) = (connected[0], connected[119]);
    let earliest = closed.iter().min().unwrap().duration_since(last);
    let latest = closed.iter().max().unwrap().duration_since(first);
    eprintln!(
        "120 slow heads: closed from {earliest:?} after the last connect to {latest:?} after \
         the first (header timeout {timeout:?}; connecting took {:?})",
        last - first
    );
    // The server's clock starts at its accept, after the client's connect: never early.
    for close in &closed {
        assert!(
            close.duration_since(first) >= timeout,
            "closed {:?} after the first connect, before the {timeout:?} timeout",
            close.duration_since(first)
        );
    }
    assert!(
        latest <= (last - first) + timeout + MARGIN,
        "the last slow head was closed {latest:?} after the first connect"
    );

    assert!(server.is_running());
    let mut stream = connect(&address);
    get_ok(&mut stream, "after-the-flood");
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

/// A kept-alive connection between requests has the idle timeout, which is not the header
/// timeout: it is still usable after the header timeout, and closed after the idle one. Its
/// next head, once started, has the header timeout again.
#[test]
fn an_idle_connection_is_closed_after_the_idle_timeout_and_a_late_head_after_the_header_timeout() {
    let (header, idle) = (Duration::from_millis(300), Duration::from_millis(2000));
    let config = ConfigFile::new(CONFIG);
    let server = Server::start(
        &config,
        &["--header-timeout", "300ms", "--idle-timeout", "2s"],
    );
    let address = address(&server);

    // Ten connections, one request each, then nothing.
    let (sender, closed) = mpsc::channel();
    // The server's idle clock starts once it has written an answer, which is after the
    // request was sent and before the test has read the answer: the first send bounds every
    // close from below, the last answer read from above.
    let mut answered = Vec::new();
    let mut sent_first = None;
    for i in 0..10 {
        let mut stream = connect(&address);
        sent_first.get_or_insert_with(Instant::now);
        get_ok(&mut stream, &format!("idle-{i}"));
        answered.push(Instant::now());
        watch_close(stream, sender.clone());
    }
    let (first, last) = (answered[0], answered[9]);
    let sent_first = sent_first.unwrap();

    // One more, reused after more than the header timeout: idle is not a slow head.
    let mut reused = connect(&address);
    get_ok(&mut reused, "reused");
    thread::sleep(header * 2);
    get_ok(&mut reused, "reused");
    // Then a head begun and never finished: the header timeout from its first byte.
    let begun = Instant::now();
    reused.write_all(HALF_HEAD).expect("send half a head");
    let (late_sender, late_closed) = mpsc::channel();
    watch_close(reused, late_sender);
    let late = closes(&late_closed, 1)[0].duration_since(begun);
    eprintln!("a head begun after an idle spell: closed {late:?} after its first byte");
    assert!(
        late >= header && late < idle - Duration::from_millis(300),
        "closed {late:?} after the head began; the header timeout is {header:?}, the idle \
         one {idle:?}"
    );

    let closed = closes(&closed, 10);
    let earliest = closed.iter().min().unwrap().duration_since(last);
    let latest = closed.iter().max().unwrap().duration_since(first);
    eprintln!("10 idle connections: closed from {earliest:?} to {latest:?} after their answers");
    for close in &closed {
        assert!(
            close.duration_since(sent_first) >= idle,
            "an idle connection closed {:?} after its request was sent, before the {idle:?} timeout",
            close.duration_since(sent_first)
        );
    }
    assert!(
        latest <= (last - first) + idle + MARGIN,
        "the last idle connection closed {latest:?} after the first answer"
    );
}

/// Past `--max-connections`, a new connection is not accepted: it waits in the kernel's
/// queue, unanswered, until an open one closes, and is then served. The open ones are not
/// disturbed and the server stays up.
#[test]
fn a_connection_beyond_the_cap_waits_until_one_closes() {
    let config = ConfigFile::new(CONFIG);
    let mut server = Server::start(&config, &["--max-connections", "4"]);
    let address = address(&server);

    let mut open: Vec<TcpStream> = (0..4)
        .map(|i| {
            let mut stream = connect(&address);
            get_ok(&mut stream, &format!("held-{i}"));
            stream
        })
        .collect();

    let mut waiting = connect(&address);
    waiting
        .write_all(request("/demo", "waiting").as_bytes())
        .expect("send a request");
    waiting
        .set_read_timeout(Some(Duration::from_millis(1000)))
        .unwrap();
    let mut byte = [0u8; 1];
    match waiting.read(&mut byte) {
        Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("the fifth connection got {other:?} while four were open"),
    }
    let stderr =
        server.log_containing(&["4 connections are open, the most --max-connections allows"]);
    assert!(
        stderr.contains("4 connections are open, the most --max-connections allows"),
        "{stderr}"
    );

    let freed = Instant::now();
    drop(open.remove(0));
    waiting.set_read_timeout(Some(PATIENCE)).unwrap();
    let answer = read_answer(&mut waiting).expect("an answer once a slot is free");
    assert_eq!(answer.status, 200, "{answer:?}");
    eprintln!(
        "the fifth connection was answered {:?} after one of four closed",
        freed.elapsed()
    );

    // Those held open all along still work.
    for stream in &mut open {
        get_ok(stream, "held-again");
    }
    assert!(server.is_running());
}

/// 25 kept-alive connections between requests and 25 with half a head, and nothing in
/// flight: SIGTERM closes them all at once and the process exits at once, not after the
/// 10 s drain.
#[test]
fn sigterm_with_idle_and_half_sent_connections_exits_at_once() {
    let config = ConfigFile::new(CONFIG);
    let mut server = Server::start(&config, &[]);
    let address = address(&server);

    let (sender, closed) = mpsc::channel();
    for i in 0..25 {
        let mut stream = connect(&address);
        get_ok(&mut stream, &format!("idle-{i}"));
        watch_close(stream, sender.clone());
        let mut stream = connect(&address);
        stream.write_all(HALF_HEAD).expect("send half a head");
        watch_close(stream, sender.clone());
    }
    // Let the server take the last half head in before the signal.
    thread::sleep(Duration::from_millis(100));

    let signalled = Instant::now();
    let status = server
        .signal_and_wait("TERM", PATIENCE)
        .expect("the server exits");
    let exit = signalled.elapsed();
    let closed = closes(&closed, 50);
    let latest = closed.iter().max().unwrap().duration_since(signalled);
    eprintln!("SIGTERM with 50 open connections: closed within {latest:?}, exit after {exit:?}");
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    assert!(exit < Duration::from_secs(2), "exit took {exit:?}");
    assert!(
        latest < Duration::from_secs(2),
        "a connection closed {latest:?} after SIGTERM"
    );
    // The exit can come before the pipe's reader has taken the last lines in.
    let stderr = server.log_containing(&["no request in flight", "stopped"]);
    assert!(stderr.contains("no request in flight"), "{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
}

/// The same 50 connections and one request in its handler (`?delay_ms=1000`) at SIGTERM:
/// the 50 are closed at once, new connections are refused, the request gets its whole
/// answer (with `Connection: close`), and the process exits as soon as it is written.
#[test]
fn sigterm_lets_the_request_in_its_handler_finish_and_nothing_else() {
    let config = ConfigFile::new(CONFIG);
    let mut server = Server::start(&config, &[]);
    let address = address(&server);

    let (sender, closed) = mpsc::channel();
    for i in 0..25 {
        let mut stream = connect(&address);
        get_ok(&mut stream, &format!("idle-{i}"));
        watch_close(stream, sender.clone());
        let mut stream = connect(&address);
        stream.write_all(HALF_HEAD).expect("send half a head");
        watch_close(stream, sender.clone());
    }
    let mut slow = connect(&address);
    slow.write_all(request("/demo?delay_ms=1000", "slow").as_bytes())
        .expect("send the slow request");
    let slow = thread::spawn(move || {
        let answer = read_answer(&mut slow);
        (answer, Instant::now())
    });
    // Well into the handler's second.
    thread::sleep(Duration::from_millis(300));

    let signalled = Instant::now();
    server.signal("TERM");

    let closed = closes(&closed, 50);
    let latest = closed.iter().max().unwrap().duration_since(signalled);
    // No new connection once the stop has begun (a few tries: the signal takes a moment).
    let refused = (0..50).any(|_| {
        let refused = TcpStream::connect(&address).is_err();
        if !refused {
            thread::sleep(Duration::from_millis(10));
        }
        refused
    });
    let (answer, answered) = slow.join().expect("the slow client finishes");
    let answer = answer.expect("the request in flight is answered");
    let status = server
        .wait(PATIENCE)
        .expect("the server exits after the answer");
    let exit = signalled.elapsed();
    let answered = answered.duration_since(signalled);
    eprintln!(
        "SIGTERM with 50 open connections and 1 request in its handler: closed within \
         {latest:?}, answered after {answered:?}, exit after {exit:?}"
    );

    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
    assert!(answer.body.contains("\"route\":\"/demo\""), "{answer:?}");
    assert!(refused, "a new connection was accepted after SIGTERM");
    assert!(
        latest < answered,
        "idle connections were closed {latest:?} after SIGTERM, not before the answer at \
         {answered:?}"
    );
    assert!(
        exit < Duration::from_secs(3),
        "exit took {exit:?}; the handler needed 700 ms more"
    );
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    let stderr = server.log_containing(&["1 request in flight has 10s to finish"]);
    assert!(
        stderr.contains("1 request in flight has 10s to finish"),
        "{stderr}"
    );
    assert!(!stderr.contains("still in flight"), "{stderr}");
}

/// A request that outlives `--drain-timeout` is cut off when it ends: the process exits
/// after the drain, not after the handler, and says so.
#[test]
fn a_request_longer_than_the_drain_is_cut_off() {
    let config = ConfigFile::new(CONFIG);
    let mut server = Server::start(&config, &["--drain-timeout", "50ms"]);
    let address = address(&server);

    // The handler takes 1 s (`delay_ms`'s most) and the drain 50 ms from the signal, sent
    // 200 ms in: 750 ms between the drain's end and the answer, which a busy machine's
    // late exit (hundreds of ms) must not use up.
    let mut slow = connect(&address);
    slow.write_all(request("/demo?delay_ms=1000", "slow").as_bytes())
        .expect("send the slow request");
    thread::sleep(Duration::from_millis(200));
    let signalled = Instant::now();
    let status = server
        .signal_and_wait("TERM", PATIENCE)
        .expect("the server exits");
    let exit = signalled.elapsed();
    eprintln!("a 1 s request and a 50 ms drain: exit {exit:?} after SIGTERM");
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    assert!(
        exit >= Duration::from_millis(50) && exit < Duration::from_millis(750),
        "exit {exit:?} after SIGTERM: after the drain, not after the handler"
    );
    assert!(
        read_answer(&mut slow).is_err(),
        "the cut-off request was answered"
    );
    let stderr =
        server.log_containing(&["requests still in flight after 50ms; stopping without them"]);
    assert!(
        stderr.contains("requests still in flight after 50ms; stopping without them"),
        "{stderr}"
    );
}
