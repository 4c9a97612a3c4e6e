//! The trait every algorithm's state implements, and the rolling-window arithmetic the
//! windowed ones share. Its public face is the crate's `state` module.

use crate::values::decision::{Counters, Decision, Outcome};
use crate::values::limit::Limit;
use crate::values::tokens::Tokens;

/// The per-key state of one rate-limiting algorithm.
///
/// All times are milliseconds on the caller's clock; the state never reads a clock.
pub trait State {
    /// Decides a request of `cost` tokens at `now_ms`, and spends the cost if it fits.
    fn hit(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision;

    /// What [`hit`](State::hit) would answer, without spending anything or changing state.
    fn peek(&self, limit: &Limit, now_ms: u64, cost: u64) -> Decision;

    /// Charges `cost` tokens after the fact, whether or not they fit: for costs known only
    /// from the response. It may push `used` above the limit; later requests then wait.
    /// The decision's outcome is always [`Outcome::Allowed`].
    fn record(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision;

    /// Settles a reservation of `reserved` tokens made at `reserved_at_ms` (an allowed
    /// `hit`) at its final `cost`: the difference is charged, or refunded, as
    /// [`crate::reservation`] defines for each algorithm. Decided at `max(now_ms, latest,
    /// reserved_at_ms)`. The decision's outcome is always [`Outcome::Allowed`], its cost the
    /// final cost.
    fn settle(
        &mut self,
        limit: &Limit,
        now_ms: u64,
        reserved_at_ms: u64,
        reserved: u64,
        cost: u64,
    ) -> Decision;

    /// This algorithm's empty state refilled with two window counters, `previous` and
    /// `current` tokens, its latest time `latest_ms`: `Some` only for a state that is
    /// exactly those, the floating window's. The concurrent limiter keeps such a bucket in
    /// one atomic word, and calls this to make it whole again; the default, `None`, keeps
    /// every bucket whole.
    fn with_window_counters(&self, previous: u64, current: u64, latest_ms: u64) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = (previous, current, latest_ms);
        None
    }

    /// True when at `now_ms` nothing this state holds still counts, so dropping it and
    /// starting afresh would change no later decision.
    fn is_idle(&self, limit: &Limit, now_ms: u64) -> bool;

    /// Forgets everything: the state of a limiter that has never seen a request.
    fn clear(&mut self);
}

/// The numbers a state reports for one decision, before they become a [`Decision`].
#[derive(Clone, Copy)]
pub(crate) struct Usage {
    /// `used × W`, exact.
    pub used_scaled: u128,
    /// The floating window's counters, for showing the formula.
    pub counters: Option<Counters>,
}

/// Applies the shared rule to a request of `cost` at the effective time `at_ms`
/// (`≥ now_ms`, the caller's time), given the tokens in use before it.
///
/// `wait_ms` is only called for a denied request whose cost is at most N, and must return
/// the smallest d ≥ 1 such that the request fits at `at_ms + d`.
pub(crate) fn judge(
    limit: &Limit,
    now_ms: u64,
    at_ms: u64,
    used_scaled: u128,
    cost: u64,
    wait_ms: impl FnOnce() -> u64,
) -> Outcome {
    if cost == 0 {
        Outcome::Allowed
    } else if cost > limit.tokens() {
        Outcome::ExceedsLimit
    } else if used_scaled <= limit.scale_tokens(limit.tokens() - cost) {
        // used + c ≤ N, as used × W ≤ (N − c) × W: nothing here can overflow.
        Outcome::Allowed
    } else {
        // Reported from the caller's clock, so that `now + retry_after_ms` is the moment
        // even when that clock had gone backwards.
        Outcome::Denied {
            retry_after_ms: (at_ms - now_ms).saturating_add(wait_ms()),
        }
    }
}

/// Puts a decision together from its parts.
pub(crate) fn decision(
    limit: &Limit,
    at_ms: u64,
    cost: u64,
    outcome: Outcome,
    usage: Usage,
) -> Decision {
    Decision {
        outcome,
        cost,
        limit: *limit,
        used: Tokens::new(usage.used_scaled, limit.window()),
        at_ms,
        counters: usage.counters,
    }
}

/// Narrows a wait computed in u128 to u64 milliseconds. Only limits near `u64::MAX` ms can
/// produce a wait that does not fit, and a wait of 584 million years is as good as never.
pub(crate) fn saturate_ms(wait: u128) -> u64 {
    u64::try_from(wait).unwrap_or(u64::MAX)
}

/// A state small enough to copy, whose standing at any later time is computed from its
/// fields alone: the floating window, the fixed window and the token bucket. Implementing
/// this gives [`State`] with one shared flow for hit, peek and record, which rolls the state
/// once and works out its usage once per call.
pub(crate) trait Rolling: Copy + Default {
    /// What rolling found out about where the time falls (for the windows, how far into its
    /// window), handed to the other methods so that they need not divide by W again.
    type Position: Copy;

