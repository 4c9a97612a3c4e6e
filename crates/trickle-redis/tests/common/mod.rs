//! A private redis-server for one test (or the load benchmark, which includes this file):
//! on a Unix socket, or a free port on 127.0.0.1, in its own temporary folder, with nothing
//! saved to disk, stopped by its own pid when dropped.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use redis::Commands;
use trickle_core::Limit;

pub struct RedisServer {
    child: Child,
    dir: PathBuf,
    listen: Listen,
    /// Flags beyond the ones every test server gets, given again on a restart.
    extra: Vec<String>,
}

/// Where the server listens; a restart listens there again.
enum Listen {
    Unix(PathBuf),
    Tcp(u16),
}

impl RedisServer {
    /// Starts a redis-server on a Unix socket; panics with what to do when it is not
    /// installed.
    pub fn start() -> RedisServer {
        let dir = Self::temp_dir();
        let listen = Listen::Unix(dir.join("redis.sock"));
        Self::start_in(dir, listen, Vec::new()).unwrap_or_else(|err| panic!("{err}"))
    }

    /// Starts a redis-server on a Unix socket with `extra` configuration (`--name value`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let dir = Self::temp_dir();
        let listen = Listen::Unix(dir.join("redis.sock"));
        let extra = extra.iter().map(|arg| arg.to_string()).collect();
        Self::start_in(dir, listen, extra).unwrap_or_else(|err| panic!("{err}"))
    }

    /// Starts a redis-server on a Unix socket with Cluster support on, as one node holding
    /// no slot yet: enough for `CLUSTER KEYSLOT`, the server's own word on a key's slot
    /// (other commands answer CLUSTERDOWN until it is given slots).
    ///
    /// Its cluster bus listens on a free port of 127.0.0.1: left to itself, a node without
    /// a client port binds port 10000 on every interface, and a second node started at the
    /// same time (another test, another lane of `make test`) fails to start.
    pub fn start_cluster_node() -> RedisServer {
        let mut attempts = 0;
        loop {
            let dir = Self::temp_dir();
            let listen = Listen::Unix(dir.join("redis.sock"));
            let nodes = dir.join("nodes.conf").display().to_string();
            let extra = vec![
                "--cluster-enabled".to_string(),
                "yes".to_string(),
                "--cluster-config-file".to_string(),
                nodes,
                "--cluster-port".to_string(),
                free_port().to_string(),
                "--bind".to_string(),
                "127.0.0.1".to_string(),
            ];
            match Self::start_in(dir, listen, extra) {
                Ok(server) => return server,
                Err(err) if attempts >= 5 => panic!("{err}"),
                Err(_) => attempts += 1,
            }
        }
    }

    /// Starts a redis-server on a free TCP port of 127.0.0.1, as a server reaches Redis over
    /// the network.
    pub fn start_tcp() -> RedisServer {
        let mut attempts = 0;
        loop {
            match Self::start_in(Self::temp_dir(), Listen::Tcp(free_port()), Vec::new()) {
                Ok(server) => return server,
                Err(err) if attempts >= 5 => panic!("{err}"),
                Err(_) => attempts += 1,
            }
        }
    }

    fn temp_dir() -> PathBuf {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "trickle-redis-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the server's temporary folder");
        dir
    }

    /// Stops and removes everything itself when the server does not come up.
    fn start_in(dir: PathBuf, listen: Listen, extra: Vec<String>) -> Result<RedisServer, String> {
        let child = Self::spawn(&dir, &listen, &extra);
        let mut server = RedisServer {
            child,
            dir,
            listen,
            extra,
        };
        server.wait_until_ready()?;
        Ok(server)
    }

    fn spawn(dir: &Path, listen: &Listen, extra: &[String]) -> Child {
        let mut command = Command::new(server_binary());
        match listen {
            Listen::Unix(socket) => command.args(["--port", "0", "--unixsocket"]).arg(socket),
            Listen::Tcp(port) => command
                .args(["--bind", "127.0.0.1", "--port"])
                .arg(port.to_string()),
        };
        command
            .arg("--dir")
            .arg(dir)
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| {
                panic!("cannot start {} ({err}): {INSTALL_HINT}", server_binary())
            })
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut conn) = self.try_connect() {
                if redis::cmd("PING").query::<String>(&mut conn).is_ok() {
                    return check_server_named(&mut conn);
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("redis-server exited at start with {status}"));
            }
            if Instant::now() >= deadline {
                return Err("redis-server did not answer within 10 s".to_string());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the server's process (SIGSTOP) without closing its socket: it reads nothing and
    /// answers nothing until `resume`, as a server stuck on a long command or a full disk.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} redis-server");
    }

    /// Kills the server, as a crash or an operator would; `restart` brings it back.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the server and starts a new one on the same socket, with none of the old data
    /// (nothing is saved to disk): a restart, as clients see it.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Listen::Unix(socket) = &self.listen {
            let _ = std::fs::remove_file(socket);
        }
        let fresh = Self::spawn(&self.dir, &self.listen, &self.extra);
        self.child = fresh;
        self.wait_until_ready()
            .unwrap_or_else(|err| panic!("{err}"));
    }

    fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.address())?.get_connection()
    }

    pub fn address(&self) -> redis::ConnectionAddr {
        match &self.listen {
            Listen::Unix(socket) => redis::ConnectionAddr::Unix(socket.clone()),
            Listen::Tcp(port) => redis::ConnectionAddr::Tcp("127.0.0.1".to_string(), *port),
        }
    }

    /// The Unix socket of a server from [`RedisServer::start`].
    pub fn socket(&self) -> &Path {
        match &self.listen {
            Listen::Unix(socket) => socket,
            Listen::Tcp(port) => panic!("the server listens on TCP port {port}, not a socket"),
        }
    }

    pub fn connect(&self) -> redis::Connection {
        self.try_connect()
            .expect("connect to the test's redis-server")
    }
}

