//! Enforcing ESI-style limits in a server: a limit per route group, a bucket per
//! (application, character), costs charged by the status after answering, and the headers
//! ESI sends. The "server" here is a loop over a few requests, so the example runs as is:
//! `cargo run --example enforce`.
//!
//! The flow, for each request (`trickle_core::flow`, the one the tower layer runs):
//! 1. before doing any work, `reserve` one token; if it does not fit, answer 429 with
//!    `Retry-After` and charge nothing (ESI's 429 costs 0);
//! 2. otherwise handle the request, then `settle` the reservation at what its status costs
//!    (2XX 2, 3XX 1, 4XX 5, 5XX 0), which may push the bucket past the limit: later
//!    requests then wait.

use trickle_core::esi::headers;
use trickle_core::flow::{Answer, Pricing};
use trickle_core::{Admission, Decision, GroupedLimiter};

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

    let esi = Pricing::esi();
    for (now_ms, group, status) in requests {
        let Some(admission) = limits.reserve(&group, me, now_ms, esi.reserve_cost()) else {
            println!("{now_ms:>5} ms {group:<8} 404: no such route group");
            continue;
        };
        let reservation = match admission {
            Admission::Admitted { reservation, .. } => reservation,
            Admission::Refused(refusal) => {
                show(now_ms, group, 429, &refusal);
                continue;
            }
        };
        // ... the handler runs here and answers `status` ...
        let cost = esi
            .cost(Answer::Status(status))
            .expect("ESI's table prices every status the handler answers");
        let settled = limits
            .settle(&group, me, reservation, now_ms, cost)
            .expect("the group was found above");
        show(now_ms, group, status, &settled);
    }
}

fn show(now_ms: u64, group: &str, status: u16, decision: &Decision) {
    let headers: Vec<String> = headers(decision)
        .into_iter()
        .map(|(name, value)| format!("{name}: {value}"))
        .collect();
    println!("{now_ms:>5} ms {group:<8} {status}  {}", headers.join("  "));
}
