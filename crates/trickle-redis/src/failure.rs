//! What a request gets when Redis cannot decide it: the caller's choice, made once.

use trickle::Decision;

use crate::errors::RedisError;

/// Whether a request Redis could not decide goes through.
///
/// - [`OnFailure::Open`]: it goes through. The API stays up while Redis is away, but the
///   limit is not enforced: every client may send as fast as it likes, and the servers
///   behind the limiter take that load. Right when the limit protects fairness more than
///   capacity, and Redis outages are short.
/// - [`OnFailure::Closed`]: it is refused. Nothing gets through while Redis is away: an
///   outage of Redis is an outage of the API. Right when what the limit protects (a paid
///   upstream, a database near its capacity) must never see more than the limit. A server
///   answers these with 503 Service Unavailable, not 429: the client did nothing wrong,
///   and a 429 would tell it to slow down for a reason it cannot act on.
///
/// A timeout is not a denial either way: the server may still run the script, and spend
/// the tokens, when it answers again, so failing open after a timeout may let one request
/// through that the bucket also counts. Whether it did is unknown.
///
/// The rule is for outages alone ([`RedisError::is_outage`]). An error that is not one (a
/// key of the wrong type, a script error, a bad reply) is refused under either rule: it
/// would fail the same way on every retry, and letting it through would switch the limit
/// off for that key for good, with nothing but a log line to say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Let the request through.
    Open,
    /// Refuse the request.
    Closed,
}

impl OnFailure {
    /// The decision when Redis made one, and this policy's answer, with the error, when it
    /// could not: let through only under [`OnFailure::Open`], and only for an outage.
    ///
    /// ```
    /// use trickle_redis::{Admission, OnFailure, RedisError};
    ///
    /// let timed_out: Result<trickle::Decision, RedisError> =
    ///     Err(RedisError::Redis(std::io::Error::from(std::io::ErrorKind::TimedOut).into()));
    /// assert!(OnFailure::Open.admit(timed_out).is_allowed());
    ///
    /// // Not an outage: refused whatever the rule.
    /// let failed: Result<trickle::Decision, RedisError> =
    ///     Err(RedisError::TimeTooLarge { now_ms: u64::MAX });
    /// let admission = OnFailure::Open.admit(failed);
    /// assert!(!admission.is_allowed());
    /// assert!(matches!(admission, Admission::Failed { .. }));
    /// ```
    pub fn admit(self, result: Result<Decision, RedisError>) -> Admission {
        match result {
            Ok(decision) => Admission::Decided(decision),
            Err(error) => Admission::Failed {
                allowed: self == OnFailure::Open && error.is_outage(),
                error,
            },
        }
    }
}

/// A request's fate: decided by Redis, or by the [`OnFailure`] policy when Redis failed.
#[derive(Debug)]
pub enum Admission {
    /// Redis decided: the core's decision, with everything a 429 needs.
    Decided(Decision),
    /// Redis could not decide; `allowed` is the policy's answer, and `error` is what
    /// happened, to log and to count.
    Failed { allowed: bool, error: RedisError },
}

impl Admission {
    /// Whether the request goes through.
    pub fn is_allowed(&self) -> bool {
        match self {
            Admission::Decided(decision) => decision.is_allowed(),
            Admission::Failed { allowed, .. } => *allowed,
        }
    }

    /// Redis's decision, when it made one.
    pub fn decision(&self) -> Option<&Decision> {
        match self {
            Admission::Decided(decision) => Some(decision),
            Admission::Failed { .. } => None,
        }
    }
}