/// What to do when the server cannot be started.
pub const INSTALL_HINT: &str = "these tests need a real Redis (or the Valkey that \
    TRICKLE_REDIS_SERVER names); `scripts/setup.sh test` installs Debian's redis-server, and \
    Valkey's valkey-server in target/tools/valkey/bin";

/// The server the tests start: `$TRICKLE_REDIS_SERVER` when set (Valkey's valkey-server,
/// which takes the same flags), else `redis-server`.
pub fn server_binary() -> String {
    std::env::var("TRICKLE_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

/// A server's product and version, as it names itself: `("valkey", "8.1.8")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerName {
    pub product: String,
    pub version: String,
}

impl std::fmt::Display for ServerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.product, self.version)
    }
}

/// What a running server says it is in `INFO server`: Valkey gives `server_name:valkey`
/// and its own `valkey_version` (its `redis_version` is the Redis it is compatible with,
/// 7.2.4 for Valkey 8); Redis gives `redis_version` alone.
pub fn running_server_name(conn: &mut impl redis::ConnectionLike) -> Result<ServerName, String> {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(conn)
        .map_err(|err| format!("INFO server failed: {err}"))?;
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix(':'))
            .map(str::to_string)
    };
    let product = field("server_name").unwrap_or_else(|| "redis".to_string());
    let version = field(&format!("{product}_version"))
        .ok_or_else(|| format!("INFO server names no {product}_version: {info}"))?;
    Ok(ServerName { product, version })
}

/// What `$TRICKLE_REDIS_SERVER --version` says the binary is (`Valkey server v=8.1.8 …`,
/// `Redis server v=7.0.15 …`), asked once per test binary; `None` when the variable is unset.
fn wanted_server_name() -> Result<Option<ServerName>, String> {
    static WANTED: std::sync::OnceLock<Result<Option<ServerName>, String>> =
        std::sync::OnceLock::new();
    WANTED
        .get_or_init(|| {
            // Read here, apart from `server_binary`, so that a start that ignored the
            // variable is caught rather than trusted.
            let Ok(binary) = std::env::var("TRICKLE_REDIS_SERVER") else {
                return Ok(None);
            };
            let output = Command::new(&binary)
                .arg("--version")
                .output()
                .map_err(|err| format!("cannot run TRICKLE_REDIS_SERVER={binary} ({err})"))?;
            let text = String::from_utf8_lossy(&output.stdout);
            let mut words = text.split_whitespace();
            let product = words.next().unwrap_or_default().to_lowercase();
            let version = words
                .find_map(|word| word.strip_prefix("v="))
                .filter(|_| ["redis", "valkey"].contains(&product.as_str()))
                .ok_or_else(|| {
                    format!(
                        "TRICKLE_REDIS_SERVER={binary}: `--version` printed {text:?};                          expected `Redis server v=…` or `Valkey server v=…`"
                    )
                })?;
            Ok(Some(ServerName {
                product,
                version: version.to_string(),
            }))
        })
        .clone()
}

