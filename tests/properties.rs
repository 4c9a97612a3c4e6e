//! Invariants of the four algorithms on random traces: each request moves the clock by a
//! step that may be 0, may go backwards and may jump far, costs 0, a few tokens, N or N + 1,
//! and is a hit, a peek or a record, under a random limit from 1 token per ms up to u64::MAX
//! tokens per u64::MAX ms. Each test's name states its invariant.
// proptest has no random source on wasm32; these run natively only.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use trickle_core::state::{FixedState, FloatingState, SlidingLogState, State, TokenBucketState};
use trickle_core::{
    Algorithm, Bucket, Decision, FloatingWindow, KeyedLimiter, Limit, Limiter, Outcome, SlidingLog,
};

const MAX: u64 = u64::MAX;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/properties.txt",
        ))),
        ..ProptestConfig::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Hit,
    Peek,
    Record,
}

/// How the clock moves before a request.
#[derive(Debug, Clone, Copy)]
enum Step {
    Forward(u64),
    Back(u64),
}

#[derive(Debug, Clone, Copy)]
struct Request {
    step: Step,
    cost: u64,
    op: Op,
}

/// Which requests a trace may hold.
#[derive(Debug, Clone, Copy)]
struct Mix {
    peek: bool,
    record: bool,
    back: bool,
}

const EVERYTHING: Mix = Mix {
    peek: true,
    record: true,
    back: true,
};
const NO_RECORD: Mix = Mix {
    peek: true,
    record: false,
    back: true,
};
const HITS_ONLY: Mix = Mix {
    peek: false,
    record: false,
    back: true,
};
const FORWARD_ONLY: Mix = Mix {
    peek: true,
    record: true,
    back: false,
};

#[derive(Debug, Clone)]
struct Trace {
    limit: Limit,
    start_ms: u64,
    requests: Vec<Request>,
}

impl Trace {
    /// Each request with the caller's `now`: the clock starts at `start_ms` and saturates at
    /// both ends of u64.
    fn timed(&self) -> impl Iterator<Item = (u64, Request)> + '_ {
        let mut now = self.start_ms;
        self.requests.iter().map(move |request| {
            now = match request.step {
                Step::Forward(ms) => now.saturating_add(ms),
                Step::Back(ms) => now.saturating_sub(ms),
            };
            (now, *request)
        })
    }
}

/// Mostly small limits, so traces cross many windows, some larger, and the extremes.
fn any_limit() -> impl Strategy<Value = Limit> {
    let extreme_tokens = prop_oneof![Just(MAX), MAX - 3..=MAX, 1..=3u64];
    let extreme_window = prop_oneof![1..=3u64, Just(MAX), 1..=MAX];
    prop_oneof![
        6 => (1..=8u64, 1..=40u64),
        2 => (1..=1_000u64, 1..=100_000u64),
        1 => (extreme_tokens, extreme_window),
    ]
    .prop_map(|(tokens, window_ms)| Limit::new(tokens, window_ms).expect("tokens and window ≥ 1"))
}

/// The limits the brute-force models can scan millisecond by millisecond.
fn small_limit() -> impl Strategy<Value = Limit> {
    (1..=8u64, 1..=40u64)
        .prop_map(|(tokens, window_ms)| Limit::new(tokens, window_ms).expect("≥ 1"))
}

fn start_ms() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0), 0..=1_000_000u64, MAX - 1_000_000..=MAX]
}

fn step(window_ms: u64, back: bool) -> BoxedStrategy<Step> {
    let around_window = window_ms.saturating_sub(1)..=window_ms.saturating_add(1);
    let forward = prop_oneof![
        3 => Just(0u64),
        4 => 1..=3u64,
        4 => 1..=(window_ms / 2).max(1),
        3 => around_window,
        1 => window_ms.saturating_mul(2)..=window_ms.saturating_mul(10),
    ]
    .prop_map(Step::Forward);
    if back {
        prop_oneof![
            8 => forward,
            2 => (1..=window_ms.saturating_mul(2)).prop_map(Step::Back),
            1 => Just(Step::Back(MAX)),
        ]
        .boxed()
    } else {
        forward.boxed()
    }
}

