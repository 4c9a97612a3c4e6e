//! Two limiters side by side: how often an approximation (the floating window, the fixed
//! window, the token bucket) answers differently from a reference (usually the exact
//! sliding log), and how far past the limit it lets traffic through.
//!
//! The replay CLI's `--compare` and the accuracy study (`make accuracy`) both count with
//! [`Comparison`], under one definition, in two ways:
//!
//! - **Each on its own history**: every request goes to both limiters through `hit`, each
//!   with its own state, and each answers from what it has itself allowed: the reference
//!   never learns what the approximation let in, nor the other way round. Both see the
//!   same stream of requests; a client that reacts to answers (waiting after a 429) is
//!   shown the approximation's answers by whoever drives the comparison, since that is the
//!   limiter it talks to. One early disagreement echoes: once the two have spent
//!   differently, later answers differ too, even where neither is far from the limit.
//! - **On the reference's history** (the same history): a shadow of the approximation is
//!   kept in step with what the *reference* allowed. Before each request it is asked
//!   (`peek`) what it would answer; it then spends (`record`) exactly what the reference
//!   spent. Every request is so judged twice on one history, and a difference is the
//!   approximation's own error, not an echo. Cloudflare's 0.003% for the floating window
//!   compares the two methods on the same traffic in this way.
//! - **Wrongly allowed**: the approximation allows a request the reference denies.
//!   **Wrongly limited**: the approximation denies a request the reference allows. A
//!   request larger than the whole limit is denied by both, so it never disagrees.
//! - **Worst window**: the most tokens a limiter allowed within any W milliseconds, over
//!   every interval `[s, s + W)`, counted exactly. The sliding log never lets in more than
//!   N; the other three can let in up to 2N, since any W ms overlap at most two fixed
//!   windows (and a token bucket can be emptied, then refilled with N in W).

use alloc::collections::VecDeque;
use core::fmt;
use core::num::NonZeroU64;

use crate::algorithms::any::Algorithm;
use crate::stores::bucket::Limiter;
use crate::values::decision::Decision;
use crate::values::limit::Limit;
use crate::values::tokens::write_decimal;

/// Two limiters under the same limit, fed the same requests, counting where they disagree.
///
/// With `2/1s`, two tokens spent at 900 and 950 ms are all the floating window knows of
/// its first window, so it takes them as spread evenly over it. At 1500 ms it counts half
/// of them, `2 × 0.5 = 1`, and lets one more in; the sliding log still holds both (they
/// come back at 1900 and 1950 ms) and denies it. On the log's history the answer is the
/// same: having spent only what the log allowed (900 and 950), the floating window lets it in:
///
/// ```
/// use trickle_core::compare::{Comparison, Disagreement};
/// use trickle_core::Algorithm;
///
/// let limit = "2/1s".parse().unwrap();
/// let mut comparison = Comparison::new(limit, Algorithm::Floating, Algorithm::SlidingLog);
/// comparison.hit(900, 1);
/// comparison.hit(950, 1);
/// let verdict = comparison.hit(1_500, 1);
/// assert_eq!(verdict.disagreement(), Some(Disagreement::WronglyAllowed));
/// assert_eq!(verdict.same_history_disagreement(), Some(Disagreement::WronglyAllowed));
///
/// let accuracy = comparison.accuracy();
/// assert_eq!((accuracy.requests, accuracy.wrongly_allowed), (3, 1));
/// assert_eq!(accuracy.same_history_wrongly_allowed, 1);
/// // 900, 950 and 1500 all lie in [900, 1900): 3 tokens where the limit is 2.
/// assert_eq!(accuracy.worst_window, 3);
/// assert_eq!(accuracy.worst_window_share().to_string(), "1.50");
/// assert_eq!(accuracy.reference_worst_window, 2);
/// ```
#[derive(Debug, Clone)]
pub struct Comparison {
    approximation: Limiter,
    reference: Limiter,
    /// The approximation's algorithm, having spent exactly what `reference` allowed.
    shadow: Limiter,
    requests: u64,
    wrongly_allowed: u64,
    wrongly_limited: u64,
    same_history_wrongly_allowed: u64,
    same_history_wrongly_limited: u64,
    approximation_windows: WindowSweep,
    reference_windows: WindowSweep,
}