/// When `$TRICKLE_REDIS_SERVER` is set (`make valkey-run` sets it to Valkey's), the server a
/// test started must be that binary's product and version: a suite that ignored the
/// variable would otherwise pass against Debian's redis-server and be counted as Valkey's.
pub fn check_server_named(conn: &mut impl redis::ConnectionLike) -> Result<(), String> {
    let Some(wanted) = wanted_server_name()? else {
        return Ok(());
    };
    let running = running_server_name(conn)?;
    if running == wanted {
        Ok(())
    } else {
        Err(format!(
            "TRICKLE_REDIS_SERVER names {wanted}, but the server this test started says it \
             is {running}: the test support did not start the binary it was given"
        ))
    }
}

/// A port of 127.0.0.1 free when asked for. Another process may take it before the server
/// binds it; the server then exits at start, and its caller tries a new port.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("find a free port on 127.0.0.1")
        .port()
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// CRC16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster takes mod 16384.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The Cluster slot of a key: of its hash tag (between the first `{` and the first `}`
/// after it) when that is non-empty, else of the whole key.
pub fn slot(key: &str) -> u16 {
    let hashed = key
        .find('{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.find('}').map(|close| &rest[..close])
        })
        .filter(|tag| !tag.is_empty())
        .unwrap_or(key);
    crc16(hashed.as_bytes()) % 16384
}

/// One request of a hand-worked table: a hit or a record, at a time, of a cost.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// `hit(t, cost)`.
    H(u64, u64),
    /// `record(t, cost)`.
    R(u64, u64),
}

/// name, limit, requests before, probe hit (t, cost), outcome, used shown, remaining.
pub type Row = (
    &'static str,
    &'static str,
    &'static [Op],
    (u64, u64),
    trickle_core::Outcome,
    &'static str,
    u64,
);