fn cost(tokens: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(0),
        3 => 1..=tokens.min(3),
        2 => Just(tokens),
        2 => 1..=tokens,
        1 => Just(tokens.saturating_add(1)),
    ]
}

fn op(mix: Mix) -> impl Strategy<Value = Op> {
    // Shrinks towards a hit; an op the mix leaves out becomes a hit too.
    (0..7u8).prop_map(move |pick| match pick {
        4 | 5 if mix.peek => Op::Peek,
        6 if mix.record => Op::Record,
        _ => Op::Hit,
    })
}

fn trace_under(
    limits: BoxedStrategy<Limit>,
    starts: BoxedStrategy<u64>,
    mix: Mix,
) -> impl Strategy<Value = Trace> {
    (limits, starts).prop_flat_map(move |(limit, start_ms)| {
        let request = (
            step(limit.window_ms(), mix.back),
            cost(limit.tokens()),
            op(mix),
        )
            .prop_map(|(step, cost, op)| Request { step, cost, op });
        (
            Just(limit),
            Just(start_ms),
            prop::collection::vec(request, 1..60),
        )
            .prop_map(|(limit, start_ms, requests)| Trace {
                limit,
                start_ms,
                requests,
            })
    })
}

fn trace(mix: Mix) -> impl Strategy<Value = Trace> {
    trace_under(any_limit().boxed(), start_ms().boxed(), mix)
}

/// Traces the brute-force models can follow: small limits, a clock far from u64::MAX.
fn small_trace(mix: Mix) -> impl Strategy<Value = Trace> {
    trace_under(small_limit().boxed(), (0..=1_000_000u64).boxed(), mix)
}

/// One request of a trace, as a check sees it.
struct Seen<'a> {
    before: &'a Limiter,
    after: &'a Limiter,
    now: u64,
    request: Request,
    decision: Decision,
}

