//! A policy: one or more limits on the same key, decided all or nothing, written as APIs
//! publish them: `10/1s 1000/1h`, a burst and a sustained rate.
//!
//! Each limit has a name, by default its own text (`10/1s`), or one given before it
//! (`burst=10/1s`): the name under which the IETF's `RateLimit-Policy` header, a server's
//! logs and a Redis key speak of it. A policy of one limit decides exactly as that limit
//! does alone.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use crate::values::decision::{Decision, Outcome};
use crate::values::limit::{Limit, LimitError};
use crate::values::text::{error_from_message, Text};

/// One or more named limits that every request must fit, all of them or none.
///
/// ```
/// use trickle_core::Policy;
///
/// let policy: Policy = "burst=10/1s 1000/1h".parse().unwrap();
/// assert_eq!(policy.len(), 2);
/// assert_eq!(policy.name(0), "burst");
/// assert_eq!(policy.name(1), "1000/1h");
/// assert_eq!(policy.limit(1).unwrap().window_ms(), 3_600_000);
/// assert_eq!(policy.to_string(), "burst=10/1s 1000/1h");
///
/// // One limit is a policy too, written as the limit is.
/// let single: Policy = "6/8s".parse().unwrap();
/// assert_eq!(single.to_string(), "6/8s");
///
/// let err = "10/1s 10/1s".parse::<Policy>().unwrap_err();
/// assert!(err.to_string().contains("two limits named \"10/1s\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    /// In the order written; never empty, never more than [`Policy::MAX_LIMITS`], names distinct.
    limits: Vec<(String, Limit)>,
}

impl Policy {
    /// The most limits one policy holds: a burst, a sustained rate and a daily quota fit with
    /// room to spare, and every limit is one more state per key, and one more bucket a Redis
    /// script reads in the same round trip.
    pub const MAX_LIMITS: usize = 8;

    /// The longest name a limit may have.
    pub const MAX_NAME_LEN: usize = 32;

    /// A policy of the one `limit`, named by its text.
    pub fn single(limit: Limit) -> Policy {
        Policy {
            limits: alloc::vec![(limit.text(), limit)],
        }
    }

    /// A policy of `limits`, each named by its text: 1 to [`Policy::MAX_LIMITS`] limits, no two
    /// alike.
    pub fn new(limits: impl IntoIterator<Item = Limit>) -> Result<Policy, PolicyError> {
        Policy::named(limits.into_iter().map(|limit| (limit.text(), limit)))
    }

    /// A policy of `limits` under the names given: 1 to [`Policy::MAX_LIMITS`] limits, the names
    /// distinct, each 1 to [`Policy::MAX_NAME_LEN`] characters of `a-z`, `0-9`, `_`, `-`, `.`
    /// (or a limit's own text).
    pub fn named<N: Into<String>>(
        limits: impl IntoIterator<Item = (N, Limit)>,
    ) -> Result<Policy, PolicyError> {
        let mut named: Vec<(String, Limit)> = Vec::new();
        for (name, limit) in limits {
            let name = name.into();
            if named.len() == Policy::MAX_LIMITS {
                return Err(PolicyError::TooManyLimits);
            }
            if name != limit.text() && !is_name(&name) {
                return Err(PolicyError::BadName { name });
            }
            if named.iter().any(|(other, _)| *other == name) {
                return Err(PolicyError::DuplicateName { name });
            }
            named.push((name, limit));
        }
        if named.is_empty() {
            return Err(PolicyError::Empty);
        }
        Ok(Policy { limits: named })
    }

    /// How many limits the policy holds, at least 1.
    pub fn len(&self) -> usize {
        self.limits.len()
    }

    /// Always false: a policy holds at least one limit. (For clippy's `len_without_is_empty`.)
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The `index`th limit, in the order written.
    pub fn limit(&self, index: usize) -> Option<Limit> {
        self.limits.get(index).map(|(_, limit)| *limit)
    }

    /// The first limit, as written: a policy's only one, when it holds one.
    pub fn first(&self) -> Limit {
        // `new` and `named` refuse an empty policy, and nothing removes a limit.
        self.limits[0].1
    }

    /// The name of the `index`th limit; empty past the last.
    pub fn name(&self, index: usize) -> &str {
        self.limits.get(index).map_or("", |(name, _)| name.as_str())
    }

