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

use std::num::NonZeroUsize;

use trickle_core::state::FloatingState;
use trickle_core::{Admission, ConcurrentKeyedLimiter, Decision, Limit, Op, Reservation};

/// The budget's buckets, in this process whatever the layer's backend: behind a load
/// balancer each server keeps its own, so a key gets up to the budget once per server.
#[derive(Debug)]
pub(crate) struct FreeRuns {
    /// Floating-window buckets of one token per run, keyed by [`bucket_key`]. Each shard
    /// drops its empty buckets when first used in a new window.
    runs: ConcurrentKeyedLimiter<String, FloatingState>,
}

impl FreeRuns {
    /// A budget of `limit` per key, for at most about `max_keys` keys.
    pub(crate) fn new(limit: Limit, max_keys: NonZeroUsize) -> FreeRuns {
        FreeRuns {
            runs: ConcurrentKeyedLimiter::new(limit).with_max_keys(max_keys),
        }
    }

    pub(crate) fn limit(&self) -> Limit {
        self.runs.limit()
    }

    /// Reserves one run for `key` in `group` before its handler runs, or refuses it;
    /// `None` for a new key while the budget keeps as many keys as it may: the request runs
    /// unbudgeted (the rate limit still holds it), as a budget turning new keys away would
    /// refuse every new client of a flood's time.
    pub(crate) fn reserve(&self, group: &str, key: &str, now_ms: u64) -> Option<Admission> {
        let ticket = Reservation::new_ticket();
        let key = bucket_key(group, key);
        let decided = self
            .runs
            .try_decide(&key, Op::Reserve { ticket }, now_ms, 1);
        decided
            .ok()
            .map(|decision| Admission::new(decision, ticket))
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

    fn keys(count: usize) -> NonZeroUsize {
        NonZeroUsize::new(count).expect("at least one")
    }

    #[test]
    fn a_run_that_cost_something_is_given_back() {
        let runs = FreeRuns::new("2/1m".parse().unwrap(), keys(100));
        let admitted = |key| {
            runs.reserve("g", key, 0)
                .is_some_and(|run| run.is_admitted())
        };
        for _ in 0..5 {
            let Some(Admission::Admitted { reservation, .. }) = runs.reserve("g", "k", 0) else {
                panic!("a paying answer never spends the budget");
            };
            runs.settle("g", "k", reservation, 0, false);
        }
        for _ in 0..2 {
            let Some(Admission::Admitted { reservation, .. }) = runs.reserve("g", "k", 0) else {
                panic!("two free runs fit 2/1m");
            };
            runs.settle("g", "k", reservation, 0, true);
        }
        assert!(!admitted("k"));
        assert!(admitted("other"));
        assert!(runs
            .reserve("other", "k", 0)
            .is_some_and(|run| run.is_admitted()));
    }

    /// Past its cap the budget keeps no bucket for a new key, and reserves it nothing:
    /// the request goes on unbudgeted; the keys it has are budgeted as ever.
    #[test]
    fn a_full_budget_leaves_new_keys_unbudgeted() {
        let runs = FreeRuns::new("1/1m".parse().unwrap(), keys(1));
        let shards = runs.runs.shards();
        // Each shard holds one key: enough keys fill every shard.
        let mut kept = Vec::new();
        for n in 0..shards * 64 {
            let key = format!("key-{n}");
            if runs.reserve("g", &key, 0).is_some() {
                kept.push(key);
            }
        }
        assert_eq!(kept.len(), runs.runs.len());
        assert!(
            kept.len() <= shards,
            "{} kept in {shards} shards",
            kept.len()
        );
        assert!(runs.reserve("g", "one more", 0).is_none());
        // The first key kept spent its one run: refused, not unbudgeted.
        assert!(runs
            .reserve("g", &kept[0], 0)
            .is_some_and(|run| !run.is_admitted()));
    }
}
