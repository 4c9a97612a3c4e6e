//! The circuit breaker in front of a store: after a few outages in a row it stops asking
//! the store, so that a dead or stuck Redis costs each request nothing instead of a
//! timeout; after a cool-down it lets one request through to see whether the store is
//! back, and closes when it is.
//!
//! Three atomics and no lock: a request that finds the breaker closed pays one load. Time
//! is an argument (ms on a monotonic clock the caller keeps), so the tests below are exact.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// How many outages in a row open the breaker unless
/// [`Fallback::with_breaker`](crate::Fallback::with_breaker) says otherwise: 3. One is
/// noise (a connection reset, then a reconnect); three in a row, with no answer between
/// them, is a store that is away.
pub const BREAKER_FAILURES: NonZeroU32 = NonZeroU32::MIN.saturating_add(2);

/// How long an open breaker sends every decision to the fallback before it lets one probe
/// through, unless [`Fallback::with_breaker`](crate::Fallback::with_breaker) says
/// otherwise: 2 s. While the store stays away, one request in each cool-down waits for it
/// (a timeout at most) and is then decided by the fallback; once it is back, decisions
/// return to it within a cool-down.
pub const BREAKER_COOL_DOWN: Duration = Duration::from_secs(2);

/// `opened_at` of a closed breaker.
const CLOSED: u64 = u64::MAX;

/// Where one decision goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The store, the breaker closed.
    Primary,
    /// The store, as the one request that tests it after a cool-down.
    Probe,
    /// The fallback, without asking the store.
    Secondary,
}

/// What the breaker is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Decisions go to the store.
    Closed,
    /// Decisions go to the fallback without asking the store; after the cool-down, the
    /// next one probes it.
    Open,
    /// One decision is probing the store; the others go to the fallback.
    HalfOpen,
}

/// A change of state worth a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    /// Closed → open, after enough outages in a row.
    Opened,
    /// A probe found the store still away: open for another cool-down.
    Reopened,
    /// A probe got an answer: closed.
    Closed,
}

#[derive(Debug)]
pub(crate) struct Breaker {
    failures_to_open: u32,
    cool_down_ms: u64,
    /// Outages in a row while closed; any answer from the store resets it.
    consecutive: AtomicU32,
    /// When the breaker last opened (or a probe failed), or [`CLOSED`].
    opened_at: AtomicU64,
    /// Whether a probe is out: at most one at a time.
    probing: AtomicBool,
    opened: AtomicU64,
}

impl Breaker {
    pub(crate) fn new(failures_to_open: NonZeroU32, cool_down: Duration) -> Breaker {
        Breaker {
            failures_to_open: failures_to_open.get(),
            cool_down_ms: u64::try_from(cool_down.as_millis()).unwrap_or(u64::MAX),
            consecutive: AtomicU32::new(0),
            opened_at: AtomicU64::new(CLOSED),
            probing: AtomicBool::new(false),
            opened: AtomicU64::new(0),
        }
    }

    pub(crate) fn failures_to_open(&self) -> u32 {
        self.failures_to_open
    }

    pub(crate) fn cool_down_ms(&self) -> u64 {
        self.cool_down_ms
    }

    /// Where a decision at `now_ms` goes. A [`Route::Probe`] must be answered with
    /// [`answered`](Breaker::answered), [`outage`](Breaker::outage) or
    /// [`abandoned`](Breaker::abandoned), or no other probe is ever let through.
    pub(crate) fn route(&self, now_ms: u64) -> Route {
        let opened_at = self.opened_at.load(Ordering::SeqCst);
        if opened_at == CLOSED {
            return Route::Primary;
        }
        if now_ms.saturating_sub(opened_at) < self.cool_down_ms {
            return Route::Secondary;
        }
        match self
            .probing
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => Route::Probe,
            Err(_) => Route::Secondary,
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.opened_at.load(Ordering::SeqCst) == CLOSED
    }

    pub(crate) fn state(&self) -> BreakerState {
        if self.is_closed() {
            BreakerState::Closed
        } else if self.probing.load(Ordering::SeqCst) {
            BreakerState::HalfOpen
        } else {
            BreakerState::Open
        }
    }

    /// How many times it has opened (a failed probe does not count again).
    pub(crate) fn times_opened(&self) -> u64 {
        self.opened.load(Ordering::SeqCst)
    }

    /// The store answered a decision sent by `route` (a decision, or an error that is not
    /// an outage: either way it is up). Only a probe closes an open breaker: an answer to
    /// a request sent before it opened says the store was up then, not now.
    pub(crate) fn answered(&self, route: Route) -> Option<Transition> {
        self.consecutive.store(0, Ordering::SeqCst);
        if route != Route::Probe {
            return None;
        }
        self.opened_at.store(CLOSED, Ordering::SeqCst);
        self.probing.store(false, Ordering::SeqCst);
        Some(Transition::Closed)
    }

