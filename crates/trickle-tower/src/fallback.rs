//! A backend that keeps the limit when its store does not: decisions go to the store (Redis)
//! while it answers, and to an in-process limiter holding this server's share of each
//! group's limit while it is away, with a circuit breaker so that a dead store is not waited
//! on by every request, and a way back to the store once it answers again. The rules are
//! on [`Fallback`].

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use trickle_core::{Op, Policy, PolicyDecision};

use crate::backend::{Backend, InProcess, InProcessError};
use crate::breaker::{Breaker, BreakerState, Route, Transition};
use crate::breaker::{BREAKER_COOL_DOWN, BREAKER_FAILURES};
use crate::failure::Failure;
use crate::pending::Pending;

/// `primary` (a store such as `Redis`, the `redis` feature) while it answers, `secondary`
/// (this process's buckets) while it has an outage:
///
/// - **Which errors.** Only outages ([`Failure::Outage`]) are decided by the fallback. A
///   data error (Redis's `WRONGTYPE`, a script error, a bad reply) is passed on to the
///   layer, which answers 500: the store is up, and the fallback would hide a fault that
///   stays until someone fixes it.
/// - **The breaker** ([`BreakerState`]): after [`BREAKER_FAILURES`] outages in a row it
///   opens, and decisions go to the fallback without asking the store; after
///   [`BREAKER_COOL_DOWN`] one request probes the store (half-open), and the breaker closes
///   when it is answered, opens again when it is not.
/// - **Settles go where their reserve was made.** A reserve the fallback admitted is kept
///   by ticket (bounded: two windows, and [`MAX_PENDING`] per group), and its settle is
///   applied in process, even after the store is back. Any other settle belongs to the
///   store: sent there while the breaker is closed (an outage then makes its outcome
///   unknown, [`FallbackError::SettleUnknown`]), not sent while it is open
///   ([`FallbackError::SettleNotSent`]: the reserve stays charged in the store); never
///   applied to the fallback, which never held its reserve and would refund or charge a
///   bucket that does not owe it.
///
/// The fallback starts with empty buckets and knows nothing of what the store counted, nor
/// does the store learn what the fallback admitted: give the fallback a [`Share`] of each
/// limit, `1/N` for N servers, so that the servers together admit no more than the limit
/// while the store is away. `Redis::fallback(share)` builds one so.
///
/// ```
/// use trickle_core::{Algorithm, Limit, Policy};
/// use trickle_tower::{Fallback, InProcess, Share};
///
/// let limit: Limit = "6/8s".parse().unwrap();
/// // A store would go first; any backend can.
/// let store = InProcess::new().with_group("fitting", Algorithm::Floating, Policy::single(limit));
/// let share: Share = "1/2".parse().unwrap();
/// let part = Policy::single(share.of(limit).unwrap());
/// let fallback = InProcess::new().with_group("fitting", Algorithm::Floating, part);
/// let backend = Fallback::new(store, fallback);
/// # let _ = backend;
/// ```
///
/// [`Share`]: crate::Share
pub struct Fallback<B> {
    primary: B,
    secondary: InProcess,
    groups: HashMap<String, Group>,
    breaker: Breaker,
    /// The breaker's clock: real time, whatever clock the layer decides on, as a cool-down
    /// is about how long the store has had to come back.
    epoch: Instant,
}

/// One group's bookkeeping.
#[derive(Debug)]
struct Group {
    pending: Pending,
    fallback_decisions: AtomicU64,
    outages: AtomicU64,
    unknown_settles: AtomicU64,
    unsent_settles: AtomicU64,
}

/// What a group's fallback has done, for logs and metrics
/// ([`Fallback::counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FallbackCounts {
    /// Decisions the fallback made: a reserve while the breaker was open or after the
    /// store failed it, and the settles of the reserves it admitted.
    pub fallback_decisions: u64,
    /// Outages of the store this group's requests met (each a decision then made by the
    /// fallback, or a settle whose outcome is unknown).
    pub outages: u64,
    /// Settles of the store's reservations sent and not answered: their outcome is
    /// unknown (the store holds the reserve, or the final cost).
    pub unknown_settles: u64,
    /// Settles of the store's reservations not sent, the breaker being open: not applied,
    /// so the store keeps their reserve charged.
    pub unsent_settles: u64,
    /// Reserves the fallback admitted whose settle has not come yet.
    pub pending: usize,
    /// Of those, how many were forgotten unsettled past [`MAX_PENDING`].
    pub forgotten: u64,
}

pub use crate::pending::MAX_PENDING;