    /// Brings the state to how it stands at `at_ms` (not before the latest time seen), in
    /// place, and says where that is.
    fn roll(&mut self, limit: &Limit, at_ms: u64) -> Self::Position;
    /// The latest time seen.
    fn latest_ms(&self) -> u64;
    /// `used × W`, the tokens in use at the state's position, exact.
    fn used_scaled(&self, limit: &Limit, position: Self::Position) -> u128;
    /// The counters to show at the state's position: `None` but for the floating window.
    /// Asked only once a decision is made, so that the numbers a decision weighs stay
    /// small enough to pass in registers rather than be copied through memory.
    fn counters(&self, limit: &Limit, position: Self::Position) -> Option<Counters> {
        let _ = (limit, position);
        None
    }
    /// The smallest d ≥ 1 after which a denied `cost ≤ N` fits.
    fn wait_ms(&self, limit: &Limit, position: Self::Position, cost: u64) -> u64;
    /// Adds `cost` to the tokens in use; the position stays the same.
    fn spend(&mut self, cost: u64);
    /// Settles, at the state's position, a reservation made at `reserved_at_ms` (no later
    /// than the state's latest time): `difference` more tokens (or fewer) where the
    /// reservation's tokens still count, and nothing once they no longer do.
    fn adjust(
        &mut self,
        limit: &Limit,
        position: Self::Position,
        reserved_at_ms: u64,
        difference: Difference,
    );

    /// [`State::with_window_counters`]: `None` unless the state is two window counters.
    fn from_window_counters(previous: u64, current: u64, latest_ms: u64) -> Option<Self> {
        let _ = (previous, current, latest_ms);
        None
    }

    /// Applies the shared rule to a state already rolled to its latest time, at `position`:
    /// `used × W` before the request, and the outcome for a caller at `now_ms`.
    #[inline]
    fn judge_rolled(
        &self,
        limit: &Limit,
        now_ms: u64,
        position: Self::Position,
        cost: u64,
    ) -> (u128, Outcome) {
        let used_scaled = self.used_scaled(limit, position);
        let outcome = judge(limit, now_ms, self.latest_ms(), used_scaled, cost, || {
            self.wait_ms(limit, position, cost)
        });
        (used_scaled, outcome)
    }

    /// The decision on a request of `cost` that left the state as it is now, at
    /// `position`, with `used_scaled` tokens in use. Always inlined, as `div_rem` is: in
    /// the widget's WebAssembly a call would pass the decision through memory once more.
    #[inline(always)]
    fn decided(
        &self,
        limit: &Limit,
        position: Self::Position,
        cost: u64,
        outcome: Outcome,
        used_scaled: u128,
    ) -> Decision {
        let usage = Usage {
            used_scaled,
            counters: self.counters(limit, position),
        };
        decision(limit, self.latest_ms(), cost, outcome, usage)
    }

    /// Rolls to the effective time, in place: the position. In place rather than as a
    /// new state, which a WebAssembly build copies through memory, at a cost that weighs on
    /// a hit more than the arithmetic does.
    #[inline]
    fn roll_for(&mut self, limit: &Limit, now_ms: u64) -> Self::Position {
        self.roll(limit, now_ms.max(self.latest_ms()))
    }