/// The answers to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// What the limiter being measured answered, from its own history.
    pub approximation: Decision,
    /// What the reference answered.
    pub reference: Decision,
    /// What the limiter being measured would answer had it spent exactly what the
    /// reference allowed so far, asked at the time the reference decided (nothing spent).
    pub same_history: Decision,
}

/// How the approximation's answer differs from the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Disagreement {
    /// Allowed by the approximation, denied by the reference: traffic past the limit.
    WronglyAllowed,
    /// Denied by the approximation, allowed by the reference: a client refused for nothing.
    WronglyLimited,
}

impl Disagreement {
    /// How `approximation` differs from `reference`, if it does.
    fn between(approximation: &Decision, reference: &Decision) -> Option<Disagreement> {
        match (approximation.is_allowed(), reference.is_allowed()) {
            (true, false) => Some(Disagreement::WronglyAllowed),
            (false, true) => Some(Disagreement::WronglyLimited),
            _ => None,
        }
    }

    /// `wrongly-allowed` or `wrongly-limited`, as the replay CLI writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Disagreement::WronglyAllowed => "wrongly-allowed",
            Disagreement::WronglyLimited => "wrongly-limited",
        }
    }
}

impl Verdict {
    /// How the approximation's own answer differs from the reference's; `None` when both
    /// answered alike.
    pub fn disagreement(&self) -> Option<Disagreement> {
        Disagreement::between(&self.approximation, &self.reference)
    }

    /// How the approximation's answer on the reference's history differs from the
    /// reference's; `None` when both answered alike.
    pub fn same_history_disagreement(&self) -> Option<Disagreement> {
        Disagreement::between(&self.same_history, &self.reference)
    }
}

impl Comparison {
    /// Two empty limiters under `limit`: `approximation`, the one measured, and `reference`,
    /// the one it is measured against (usually [`Algorithm::SlidingLog`]).
    pub fn new(limit: Limit, approximation: Algorithm, reference: Algorithm) -> Comparison {
        Comparison {
            approximation: Limiter::with_algorithm(approximation, limit),
            reference: Limiter::with_algorithm(reference, limit),
            shadow: Limiter::with_algorithm(approximation, limit),
            requests: 0,
            wrongly_allowed: 0,
            wrongly_limited: 0,
            same_history_wrongly_allowed: 0,
            same_history_wrongly_limited: 0,
            approximation_windows: WindowSweep::default(),
            reference_windows: WindowSweep::default(),
        }
    }

    /// Decides a request of `cost` at `now_ms` with both limiters; each spends the cost if it
    /// allows the request. The shadow is asked too, then spends what the reference spent.
    pub fn hit(&mut self, now_ms: u64, cost: u64) -> Verdict {
        let window_ms = self.approximation.limit().window_ms();
        let reference = self.reference.hit(now_ms, cost);
        // At the reference's time, not `now_ms`: after a clock went back, the shadow may
        // not have seen the latest time (it only hears of allowed requests).
        let same_history = self.shadow.peek(reference.at_ms, cost);
        if reference.is_allowed() {
            self.shadow.record(reference.at_ms, cost);
        }
        let verdict = Verdict {
            approximation: self.approximation.hit(now_ms, cost),
            reference,
            same_history,
        };
        self.requests += 1;
        count(
            verdict.disagreement(),
            &mut self.wrongly_allowed,
            &mut self.wrongly_limited,
        );
        count(
            verdict.same_history_disagreement(),
            &mut self.same_history_wrongly_allowed,
            &mut self.same_history_wrongly_limited,
        );
        self.approximation_windows
            .add(window_ms, &verdict.approximation);
        self.reference_windows.add(window_ms, &verdict.reference);
        verdict
    }

