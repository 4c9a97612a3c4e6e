//! The flow's observer with the `metrics` feature: each group's series, looked up once and
//! kept, counted into as the flow reports.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use ::metrics::{counter, histogram, Counter, Histogram};

use super::kinds::{FailureKind, Reason, StoreOp};
use crate::metrics::{ADMITTED, DECISIONS, FAILURES, REFUSED, STORE_DURATION, WOULD_REFUSE};

/// The groups whose counters a layer keeps looked up, at most this many: a server has a
/// few. Past it each request looks its group's up again, which is slower, not wrong.
const GROUPS_KEPT: usize = 64;

/// Hands out each group's counters, looked up in the recorder once per group: a lookup
/// hashes the name and the labels, several times per request otherwise. The recorder must
/// be installed before a group's first request, or that group's counters stay the
/// facade's no-ops.
#[derive(Debug, Default)]
pub(crate) struct Observer {
    groups: RwLock<HashMap<Box<str>, Observed>>,
}

impl Observer {
    pub(crate) fn group(&self, group: &str) -> Observed {
        let read = self.groups.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(observed) = read.get(group) {
            return observed.clone();
        }
        drop(read);
        let observed = Observed(Arc::new(GroupMetrics::new(group)));
        let mut write = self.groups.write().unwrap_or_else(PoisonError::into_inner);
        if write.len() < GROUPS_KEPT {
            // Another request of the group may have come first: keep its handles, they
            // are the same series.
            return write
                .entry(group.into())
                .or_insert_with(|| observed.clone())
                .clone();
        }
        observed
    }
}

/// One group's counters, as the flow reports to them.
#[derive(Debug, Clone)]
pub(crate) struct Observed(Arc<GroupMetrics>);

/// Every series of one group, registered together so that each shows (at 0) from the
/// group's first request on: a series that appears only with its first event makes
/// Prometheus's `rate()` miss that event.
#[derive(Debug)]
struct GroupMetrics {
    decided: Counter,
    admitted: Counter,
    /// By [`Reason`]: limit, free runs.
    refused: [Counter; 2],
    would_refuse: [Counter; 2],
    /// By [`StoreOp`], then [`FailureKind`].
    failures: [[Counter; 3]; 2],
    store_duration: [Histogram; 2],
}

const REASONS: [Reason; 2] = [Reason::Limit, Reason::FreeRuns];
const OPS: [StoreOp; 2] = [StoreOp::Reserve, StoreOp::Settle];
const KINDS: [FailureKind; 3] = [FailureKind::Outage, FailureKind::Data, FailureKind::Full];

fn reason_index(reason: Reason) -> usize {
    match reason {
        Reason::Limit => 0,
        Reason::FreeRuns => 1,
    }
}

fn op_index(op: StoreOp) -> usize {
    match op {
        StoreOp::Reserve => 0,
        StoreOp::Settle => 1,
    }
}

fn kind_index(kind: FailureKind) -> usize {
    match kind {
        FailureKind::Outage => 0,
        FailureKind::Data => 1,
        FailureKind::Full => 2,
    }
}

impl GroupMetrics {
    fn new(group: &str) -> GroupMetrics {
        let group = group.to_string();
        let by_reason = |name: &'static str| {
            REASONS
                .map(|reason| counter!(name, "group" => group.clone(), "reason" => reason.name()))
        };
        GroupMetrics {
            decided: counter!(DECISIONS, "group" => group.clone()),
            admitted: counter!(ADMITTED, "group" => group.clone()),
            refused: by_reason(REFUSED),
            would_refuse: by_reason(WOULD_REFUSE),
            failures: OPS.map(|op| {
                KINDS.map(|kind| {
                    counter!(
                        FAILURES,
                        "group" => group.clone(), "op" => op.name(), "kind" => kind.name()
                    )
                })
            }),
            store_duration: OPS
                .map(|op| histogram!(STORE_DURATION, "group" => group.clone(), "op" => op.name())),
        }
    }
}

impl Observed {
    pub(crate) fn decided(&self) {
        self.0.decided.increment(1);
    }

    pub(crate) fn admitted(&self) {
        self.0.admitted.increment(1);
    }

    pub(crate) fn refused(&self, reason: Reason) {
        self.0.refused[reason_index(reason)].increment(1);
    }

    pub(crate) fn would_refuse(&self, reason: Reason) {
        self.0.would_refuse[reason_index(reason)].increment(1);
    }

    /// A store call that failed. The flow counts every backend error as an outage; a
    /// backend that can tell a data error (Redis's `WRONGTYPE`) reports it here as
    /// [`FailureKind::Data`].
    pub(crate) fn failure(&self, op: StoreOp, kind: FailureKind) {
        self.0.failures[op_index(op)][kind_index(kind)].increment(1);
    }

    /// `decision`, timed into [`STORE_DURATION`] whatever it returns: a store that fails
    /// slowly is what the histogram is for.
    pub(crate) fn timed<F: Future>(
        &self,
        op: StoreOp,
        decision: F,
    ) -> impl Future<Output = F::Output> {
        let histogram = self.0.store_duration[op_index(op)].clone();
        async move {
            let started = Instant::now();
            let output = decision.await;
            histogram.record(started.elapsed());
            output
        }
    }
}