    /// The limits, in the order written, with their names.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Limit)> {
        self.limits
            .iter()
            .map(|(name, limit)| (name.as_str(), *limit))
    }

    /// The limits alone, in the order written.
    pub fn limits(&self) -> impl Iterator<Item = Limit> + '_ {
        self.limits.iter().map(|(_, limit)| *limit)
    }

    /// The policy as it is written: `burst=10/1s 1000/1h`, a name shown only where it is not
    /// the limit's own text. What `Display` writes, built without `core::fmt`.
    pub fn text(&self) -> String {
        let mut text = Text::new();
        for (index, (name, limit)) in self.limits.iter().enumerate() {
            if index > 0 {
                text.push(" ");
            }
            let limit = limit.text();
            if *name != limit {
                text.push(name).push("=");
            }
            text.push(&limit);
        }
        text.build()
    }
}

impl From<Limit> for Policy {
    fn from(limit: Limit) -> Policy {
        Policy::single(limit)
    }
}

/// `a-z`, `0-9`, `_`, `-` and `.`, starting with a letter: a name that is a Structured Field
/// token, a Prometheus label value and a Redis key part without escaping.
fn is_name(name: &str) -> bool {
    name.len() <= Policy::MAX_NAME_LEN
        && name
            .bytes()
            .next()
            .is_some_and(|first| first.is_ascii_lowercase())
        && name.bytes().all(|byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'-' | b'.')
        })
}

impl FromStr for Policy {
    type Err = PolicyError;

    /// Parses limits separated by spaces (or commas), each `TOKENS/WINDOW` as [`Limit`]
    /// reads it, or `NAME=TOKENS/WINDOW`.
    fn from_str(text: &str) -> Result<Policy, PolicyError> {
        parse_policy(text).map_err(|error| {
            // At most one '/': one limit was meant, so its own error says best what is
            // wrong with it ("6 /8s" is no policy of "6" and "/8s").
            let limit_error = matches!(
                error,
                PolicyError::Empty | PolicyError::BadLimit { position: 1, .. }
            );
            if !limit_error || text.matches('/').count() > 1 {
                return error;
            }
            let written = text.trim();
            let written = match written.split_once('=') {
                Some((name, limit)) if is_name(name) => limit,
                _ => written,
            };
            match written.parse::<Limit>() {
                Err(own) => PolicyError::Limit(own),
                Ok(_) => error,
            }
        })
    }
}

/// A policy as written, limit by limit.
fn parse_policy(text: &str) -> Result<Policy, PolicyError> {
    let mut limits: Vec<(String, Limit)> = Vec::new();
    for written in text
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|part| !part.is_empty())
    {
        let (name, limit) = match written.split_once('=') {
            Some((name, limit)) => {
                if !is_name(name) {
                    return Err(PolicyError::BadName {
                        name: name.to_string(),
                    });
                }
                (Some(name), limit)
            }
            None => (None, written),
        };
        let limit: Limit = limit.parse().map_err(|error| PolicyError::BadLimit {
            position: limits.len() + 1,
            error,
        })?;
        limits.push((name.map_or_else(|| limit.text(), str::to_string), limit));
    }
    if limits.is_empty() {
        return Err(PolicyError::Empty);
    }
    Policy::named(limits)
}

impl fmt::Display for Policy {
    /// As written: `burst=10/1s 1000/1h`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// A policy written as text, or built from limits, could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// No limit at all.
    Empty,
    /// More than [`Policy::MAX_LIMITS`] limits.
    TooManyLimits,
    /// The one limit written is not a limit.
    Limit(LimitError),
    /// The `position`th limit (from 1) of several is not a limit.
    BadLimit { position: usize, error: LimitError },
    /// A name with characters other than `a-z`, `0-9`, `_`, `-`, `.`, not starting with a
    /// letter, or longer than [`Policy::MAX_NAME_LEN`].
    BadName { name: String },
    /// Two limits under one name (two limits written alike, or one name given twice).
    DuplicateName { name: String },
}

const POLICY_FORM: &str =
    "write one or more limits separated by spaces, each TOKENS/WINDOW or NAME=TOKENS/WINDOW, as in 10/1s 1000/1h";

impl PolicyError {
    /// What `Display` writes, built without `core::fmt`.
    pub fn message(&self) -> String {
        let mut text = Text::new();
        match self {
            PolicyError::Empty => text
                .push("a policy needs at least one limit; ")
                .push(POLICY_FORM),
            PolicyError::TooManyLimits => text
                .push("a policy holds at most ")
                .number(Policy::MAX_LIMITS as u64)
                .push(" limits"),
            PolicyError::Limit(error) => return error.message(),
            PolicyError::BadLimit { position, error } => {
                text.push("limit ")
                    .number(*position as u64)
                    .push(" of the policy: ");
                text.push(&error.message())
            }
            PolicyError::BadName { name } => text
                .push("limit name ")
                .quoted(name)
                .push(" must be 1 to ")
                .number(Policy::MAX_NAME_LEN as u64)
                .push(" characters of a-z, 0-9, _, - and ., starting with a letter"),
            PolicyError::DuplicateName { name } => text
                .push("two limits named ")
                .quoted(name)
                .push(" in one policy; give each limit its own name, as in burst=10/1s"),
        }
        .build()
    }
}