    /// The store had an outage on a decision sent by `route`, found at `now_ms`.
    pub(crate) fn outage(&self, route: Route, now_ms: u64) -> Option<Transition> {
        if route == Route::Probe {
            // A new cool-down first, so that no request sees the probe gone and the old
            // cool-down over in between.
            self.opened_at.store(now_ms, Ordering::SeqCst);
            self.probing.store(false, Ordering::SeqCst);
            return Some(Transition::Reopened);
        }
        let in_a_row = self
            .consecutive
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1);
        if in_a_row < self.failures_to_open {
            return None;
        }
        // The requests in flight when it opens fail after it; only the first opens it.
        self.opened_at
            .compare_exchange(CLOSED, now_ms, Ordering::SeqCst, Ordering::SeqCst)
            .ok()?;
        self.consecutive.store(0, Ordering::SeqCst);
        self.opened.fetch_add(1, Ordering::SeqCst);
        Some(Transition::Opened)
    }

    /// A probe sent at `started_ms` ended without an answer either way (its request was
    /// dropped: the client hung up). Open again as from `started_ms`, so the next probe
    /// goes a cool-down after this one went.
    pub(crate) fn abandoned(&self, started_ms: u64) {
        self.opened_at.store(started_ms, Ordering::SeqCst);
        self.probing.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> Breaker {
        Breaker::new(NonZeroU32::new(3).unwrap(), Duration::from_millis(1_000))
    }

    /// Opens `breaker` at `now_ms` with three outages in a row.
    fn open(breaker: &Breaker, now_ms: u64) {
        assert_eq!(breaker.outage(Route::Primary, now_ms), None);
        assert_eq!(breaker.outage(Route::Primary, now_ms), None);
        assert_eq!(
            breaker.outage(Route::Primary, now_ms),
            Some(Transition::Opened)
        );
    }

    #[test]
    fn it_opens_after_three_outages_in_a_row_and_not_before() {
        let breaker = breaker();
        breaker.outage(Route::Primary, 0);
        breaker.outage(Route::Primary, 0);
        assert_eq!(breaker.route(0), Route::Primary);
        // An answer between them starts the count again.
        breaker.answered(Route::Primary);
        breaker.outage(Route::Primary, 0);
        breaker.outage(Route::Primary, 0);
        assert_eq!(breaker.state(), BreakerState::Closed);
        assert_eq!(breaker.outage(Route::Primary, 5), Some(Transition::Opened));
        assert_eq!(breaker.state(), BreakerState::Open);
        assert_eq!(breaker.times_opened(), 1);
        // The requests that were in flight fail too; they do not open it again.
        assert_eq!(breaker.outage(Route::Primary, 6), None);
        assert_eq!(breaker.times_opened(), 1);
    }

    #[test]
    fn open_it_sends_everything_to_the_fallback_until_the_cool_down_then_one_probe() {
        let breaker = breaker();
        open(&breaker, 100);
        for now in [100, 500, 1_099] {
            assert_eq!(breaker.route(now), Route::Secondary, "at {now}");
        }
        assert_eq!(breaker.route(1_100), Route::Probe);
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
        // One probe at a time, however late.
        assert_eq!(breaker.route(1_100), Route::Secondary);
        assert_eq!(breaker.route(9_000), Route::Secondary);
    }

    #[test]
    fn a_probe_that_is_answered_closes_it_and_one_that_fails_opens_it_again() {
        let breaker = breaker();
        open(&breaker, 0);
        assert_eq!(breaker.route(1_000), Route::Probe);
        assert_eq!(
            breaker.outage(Route::Probe, 1_400),
            Some(Transition::Reopened)
        );
        // A new cool-down from the probe's failure.
        assert_eq!(breaker.route(2_399), Route::Secondary);
        assert_eq!(breaker.route(2_400), Route::Probe);
        assert_eq!(breaker.answered(Route::Probe), Some(Transition::Closed));
        assert_eq!(breaker.state(), BreakerState::Closed);
        assert_eq!(breaker.route(2_401), Route::Primary);
        assert_eq!(breaker.times_opened(), 1);
    }

    #[test]
    fn an_answer_to_a_request_sent_before_it_opened_does_not_close_it() {
        let breaker = breaker();
        open(&breaker, 0);
        assert_eq!(breaker.answered(Route::Primary), None);
        assert_eq!(breaker.state(), BreakerState::Open);
        assert_eq!(breaker.route(10), Route::Secondary);
    }

    #[test]
    fn an_abandoned_probe_lets_the_next_one_go_a_cool_down_after_it() {
        let breaker = breaker();
        open(&breaker, 0);
        assert_eq!(breaker.route(1_000), Route::Probe);
        breaker.abandoned(1_000);
        assert_eq!(breaker.route(1_999), Route::Secondary);
        assert_eq!(breaker.route(2_000), Route::Probe);
    }

    /// Many threads asking at once after the cool-down: exactly one probe among them.
    #[test]
    fn threads_asking_together_get_one_probe() {
        let breaker = breaker();
        open(&breaker, 0);
        let probes = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        (0..1_000)
                            .filter(|_| breaker.route(5_000) == Route::Probe)
                            .count()
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|thread| thread.join().unwrap())
                .sum::<usize>()
        });
        assert_eq!(probes, 1);
    }
}
