//! Enforcing ESI-style limits in a server: a limit per route group, a bucket per
//! (application, character), costs charged by the status after answering, and the headers
//! ESI sends. The "server" here is a loop over a few requests, so the example runs as is:
//! `cargo run --example enforce`.
//!
//! The flow, for each request:
//! 1. before doing any work, `peek` whether one more token fits; if not, answer 429 with
//!    `Retry-After` and charge nothing (ESI's 429 costs 0);
//! 2. otherwise handle the request, then `record` what its status costs (2XX 2, 3XX 1,
//!    4XX 5, 5XX 0), which may push the bucket past the limit: later requests then wait.

use trickle::esi::{cost_for_status, headers};
use trickle::{Decision, GroupedLimiter};

/// (application, character): the key ESI limits within a route group.
type Key = (u32, u64);

fn main() {
    let mut limits: GroupedLimiter<&str, Key> = GroupedLimiter::new();
    limits.add_group("fitting", "6/8s".parse().expect("a valid limit"));
    limits.add_group("market", "150/15m".parse().expect("a valid limit"));

    let me = (7, 90_000_001);
    // (time in ms, route group, the status the handler would answer with)
    let requests = [
        (0, "fitting", 200),
        (100, "fitting", 200),
        (200, "fitting", 404),
        (300, "fitting", 200),
        (400, "market", 200),
        (9_000, "fitting", 200),
    ];

    for (now_ms, group, status) in requests {
        let Some(check) = limits.peek(&group, &me, now_ms, 1) else {
            println!("{now_ms:>5} ms {group:<8} 404: no such route group");
            continue;
        };
        if !check.is_allowed() {
            show(now_ms, group, 429, &check);
            continue;
        }
        // ... the handler runs here and answers `status` ...
        let cost = cost_for_status(status).expect("the handler answers with an HTTP status");
        let charged = limits
            .record(&group, me, now_ms, cost)
            .expect("the group was found above");
        show(now_ms, group, status, &charged);
    }
}

fn show(now_ms: u64, group: &str, status: u16, decision: &Decision) {
    let headers: Vec<String> = headers(decision)
        .into_iter()
        .map(|(name, value)| format!("{name}: {value}"))
        .collect();
    println!("{now_ms:>5} ms {group:<8} {status}  {}", headers.join("  "));
}
