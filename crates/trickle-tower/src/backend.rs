//! Where the layer's buckets live: [`InProcess`] for one process, or Redis (the `redis`
//! feature) for many.

use std::collections::HashMap;
use std::fmt;
use std::future::{ready, Future};
use std::num::NonZeroUsize;

use trickle_core::state::AnyState;
use trickle_core::{
    Algorithm, ConcurrentKeyedPolicyLimiter, Op, Policy, PolicyDecision, TooManyKeys,
};

use crate::failure::Failure;

/// A store of buckets, one per (group, key, limit), each group with its own [`Policy`] of
/// one or more limits: where the layer reserves before the handler ([`Op::Reserve`]) and
/// settles after it ([`Op::Settle`]), in every limit of the group or in none.
///
/// The async twin of the core's [`trickle_core::PolicyStore`], shared by every request in
/// flight.
pub trait Backend: Send + Sync + 'static {
    /// Why a decision could not be made (Redis unreachable, …); the layer then follows its
    /// [`OnFailure`](crate::OnFailure) rule.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The policy of `group`, or `None` when the backend has no such group.
    fn policy(&self, group: &str) -> Option<&Policy>;

    /// Whether `error` is an outage of the store (the layer's failure rule applies) or a
    /// fault in what it holds for this request (500, whatever the rule). Every error is an
    /// outage unless the backend says otherwise. A metrics layer can count errors by this.
    fn failure(error: &Self::Error) -> Failure {
        let _ = error;
        Failure::Outage
    }

    /// Decides `op` on the buckets of `key` in `group` at `now_ms`, all of them or none.
    fn decide(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> impl Future<Output = Result<PolicyDecision, Self::Error>> + Send;
}

/// A group name no group was added under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownGroup {
    /// The name asked for.
    pub group: String,
}

impl fmt::Display for UnknownGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no rate-limit group is named {:?}", self.group)
    }
}

impl std::error::Error for UnknownGroup {}

/// Buckets in this process's memory: each group a [`ConcurrentKeyedPolicyLimiter`], its
/// keys split into shards each behind its own lock, so requests on many threads rarely wait
/// on each other. Nothing here can fail once the group exists, but a full table
/// ([`InProcess::with_max_keys`]).
///
/// ```
/// use trickle_core::Algorithm;
/// use trickle_tower::InProcess;
///
/// let backend = InProcess::new()
///     .with_group("fitting", Algorithm::Floating, "6/8s".parse().unwrap())
///     .with_group("market", Algorithm::TokenBucket, "burst=10/1s 150/15m".parse().unwrap());
/// # let _ = backend;
/// ```
#[derive(Debug, Default)]
pub struct InProcess {
    groups: HashMap<String, Keyed>,
    /// The cap on each group's keys, when there is one.
    max_keys: Option<NonZeroUsize>,
}

/// One group's buckets, under the algorithm it was added with: the core's one dispatch
/// over the algorithms ([`AnyState`]), a state per limit of the policy for each key.
type Keyed = ConcurrentKeyedPolicyLimiter<String, AnyState>;

impl InProcess {
    /// A backend with no group yet.
    pub fn new() -> InProcess {
        InProcess::default()
    }

    /// Adds (or replaces) the group `name`, held to `policy` under `algorithm`: one limit
    /// (`"6/8s".parse()`, or `Policy::single(limit)`) or several (`"10/1s 1000/1h"`).
    pub fn with_group(
        mut self,
        name: impl Into<String>,
        algorithm: Algorithm,
        policy: Policy,
    ) -> InProcess {
        let keyed = Keyed::with_state_and_shards(policy, AnyState::new(algorithm), shards());
        let keyed = match self.max_keys {
            Some(max_keys) => keyed.with_max_keys(max_keys),
            None => keyed,
        };
        self.groups.insert(name.into(), keyed);
        self
    }