impl<B: Backend> Fallback<B> {
    /// `primary` while it answers, `secondary` while it has an outage, with the breaker's
    /// defaults ([`BREAKER_FAILURES`], [`BREAKER_COOL_DOWN`]). A group the secondary lacks
    /// is answered 500 during an outage ([`FallbackError::Fallback`]).
    pub fn new(primary: B, secondary: InProcess) -> Fallback<B> {
        let groups = secondary
            .group_names()
            .filter_map(|name| {
                let policy = secondary.group_policy(name)?;
                let window_ms = policy.limits().map(|limit| limit.window_ms()).max()?;
                let group = Group {
                    pending: Pending::new(window_ms),
                    fallback_decisions: AtomicU64::new(0),
                    outages: AtomicU64::new(0),
                    unknown_settles: AtomicU64::new(0),
                    unsent_settles: AtomicU64::new(0),
                };
                Some((name.to_string(), group))
            })
            .collect();
        Fallback {
            primary,
            secondary,
            groups,
            breaker: Breaker::new(BREAKER_FAILURES, BREAKER_COOL_DOWN),
            epoch: Instant::now(),
        }
    }

    /// The same, its breaker opening after `failures_to_open` outages in a row and
    /// probing the store every `cool_down` while open.
    pub fn with_breaker(mut self, failures_to_open: NonZeroU32, cool_down: Duration) -> Self {
        self.breaker = Breaker::new(failures_to_open, cool_down);
        self
    }

    /// The store.
    pub fn primary(&self) -> &B {
        &self.primary
    }

    /// The in-process limiter decisions fall back to.
    pub fn secondary(&self) -> &InProcess {
        &self.secondary
    }

    /// Whether decisions go to the store now.
    pub fn breaker(&self) -> BreakerState {
        self.breaker.state()
    }

    /// How many times the breaker has opened.
    pub fn times_opened(&self) -> u64 {
        self.breaker.times_opened()
    }

    /// What each group's fallback has done, the groups in no particular order.
    pub fn all_counts(&self) -> impl Iterator<Item = (&str, FallbackCounts)> + '_ {
        self.groups.keys().filter_map(|group| {
            let counts = self.counts(group)?;
            Some((group.as_str(), counts))
        })
    }

    /// What `group`'s fallback has done, or `None` for a group the secondary lacks.
    pub fn counts(&self, group: &str) -> Option<FallbackCounts> {
        let state = self.groups.get(group)?;
        Some(FallbackCounts {
            fallback_decisions: state.fallback_decisions.load(Ordering::Relaxed),
            outages: state.outages.load(Ordering::Relaxed),
            unknown_settles: state.unknown_settles.load(Ordering::Relaxed),
            unsent_settles: state.unsent_settles.load(Ordering::Relaxed),
            pending: state.pending.len(),
            forgotten: state.pending.forgotten(),
        })
    }

    /// Drops the fallback's buckets that no longer count and the tickets that expired, at
    /// `now_ms` on the layer's clock: call it now and then, as for [`InProcess::sweep`].
    pub fn sweep(&self, now_ms: u64) {
        self.secondary.sweep(now_ms);
        for group in self.groups.values() {
            group.pending.sweep(now_ms);
        }
    }

    fn clock_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn count(&self, group: &str, counter: fn(&Group) -> &AtomicU64) {
        if let Some(state) = self.groups.get(group) {
            counter(state).fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Decides on the in-process limiter, keeping the ticket of a reserve it admits.
    fn on_secondary(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, FallbackError<B::Error>> {
        let decision = self
            .secondary
            .decide_now(group, key, op, now_ms, cost)
            .map_err(FallbackError::Fallback)?;
        if let Some(state) = self.groups.get(group) {
            state.fallback_decisions.fetch_add(1, Ordering::Relaxed);
            if let Op::Reserve { ticket } = op {
                if let (true, Some(own)) = (decision.is_allowed(), decision.decisions().first()) {
                    state.pending.insert(ticket, own.at_ms, now_ms);
                }
            }
        }
        Ok(decision)
    }

    async fn settle(
        &self,
        group: &str,
        key: &str,
        op: Op,
        ticket: u64,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, FallbackError<B::Error>> {
        let made_here = self
            .groups
            .get(group)
            .is_some_and(|state| state.pending.take(ticket));
        if made_here {
            return self.on_secondary(group, key, op, now_ms, cost);
        }
        if !self.breaker.is_closed() {
            self.count(group, |state| &state.unsent_settles);
            return Err(FallbackError::SettleNotSent);
        }
        match self.primary.decide(group, key, op, now_ms, cost).await {
            Ok(decision) => {
                self.breaker.answered(Route::Primary);
                Ok(decision)
            }
            Err(error) => match B::failure(&error) {
                Failure::Data { .. } | Failure::Full { .. } => {
                    self.breaker.answered(Route::Primary);
                    Err(FallbackError::Store(error))
                }
                Failure::Outage => {
                    self.count(group, |state| &state.outages);
                    self.count(group, |state| &state.unknown_settles);
                    self.log(self.breaker.outage(Route::Primary, self.clock_ms()));
                    Err(FallbackError::SettleUnknown(error))
                }
            },
        }
    }

    fn log(&self, transition: Option<Transition>) {
        let cool_down_ms = self.breaker.cool_down_ms();
        match transition {
            None => {}
            Some(Transition::Opened) => tracing::warn!(
                failures = self.breaker.failures_to_open(),
                cool_down_ms,
                "circuit breaker open: the store had outages in a row; decisions go to the \
                 fallback limiter without asking it, and one request probes it after the \
                 cool-down"
            ),
            Some(Transition::Reopened) => tracing::warn!(
                cool_down_ms,
                "circuit breaker probe: the store is still away; open for another cool-down"
            ),
            Some(Transition::Closed) => tracing::info!(
                "circuit breaker closed: the store answered the probe; decisions are the \
                 store's again"
            ),
        }
    }
}

/// A decision sent to the store, and what the breaker learns from it. A probe dropped
/// before it is answered (its request was dropped) lets the next one go after a
/// cool-down, instead of holding the breaker half-open for good.
struct Sent<'a> {
    breaker: &'a Breaker,
    route: Route,
    started_ms: u64,
    resolved: bool,
}

impl Sent<'_> {
    fn answered(mut self) -> Option<Transition> {
        self.resolved = true;
        self.breaker.answered(self.route)
    }

    fn outage(mut self, now_ms: u64) -> Option<Transition> {
        self.resolved = true;
        self.breaker.outage(self.route, now_ms)
    }
}

impl Drop for Sent<'_> {
    fn drop(&mut self) {
        if !self.resolved && self.route == Route::Probe {
            self.breaker.abandoned(self.started_ms);
        }
    }
}

