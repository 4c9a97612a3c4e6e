//! The sliding log: the exact sliding window, and the reference the others are measured by.
//!
//! Every allowed request is logged with its time s and cost; its tokens count while
//! `s > t − W` and come back at exactly `s + W`. This is what ESI's documentation
//! describes. It costs memory per logged millisecond, where the floating window costs 40
//! bytes in all.

use alloc::collections::VecDeque;

use crate::algorithms::state::{decision, judge, saturate_ms, Difference, State, Usage};
use crate::values::decision::{Decision, Outcome};
use crate::values::limit::Limit;

/// One millisecond's spending: requests logged in the same millisecond share an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    at_ms: u64,
    cost: u64,
}

/// The log of spending still inside the window, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlidingLogState {
    entries: VecDeque<Entry>,
    /// The sum of every entry's cost, so `used` needs no walk over the log.
    total: u128,
    latest_ms: u64,
}

/// True when tokens spent at `spent_ms` no longer count at `at_ms`: `spent_ms + W ≤ at_ms`.
fn expired(limit: &Limit, spent_ms: u64, at_ms: u64) -> bool {
    u128::from(spent_ms) + u128::from(limit.window_ms()) <= u128::from(at_ms)
}

impl SlidingLogState {
    /// The entries still counting at `at_ms`; expired ones are always a prefix.
    fn live<'a>(&'a self, limit: &'a Limit, at_ms: u64) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries
            .iter()
            .skip_while(move |entry| expired(limit, entry.at_ms, at_ms))
    }

    /// Tokens in use at `at_ms`, without changing the log.
    fn used_at(&self, limit: &Limit, at_ms: u64) -> u128 {
        let gone: u128 = self
            .entries
            .iter()
            .take_while(|entry| expired(limit, entry.at_ms, at_ms))
            .map(|entry| u128::from(entry.cost))
            .sum();
        self.total.saturating_sub(gone)
    }

    /// Drops the entries that no longer count at `at_ms`.
    fn forget_expired(&mut self, limit: &Limit, at_ms: u64) {
        while let Some(entry) = self.entries.front() {
            if !expired(limit, entry.at_ms, at_ms) {
                break;
            }
            self.total = self.total.saturating_sub(u128::from(entry.cost));
            self.entries.pop_front();
        }
    }

    /// Logs `cost` at `at_ms`: the latest time, for a hit or a record, or a reservation's
    /// earlier time, for a settle that charges it more. Kept in time order and merged into
    /// that millisecond's last entry unless the sum would overflow it; two entries for one
    /// millisecond come back together, so the walk in `wait_ms` still holds.
    fn spend(&mut self, at_ms: u64, cost: u64) {
        if cost == 0 {
            return;
        }
        self.total = self.total.saturating_add(u128::from(cost));
        let after = self.entries.partition_point(|entry| entry.at_ms <= at_ms);
        match after
            .checked_sub(1)
            .and_then(|last| self.entries.get_mut(last))
        {
            Some(last) if last.at_ms == at_ms && last.cost.checked_add(cost).is_some() => {
                last.cost += cost;
            }
            _ => self.entries.insert(after, Entry { at_ms, cost }),
        }
    }

    /// Takes up to `cost` back from the entries logged at `at_ms`, dropping those it
    /// empties: a settle refunding a reservation.
    fn take_back(&mut self, at_ms: u64, mut cost: u64) {
        let mut index = self.entries.partition_point(|entry| entry.at_ms <= at_ms);
        while cost > 0 && index > 0 && self.entries[index - 1].at_ms == at_ms {
            index -= 1;
            let entry = &mut self.entries[index];
            let taken = entry.cost.min(cost);
            entry.cost -= taken;
            cost -= taken;
            self.total -= u128::from(taken);
            if entry.cost == 0 {
                self.entries.remove(index);
            }
        }
    }

    /// The smallest d ≥ 1 after which `cost` (≤ N) fits: walk the log oldest first until
    /// enough tokens have come back; the entry that frees them returns at `s + W`. `used`
    /// is the tokens in use at `at_ms`, as `decide` already counted them.
    fn wait_ms(&self, limit: &Limit, at_ms: u64, mut used: u128, cost: u64) -> u64 {
        let fits = limit.tokens() - cost;
        for entry in self.live(limit, at_ms) {
            used = used.saturating_sub(u128::from(entry.cost));
            if used <= u128::from(fits) {
                let back_ms = u128::from(entry.at_ms) + u128::from(limit.window_ms());
                return saturate_ms(back_ms - u128::from(at_ms));
            }
        }
        // Unreachable for a denied request: once every entry is back, used = 0 ≤ N − cost.
        1
    }

    fn decide(&self, limit: &Limit, now_ms: u64, cost: u64) -> (u64, u128, Outcome) {
        let at_ms = now_ms.max(self.latest_ms);
        let used = self.used_at(limit, at_ms);
        let outcome = judge(limit, now_ms, at_ms, limit.scale(used), cost, || {
            self.wait_ms(limit, at_ms, used, cost)
        });
        (at_ms, used, outcome)
    }

    /// The number of milliseconds with spending still in the log (its memory, in entries).
    pub fn logged_ms(&self) -> usize {
        self.entries.len()
    }
}

fn usage(limit: &Limit, used: u128) -> Usage {
    Usage {
        used_scaled: limit.scale(used),
        counters: None,
    }
}

impl State for SlidingLogState {
    fn hit(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        let (at_ms, mut used, outcome) = self.decide(limit, now_ms, cost);
        self.latest_ms = at_ms;
        self.forget_expired(limit, at_ms);
        if outcome == Outcome::Allowed {
            self.spend(at_ms, cost);
            used = used.saturating_add(u128::from(cost));
        }
        decision(limit, at_ms, cost, outcome, usage(limit, used))
    }

    fn peek(&self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        let (at_ms, used, outcome) = self.decide(limit, now_ms, cost);
        decision(limit, at_ms, cost, outcome, usage(limit, used))
    }

    fn record(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        let at_ms = now_ms.max(self.latest_ms);
        self.latest_ms = at_ms;
        self.forget_expired(limit, at_ms);
        self.spend(at_ms, cost);
        decision(
            limit,
            at_ms,
            cost,
            Outcome::Allowed,
            usage(limit, self.total),
        )
    }

    /// The reservation's entry takes the final cost while it is still inside the window.
    fn settle(
        &mut self,
        limit: &Limit,
        now_ms: u64,
        reserved_at_ms: u64,
        reserved: u64,
        cost: u64,
    ) -> Decision {
        let at_ms = now_ms.max(self.latest_ms).max(reserved_at_ms);
        self.latest_ms = at_ms;
        self.forget_expired(limit, at_ms);
        if !expired(limit, reserved_at_ms, at_ms) {
            match Difference::between(reserved, cost) {
                Some(Difference::More(tokens)) => self.spend(reserved_at_ms, tokens),
                Some(Difference::Less(tokens)) => self.take_back(reserved_at_ms, tokens),
                None => {}
            }
        }
        decision(
            limit,
            at_ms,
            cost,
            Outcome::Allowed,
            usage(limit, self.total),
        )
    }

    fn is_idle(&self, limit: &Limit, now_ms: u64) -> bool {
        self.used_at(limit, now_ms.max(self.latest_ms)) == 0
    }

    fn clear(&mut self) {
        *self = SlidingLogState::default();
    }
}