    /// Caps every group, those added before and after, at about `max_keys` keys
    /// ([`ConcurrentKeyedPolicyLimiter::with_max_keys`]): what bounds this backend's memory
    /// however many clients come. Past it, a request of a new key is refused with
    /// [`InProcessError::TooManyKeys`], which the layer answers 503 with `Retry-After`
    /// whatever its failure rule (failing open would let every new key through uncharged
    /// while the table is full, which is what a flood of new keys aims at). No bucket that
    /// still counts is ever evicted: that would forget its charges.
    pub fn with_max_keys(mut self, max_keys: NonZeroUsize) -> InProcess {
        self.max_keys = Some(max_keys);
        self.groups = self
            .groups
            .into_iter()
            .map(|(name, keyed)| (name, keyed.with_max_keys(max_keys)))
            .collect();
        self
    }

    /// Drops every bucket that holds nothing still counting at `now_ms`, in every group.
    /// Shards also sweep themselves when first used in a new window; a server may call this
    /// now and then for the ones no request has touched lately.
    pub fn sweep(&self, now_ms: u64) {
        for keyed in self.groups.values() {
            keyed.sweep(now_ms);
        }
    }

    /// The policy of group `name`, when it was added.
    pub(crate) fn group_policy(&self, name: &str) -> Option<&Policy> {
        self.groups.get(name).map(Keyed::policy)
    }

    /// The names of the groups added.
    pub(crate) fn group_names(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(String::as_str)
    }

    /// How many keys hold a bucket in each group, the groups in no particular order: what
    /// this backend's memory grows with. Each group's shards are counted one after the
    /// other under their read locks, so while requests are being decided the count is a
    /// close estimate; buckets that no longer count stay until swept.
    pub fn live_keys(&self) -> impl Iterator<Item = (&str, usize)> + '_ {
        self.groups
            .iter()
            .map(|(name, keyed)| (name.as_str(), keyed.len()))
    }

    pub(crate) fn decide_now(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, InProcessError> {
        let keyed = self.groups.get(group).ok_or_else(|| {
            InProcessError::UnknownGroup(UnknownGroup {
                group: group.to_string(),
            })
        })?;
        // Borrowed: the key is copied only when its bucket is new.
        keyed
            .try_decide(key, op, now_ms, cost)
            .map_err(InProcessError::TooManyKeys)
    }
}

/// Why the in-process backend gave no decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InProcessError {
    /// No group of that name was added: the configuration's fault.
    UnknownGroup(UnknownGroup),
    /// The group holds as many keys as [`InProcess::with_max_keys`] lets it, all still
    /// counting, and turns a new key away until some go idle.
    TooManyKeys(TooManyKeys),
}

impl fmt::Display for InProcessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InProcessError::UnknownGroup(error) => error.fmt(f),
            InProcessError::TooManyKeys(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for InProcessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InProcessError::UnknownGroup(error) => Some(error),
            InProcessError::TooManyKeys(error) => Some(error),
        }
    }
}

impl Backend for InProcess {
    type Error = InProcessError;

    fn policy(&self, group: &str) -> Option<&Policy> {
        self.group_policy(group)
    }

    /// A missing group is the configuration's fault, not an outage; a full table is no
    /// outage either, and not a fault: it is over when buckets go idle.
    fn failure(error: &InProcessError) -> Failure {
        match error {
            InProcessError::UnknownGroup(_) => Failure::Data {
                problem: "this route's rate limit is not configured",
            },
            InProcessError::TooManyKeys(full) => Failure::Full {
                retry_after_ms: full.retry_after_ms,
            },
        }
    }

    fn decide(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> impl Future<Output = Result<PolicyDecision, InProcessError>> + Send {
        ready(self.decide_now(group, key, op, now_ms, cost))
    }
}

// A reference to a backend is one: tests and servers that keep the backend to inspect it.
impl<B: Backend> Backend for std::sync::Arc<B> {
    type Error = B::Error;

    fn policy(&self, group: &str) -> Option<&Policy> {
        (**self).policy(group)
    }

    fn failure(error: &B::Error) -> Failure {
        B::failure(error)
    }

    fn decide(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> impl Future<Output = Result<PolicyDecision, B::Error>> + Send {
        (**self).decide(group, key, op, now_ms, cost)
    }
}

/// Four shards per thread the machine runs at once, rounded up to a power of two: enough
/// that two threads rarely want the same shard's lock at once.
fn shards() -> std::num::NonZeroUsize {
    let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    NonZeroUsize::new(threads.saturating_mul(4).next_power_of_two()).unwrap_or(NonZeroUsize::MIN)
}