    /// The state rolled to the effective time, leaving this one as it is, and its position.
    #[inline]
    fn rolled_for(&self, limit: &Limit, now_ms: u64) -> (Self, Self::Position) {
        let mut state = *self;
        let position = state.roll_for(limit, now_ms);
        (state, position)
    }
}

/// [`State::hit`] on a state already rolled to its latest time, at `position`. The
/// concurrent limiter's packed buckets, which know their position without dividing, decide
/// through this, so their decisions are the core's by construction.
#[inline]
pub(crate) fn hit_rolled<T: Rolling>(
    state: &mut T,
    limit: &Limit,
    now_ms: u64,
    position: T::Position,
    cost: u64,
) -> Decision {
    let (mut used_scaled, outcome) = state.judge_rolled(limit, now_ms, position, cost);
    if outcome == Outcome::Allowed {
        state.spend(cost);
        // Exact, as the request fitted: the sum is at most N × W, so nothing is worked
        // out again from the state.
        used_scaled += limit.scale_tokens(cost);
    }
    state.decided(limit, position, cost, outcome, used_scaled)
}

/// [`State::peek`] on a state already rolled to its latest time, at `position`.
#[inline]
pub(crate) fn peek_rolled<T: Rolling>(
    state: &T,
    limit: &Limit,
    now_ms: u64,
    position: T::Position,
    cost: u64,
) -> Decision {
    let (used_scaled, outcome) = state.judge_rolled(limit, now_ms, position, cost);
    state.decided(limit, position, cost, outcome, used_scaled)
}

/// [`State::record`] on a state already rolled to its latest time, at `position`.
#[inline]
pub(crate) fn record_rolled<T: Rolling>(
    state: &mut T,
    limit: &Limit,
    position: T::Position,
    cost: u64,
) -> Decision {
    // Worked out again from the state, unlike a hit's: a recorded cost may push the
    // counters to saturation.
    state.spend(cost);
    let used_scaled = state.used_scaled(limit, position);
    state.decided(limit, position, cost, Outcome::Allowed, used_scaled)
}

/// What a settle changes: the final cost minus the reserve, as a sign and a size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Difference {
    /// The request cost more than it reserved: this many tokens more.
    More(u64),
    /// It cost less: this many tokens come back.
    Less(u64),
}

impl Difference {
    /// `cost − reserved`; `None` when they are equal.
    pub(crate) fn between(reserved: u64, cost: u64) -> Option<Difference> {
        match cost.cmp(&reserved) {
            core::cmp::Ordering::Greater => Some(Difference::More(cost - reserved)),
            core::cmp::Ordering::Less => Some(Difference::Less(reserved - cost)),
            core::cmp::Ordering::Equal => None,
        }
    }

    /// `counter` changed by the difference: more saturates, less stops at 0.
    pub(crate) fn applied_to(self, counter: u128) -> u128 {
        match self {
            Difference::More(tokens) => counter.saturating_add(u128::from(tokens)),
            Difference::Less(tokens) => counter.saturating_sub(u128::from(tokens)),
        }
    }

    /// [`applied_to`](Difference::applied_to) for a `u64` counter.
    pub(crate) fn applied_to_u64(self, counter: u64) -> u64 {
        match self {
            Difference::More(tokens) => counter.saturating_add(tokens),
            Difference::Less(tokens) => counter.saturating_sub(tokens),
        }
    }
}

/// [`State::settle`] on a state already rolled to its latest time, at `position`.
#[inline]
pub(crate) fn settle_rolled<T: Rolling>(
    state: &mut T,
    limit: &Limit,
    position: T::Position,
    reserved_at_ms: u64,
    reserved: u64,
    cost: u64,
) -> Decision {
    if let Some(difference) = Difference::between(reserved, cost) {
        state.adjust(limit, position, reserved_at_ms, difference);
    }
    let used_scaled = state.used_scaled(limit, position);
    state.decided(limit, position, cost, Outcome::Allowed, used_scaled)
}

impl<T: Rolling> State for T {
    #[inline]
    fn hit(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        let position = self.roll_for(limit, now_ms);
        hit_rolled(self, limit, now_ms, position, cost)
    }

    fn peek(&self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        let (state, position) = self.rolled_for(limit, now_ms);
        peek_rolled(&state, limit, now_ms, position, cost)
    }

    fn record(&mut self, limit: &Limit, now_ms: u64, cost: u64) -> Decision {
        let position = self.roll_for(limit, now_ms);
        record_rolled(self, limit, position, cost)
    }

    fn settle(
        &mut self,
        limit: &Limit,
        now_ms: u64,
        reserved_at_ms: u64,
        reserved: u64,
        cost: u64,
    ) -> Decision {
        // The reservation's own time was seen, even by a state made since (a keyed
        // limiter's that dropped the bucket while the request was in flight).
        let position = self.roll_for(limit, now_ms.max(reserved_at_ms));
        settle_rolled(self, limit, position, reserved_at_ms, reserved, cost)
    }

    fn with_window_counters(&self, previous: u64, current: u64, latest_ms: u64) -> Option<T> {
        T::from_window_counters(previous, current, latest_ms)
    }

    fn is_idle(&self, limit: &Limit, now_ms: u64) -> bool {
        let (state, position) = self.rolled_for(limit, now_ms);
        state.used_scaled(limit, position) == 0
    }

    fn clear(&mut self) {
        *self = T::default();
    }
}