    /// What the requests so far add up to.
    pub fn accuracy(&self) -> Accuracy {
        Accuracy {
            limit: self.approximation.limit(),
            approximation: self.approximation.algorithm(),
            reference: self.reference.algorithm(),
            requests: self.requests,
            wrongly_allowed: self.wrongly_allowed,
            wrongly_limited: self.wrongly_limited,
            same_history_wrongly_allowed: self.same_history_wrongly_allowed,
            same_history_wrongly_limited: self.same_history_wrongly_limited,
            worst_window: self.approximation_windows.worst,
            reference_worst_window: self.reference_windows.worst,
        }
    }
}

/// Adds one to the count of `disagreement`'s kind, if there is one.
fn count(disagreement: Option<Disagreement>, wrongly_allowed: &mut u64, wrongly_limited: &mut u64) {
    match disagreement {
        Some(Disagreement::WronglyAllowed) => *wrongly_allowed += 1,
        Some(Disagreement::WronglyLimited) => *wrongly_limited += 1,
        None => {}
    }
}

/// The most tokens allowed within any W ms, kept up to date as decisions come in.
///
/// Decisions arrive in time order (a limiter decides at the latest time it has seen, never
/// earlier), so the intervals worth looking at are those ending at an allowed request:
/// any `[s, s + W)` holds no more than `(t − W, t]` where t is its last allowed request,
/// since s > t − W. Only the allowed requests of the last W ms are kept.
#[derive(Debug, Clone, Default)]
struct WindowSweep {
    /// Allowed requests as (time, cost) within W ms of the latest, oldest first.
    recent: VecDeque<(u64, u64)>,
    /// The sum of their costs.
    tokens: u128,
    /// The largest `tokens` has been.
    worst: u128,
}

impl WindowSweep {
    fn add(&mut self, window_ms: u64, decision: &Decision) {
        let (at_ms, spent) = (decision.at_ms, decision.spent());
        if spent == 0 {
            return;
        }
        while let Some(&(then_ms, cost)) = self.recent.front() {
            if u128::from(then_ms) + u128::from(window_ms) > u128::from(at_ms) {
                break;
            }
            self.tokens -= u128::from(cost);
            self.recent.pop_front();
        }
        self.recent.push_back((at_ms, spent));
        // No limiter allows more than 2N ≤ 2^65 tokens within W ms through `hit`: no overflow.
        self.tokens += u128::from(spent);
        self.worst = self.worst.max(self.tokens);
    }
}

/// What a [`Comparison`] found: how many requests, how many answered differently (each on
/// its own history, and on the reference's), and the most tokens each limiter let into any
/// W ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accuracy {
    /// The limit both limiters enforce.
    pub limit: Limit,
    /// The algorithm measured.
    pub approximation: Algorithm,
    /// The algorithm it was measured against.
    pub reference: Algorithm,
    /// Requests compared.
    pub requests: u64,
    /// Requests the approximation allowed and the reference denied, each on its own
    /// history: these include echoes of earlier disagreements.
    pub wrongly_allowed: u64,
    /// Requests the approximation denied and the reference allowed, each on its own history.
    pub wrongly_limited: u64,
    /// Requests the reference denied that the approximation would have allowed on the
    /// reference's history: its own errors, without echoes.
    pub same_history_wrongly_allowed: u64,
    /// Requests the reference allowed that the approximation would have denied on the
    /// reference's history.
    pub same_history_wrongly_limited: u64,
    /// The most tokens the approximation allowed within any W ms.
    pub worst_window: u128,
    /// The most tokens the reference allowed within any W ms: at most N for the sliding log.
    pub reference_worst_window: u128,
}

impl Accuracy {
    /// Requests answered differently, either way, each on its own history.
    pub fn disagreements(&self) -> u64 {
        self.wrongly_allowed + self.wrongly_limited
    }

    /// Requests answered differently, either way, on the reference's history.
    pub fn same_history_disagreements(&self) -> u64 {
        self.same_history_wrongly_allowed + self.same_history_wrongly_limited
    }

    /// Wrongly allowed requests as a percentage of all requests (0 when there were none).
    pub fn wrongly_allowed_percent(&self) -> Ratio {
        self.percent(self.wrongly_allowed)
    }

