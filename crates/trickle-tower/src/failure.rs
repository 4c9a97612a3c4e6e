//! The kinds of error a backend can give, which the layer answers differently: an outage
//! of the store, for the [`OnFailure`] rule (or a [`Fallback`](crate::Fallback)), and a
//! fault in what the store holds for this request, which no rule should hide.

/// What kind of failure a backend's error is ([`Backend::failure`](crate::Backend::failure)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The store as a whole could not answer: unreachable, refusing connections, timing
    /// out, loading, busy. Another store, or this one a moment later, would decide. The
    /// layer logs a warning and follows its [`OnFailure`] rule; a
    /// [`Fallback`](crate::Fallback) decides on its in-process limiter instead. If the
    /// store timed out, whether it ran the decision is unknown.
    Outage,
    /// The store answered, but this request cannot be decided on what it holds or was
    /// given: a key of the wrong type (Redis's `WRONGTYPE`), an error inside the script, a
    /// reply that is not a decision, a group that does not exist. It would fail the same
    /// way on every retry, and failing open would switch the limit off for that key for
    /// good, so the layer answers 500 with `{"error": …}` naming `problem`, and logs the
    /// whole error at ERROR, whatever the rule.
    Data {
        /// The problem in a few words a client may read: no key, address or script text.
        problem: &'static str,
    },
    /// The store holds as many keys as it may, all of them still counting, and turns a new
    /// key away until some go idle ([`InProcess::with_max_keys`](crate::InProcess::with_max_keys)).
    /// The layer answers 503 with `Retry-After` (whole seconds, rounded up), whatever the
    /// rule: failing open would let every new key through uncharged while the table is full,
    /// which is what a flood of new keys aims at.
    Full {
        /// How long until the store may have room, from the request's time.
        retry_after_ms: u64,
    },
}

/// What to do with a request when the backend cannot decide it (Redis unreachable or
/// timing out). Either way the layer logs a warning with the error, and nothing panics.
///
/// Only for outages ([`Failure::Outage`]): an error about the
/// request's own bucket (a key of the wrong type) is answered 500 whatever the rule. A
/// third way is a backend that keeps limiting in process while its store is away,
/// [`Fallback`](crate::Fallback).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Let it through, uncharged: the limit is not enforced while the store is away, and
    /// the handlers take the load. The response carries `X-Ratelimit-Limit` and
    /// `X-Ratelimit-Group` but no count. The default, as a limiter is a safety net and its
    /// outage should not become the API's.
    #[default]
    Open,
    /// Refuse it with 503 Service Unavailable and `Retry-After: 1`, without calling the
    /// handler: nothing gets through while the store is away.
    Closed,
}