/// Runs every row on a fresh key through Redis and through the core: the requests before
/// must agree with the core, and the probe must give the row's numbers and the core's
/// decision. Collects every failing row before failing.
pub fn check_rows(algorithm: trickle_core::Algorithm, rows: &[Row]) {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let mut failures = Vec::new();
    for (row, &(name, text, before, (t, cost), outcome, used, remaining)) in rows.iter().enumerate()
    {
        let limit: trickle_core::Limit = text.parse().expect("a valid limit");
        let redis = trickle_redis::RedisLimiter::new(algorithm, limit, "table")
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let mut core = trickle_core::Limiter::with_algorithm(algorithm, limit);
        let key = format!("row-{row}");
        for &op in before {
            let (got, want) = match op {
                Op::H(at, spend) => (redis.hit(&mut conn, &key, at, spend), core.hit(at, spend)),
                Op::R(at, spend) => (
                    redis.record(&mut conn, &key, at, spend),
                    core.record(at, spend),
                ),
            };
            assert_eq!(got.expect("redis"), want, "{name}: setting up with {op:?}");
        }
        let decision = redis.hit(&mut conn, &key, t, cost).expect("redis hit");
        let got = (
            decision.outcome,
            decision.used.to_string(),
            decision.remaining(),
            decision.counters,
        );
        let want = (outcome, used.to_string(), remaining, None);
        if got != want {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
        if decision != core.hit(t, cost) {
            failures.push(format!("{name}: Redis and the core differ"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A limit written as text, known to be valid.
pub fn limit(text: &str) -> Limit {
    text.parse().expect("a valid limit")
}

/// What a bucket's key holds, by name: the integers of its string (little-endian doubles,
/// in the order the algorithm's script names them) but those that are 0, which the scripts
/// read as they read none; nothing when it is gone. The algorithm is read from the key's
/// name, `{P:KEY}:ALGORITHM` (and `:limit:NAME` for a policy's).
pub fn stored(conn: &mut impl redis::ConnectionLike, key: &str) -> HashMap<String, String> {
    let algorithm = key
        .rsplit_once('}')
        .and_then(|(_, rest)| rest.split(':').nth(1))
        .expect("a bucket's key");
    let names: &[&str] = match algorithm {
        "floating" => &["previous", "current", "counted", "seen"],
        "fixed" => &["current", "counted", "seen"],
        "token-bucket" => &["owed", "fraction", "refilled", "seen"],
        "sliding-log" => &["total", "seen"],
        other => panic!("no algorithm {other} in {key}"),
    };
    let bytes: Option<Vec<u8>> = redis::cmd("GET").arg(key).query(conn).expect("GET");
    let Some(bytes) = bytes else {
        return HashMap::new();
    };
    assert_eq!(bytes.len(), 8 * names.len(), "{key} holds {bytes:?}");
    names
        .iter()
        .zip(bytes.chunks_exact(8))
        .map(|(name, double)| {
            let value = f64::from_le_bytes(double.try_into().expect("8 bytes"));
            assert!(
                value >= 0.0 && value.fract() == 0.0 && value <= 9_007_199_254_740_992.0,
                "{key}: {name} is {value}"
            );
            (name.to_string(), format!("{}", value as u64))
        })
        .filter(|(_, value)| value != "0")
        .collect()
}

/// How long Redis keeps `key`, in ms (−2 when it is gone).
pub fn pttl(conn: &mut impl redis::ConnectionLike, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(conn).expect("PTTL")
}

/// Takes the expiry off every key of a bucket, and returns each key's PTTL just before.
///
/// Random traces run on a simulated clock, but Redis expires keys on its own: a trace that
/// steps back or stands still writes no new expiry, and on a loaded machine the real second
/// of grace can run out between two requests the trace places in the same millisecond.
/// Parity tests call this after every request, so only the scripts decide what a bucket
/// holds; and since a persisted key has no TTL (−1), a request that must write nothing
/// can be checked to have set none either.
pub fn hold_still(conn: &mut impl redis::ConnectionLike, keys: &[String]) -> Vec<i64> {
    keys.iter()
        .map(|key| {
            let ttl = pttl(conn, key);
            let _: i64 = redis::cmd("PERSIST").arg(key).query(conn).expect("PERSIST");
            ttl
        })
        .collect()
}

/// Asserts that `key` expires in `most_ms` from when its script ran: its PTTL is at most
/// that, and no more than a second less (the test's own round trips since).
pub fn assert_expires_near(conn: &mut redis::Connection, key: &str, most_ms: u64, context: &str) {
    let ttl = pttl(conn, key);
    let most = most_ms as i64;
    assert!(
        ttl > most - 1_000 && ttl <= most,
        "{context}: {key}: PTTL {ttl}, want near {most}"
    );
}

/// A request on a fresh key denied at once (7 tokens, more than the tests' limits of 6)
/// writes nothing, so it leaves no key behind.
pub fn assert_denial_leaves_no_key(
    conn: &mut redis::Connection,
    bucket: &trickle_redis::RedisLimiter,
) {
    bucket.hit(conn, "fresh", 0, 7).unwrap();
    for key in bucket.redis_keys("fresh") {
        assert!(!conn.exists::<_, bool>(&key).unwrap(), "{key}");
    }
}

/// A sliding log as Redis holds it: the bucket's hash and its list of entries.
#[derive(Debug, PartialEq, Eq)]
pub struct LogStored {
    pub hash: HashMap<String, String>,
    pub entries: Vec<String>,
}

/// `key`'s sliding log, as Redis holds it.
pub fn stored_log(
    conn: &mut redis::Connection,
    limiter: &trickle_redis::RedisLimiter,
    key: &str,
) -> LogStored {
    let keys = limiter.redis_keys(key);
    LogStored {
        hash: stored(conn, &keys[0]),
        entries: conn.lrange(&keys[1], 0, -1).expect("LRANGE"),
    }
}

/// Whether a core decision that charged after the fact (a record, a settle) left the
/// bucket past 2^53 scaled by W, where Redis refuses it: the floating window's counters
/// together, the others' usage.
pub fn past_exact_range(charged: &trickle_core::Decision) -> bool {
    let window = u128::from(charged.limit.window_ms());
    let scaled = match charged.counters {
        Some(counters) => (counters.previous + counters.current) * window,
        None => charged.used.numerator(),
    };
    scaled > 1 << 53
}

/// How many scripts the server has run (FCALL, EVALSHA and EVAL), from `INFO commandstats`: how
/// many copies of a decision reached it.
pub fn script_runs(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(conn)
        .expect("INFO");
    info.lines()
        .filter(|line| {
            ["cmdstat_fcall:", "cmdstat_evalsha:", "cmdstat_eval:"]
                .iter()
                .any(|command| line.starts_with(command))
        })
        .filter_map(|line| {
            let calls = line.split_once("calls=")?.1;
            calls.split(',').next()?.parse::<u64>().ok()
        })
        .sum()
}

/// A TCP proxy on a free port of 127.0.0.1 in front of a server from
/// [`RedisServer::start_tcp`] that, once armed, swallows the next answer coming back and
/// closes that client's connection: a connection dropped mid-reply, after the server ran
/// the command. Stopped, with its threads, when dropped.
pub struct LosingProxy {
    port: u16,
    armed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    listener: Option<std::thread::JoinHandle<()>>,
}

impl LosingProxy {
    pub fn new(server: &RedisServer) -> LosingProxy {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpStream};
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;

        let redis::ConnectionAddr::Tcp(host, server_port) = server.address() else {
            panic!("the proxy needs a server on TCP: RedisServer::start_tcp");
        };
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
        let port = listener.local_addr().expect("the proxy's port").port();
        let armed = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (armed_copy, stop_copy) = (armed.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop_copy.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let Ok(upstream) = TcpStream::connect((host.as_str(), server_port)) else {
                    continue;
                };
                let armed = armed_copy.clone();
                let (mut client_in, mut upstream_out) =
                    match (client.try_clone(), upstream.try_clone()) {
                        (Ok(client_in), Ok(upstream_out)) => (client_in, upstream_out),
                        _ => continue,
                    };
                // Requests go through as they come.
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 16 * 1024];
                    while let Ok(read) = client_in.read(&mut buffer) {
                        if read == 0 || upstream_out.write_all(&buffer[..read]).is_err() {
                            break;
                        }
                    }
                    let _ = upstream_out.shutdown(Shutdown::Both);
                });
                // Answers too, but the first one after arming is lost with the connection.
                std::thread::spawn(move || {
                    let (mut upstream_in, mut client_out) = (upstream, client);
                    let mut buffer = [0u8; 16 * 1024];
                    while let Ok(read) = upstream_in.read(&mut buffer) {
                        if read == 0 || armed.swap(false, Ordering::SeqCst) {
                            break;
                        }
                        if client_out.write_all(&buffer[..read]).is_err() {
                            break;
                        }
                    }
                    let _ = client_out.shutdown(Shutdown::Both);
                    let _ = upstream_in.shutdown(Shutdown::Both);
                });
            }
        });
        LosingProxy {
            port,
            armed,
            stop,
            listener: Some(handle),
        }
    }

    pub fn address(&self) -> redis::ConnectionAddr {
        redis::ConnectionAddr::Tcp("127.0.0.1".to_string(), self.port)
    }

    /// The next answer from the server is lost, and its connection closed.
    pub fn lose_next_answer(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Whether the armed answer has been lost yet.
    pub fn lost(&self) -> bool {
        !self.armed.load(Ordering::SeqCst)
    }
}

impl Drop for LosingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the stop.
        let _ = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(handle) = self.listener.take() {
            let _ = handle.join();
        }
    }
}