error_from_message!(PolicyError);

/// The answer to one request under a policy: every limit's own decision, and the policy's
/// answer, which is allowed only if every limit allowed it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PolicyDecision {
    /// One per limit, in the policy's order.
    decisions: Vec<Decision>,
    /// One per limit: see [`PolicyDecision::next_token_ms`].
    next_token_ms: Vec<Option<u64>>,
}

impl PolicyDecision {
    /// The answer made of each limit's `decisions`, in the policy's order, and, for each,
    /// the milliseconds until it frees one more whole token ([`PolicyDecision::next_token_ms`];
    /// `None` for a limit with every token free). A store that keeps its states elsewhere (in
    /// Redis, say) builds its answer with this; the in-process stores build theirs from the
    /// states they hold.
    pub fn new(decisions: Vec<Decision>, next_token_ms: Vec<Option<u64>>) -> PolicyDecision {
        PolicyDecision {
            decisions,
            next_token_ms,
        }
    }

    /// Each limit's decision, in the policy's order. When the request was refused, these
    /// are what each limit would have answered alone; none of them spent anything.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }

    /// The policy's answer: allowed if every limit allowed it; never fitting if the cost is
    /// above some limit's N; otherwise denied until every limit has room, the latest of their
    /// retry times (each limit only frees up as time passes while nothing is spent, so at
    /// that moment all of them fit).
    pub fn outcome(&self) -> Outcome {
        match self.answered_by() {
            None => Outcome::Allowed,
            Some(index) => self.decisions[index].outcome,
        }
    }

    /// True if the request was allowed by every limit.
    pub fn is_allowed(&self) -> bool {
        self.answered_by().is_none()
    }

    /// 200 if allowed, 429 if not.
    pub fn status(&self) -> u16 {
        if self.is_allowed() {
            200
        } else {
            429
        }
    }

    /// How long to wait before the same request fits every limit; `None` if it was allowed
    /// or can never fit.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self.outcome() {
            Outcome::Denied { retry_after_ms } => Some(retry_after_ms),
            _ => None,
        }
    }

    /// The limit whose answer the policy gives when it refuses: the first whose cost can
    /// never fit, else the one with the longest wait (the first of equals). `None` when
    /// the request was allowed.
    pub fn answered_by(&self) -> Option<usize> {
        let mut answer: Option<(usize, u64)> = None;
        for (index, decision) in self.decisions.iter().enumerate() {
            let wait = match decision.outcome {
                Outcome::Allowed => continue,
                Outcome::ExceedsLimit => return Some(index),
                Outcome::Denied { retry_after_ms } => retry_after_ms,
            };
            if answer.is_none_or(|(_, longest)| wait > longest) {
                answer = Some((index, wait));
            }
        }
        answer.map(|(index, _)| index)
    }

    /// Milliseconds until the `index`th limit has room for more than its
    /// [`remaining`](Decision::remaining) whole tokens, if nothing more is spent: the IETF
    /// `RateLimit` field's `t`, "the time until additional quota is made available".
    /// `None` when every token of that limit is free (nothing is coming back), or past the
    /// last limit.
    pub fn next_token_ms(&self, index: usize) -> Option<u64> {
        self.next_token_ms.get(index).copied().flatten()
    }

    /// The limit the answer is nearest to refusing by: the one that answered a refusal
    /// ([`answered_by`](PolicyDecision::answered_by)), else the one with the fewest whole
    /// tokens left (the first of equals). The one limit a dialect with room for a single
    /// limit (ESI's `X-Ratelimit-*`) reports.
    pub fn nearest(&self) -> usize {
        self.answered_by().unwrap_or_else(|| {
            let fewest = self.remaining();
            self.decisions
                .iter()
                .position(|decision| decision.remaining() == fewest)
                .unwrap_or(0)
        })
    }

    /// The fewest whole tokens any limit has left.
    pub fn remaining(&self) -> u64 {
        self.decisions
            .iter()
            .map(Decision::remaining)
            .min()
            .unwrap_or(0)
    }
}