    /// Wrongly limited requests as a percentage of all requests (0 when there were none).
    pub fn wrongly_limited_percent(&self) -> Ratio {
        self.percent(self.wrongly_limited)
    }

    /// Requests wrongly allowed on the reference's history, as a percentage of all requests.
    pub fn same_history_wrongly_allowed_percent(&self) -> Ratio {
        self.percent(self.same_history_wrongly_allowed)
    }

    /// Requests wrongly limited on the reference's history, as a percentage of all requests.
    pub fn same_history_wrongly_limited_percent(&self) -> Ratio {
        self.percent(self.same_history_wrongly_limited)
    }

    /// The approximation's worst window as a multiple of N: 1.50 is half again the limit.
    pub fn worst_window_share(&self) -> Ratio {
        Ratio::new(self.worst_window, self.limit.tokens())
    }

    /// The reference's worst window as a multiple of N.
    pub fn reference_worst_window_share(&self) -> Ratio {
        Ratio::new(self.reference_worst_window, self.limit.tokens())
    }

    fn percent(&self, count: u64) -> Ratio {
        Ratio::new(u128::from(count) * 100, self.requests)
    }
}

impl fmt::Display for Accuracy {
    /// Two lines, as the replay CLI prints them after the rows: each on its own history,
    /// then on the reference's.
    ///
    /// `floating against sliding-log: 3 requests, 1 wrongly allowed (33.333%), 0 wrongly
    /// limited (0.000%), at most 3 tokens in any 1000 ms = 1.50 x N (sliding-log: 2 =
    /// 1.00 x N)`
    ///
    /// `floating judged on sliding-log's history: 1 wrongly allowed (33.333%), 0 wrongly
    /// limited (0.000%)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} against {}: {} request{}, {} wrongly allowed ({:.3}%), {} wrongly limited \
             ({:.3}%), at most {} tokens in any {} ms = {:.2} x N ({}: {} = {:.2} x N)\n\
             {} judged on {}'s history: {} wrongly allowed ({:.3}%), {} wrongly limited \
             ({:.3}%)",
            self.approximation,
            self.reference,
            self.requests,
            if self.requests == 1 { "" } else { "s" },
            self.wrongly_allowed,
            self.wrongly_allowed_percent(),
            self.wrongly_limited,
            self.wrongly_limited_percent(),
            self.worst_window,
            self.limit.window_ms(),
            self.worst_window_share(),
            self.reference,
            self.reference_worst_window,
            self.reference_worst_window_share(),
            self.approximation,
            self.reference,
            self.same_history_wrongly_allowed,
            self.same_history_wrongly_allowed_percent(),
            self.same_history_wrongly_limited,
            self.same_history_wrongly_limited_percent(),
        )
    }
}

/// An exact fraction, shown in decimal: a percentage or a multiple of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ratio {
    numerator: u128,
    denominator: NonZeroU64,
}

impl Ratio {
    /// `numerator / denominator`; a denominator of 0 (a share of no requests) gives 0.
    fn new(numerator: u128, denominator: u64) -> Ratio {
        match NonZeroU64::new(denominator) {
            Some(denominator) => Ratio {
                numerator,
                denominator,
            },
            None => Ratio {
                numerator: 0,
                denominator: NonZeroU64::MIN,
            },
        }
    }

    /// The numerator.
    pub fn numerator(&self) -> u128 {
        self.numerator
    }

    /// The denominator, never 0.
    pub fn denominator(&self) -> u64 {
        self.denominator.get()
    }

    /// The value as a float, for plotting; never use it to decide.
    pub fn as_f64(&self) -> f64 {
        self.numerator as f64 / self.denominator.get() as f64
    }
}

impl fmt::Display for Ratio {
    /// Decimal, rounded half up, with 2 decimals unless the formatter asks for others:
    /// `{}` gives `1.50`, `{:.3}` gives `1.500`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decimals = f.precision().unwrap_or(2);
        write_decimal(f, self.numerator, self.denominator, decimals)
    }
}