impl<B: Backend> Backend for Fallback<B> {
    type Error = FallbackError<B::Error>;

    /// The store's policy: what the group promises its clients. While the fallback decides,
    /// each limit's decision is of its share.
    fn policy(&self, group: &str) -> Option<&Policy> {
        self.primary.policy(group)
    }

    fn failure(error: &Self::Error) -> Failure {
        match error {
            FallbackError::Store(error) => B::failure(error),
            FallbackError::SettleUnknown(_) | FallbackError::SettleNotSent => Failure::Outage,
            FallbackError::Fallback(error) => InProcess::failure(error),
        }
    }

    async fn decide(
        &self,
        group: &str,
        key: &str,
        op: Op,
        now_ms: u64,
        cost: u64,
    ) -> Result<PolicyDecision, Self::Error> {
        if let Op::Settle { ticket, .. } = op {
            return self.settle(group, key, op, ticket, now_ms, cost).await;
        }
        let started_ms = self.clock_ms();
        let route = self.breaker.route(started_ms);
        if route == Route::Secondary {
            return self.on_secondary(group, key, op, now_ms, cost);
        }
        let sent = Sent {
            breaker: &self.breaker,
            route,
            started_ms,
            resolved: false,
        };
        let error = match self.primary.decide(group, key, op, now_ms, cost).await {
            Ok(decision) => {
                self.log(sent.answered());
                return Ok(decision);
            }
            Err(error) => error,
        };
        if let Failure::Data { .. } | Failure::Full { .. } = B::failure(&error) {
            self.log(sent.answered());
            return Err(FallbackError::Store(error));
        }
        self.count(group, |state| &state.outages);
        tracing::warn!(
            group = %group, key = %key, %error,
            "the store could not decide; the fallback limiter decides instead, with this \
             server's share of the limit (if the store timed out, whether it charged \
             the request too is unknown)"
        );
        self.log(sent.outage(self.clock_ms()));
        self.on_secondary(group, key, op, now_ms, cost)
    }
}

impl<B: fmt::Debug> fmt::Debug for Fallback<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fallback")
            .field("primary", &self.primary)
            .field("secondary", &self.secondary)
            .field("breaker", &self.breaker.state())
            .finish_non_exhaustive()
    }
}

/// Why a [`Fallback`] gave no decision.
#[derive(Debug)]
#[non_exhaustive]
pub enum FallbackError<E> {
    /// The store answered with an error that is not an outage (a data error): passed on,
    /// not decided by the fallback.
    Store(E),
    /// A settle of a reservation the store made, sent to it, met an outage: its outcome is
    /// unknown (the store holds the reserve, or the final cost). Not applied to the
    /// fallback, which never held the reserve.
    SettleUnknown(E),
    /// A settle of a reservation the store made, not sent because the breaker is open:
    /// not applied anywhere, so the store keeps the reserve charged. Not applied to the
    /// fallback either, which never held the reserve.
    SettleNotSent,
    /// The fallback limiter could not decide: it has no such group, or it holds as many
    /// keys as it may.
    Fallback(InProcessError),
}

impl<E: fmt::Display> fmt::Display for FallbackError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FallbackError::Store(error) => error.fmt(f),
            FallbackError::SettleUnknown(error) => write!(
                f,
                "the settle's outcome is unknown, the store having an outage: {error}; not \
                 applied to the fallback limiter, which never held the reserve"
            ),
            FallbackError::SettleNotSent => f.write_str(
                "the settle was not sent, the circuit breaker being open: the store keeps \
                 the reserve charged; not applied to the fallback limiter, which never \
                 held it",
            ),
            FallbackError::Fallback(error) => write!(f, "fallback limiter: {error}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for FallbackError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FallbackError::Store(error) | FallbackError::SettleUnknown(error) => Some(error),
            FallbackError::Fallback(error) => Some(error),
            FallbackError::SettleNotSent => None,
        }
    }
}
