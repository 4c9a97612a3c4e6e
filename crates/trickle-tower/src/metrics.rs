//! What the layer counts, through the [`metrics`](https://docs.rs/metrics) facade (the
//! `metrics` feature): for the exporter the application installs, such as
//! `metrics-exporter-prometheus`, which `trickle serve --metrics` uses. The names follow
//! Prometheus's conventions (`_total` for counters, seconds for durations) and carry no
//! exporter-side suffix, so install the exporter without `with_recommended_naming`.
//!
//! Every label has a handful of values: `group` (the route group, as the subject function
//! names it), `reason`, `op`, `kind`. The client's key is never a label: it would make a
//! series per client, which is what bounds a Prometheus server's memory.
//!
//! | metric | type | labels | counts |
//! |---|---|---|---|
//! | `trickle_decisions_total` | counter | `group` | limited requests the layer decided: every request of a group the backend has, whether the budget, the store or neither (a store that failed) decided it |
//! | `trickle_admitted_total` | counter | `group` | requests whose reserve fitted: the handler ran |
//! | `trickle_refused_total` | counter | `group`, `reason` | requests answered 429 before the handler: `reason="limit"` (the rate limit) or `"free_runs"` (the budget of answers that cost nothing is spent) |
//! | `trickle_would_refuse_total` | counter | `group`, `reason` | in shadow mode, requests a normal layer would have refused, let through to the handler |
//! | `trickle_failures_total` | counter | `group`, `op`, `kind` | store calls that failed: `op="reserve"` or `"settle"`, `kind="outage"` (down, slow: the outcome is unknown) or `"data"` (the store answered with an error about the key's data) |
//! | `trickle_fallback_decisions_total` | counter | `group` | decisions a [`Fallback`]'s in-process limiter made instead of the store ([`record_fallback`]) |
//! | `trickle_fallback_outages_total` | counter | `group` | outages of the store a [`Fallback`] met, each a decision it then made itself or a settle whose outcome is unknown |
//! | `trickle_unknown_settles_total` | counter | `group` | settles a [`Fallback`] sent the store and got no answer to, or could not send: the store holds their reserve, or their cost |
//! | `trickle_breaker_opened_total` | counter | | times a [`Fallback`]'s breaker opened |
//! | `trickle_breaker_state` | gauge | | a [`Fallback`]'s breaker: 0 closed, 1 half-open (probing the store), 2 open |
//! | `trickle_store_duration_seconds` | histogram | `group`, `op` | how long each reserve and settle took, failures included |
//! | `trickle_live_keys` | gauge | `group` | keys holding a bucket in process ([`record_live_keys`]) |
//!
//! Without a fallback, the counters add up: `decisions = admitted + refused +
//! would_refuse + failures{op="reserve"}`, and the handler ran `admitted + would_refuse`
//! times (and once per reserve failure, failing open). Each group's series appear, at 0,
//! with its first request.
//!
//! ```no_run
//! use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
//! use trickle_tower::metrics::{self, STORE_DURATION, STORE_DURATION_BUCKETS};
//!
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Before the first request: each group's counters are looked up once, with its first.
//! let handle = PrometheusBuilder::new()
//!     .set_buckets_for_metric(Matcher::Full(STORE_DURATION.to_string()), STORE_DURATION_BUCKETS)?
//!     .install_recorder()?;
//! metrics::describe();
//! // … serve handle.render() at /metrics, and call handle.run_upkeep() every few seconds.
//! # Ok(())
//! # }
//! ```

use ::metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, Unit};

use crate::backend::{Backend, InProcess};
use crate::breaker::BreakerState;
use crate::fallback::Fallback;

/// Counter: limited requests the layer decided, per `group`: every request of a group the
/// backend has, refused by the budget, decided by the store, or failed.
pub const DECISIONS: &str = "trickle_decisions_total";
/// Counter: requests whose reserve fitted and whose handler ran, per `group`.
pub const ADMITTED: &str = "trickle_admitted_total";
/// Counter: requests answered 429 before the handler, per `group` and `reason` (`limit`,
/// `free_runs`).
pub const REFUSED: &str = "trickle_refused_total";
/// Counter: in shadow mode, requests a normal layer would have refused, per `group` and
/// `reason`; their handler ran.
pub const WOULD_REFUSE: &str = "trickle_would_refuse_total";
/// Counter: store calls that failed, per `group`, `op` (`reserve`, `settle`) and `kind`
/// (`outage`, `data`).
pub const FAILURES: &str = "trickle_failures_total";
/// Counter: decisions a [`Fallback`]'s in-process limiter made instead of the store, per
/// `group` ([`record_fallback`]).
pub const FALLBACK_DECISIONS: &str = "trickle_fallback_decisions_total";
/// Counter: outages of the store a [`Fallback`] met, per `group`.
pub const FALLBACK_OUTAGES: &str = "trickle_fallback_outages_total";
/// Counter: settles a [`Fallback`] sent the store without an answer, or could not send, per
/// `group`: their outcome is unknown.
pub const UNKNOWN_SETTLES: &str = "trickle_unknown_settles_total";
/// Counter: times a [`Fallback`]'s breaker opened.
pub const BREAKER_OPENED: &str = "trickle_breaker_opened_total";
/// Gauge: a [`Fallback`]'s breaker, 0 closed, 1 half-open, 2 open.
pub const BREAKER_STATE: &str = "trickle_breaker_state";
/// Histogram: seconds each store call took, per `group` and `op`.
pub const STORE_DURATION: &str = "trickle_store_duration_seconds";
/// Gauge: keys holding a bucket in an [`InProcess`] backend, per `group`.
pub const LIVE_KEYS: &str = "trickle_live_keys";

