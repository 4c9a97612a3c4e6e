//! The IETF's RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-11), as values:
//! what each item of `RateLimit-Policy` and `RateLimit` says for a policy and a decision.
//!
//! - `RateLimit-Policy: "burst";q=10;w=1, "hourly";q=1000;w=3600` names each limit, its
//!   quota `q` in quota units, and its window `w` in seconds. It is the same on every
//!   response of a route.
//! - `RateLimit: "burst";r=7;t=1, "hourly";r=997;t=3600` gives each limit's remaining units
//!   `r`, and `t`, the seconds until more are made available.
//!
//! Both are Structured Fields (RFC 9651): lists of strings with parameters. Writing them out
//! is left to a Structured Fields library (the tower layer uses `sfv`); the core, which takes
//! no dependencies, says what goes in them. A refusal's body, in RFC 9457's
//! `application/problem+json`, names the limits it broke as the draft's `violated-policies`.
//!
//! ```
//! use trickle_core::ietf::{self, QuotaUnit};
//! use trickle_core::{Algorithm, PolicyLimiter};
//!
//! let mut limiter = PolicyLimiter::with_algorithm(Algorithm::Fixed, "burst=2/1s 5/1m".parse().unwrap());
//! let policies = ietf::quota_policies(limiter.policy(), QuotaUnit::Requests);
//! assert_eq!((policies[0].name, policies[0].quota, policies[0].window_s), ("burst", 2, Some(1)));
//! assert_eq!((policies[1].name, policies[1].quota, policies[1].window_s), ("5/1m", 5, Some(60)));
//!
//! limiter.hit(0, 1);
//! limiter.hit(100, 1);
//! let refused = limiter.hit(200, 1);
//! let limits = ietf::service_limits(limiter.policy(), &refused);
//! // The burst has none left, and its window ends in 800 ms: 1 s, rounded up.
//! assert_eq!((limits[0].remaining, limits[0].reset_s), (0, Some(1)));
//! assert_eq!((limits[1].remaining, limits[1].reset_s), (3, Some(60)));
//! assert_eq!(ietf::violated_policies(limiter.policy(), &refused), ["burst"]);
//! ```

use alloc::vec::Vec;

use crate::values::policy::{Policy, PolicyDecision};

/// The problem type of a request refused because it would exceed a limit (a 429).
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// Its title, as the draft writes it.
pub const QUOTA_EXCEEDED_TITLE: &str =
    "Request cannot be satisfied as assigned quota has been exceeded";

/// The problem type of a request refused because the server cannot take it now (a 503:
/// the limiter's store is away, or holds as many clients as it may).
pub const TEMPORARY_REDUCED_CAPACITY: &str =
    "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

/// Its title, as the draft writes it.
pub const TEMPORARY_REDUCED_CAPACITY_TITLE: &str =
    "Request cannot be satisfied due to temporary server capacity constraints";

/// The problem type of a request refused because the client's requests look abnormal: the
/// tower layer's budget of answers that cost nothing (every request failing, say) is spent.
pub const ABNORMAL_USAGE_DETECTED: &str =
    "https://iana.org/assignments/http-problem-types#abnormal-usage-detected";

/// Its title.
pub const ABNORMAL_USAGE_DETECTED_TITLE: &str =
    "Request not satisfied due to detection of abnormal request pattern";

/// What a quota counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaUnit {
    /// Requests: every request costs 1, the draft's default unit (no `qu` parameter).
    Requests,
    /// Tokens: a request costs what its answer is priced at (ESI's 2 for a success, 5 for
    /// a client error), so the quota counts tokens, `qu="tokens"`.
    Tokens,
}

impl QuotaUnit {
    /// The `qu` parameter's value; `None` for requests, the default, which is left out.
    pub fn parameter(self) -> Option<&'static str> {
        match self {
            QuotaUnit::Requests => None,
            QuotaUnit::Tokens => Some("tokens"),
        }
    }
}

/// One item of `RateLimit-Policy`: `"burst";q=10;w=1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuotaPolicy<'a> {
    /// The limit's name in the policy (`burst`, or its text `10/1s`).
    pub name: &'a str,
    /// `q`: the quota, the limit's N.
    pub quota: u64,
    /// `qu`: what the quota counts.
    pub unit: QuotaUnit,
    /// `w`: the window in whole seconds; `None` (left out) for a window that is not a whole
    /// number of seconds, which the field cannot say.
    pub window_s: Option<u64>,
}

/// One item of `RateLimit`: `"burst";r=7;t=1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceLimit<'a> {
    /// The limit's name, as in `RateLimit-Policy`.
    pub name: &'a str,
    /// `r`: whole units left.
    pub remaining: u64,
    /// `t`: whole seconds, rounded up, until the limit has more than `r` units free if
    /// nothing more is spent; `None` (left out) when every unit is free.
    pub reset_s: Option<u64>,
}

/// The items of `RateLimit-Policy` for `policy`, one per limit in its order.
pub fn quota_policies(policy: &Policy, unit: QuotaUnit) -> Vec<QuotaPolicy<'_>> {
    policy
        .iter()
        .map(|(name, limit)| QuotaPolicy {
            name,
            quota: limit.tokens(),
            unit,
            window_s: (limit.window_ms() % 1000 == 0).then_some(limit.window_ms() / 1000),
        })
        .collect()
}

/// The items of `RateLimit` after `decision`, one per limit of `policy` in its order.
pub fn service_limits<'a>(policy: &'a Policy, decision: &PolicyDecision) -> Vec<ServiceLimit<'a>> {
    policy
        .iter()
        .zip(decision.decisions())
        .enumerate()
        .map(|(index, ((name, _), own))| ServiceLimit {
            name,
            remaining: own.remaining(),
            reset_s: decision.next_token_ms(index).map(|ms| ms.div_ceil(1000)),
        })
        .collect()
}

/// The names of the limits that refused `decision` (each that had no room for it), in the
/// policy's order: the problem body's `violated-policies`. Empty when it was allowed.
pub fn violated_policies<'a>(policy: &'a Policy, decision: &PolicyDecision) -> Vec<&'a str> {
    policy
        .iter()
        .zip(decision.decisions())
        .filter(|(_, own)| !own.is_allowed())
        .map(|((name, _), _)| name)
        .collect()
}
