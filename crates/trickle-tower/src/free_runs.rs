//! The budget of answers that cost nothing: a second limit per (group, key) on how many
//! times the handler may run and answer something its cost table prices at 0 (under ESI's,
//! every 5XX and a 429). Without it a client whose requests all fail runs the handler
//! without limit, as the bucket never fills.
//!
//! It follows the same flow as the bucket: a run is reserved before the handler (so that
//! requests arriving together cannot all pass), kept when the answer cost nothing, and
//! given back when it cost something. Which answers will cost nothing is known only once
//! the handler has answered, so a key whose budget is spent is refused every request until
//! it frees a run, as ESI's error limit refuses every request once a client has made too
//! many errors.

use trickle::state::FloatingState;
use trickle::{Admission, ConcurrentKeyedLimiter, Decision, Limit, Op, Reservation};

/// The budget's buckets, in this process whatever the layer's backend: behind a load
/// balancer each server keeps its own, so a key gets up to the budget once per server.
#[derive(Debug)]
pub(crate) struct FreeRuns {
    /// Floating-window buckets of one token per run, keyed by [`bucket_key`]. Each shard
    /// drops its empty buckets when first used in a new window.
    runs: ConcurrentKeyedLimiter<String, FloatingState>,
}

impl FreeRuns {
    pub(crate) fn new(limit: Limit) -> FreeRuns {
        FreeRuns {
            runs: ConcurrentKeyedLimiter::new(limit),
        }
    }

    pub(crate) fn limit(&self) -> Limit {
        self.runs.limit()
    }

    /// Reserves one run for `key` in `group` before its handler runs, or refuses it.
    pub(crate) fn reserve(&self, group: &str, key: &str, now_ms: u64) -> Admission {
        let ticket = Reservation::new_ticket();
        let decision = self
            .runs
            .decide(&bucket_key(group, key), Op::Reserve { ticket }, now_ms, 1);
        Admission::new(decision, ticket)
    }

    /// Settles a reserved run: kept when the answer cost nothing, given back otherwise;
    /// also given back when the handler never ran.
    pub(crate) fn settle(
        &self,
        group: &str,
        key: &str,
        run: Reservation,
        now_ms: u64,
        cost_nothing: bool,
    ) -> Decision {
        self.runs.decide(
            &bucket_key(group, key),
            Op::settle(run),
            now_ms,
            u64::from(cost_nothing),
        )
    }
}

/// One bucket per (group, key): the group's length first, so that no two pairs make the
/// same text (`("a", "bc")` is `1:abc`, `("ab", "c")` is `2:abc`).
fn bucket_key(group: &str, key: &str) -> String {
    format!("{}:{group}{key}", group.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_never_share_a_bucket() {
        assert_ne!(bucket_key("a", "bc"), bucket_key("ab", "c"));
        assert_ne!(bucket_key("a:", "b"), bucket_key("a", ":b"));
        assert_eq!(bucket_key("fitting", "7"), "7:fitting7");
    }

    #[test]
    fn a_run_that_cost_something_is_given_back() {
        let runs = FreeRuns::new("2/1m".parse().unwrap());
        for _ in 0..5 {
            let Admission::Admitted { reservation, .. } = runs.reserve("g", "k", 0) else {
                panic!("a paying answer never spends the budget");
            };
            runs.settle("g", "k", reservation, 0, false);
        }
        for _ in 0..2 {
            let Admission::Admitted { reservation, .. } = runs.reserve("g", "k", 0) else {
                panic!("two free runs fit 2/1m");
            };
            runs.settle("g", "k", reservation, 0, true);
        }
        assert!(!runs.reserve("g", "k", 0).is_admitted());
        assert!(runs.reserve("g", "other", 0).is_admitted());
        assert!(runs.reserve("other", "k", 0).is_admitted());
    }
}
