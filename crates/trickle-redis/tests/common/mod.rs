//! A private redis-server for one test: on a Unix socket in its own temporary folder, with
//! nothing saved to disk, stopped by its own pid when the test is done.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub struct RedisServer {
    child: Child,
    dir: PathBuf,
    socket: PathBuf,
}

impl RedisServer {
    /// Starts a redis-server; panics with what to do when it is not installed.
    pub fn start() -> RedisServer {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "trickle-redis-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the server's temporary folder");
        let socket = dir.join("redis.sock");
        let child = Self::spawn(&dir, &socket);
        let mut server = RedisServer { child, dir, socket };
        server.wait_until_ready();
        server
    }

    fn spawn(dir: &Path, socket: &Path) -> Child {
        Command::new("redis-server")
            .args(["--port", "0", "--unixsocket"])
            .arg(socket)
            .arg("--dir")
            .arg(dir)
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "cannot start redis-server ({err}): these tests need a real Redis; \
                     `scripts/setup.sh test` installs it (Debian's redis-server)"
                )
            })
    }

    fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut conn) = self.try_connect() {
                if redis::cmd("PING").query::<String>(&mut conn).is_ok() {
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("redis-server exited at start with {status}");
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer within 10 s"
            );
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

    /// Kills the server and starts a new one on the same socket, with none of the old data
    /// (nothing is saved to disk): a restart, as clients see it.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
        let fresh = Self::spawn(&self.dir, &self.socket);
        self.child = fresh;
        self.wait_until_ready();
    }

    fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(redis::ConnectionAddr::Unix(self.socket.clone()))?.get_connection()
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn connect(&self) -> redis::Connection {
        self.try_connect()
            .expect("connect to the test's redis-server")
    }
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
    trickle::Outcome,
    &'static str,
    u64,
);

/// Runs every row on a fresh key through Redis and through the core: the requests before
/// must agree with the core, and the probe must give the row's numbers and the core's
/// decision. Collects every failing row before failing.
pub fn check_rows(algorithm: trickle::Algorithm, rows: &[Row]) {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let mut failures = Vec::new();
    for (row, &(name, text, before, (t, cost), outcome, used, remaining)) in rows.iter().enumerate()
    {
        let limit: trickle::Limit = text.parse().expect("a valid limit");
        let redis = trickle_redis::RedisLimiter::new(algorithm, limit, "table")
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let mut core = trickle::Limiter::with_algorithm(algorithm, limit);
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
