//! A private Redis Cluster for one test binary: three masters with a replica each, six
//! redis-servers in cluster mode on free ports of 127.0.0.1 (their cluster buses on free
//! ports too), each in a folder of its own with nothing saved to disk, joined by
//! `redis-cli --cluster create`. Starting one costs seconds, so a binary's tests share it
//! ([`Cluster::shared`]); it is stopped, every server by its own pid, when the last test
//! holding it lets go. The servers are `$TRICKLE_REDIS_SERVER` and `$TRICKLE_REDIS_CLI`
//! when set (Valkey's), else `redis-server` and `redis-cli`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::common::{check_server_named, free_port, server_binary, INSTALL_HINT};

/// How many masters hold the slots; each has one replica.
pub const MASTERS: usize = 3;

/// How long a node may be silent before the others count it failed, in ms, in a cluster of
/// its own (`Cluster::start`): short, so that a failover test waits about a second for its
/// replica's promotion rather than Redis's default of fifteen.
pub const NODE_TIMEOUT_MS: u64 = 1_000;

/// The same for the shared cluster, where no test kills a node: long enough that a node
/// starved of CPU on a loaded machine is not failed over, and some writes lost, mid-test.
const SHARED_NODE_TIMEOUT_MS: u64 = 10_000;

pub struct Cluster {
    nodes: Mutex<Vec<Node>>,
    dir: PathBuf,
}

struct Node {
    port: u16,
    child: Child,
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub id: String,
    pub port: u16,
    pub master: bool,
    /// Counted failed by the cluster (`fail` or `fail?`).
    pub failed: bool,
    /// The master a replica copies.
    pub master_id: Option<String>,
    /// The slot ranges a master holds, both ends included.
    pub slots: Vec<(u16, u16)>,
}

impl NodeInfo {
    pub fn holds(&self, slot: u16) -> bool {
        self.slots
            .iter()
            .any(|&(first, last)| (first..=last).contains(&slot))
    }
}

impl Cluster {
    /// The binary's cluster: the one a running test holds, or a new one.
    pub fn shared() -> Arc<Cluster> {
        static SHARED: Mutex<Weak<Cluster>> = Mutex::new(Weak::new());
        let mut shared = SHARED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(cluster) = shared.upgrade() {
            return cluster;
        }
        let cluster = Arc::new(Cluster::start_with(SHARED_NODE_TIMEOUT_MS));
        *shared = Arc::downgrade(&cluster);
        cluster
    }

    /// Six nodes, three masters with a replica each, every slot served and every replica
    /// in sync, failing a silent node over after `NODE_TIMEOUT_MS`; panics with what to do
    /// when redis-server is not installed.
    pub fn start() -> Cluster {
        Cluster::start_with(NODE_TIMEOUT_MS)
    }

