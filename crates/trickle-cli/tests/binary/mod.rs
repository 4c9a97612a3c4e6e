//! Running the real `trickle` binary, shared by the CLI's test files: a run to its end
//! ([`trickle`], [`trickle_within`]), or a `trickle serve` kept running and talked to over
//! HTTP ([`Server`], [`Http`]).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use trickle_core::{Limit, Policy};

/// What one run of the binary left behind.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `trickle` with `args`, feeding `stdin` from a thread so that a large input cannot
/// deadlock against a full stdout pipe.
pub fn trickle(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trickle"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the trickle binary starts");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_string();
    // The binary may stop reading early (a usage error, a bad line): a broken pipe here
    // is expected, not a failure of the test.
    let writer = thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Run {
        code: output
            .status
            .code()
            .expect("exited, not killed by a signal"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Runs `trickle` with `args` and no input, killed and failed after `limit`: for commands
/// that must exit at once, such as `serve` with a bad config file, and would otherwise
/// serve forever and hang the suite.
pub fn trickle_within(args: &[&str], limit: Duration) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trickle"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the trickle binary starts");
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "trickle {args:?} still runs after {limit:?}; stderr: {}",
                stderr.lock().unwrap()
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    // The pipes close with the process; give the readers a moment to take the rest.
    let settled = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&stdout) > 1 || Arc::strong_count(&stderr) > 1 {
        if Instant::now() >= settled {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    let text = |buffer: &Arc<Mutex<String>>| buffer.lock().unwrap().clone();
    Run {
        code: status.code().expect("exited, not killed by a signal"),
        stdout: text(&stdout),
        stderr: text(&stderr),
    }
}

/// Everything `pipe` gives, collected by a thread into the returned buffer; the thread
/// drops its handle on the buffer when the pipe closes.
fn drain(pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let buffer = Arc::new(Mutex::new(String::new()));
    let collected = Arc::clone(&buffer);
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut line = String::new();
        while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            collected.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    buffer
}

/// A config file in a folder of its own under the system's temporary folder, removed when
/// dropped.
pub struct ConfigFile {
    dir: PathBuf,
    path: PathBuf,
}

impl ConfigFile {
    pub fn new(text: &str) -> ConfigFile {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "trickle-serve-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary folder");
        let path = dir.join("serve.toml");
        std::fs::write(&path, text).expect("write the config file");
        ConfigFile { dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn arg(&self) -> &str {
        self.path.to_str().expect("a UTF-8 temporary path")
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running `trickle serve` on a free port of 127.0.0.1, killed when dropped (a test that
/// fails leaves no server behind), its stderr collected as it comes.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`, from the first line on stdout.
    pub url: String,
    stderr: Arc<Mutex<String>>,
    // Held so that the server never writes into a closed pipe.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts `trickle serve --config CONFIG --listen 127.0.0.1:0 EXTRA…` and waits for
    /// the line announcing its address; fails the test with the server's stderr if it
    /// exits or says nothing within 30 s.
    pub fn start(config: &ConfigFile, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trickle"))
            .args(["serve", "--config", config.arg(), "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the trickle binary starts");
        let stderr = drain(child.stderr.take().unwrap());
        let stdout = child.stdout.take().unwrap();
        // Read the first line on a thread, so that a server that hangs cannot hang the test.
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let read = reader.read_line(&mut line);
            let _ = sender.send((read.map(|_| line), reader));
        });
        let (line, reader) = match receiver.recv_timeout(Duration::from_secs(30)) {
            Ok((Ok(line), reader)) => (line, reader),
            failed => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "trickle serve did not announce its address ({:?}); stderr: {}",
                    failed.map(|(line, _)| line),
                    stderr.lock().unwrap()
                );
            }
        };
        let Some(url) = line
            .strip_suffix('\n')
            .and_then(|line| line.strip_prefix("listening on "))
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the first line is {line:?}, not `listening on URL`; stderr: {}",
                stderr.lock().unwrap()
            );
        };
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Server {
            url: url.to_string(),
            child,
            stderr,
            _stdout: reader,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server has written to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The server's stderr once it holds every one of `needles`, or after 10 s without:
    /// a line is logged after the response it belongs to has left, and on a busy machine
    /// it reaches the pipe's reader later still. The caller asserts on what it gets.
    pub fn log_containing(&self, needles: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let log = self.stderr();
            if needles.iter().all(|needle| log.contains(needle)) || Instant::now() >= deadline {
                return log;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// True while the process has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `signal` (`TERM`, `INT`) and waits up to `limit` for the process to exit.
    pub fn signal_and_wait(&mut self, signal: &str, limit: Duration) -> Option<ExitStatus> {
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{signal}");
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Server {
    /// Sends `signal` (`TERM`, `INT`) and returns at once, so that a test can watch what
    /// the server does while it stops; [`Server::wait`] then waits for the exit.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{signal}");
    }

    /// Waits up to `limit` for the process to exit.
    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer, whatever its status.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: ureq::http::HeaderMap,
    pub body: String,
}

impl Reply {
    /// The value of header `name`, if sent once; fails the test if sent more than once.
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut values = self.headers.get_all(name).iter();
        let value = values.next()?;
        assert!(values.next().is_none(), "{name} sent twice: {self:?}");
        Some(value.to_str().expect("an ASCII header"))
    }

    /// The JSON body.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {:?}", self.body))
    }
}

/// An HTTP client that hands back 4XX and 5XX answers instead of errors, and gives up after
/// 20 s rather than hang the suite.
pub struct Http {
    agent: ureq::Agent,
}

impl Default for Http {
    fn default() -> Http {
        Http::new()
    }
}

impl Http {
    pub fn new() -> Http {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build()
            .into();
        Http { agent }
    }

    /// `method url` with `headers`; a transport failure fails the test.
    pub fn send(&self, method: &str, url: &str, headers: &[(&str, &str)]) -> Reply {
        self.try_send(method, url, headers)
            .unwrap_or_else(|error| panic!("{method} {url}: {error}"))
    }

    pub fn get(&self, url: &str, headers: &[(&str, &str)]) -> Reply {
        self.send("GET", url, headers)
    }

    /// `method url` with `headers`, or why no answer came.
    pub fn try_send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<Reply, ureq::Error> {
        let mut request = ureq::http::Request::builder().method(method).uri(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(()).expect("a valid request");
        let mut response = self.agent.run(request)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.body_mut().read_to_string()?;
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

/// The header naming the client, whose bucket a request spends.
pub fn client(id: &str) -> [(&'static str, &str); 1] {
    [("X-Client-Id", id)]
}

/// (status, X-Ratelimit-Remaining, X-Ratelimit-Used): the numbers a rate-limited answer
/// is checked by.
pub type Counts = (u16, Option<u64>, Option<u64>);

pub fn counts(reply: &Reply) -> Counts {
    let number = |name| {
        reply
            .header(name)
            .map(|value| value.parse().unwrap_or_else(|_| panic!("{name}: {value}")))
    };
    (
        reply.status,
        number("x-ratelimit-remaining"),
        number("x-ratelimit-used"),
    )
}

/// Real parallel clients: one GET per path, sent to `urls` in turn, each on a connection
/// of its own opened beforehand by a thread of its own, all released at once by a barrier,
/// so that every request is in flight while the others are decided. Plain HTTP/1.1 over a
/// `TcpStream`, as the burst is what is measured, not a client library's pooling.
pub fn burst(urls: &[&str], paths: &[String], headers: &[(&str, &str)]) -> Vec<Counts> {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::sync::Barrier;

    let barrier = Arc::new(Barrier::new(paths.len()));
    let threads: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let host = urls[i % urls.len()]
                .strip_prefix("http://")
                .expect("an http:// URL")
                .to_string();
            let mut request =
                format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
            for (name, value) in headers {
                request.push_str(&format!("{name}: {value}\r\n"));
            }
            request.push_str("\r\n");
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let mut stream = TcpStream::connect(&host).expect("connect to the server");
                stream
                    .set_read_timeout(Some(Duration::from_secs(20)))
                    .expect("a read timeout");
                barrier.wait();
                stream
                    .write_all(request.as_bytes())
                    .expect("send the request");
                let mut answer = String::new();
                stream.read_to_string(&mut answer).expect("read the answer");
                answer
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|thread| {
            let answer = thread.join().expect("a client thread finishes");
            let head = answer.split("\r\n\r\n").next().unwrap_or_default();
            let status = head
                .split(' ')
                .nth(1)
                .and_then(|code| code.parse().ok())
                .unwrap_or_else(|| panic!("no status line in {answer:?}"));
            let number = |wanted: &str| {
                head.split("\r\n").find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case(wanted)
                        .then(|| value.trim().parse::<u64>().expect("a whole number"))
                })
            };
            (
                status,
                number("x-ratelimit-remaining"),
                number("x-ratelimit-used"),
            )
        })
        .collect()
}

/// No request is sent this close to the end of any of its windows, nor this soon after the
/// start of one: the server decides a few ms after the test's clock says, and both must
/// be in the same windows.
pub const MARGIN_MS: u64 = 150;

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64
}

/// Sleeps until `MARGIN_MS` into a window of every limit of `policy` with at least
/// `needed_ms` of it left.
pub fn wait_inside_windows(policy: &Policy, needed_ms: u64) {
    loop {
        let now = now_ms();
        let wait = policy
            .limits()
            .map(|limit| {
                let into = now % limit.window_ms();
                let left = limit.window_ms() - into;
                if into < MARGIN_MS {
                    MARGIN_MS - into
                } else if left < MARGIN_MS + needed_ms {
                    left + MARGIN_MS
                } else {
                    0
                }
            })
            .max()
            .unwrap_or(0);
        if wait == 0 {
            return;
        }
        thread::sleep(Duration::from_millis(wait));
    }
}

/// Requests that ended in another window of some limit than they began in: the server
/// decided somewhere between, and a mirror of its decisions cannot know where.
#[derive(Debug)]
pub struct Straddled {
    pub sent: u64,
    pub answered: u64,
}

/// `Err` when requests meant for the same windows, the first sent at `sent` and the last
/// answered at `answered`, crossed a window boundary of one of `limits` (a policy's, or
/// those of its limits a longer run must stay within): on a loaded machine round trips can
/// outlast the margins [`wait_inside_windows`] leaves.
pub fn within_windows(
    limits: impl IntoIterator<Item = Limit>,
    sent: u64,
    answered: u64,
) -> Result<(), Straddled> {
    let crossed = limits
        .into_iter()
        .any(|limit| sent / limit.window_ms() != answered / limit.window_ms());
    if crossed {
        return Err(Straddled { sent, answered });
    }
    Ok(())
}

/// Runs a timed scenario until one attempt has every request inside its windows, up to
/// three attempts. Each attempt gets its own number to name fresh buckets by, as the
/// requests of an abandoned one were still counted; every request that did not straddle
/// was checked in full, so only the attempt's shape is in doubt, never a decision.
pub fn in_one_window_each<T>(mut attempt: impl FnMut(usize) -> Result<T, Straddled>) -> T {
    let mut straddled = Vec::new();
    for number in 0..3 {
        match attempt(number) {
            Ok(done) => return done,
            Err(round_trip) => {
                eprintln!("attempt {number} abandoned: {round_trip:?} crossed a window");
                straddled.push(round_trip);
            }
        }
    }
    panic!(
        "every attempt had a round trip cross a window boundary, the machine too loaded to \
         time requests inside windows: {straddled:?}"
    )
}
