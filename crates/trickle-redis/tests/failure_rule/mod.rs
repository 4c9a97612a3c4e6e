//! A caller's failure rule, as the tests need one: what a request gets when Redis cannot
//! decide it. The crate leaves that choice to its callers (trickle-tower's `OnFailure` is
//! the one servers use); these tests check that an error tells the rule what it needs,
//! outage or data error, and the rule here is the smallest that uses it.

#![allow(dead_code)]

use trickle_core::Decision;
use trickle_redis::RedisError;

/// Whether a request Redis could not decide goes through: only under `Open`, and only
/// for an outage ([`RedisError::is_outage`]). A data error is refused under either rule:
/// it would fail the same way on every retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Let the request through.
    Open,
    /// Refuse the request.
    Closed,
}

impl OnFailure {
    /// The decision when Redis made one, and this rule's answer, with the error, when it
    /// could not.
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

/// A request's fate: decided by Redis, or by the rule when Redis failed.
#[derive(Debug)]
pub enum Admission {
    /// Redis decided.
    Decided(Decision),
    /// Redis could not decide; `allowed` is the rule's answer, `error` what happened.
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