    fn start_with(node_timeout_ms: u64) -> Cluster {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "trickle-cluster-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the cluster's temporary folder");
        let cluster = Cluster {
            nodes: Mutex::new(Vec::new()),
            dir,
        };
        for index in 0..MASTERS * 2 {
            let node = start_node(&cluster.dir.join(format!("node-{index}")), node_timeout_ms);
            cluster.lock().push(node);
        }
        let addresses: Vec<String> = cluster
            .ports()
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect();
        let cli = cli_binary();
        let created = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .unwrap_or_else(|err| panic!("cannot run {cli} ({err})"));
        assert!(
            created.status.success(),
            "{cli} --cluster create failed: {}{}",
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr)
        );
        cluster.wait_until(
            "every node sees the cluster whole, every replica in sync",
            |c| c.healthy(),
        );
        cluster
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Node>> {
        self.nodes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every node's port, killed ones too.
    pub fn ports(&self) -> Vec<u16> {
        self.lock().iter().map(|node| node.port).collect()
    }

    /// `redis://127.0.0.1:PORT/` of every node: what a client is given to find the rest.
    pub fn urls(&self) -> Vec<String> {
        self.ports()
            .iter()
            .map(|port| format!("redis://127.0.0.1:{port}/"))
            .collect()
    }

    /// A cluster client seeded with every node.
    pub fn client(&self) -> redis::cluster::ClusterClient {
        redis::cluster::ClusterClient::new(self.urls()).expect("a cluster client")
    }

    /// A cluster connection, which routes each command to its slot's master and follows
    /// MOVED and ASK.
    pub fn connect(&self) -> redis::cluster::ClusterConnection {
        self.client()
            .get_connection()
            .expect("connect to the test's cluster")
    }

    /// A plain connection to one node, which answers MOVED for other masters' keys.
    pub fn node(&self, port: u16) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|client| client.get_connection())
            .unwrap_or_else(|err| panic!("connect to node {port}: {err}"))
    }

    /// `CLUSTER NODES` as the first live node tells it.
    pub fn topology(&self) -> Vec<NodeInfo> {
        for port in self.live_ports() {
            let Ok(mut conn) = self.try_node(port) else {
                continue;
            };
            if let Ok(text) = redis::cmd("CLUSTER")
                .arg("NODES")
                .query::<String>(&mut conn)
            {
                return parse_nodes(&text);
            }
        }
        panic!("no node of the cluster answers CLUSTER NODES");
    }

    /// The masters, as the first live node tells it.
    pub fn masters(&self) -> Vec<NodeInfo> {
        self.topology()
            .into_iter()
            .filter(|node| node.master && !node.failed && !node.slots.is_empty())
            .collect()
    }

    /// The master holding `slot`.
    pub fn master_of(&self, slot: u16) -> NodeInfo {
        self.masters()
            .into_iter()
            .find(|node| node.holds(slot))
            .unwrap_or_else(|| panic!("no master holds slot {slot}"))
    }

    /// The server's own word on a key's slot (`CLUSTER KEYSLOT`).
    pub fn keyslot(&self, key: &str) -> u16 {
        let port = self.live_ports()[0];
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.node(port))
            .expect("CLUSTER KEYSLOT")
    }

    /// SIGKILLs the node on `port`, as a crash would: it answers nothing from then on.
    pub fn kill(&self, port: u16) {
        let mut nodes = self.lock();
        let node = nodes
            .iter_mut()
            .find(|node| node.port == port)
            .unwrap_or_else(|| panic!("no node on port {port}"));
        let _ = node.child.kill();
        let _ = node.child.wait();
    }

    fn live_ports(&self) -> Vec<u16> {
        self.lock()
            .iter_mut()
            .filter_map(|node| matches!(node.child.try_wait(), Ok(None)).then_some(node.port))
            .collect()
    }

    fn try_node(&self, port: u16) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
        client.get_connection_with_timeout(Duration::from_secs(2))
    }

    /// Every live node says `cluster_state:ok` and knows every other live one, the live
    /// masters hold all 16384 slots between them, and each has an online replica.
    pub fn healthy(&self) -> bool {
        let live = self.live_ports();
        for &port in &live {
            let Ok(mut conn) = self.try_node(port) else {
                return false;
            };
            let Ok(info) = redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut conn) else {
                return false;
            };
            if !info.contains("cluster_state:ok") {
                return false;
            }
        }
        let topology = self.topology();
        let masters: Vec<&NodeInfo> = topology
            .iter()
            .filter(|node| node.master && !node.failed && live.contains(&node.port))
            .collect();
        let slots: u32 = masters
            .iter()
            .flat_map(|node| &node.slots)
            .map(|&(first, last)| u32::from(last - first) + 1)
            .sum();
        slots == 16384
            && masters.iter().all(|master| {
                let Ok(mut conn) = self.try_node(master.port) else {
                    return false;
                };
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query(&mut conn)
                    .unwrap_or_default();
                info.lines()
                    .any(|line| line.starts_with("slave0:") && line.contains("state=online"))
            })
    }

    /// Polls `done` until it holds; panics naming `what` after a minute, when the cluster
    /// is stuck rather than slow.
    pub fn wait_until(&self, what: &str, mut done: impl FnMut(&Cluster) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "the cluster never got there: {what}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in self.lock().iter_mut() {
            let _ = node.child.kill();
            let _ = node.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn cli_binary() -> String {
    std::env::var("TRICKLE_REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_string())
}

/// A node in cluster mode in `dir`, on a free port, its bus on another: tried again on new
/// ports when another process took one first.
fn start_node(dir: &Path, node_timeout_ms: u64) -> Node {
    std::fs::create_dir_all(dir).expect("create a node's folder");
    let binary = server_binary();
    for _ in 0..5 {
        let (port, bus) = (free_port(), free_port());
        let mut child = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-port", &bus.to_string()])
            .args(["--cluster-node-timeout", &node_timeout_ms.to_string()])
            // A replica takes over however long it was cut off: the tests kill masters of
            // a cluster that has just started.
            .args(["--cluster-replica-validity-factor", "0"])
            .arg("--dir")
            .arg(dir)
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {binary} ({err}): {INSTALL_HINT}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ready = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                .and_then(|client| client.get_connection())
                .and_then(|mut conn| redis::cmd("PING").query::<String>(&mut conn).map(|_| conn));
            if let Ok(mut conn) = ready {
                if let Err(err) = check_server_named(&mut conn) {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("{err}");
                }
                return Node { port, child };
            }
            if matches!(child.try_wait(), Ok(Some(_))) || Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    panic!(
        "{binary} did not start in cluster mode in {}",
        dir.display()
    );
}

/// `CLUSTER NODES`: `ID IP:PORT@BUS FLAGS MASTER PING PONG EPOCH LINK SLOT…`, a slot being
/// `N`, `N-M`, or a migration in brackets (skipped).
fn parse_nodes(text: &str) -> Vec<NodeInfo> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (id, address, flags, master) = (
                fields.first()?,
                fields.get(1)?,
                fields.get(2)?,
                fields.get(3)?,
            );
            let port = address
                .split('@')
                .next()?
                .rsplit(':')
                .next()?
                .parse()
                .ok()?;
            let flags: Vec<&str> = flags.split(',').collect();
            let slots = fields[8.min(fields.len())..]
                .iter()
                .filter(|slot| !slot.starts_with('['))
                .filter_map(|slot| match slot.split_once('-') {
                    Some((first, last)) => Some((first.parse().ok()?, last.parse().ok()?)),
                    None => slot.parse().ok().map(|one| (one, one)),
                })
                .collect();
            Some(NodeInfo {
                id: id.to_string(),
                port,
                master: flags.contains(&"master"),
                failed: flags.contains(&"fail") || flags.contains(&"fail?"),
                master_id: (*master != "-").then(|| master.to_string()),
                slots,
            })
        })
        .collect()
}