/// Runs `trace` on a fresh `algorithm` limiter, calling `check` after every request.
fn follow(
    trace: &Trace,
    algorithm: Algorithm,
    mut check: impl FnMut(&Seen<'_>) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let mut limiter = Limiter::with_algorithm(algorithm, trace.limit);
    for (now, request) in trace.timed() {
        let before = limiter.clone();
        let decision = match request.op {
            Op::Hit => limiter.hit(now, request.cost),
            Op::Peek => limiter.peek(now, request.cost),
            Op::Record => limiter.record(now, request.cost),
        };
        check(&Seen {
            before: &before,
            after: &limiter,
            now,
            request,
            decision,
        })?;
    }
    Ok(())
}

fn scaled(limit: Limit, tokens: u64) -> u128 {
    u128::from(tokens) * u128::from(limit.window_ms())
}

/// N × W: the limit in the units of `used.numerator()`.
fn capacity(limit: Limit) -> u128 {
    scaled(limit, limit.tokens())
}

proptest! {
    #![proptest_config(config(1_000))]

    /// For every denial, by hit or peek: the same request at `now + retry_after_ms` is allowed
    /// and at `now + retry_after_ms − 1` it is not. When that moment lies past u64::MAX (or the
    /// wait saturated at u64::MAX), nothing up to u64::MAX is allowed. Checked on clones of
    /// the state the denial left.
    #[test]
    fn retry_at_now_plus_retry_after_is_allowed_and_one_ms_earlier_is_not(
        trace in trace(EVERYTHING),
    ) {
        for algorithm in Algorithm::ALL {
            follow(&trace, algorithm, |seen| retry_is_the_first_moment_that_fits(algorithm, seen))?;
        }
    }

    /// Without records, the sliding log never lets more than N tokens in within any W ms:
    /// for every allowed hit at s (the time it was decided at), the allowed hits in
    /// (s − W, s] add up to at most N.
    #[test]
    fn sliding_log_never_admits_more_than_n_tokens_in_any_window(trace in trace(NO_RECORD)) {
        let mut allowed = Vec::new();
        follow(&trace, Algorithm::SlidingLog, |seen| at_most_n_in_any_window(&mut allowed, seen))?;
    }

    /// With only hits, the token bucket's tokens stay within [0, N]: `used` never exceeds N,
    /// and `remaining` never exceeds N.
    #[test]
    fn token_bucket_tokens_stay_between_0_and_n_with_only_hits(trace in trace(HITS_ONLY)) {
        follow(&trace, Algorithm::TokenBucket, tokens_within_0_and_n)?;
    }

    /// A peek never changes the state, gives the outcome the hit would give, reports `used`
    /// without the cost, and a hit after a peek decides as the same hit without it.
    #[test]
    fn peek_never_changes_state_and_predicts_the_hit(trace in trace(EVERYTHING)) {
        for algorithm in Algorithm::ALL {
            follow(&trace, algorithm, peek_changes_nothing_and_predicts_the_hit)?;
        }
    }

    /// The floating window's `used` is `previous × overlap + current` in exact arithmetic, for
    /// every hit, peek and record: numerator `previous × (W − e) + current × W`, denominator W,
    /// with e the decision's time modulo W.
    #[test]
    fn floating_used_is_previous_times_overlap_plus_current_exactly(trace in trace(EVERYTHING)) {
        follow(&trace, Algorithm::Floating, used_is_previous_times_overlap_plus_current)?;
    }

    /// For every algorithm: `remaining` never exceeds N; until something is recorded, an
    /// allowed hit leaves `used ≤ N`; and a denied or too-large hit leaves `used` as it was
    /// (what a peek just before it saw) and spends nothing.
    #[test]
    fn used_stays_within_n_and_a_refused_hit_leaves_it_unchanged(trace in trace(EVERYTHING)) {
        for algorithm in Algorithm::ALL {
            let mut recorded = false;
            follow(&trace, algorithm, |seen| {
                used_within_n_and_unchanged_by_refusals(&mut recorded, seen)
            })?;
        }
    }

    /// The sliding log agrees, decision for decision, with a brute-force model: a list of
    /// every charge, summed over those with s > t − W, retried by trying every later ms.
    #[test]
    fn sliding_log_agrees_with_a_brute_force_model(trace in small_trace(EVERYTHING)) {
        sliding_log_matches_its_model(&trace)?;
    }

    /// The floating window agrees, decision for decision, with a brute-force model: tokens
    /// spent per window index, `used = spent[k−1] × (W − e)/W + spent[k]`, retried by trying
    /// every later ms.
    #[test]
    fn floating_agrees_with_a_brute_force_model(trace in small_trace(EVERYTHING)) {
        floating_matches_its_model(&trace)?;
    }

    /// When time never goes backwards, a `KeyedLimiter` gives each key exactly the decisions
    /// an independent bucket of its own would give, whatever it drops along the way.
    #[test]
    fn keyed_limiter_decides_per_key_as_independent_buckets(
        trace in trace(FORWARD_ONLY),
        keys in prop::collection::vec(0..4usize, 60),
    ) {
        keyed_matches_buckets::<FloatingState>(&trace, &keys)?;
        keyed_matches_buckets::<SlidingLogState>(&trace, &keys)?;
        keyed_matches_buckets::<FixedState>(&trace, &keys)?;
        keyed_matches_buckets::<TokenBucketState>(&trace, &keys)?;
    }

    /// A limit written out reads back as the same limit.
    #[test]
    fn a_limit_shown_reads_back_as_itself(tokens in 1..=MAX, window_ms in window_in_any_unit()) {
        let limit = Limit::new(tokens, window_ms).expect("tokens and window ≥ 1");
        prop_assert_eq!(limit.to_string().parse::<Limit>(), Ok(limit));
    }
}

/// Windows of any length, and whole seconds and hours, which `Display` writes in s and h.
fn window_in_any_unit() -> impl Strategy<Value = u64> {
    prop_oneof![
        1..=MAX,
        (1..=1_000_000u64).prop_map(|seconds| seconds * 1_000),
        (1..=5_000u64).prop_map(|hours| hours * 3_600_000),
    ]
}

fn retry_is_the_first_moment_that_fits(
    algorithm: Algorithm,
    seen: &Seen<'_>,
) -> Result<(), TestCaseError> {
    let Outcome::Denied { retry_after_ms } = seen.decision.outcome else {
        return Ok(());
    };
    let cost = seen.request.cost;
    prop_assert!(retry_after_ms >= 1, "{algorithm}: retry_after_ms 0");
    let fits = |at_ms: u64| seen.after.peek(at_ms, cost).is_allowed();
    let hit_fits = |at_ms: u64| seen.after.clone().hit(at_ms, cost).is_allowed();
    match seen.now.checked_add(retry_after_ms) {
        // A wait that does not fit in u64 saturates at u64::MAX ("as good as never"); from
        // now = 0 that names u64::MAX, the clock's last moment, which must then not fit
        // either: nothing the clock can name does.
        Some(due) if retry_after_ms == MAX && !fits(due) => {}
        Some(due) => {
            prop_assert!(fits(due), "{algorithm}: peek at {due} denied");
            prop_assert!(hit_fits(due), "{algorithm}: hit at {due} denied");
            prop_assert!(!fits(due - 1), "{algorithm}: peek at {} allowed", due - 1);
            prop_assert!(
                !hit_fits(due - 1),
                "{algorithm}: hit at {} allowed",
                due - 1
            );
        }
        None => prop_assert!(!fits(MAX), "{algorithm}: allowed at u64::MAX"),
    }
    Ok(())
}

/// Keeps `allowed` (time decided at, cost) and checks the W ms up to each new one.
fn at_most_n_in_any_window(
    allowed: &mut Vec<(u64, u64)>,
    seen: &Seen<'_>,
) -> Result<(), TestCaseError> {
    if seen.request.op != Op::Hit || !seen.decision.is_allowed() {
        return Ok(());
    }
    let limit = seen.after.limit();
    let at_ms = seen.decision.at_ms;
    allowed.push((at_ms, seen.request.cost));
    let in_window: u128 = allowed
        .iter()
        .filter(|(spent_ms, _)| {
            u128::from(*spent_ms) + u128::from(limit.window_ms()) > u128::from(at_ms)
        })
        .map(|(_, cost)| u128::from(*cost))
        .sum();
    prop_assert!(
        in_window <= u128::from(limit.tokens()),
        "{in_window} tokens in the W ms up to {at_ms}"
    );
    Ok(())
}

fn tokens_within_0_and_n(seen: &Seen<'_>) -> Result<(), TestCaseError> {
    let limit = seen.after.limit();
    let used = seen.decision.used;
    prop_assert!(used.numerator() <= capacity(limit), "used {used}");
    prop_assert!(seen.decision.remaining() <= limit.tokens());
    // And a look one window ahead agrees.
    let later = seen
        .after
        .peek(seen.now.saturating_add(limit.window_ms()), 0);
    prop_assert!(later.used.numerator() <= capacity(limit));
    Ok(())
}

fn peek_changes_nothing_and_predicts_the_hit(seen: &Seen<'_>) -> Result<(), TestCaseError> {
    let (now, cost) = (seen.now, seen.request.cost);
    let snapshot = seen.before.clone();
    let peeked = snapshot.peek(now, cost);
    prop_assert_eq!(&snapshot, seen.before, "changed by a peek");

    let mut with_peek = seen.before.clone();
    with_peek.peek(now, cost);
    let hit = with_peek.hit(now, cost);
    let mut without_peek = seen.before.clone();
    prop_assert_eq!(hit, without_peek.hit(now, cost));
    prop_assert_eq!(&with_peek, &without_peek);

    prop_assert_eq!(peeked.outcome, hit.outcome);
    prop_assert_eq!(peeked.at_ms, hit.at_ms);
    let spent = scaled(seen.before.limit(), hit.spent());
    prop_assert_eq!(
        peeked.used.numerator().checked_add(spent),
        Some(hit.used.numerator())
    );
    Ok(())
}

fn used_is_previous_times_overlap_plus_current(seen: &Seen<'_>) -> Result<(), TestCaseError> {
    let window_ms = seen.after.limit().window_ms();
    let counters = seen
        .decision
        .counters
        .expect("the floating window's counters");
    prop_assert_eq!(counters.window_ms, window_ms);
    prop_assert_eq!(counters.elapsed_ms, seen.decision.at_ms % window_ms);
    let numerator = counters
        .previous
        .checked_mul(u128::from(window_ms - counters.elapsed_ms))
        .and_then(|previous| previous.checked_add(counters.current.checked_mul(window_ms.into())?));
    // Past u128::MAX (only after records of huge costs) `used` saturates, which is above
    // every N × W and so decides the same.
    prop_assert_eq!(
        seen.decision.used.numerator(),
        numerator.unwrap_or(u128::MAX)
    );
    prop_assert_eq!(seen.decision.used.denominator(), window_ms);
    Ok(())
}

/// `recorded` remembers whether a record has charged anything yet in this trace.
fn used_within_n_and_unchanged_by_refusals(
    recorded: &mut bool,
    seen: &Seen<'_>,
) -> Result<(), TestCaseError> {
    let limit = seen.after.limit();
    let decision = &seen.decision;
    prop_assert!(decision.remaining() <= limit.tokens());
    *recorded |= seen.request.op == Op::Record && seen.request.cost > 0;
    if seen.request.op != Op::Hit {
        return Ok(());
    }
    if decision.is_allowed() {
        prop_assert_eq!(decision.spent(), seen.request.cost);
        if !*recorded {
            prop_assert!(
                decision.used.numerator() <= capacity(limit),
                "used {}",
                decision.used
            );
        }
    } else {
        prop_assert_eq!(decision.spent(), 0);
        let looked = seen.before.peek(seen.now, seen.request.cost);
        prop_assert_eq!(decision.used, looked.used);
    }
    Ok(())
}

fn sliding_log_matches_its_model(trace: &Trace) -> Result<(), TestCaseError> {
    let mut log = SlidingLog::new(trace.limit);
    let mut model = LogModel::new(trace.limit);
    for (now, request) in trace.timed() {
        let decision = apply(&mut log, now, request);
        prop_assert_eq!(
            (decision.outcome, decision.used.numerator(), decision.at_ms),
            model.apply(now, request),
            "at {} {:?}",
            now,
            request
        );
    }
    Ok(())
}

fn floating_matches_its_model(trace: &Trace) -> Result<(), TestCaseError> {
    let mut bucket = FloatingWindow::new(trace.limit);
    let mut model = FloatingModel::new(trace.limit);
    for (now, request) in trace.timed() {
        let decision = apply(&mut bucket, now, request);
        let expected = model.apply(now, request);
        prop_assert_eq!(
            (decision.outcome, decision.used.numerator(), decision.at_ms),
            expected,
            "at {} {:?}",
            now,
            request
        );
        let counters = decision.counters.expect("the floating window's counters");
        prop_assert_eq!(
            (counters.previous, counters.current),
            model.counters(expected.2)
        );
    }
    Ok(())
}

fn apply<S: State>(bucket: &mut Bucket<S>, now: u64, request: Request) -> Decision {
    match request.op {
        Op::Hit => bucket.hit(now, request.cost),
        Op::Peek => bucket.peek(now, request.cost),
        Op::Record => bucket.record(now, request.cost),
    }
}

fn keyed_matches_buckets<S: State + Default>(
    trace: &Trace,
    keys: &[usize],
) -> Result<(), TestCaseError> {
    let mut limiter: KeyedLimiter<usize, S> = KeyedLimiter::new(trace.limit);
    let mut buckets: Vec<Bucket<S>> = (0..4).map(|_| Bucket::<S>::new(trace.limit)).collect();
    for ((now, request), &key) in trace.timed().zip(keys) {
        let decision = match request.op {
            Op::Hit => limiter.hit(key, now, request.cost),
            Op::Peek => limiter.peek(&key, now, request.cost),
            Op::Record => limiter.record(key, now, request.cost),
        };
        let expected = apply(&mut buckets[key], now, request);
        prop_assert_eq!(decision, expected, "key {} at {} {:?}", key, now, request);
        prop_assert!(limiter.len() <= 4);
    }
    Ok(())
}

/// The rule every algorithm shares, given whether the cost fits at a time, for the models.
fn outcome_by_rule(
    tokens: u64,
    cost: u64,
    fits_now: bool,
    first_fit_after: impl FnOnce() -> u64,
    now: u64,
) -> Outcome {
    if cost == 0 {
        Outcome::Allowed
    } else if cost > tokens {
        Outcome::ExceedsLimit
    } else if fits_now {
        Outcome::Allowed
    } else {
        Outcome::Denied {
            retry_after_ms: first_fit_after() - now,
        }
    }
}

/// The sliding log as the rule says it: every charge with its time, counted while s > t − W.
struct LogModel {
    tokens: u64,
    window_ms: u64,
    latest_ms: u64,
    charges: Vec<(u64, u64)>,
}

impl LogModel {
    fn new(limit: Limit) -> LogModel {
        LogModel {
            tokens: limit.tokens(),
            window_ms: limit.window_ms(),
            latest_ms: 0,
            charges: Vec::new(),
        }
    }

    fn used_at(&self, at_ms: u64) -> u64 {
        self.charges
            .iter()
            .filter(|(spent_ms, _)| spent_ms + self.window_ms > at_ms)
            .map(|(_, cost)| cost)
            .sum()
    }

    fn fits(&self, at_ms: u64, cost: u64) -> bool {
        self.used_at(at_ms) + cost <= self.tokens
    }

    /// (outcome, used × W after, the time decided at).
    fn apply(&mut self, now: u64, request: Request) -> (Outcome, u128, u64) {
        let at_ms = now.max(self.latest_ms);
        let cost = request.cost;
        let outcome = match request.op {
            Op::Record => Outcome::Allowed,
            Op::Hit | Op::Peek => outcome_by_rule(
                self.tokens,
                cost,
                self.fits(at_ms, cost),
                || {
                    (at_ms + 1..)
                        .find(|&later| self.fits(later, cost))
                        .expect("fits once all is back")
                },
                now,
            ),
        };
        if request.op != Op::Peek {
            self.latest_ms = at_ms;
            if outcome == Outcome::Allowed && cost > 0 {
                self.charges.push((at_ms, cost));
            }
        }
        let used = self.used_at(at_ms);
        (
            outcome,
            u128::from(used) * u128::from(self.window_ms),
            at_ms,
        )
    }
}

/// The floating window as the rule says it: the tokens spent in each window k = t / W, and
/// `used × W = spent[k−1] × (W − e) + spent[k] × W`.
struct FloatingModel {
    tokens: u64,
    window_ms: u64,
    latest_ms: u64,
    spent: BTreeMap<u64, u128>,
}

impl FloatingModel {
    fn new(limit: Limit) -> FloatingModel {
        FloatingModel {
            tokens: limit.tokens(),
            window_ms: limit.window_ms(),
            latest_ms: 0,
            spent: BTreeMap::new(),
        }
    }

    /// (previous, current) at `at_ms`.
    fn counters(&self, at_ms: u64) -> (u128, u128) {
        let window = at_ms / self.window_ms;
        let spent_in = |index: Option<u64>| {
            index
                .and_then(|index| self.spent.get(&index))
                .copied()
                .unwrap_or(0)
        };
        (spent_in(window.checked_sub(1)), spent_in(Some(window)))
    }

    fn used_scaled_at(&self, at_ms: u64) -> u128 {
        let (previous, current) = self.counters(at_ms);
        let elapsed = at_ms % self.window_ms;
        // Past u128::MAX (records of huge costs) any amount is over every N × W.
        previous
            .checked_mul(u128::from(self.window_ms - elapsed))
            .and_then(|previous| previous.checked_add(current.checked_mul(self.window_ms.into())?))
            .unwrap_or(u128::MAX)
    }

    fn fits(&self, at_ms: u64, cost: u64) -> bool {
        self.used_scaled_at(at_ms)
            .saturating_add(u128::from(cost) * u128::from(self.window_ms))
            <= u128::from(self.tokens) * u128::from(self.window_ms)
    }

    /// (outcome, used × W after, the time decided at).
    fn apply(&mut self, now: u64, request: Request) -> (Outcome, u128, u64) {
        let at_ms = now.max(self.latest_ms);
        let cost = request.cost;
        let outcome = match request.op {
            Op::Record => Outcome::Allowed,
            Op::Hit | Op::Peek => outcome_by_rule(
                self.tokens,
                cost,
                self.fits(at_ms, cost),
                || {
                    (at_ms + 1..)
                        .find(|&later| self.fits(later, cost))
                        .expect("fits two windows on")
                },
                now,
            ),
        };
        if request.op != Op::Peek {
            self.latest_ms = at_ms;
            if outcome == Outcome::Allowed {
                *self.spent.entry(at_ms / self.window_ms).or_default() += u128::from(cost);
            }
        }
        (outcome, self.used_scaled_at(at_ms), at_ms)
    }
}