/// Bucket bounds, in seconds, for [`STORE_DURATION`] as a Prometheus histogram: from the
/// in-process backend's microseconds, through a Redis round trip's fraction of a
/// millisecond, to a timed-out Redis's second or more.
pub const STORE_DURATION_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Registers each metric's description and unit with the installed recorder, for the
/// `# HELP` lines of an exporter. Call it once, after installing the recorder.
pub fn describe() {
    describe_counter!(
        DECISIONS,
        Unit::Count,
        "Limited requests the rate limiter decided."
    );
    describe_counter!(
        ADMITTED,
        Unit::Count,
        "Requests whose reserve fitted; their handler ran."
    );
    describe_counter!(
        REFUSED,
        Unit::Count,
        "Requests answered 429 before the handler: by the rate limit, or the budget of answers that cost nothing."
    );
    describe_counter!(
        WOULD_REFUSE,
        Unit::Count,
        "Shadow mode: requests a normal layer would have refused, let through to the handler."
    );
    describe_counter!(
        FAILURES,
        Unit::Count,
        "Store calls that failed: an outage (the outcome is unknown) or a data error."
    );
    describe_counter!(
        FALLBACK_DECISIONS,
        Unit::Count,
        "Decisions a fallback limiter in process made instead of the store."
    );
    describe_counter!(
        FALLBACK_OUTAGES,
        Unit::Count,
        "Outages of the store a fallback met."
    );
    describe_counter!(
        UNKNOWN_SETTLES,
        Unit::Count,
        "Settles of the store's reservations unanswered or unsent: their outcome is unknown."
    );
    describe_counter!(
        BREAKER_OPENED,
        Unit::Count,
        "Times the fallback's circuit breaker opened."
    );
    describe_gauge!(
        BREAKER_STATE,
        Unit::Count,
        "The fallback's circuit breaker: 0 closed, 1 half-open, 2 open."
    );
    describe_histogram!(
        STORE_DURATION,
        Unit::Seconds,
        "How long each reserve and settle took, failures included."
    );
    describe_gauge!(
        LIVE_KEYS,
        Unit::Count,
        "Keys holding a bucket in this process."
    );
}

/// Sets [`LIVE_KEYS`] for each group of `backend` to how many keys hold a bucket now.
/// Counting takes each shard's read lock in turn, so call it where it is cheap and the
/// figure is wanted: just before an exporter renders (serve does, per scrape), or after a
/// sweep.
pub fn record_live_keys(backend: &InProcess) {
    for (group, keys) in backend.live_keys() {
        // Exact as an f64 up to 2^53 keys.
        gauge!(LIVE_KEYS, "group" => group.to_string()).set(keys as f64);
    }
}

/// Sets the figures of `fallback` from what it has counted (a [`Fallback`] decides behind
/// the layer's back, so the layer cannot count its decisions itself): per group its
/// decisions, the outages it met and the settles whose outcome is unknown, and its
/// breaker's state and openings. Call it where [`record_live_keys`] is called.
pub fn record_fallback<B: Backend>(fallback: &Fallback<B>) {
    for (group, counts) in fallback.all_counts() {
        let group = group.to_string();
        counter!(FALLBACK_DECISIONS, "group" => group.clone()).absolute(counts.fallback_decisions);
        counter!(FALLBACK_OUTAGES, "group" => group.clone()).absolute(counts.outages);
        counter!(UNKNOWN_SETTLES, "group" => group)
            .absolute(counts.unknown_settles + counts.unsent_settles);
    }
    counter!(BREAKER_OPENED).absolute(fallback.times_opened());
    let state = match fallback.breaker() {
        BreakerState::Closed => 0.0,
        BreakerState::HalfOpen => 1.0,
        BreakerState::Open => 2.0,
    };
    gauge!(BREAKER_STATE).set(state);
}
