//! The invariants every limiter keeps, checked on one input of arbitrary bytes.
//!
//! Shared by the cargo-fuzz target (`fuzz/fuzz_targets/limiter.rs`, run by `make fuzz`) and
//! the seeded smoke test (`tests/fuzz_smoke.rs`, part of `make test`), so the same checks run
//! for minutes under libFuzzer and for seconds in every CI run, without a nightly toolchain.
//!
//! The bytes choose an algorithm, a limit (as numbers, or as text that the parser must either
//! read exactly or reject with a message that says what is allowed), and up to 64 requests:
//! hit, peek, record or reset, with costs from 0 to `u64::MAX` and a clock that steps
//! forwards, backwards, by days, or to either end of u64. Then one limiter, or a keyed
//! limiter over four keys, follows them. Every answer is checked against a model built from
//! the rule alone (the list of charges accepted so far), and against the limiter itself: a
//! peek before a hit predicts it, a denial spends nothing, a retry at `now + retry_after_ms`
//! is allowed and one millisecond earlier is not. A broken invariant panics with what was
//! seen, which libFuzzer saves as a crash and the smoke test reports as a failure.

use std::fmt::Debug;

use arbitrary::{Result, Unstructured};
use trickle_core::state::{FixedState, FloatingState, SlidingLogState, State, TokenBucketState};
use trickle_core::{
    esi, Algorithm, Bucket, Decision, KeyedLimiter, Limit, LimitError, Limiter, Outcome,
};

const MAX: u64 = u64::MAX;
/// Enough requests to cross many windows and fill a sliding log; few enough that the model's
/// walk over every charge stays cheap.
const MAX_REQUESTS: usize = 64;
/// The keyed limiter's keys: few, so that keys come back and share windows.
const KEYS: u8 = 4;
const DAY_MS: u64 = 86_400_000;

/// What the checks covered, summed over inputs, so that a smoke run can show it reached
/// every kind of check rather than stopping early on every input.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Inputs that got as far as a valid limit and a limiter.
    pub cases: u64,
    /// Inputs whose limit was rejected, with its error checked.
    pub rejected_limits: u64,
    /// Requests checked, on single limiters and keyed ones.
    pub requests: u64,
    /// Denials whose retry time was checked to be exact.
    pub exact_retries: u64,
    /// Inputs run through a keyed limiter.
    pub keyed_cases: u64,
}

/// Checks every invariant on the case `data` describes, adding what was checked to `tally`;
/// panics at the first invariant broken.
pub fn check(data: &[u8], tally: &mut Tally) {
    let mut input = Unstructured::new(data);
    // An error only means the bytes ran out before a case was complete: nothing to check.
    let Ok(case) = decode(&mut input) else {
        return;
    };
    let Some(limit) = case.limit else {
        tally.rejected_limits += 1;
        return;
    };
    tally.cases += 1;
    tally.requests += case.requests.len() as u64;
    if case.keyed {
        tally.keyed_cases += 1;
        match case.algorithm {
            Algorithm::Floating => follow_keyed::<FloatingState>(&case, limit),
            Algorithm::SlidingLog => follow_keyed::<SlidingLogState>(&case, limit),
            Algorithm::Fixed => follow_keyed::<FixedState>(&case, limit),
            Algorithm::TokenBucket => follow_keyed::<TokenBucketState>(&case, limit),
        }
    } else {
        tally.exact_retries += follow_one(&case, limit);
    }
}

/// One input, decoded.
#[derive(Debug)]
struct Case {
    algorithm: Algorithm,
    keyed: bool,
    /// `None` when the bytes described a limit that must be (and was) rejected.
    limit: Option<Limit>,
    requests: Vec<Request>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Hit,
    Peek,
    Record,
    Reset,
}

/// How the caller's clock moves before a request; it saturates at both ends of u64.
#[derive(Debug, Clone, Copy)]
enum Step {
    Forward(u64),
    Back(u64),
    To(u64),
}

impl Step {
    fn from(self, now: u64) -> u64 {
        match self {
            Step::Forward(ms) => now.saturating_add(ms),
            Step::Back(ms) => now.saturating_sub(ms),
            Step::To(ms) => ms,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Request {
    op: Op,
    key: u8,
    step: Step,
    cost: u64,
}

fn decode(input: &mut Unstructured<'_>) -> Result<Case> {
    let algorithm = *input.choose(&Algorithm::ALL)?;
    let keyed = input.arbitrary()?;
    let limit = limit(input)?;
    let mut requests = Vec::new();
    if let Some(limit) = limit {
        while requests.len() < MAX_REQUESTS && !input.is_empty() {
            requests.push(request(input, limit)?);
        }
    }
    Ok(Case {
        algorithm,
        keyed,
        limit,
        requests,
    })
}

/// A number for a limit's tokens or window: mostly small, so that traces cross many
/// windows, sometimes at the ends of u64, rarely 0.
fn amount(input: &mut Unstructured<'_>) -> Result<u64> {
    Ok(match input.int_in_range(0..=15u8)? {
        0..=5 => input.int_in_range(1..=8)?,
        6..=8 => input.int_in_range(1..=100_000)?,
        9..=10 => MAX - input.int_in_range(0..=3)?,
        11 => 0,
        _ => input.arbitrary()?,
    })
}

/// A limit from numbers, from text in the limit's own form, or from any text at all.
fn limit(input: &mut Unstructured<'_>) -> Result<Option<Limit>> {
    Ok(match input.int_in_range(0..=7u8)? {
        0..=4 => built(amount(input)?, amount(input)?),
        5..=6 => {
            let (tokens, count) = (amount(input)?, amount(input)?);
            let unit = *input.choose(&["ms", "s", "m", "h", "", "x", "S", " s", "sec"])?;
            parsed_as_written(tokens, count, unit)
        }
        _ => parsed(input.arbitrary()?),
    })
}

/// `Limit::new` accepts exactly the limits with at least 1 token and 1 ms, and those read
/// back from how they are written.
fn built(tokens: u64, window_ms: u64) -> Option<Limit> {
    let result = Limit::new(tokens, window_ms);
    match (tokens, window_ms, &result) {
        (0, _, Err(error)) => assert_eq!(error, &LimitError::ZeroTokens),
        (1.., 0, Err(error)) => assert_eq!(error, &LimitError::ZeroWindow),
        (1.., 1.., Ok(limit)) => {
            assert_eq!((limit.tokens(), limit.window_ms()), (tokens, window_ms));
            assert_eq!(limit.to_string().parse::<Limit>(), Ok(*limit));
        }
        _ => panic!("Limit::new({tokens}, {window_ms}) gave {result:?}"),
    }
    if let Err(error) = &result {
        says_what_is_allowed(&error.to_string());
    }
    result.ok()
}

/// `TOKENS/COUNTunit` parses to exactly what it says, or fails for the first reason the
/// rule gives: an unknown unit, a window past u64::MAX ms, then 0 tokens or 0 ms.
fn parsed_as_written(tokens: u64, count: u64, unit: &str) -> Option<Limit> {
    let text = format!("{tokens}/{count}{unit}");
    let unit_ms = match unit {
        "ms" => Some(1),
        "s" => Some(1_000),
        "m" => Some(60_000),
        "h" => Some(3_600_000),
        _ => None,
    };
    let expected = match unit_ms.map(|unit_ms| count.checked_mul(unit_ms)) {
        None => Err(LimitError::UnknownUnit {
            text: text.clone(),
            unit: unit.to_string(),
        }),
        Some(None) => Err(LimitError::WindowTooLong { text: text.clone() }),
        Some(Some(_)) if tokens == 0 => Err(LimitError::ZeroTokens),
        Some(Some(0)) => Err(LimitError::ZeroWindow),
        Some(Some(window_ms)) => Ok((tokens, window_ms)),
    };
    let result = text.parse::<Limit>();
    assert_eq!(
        result
            .clone()
            .map(|limit| (limit.tokens(), limit.window_ms())),
        expected,
        "{text:?}"
    );
    if let Err(error) = &result {
        says_what_is_allowed(&error.to_string());
    }
    result.ok()
}

/// Any text: the parser never panics; what it accepts is `TOKENS/COUNTunit` around
/// whitespace and reads back as itself; what it rejects gets a message saying what is allowed.
fn parsed(text: &str) -> Option<Limit> {
    match text.parse::<Limit>() {
        Ok(limit) => {
            let (tokens, window) = text.trim().split_once('/').expect("a '/'");
            let count = window.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            let unit_ms = match &window[count.len()..] {
                "ms" => 1,
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                unit => panic!("{text:?} accepted with the unit {unit:?}"),
            };
            let read = (
                tokens.parse(),
                count.parse::<u64>().map(|count| count * unit_ms),
            );
            assert_eq!(
                read,
                (Ok(limit.tokens()), Ok(limit.window_ms())),
                "{text:?}"
            );
            assert_eq!(limit.to_string().parse::<Limit>(), Ok(limit));
            Some(limit)
        }
        Err(error) => {
            says_what_is_allowed(&error.to_string());
            None
        }
    }
}

/// A limit's error message is one line and says what a limit may be.
fn says_what_is_allowed(message: &str) {
    let hints = [
        "write a limit as TOKENS/WINDOW",
        "the unit must be ms, s, m or h",
        "at least 1 token",
        "at least 1 ms",
        "the longest allowed",
    ];
    assert!(
        hints.iter().any(|hint| message.contains(hint)),
        "the message says nothing of what is allowed: {message}"
    );
    assert!(
        !message.contains('\n'),
        "a message of several lines: {message}"
    );
}

fn request(input: &mut Unstructured<'_>, limit: Limit) -> Result<Request> {
    let op = match input.int_in_range(0..=15u8)? {
        0..=7 => Op::Hit,
        8..=10 => Op::Peek,
        11..=14 => Op::Record,
        _ => Op::Reset,
    };
    Ok(Request {
        op,
        key: input.int_in_range(0..=KEYS - 1)?,
        step: step(input, limit.window_ms())?,
        cost: cost(input, limit.tokens())?,
    })
}

fn step(input: &mut Unstructured<'_>, window_ms: u64) -> Result<Step> {
    Ok(match input.int_in_range(0..=15u8)? {
        0..=2 => Step::Forward(0),
        3..=4 => Step::Forward(input.int_in_range(1..=3)?),
        5..=6 => Step::Forward(input.int_in_range(1..=window_ms)?),
        7 => Step::Forward(window_ms.saturating_add(input.int_in_range(0..=2)?) - 1),
        8 => Step::Forward(window_ms.saturating_mul(input.int_in_range(2..=10)?)),
        9 => Step::Forward(input.int_in_range(1..=3)? * DAY_MS),
        10 => Step::Forward(input.arbitrary()?),
        11..=12 => Step::Back(input.int_in_range(1..=window_ms.saturating_mul(2))?),
        13 => Step::Back(input.arbitrary()?),
        _ => Step::To(if input.arbitrary()? { MAX } else { 0 }),
    })
}

fn cost(input: &mut Unstructured<'_>, tokens: u64) -> Result<u64> {
    Ok(match input.int_in_range(0..=7u8)? {
        0 => 0,
        1..=2 => input.int_in_range(1..=tokens.min(3))?,
        3 => tokens,
        4 => tokens.saturating_add(1),
        5 => input.int_in_range(1..=tokens)?,
        6 => MAX,
        _ => input.arbitrary()?,
    })
}

/// An algorithm as its rule states it, from the list of charges it accepted: simple enough
/// to be right by reading, and independent of the limiter's own bookkeeping.
struct Model {
    algorithm: Algorithm,
    limit: Limit,
    /// The latest time a hit or record was decided at: earlier times count as this one.
    latest_ms: u64,
    /// (time charged at, cost), in the order charged, so by time.
    charges: Vec<(u64, u64)>,
}

impl Model {
    fn new(algorithm: Algorithm, limit: Limit) -> Model {
        Model {
            algorithm,
            limit,
            latest_ms: 0,
            charges: Vec::new(),
        }
    }

    fn at(&self, now: u64) -> u64 {
        now.max(self.latest_ms)
    }

    /// The costs charged at the times `counts` picks, exactly (64 u64 costs fit a u128).
    fn sum(&self, counts: impl Fn(u64) -> bool) -> u128 {
        self.charges
            .iter()
            .filter(|(at_ms, _)| counts(*at_ms))
            .map(|(_, cost)| u128::from(*cost))
            .sum()
    }

    /// `used × W` at `at_ms` (not before any charge); `None` past u128::MAX, which only
    /// records of huge costs reach and which is over every N × W.
    fn used_scaled(&self, at_ms: u64) -> Option<u128> {
        let window_ms = self.limit.window_ms();
        let window = u128::from(window_ms);
        let tokens = u128::from(self.limit.tokens());
        let index = at_ms / window_ms;
        match self.algorithm {
            // Tokens spent at s count while s > t − W.
            Algorithm::SlidingLog => self
                .sum(|spent| u128::from(spent) + window > u128::from(at_ms))
                .checked_mul(window),
            // Tokens spent in this fixed window.
            Algorithm::Fixed => self
                .sum(|spent| spent / window_ms == index)
                .checked_mul(window),
            // previous × (W − e) + current × W.
            Algorithm::Floating => {
                let previous = self.sum(|spent| Some(spent / window_ms) == index.checked_sub(1));
                let current = self.sum(|spent| spent / window_ms == index);
                let overlap = u128::from(window_ms - at_ms % window_ms);
                previous
                    .checked_mul(overlap)?
                    .checked_add(current.checked_mul(window)?)
            }
            // Starts full; every ms gives back N/W tokens, never above full.
            Algorithm::TokenBucket => {
                let refill = |from: u64, to: u64| tokens * u128::from(to - from);
                let (mut owed, mut last) = (0u128, 0u64);
                for &(spent, cost) in &self.charges {
                    owed = owed.saturating_sub(refill(last, spent));
                    owed = owed.checked_add(u128::from(cost) * window)?;
                    last = spent;
                }
                Some(owed.saturating_sub(refill(last, at_ms)))
            }
        }
    }

    /// `used × W` as the limiter reports it: the fixed window's counter is a u64 and
    /// saturates there, which decides the same, since u64::MAX ≥ N refuses every cost.
    fn reported_used_scaled(&self, at_ms: u64) -> Option<u128> {
        let used = self.used_scaled(at_ms)?;
        match self.algorithm {
            Algorithm::Fixed => Some(used.min(scaled(self.limit, MAX))),
            _ => Some(used),
        }
    }

    /// The rule: a cost fits iff `used + cost ≤ N`; 0 always fits. `None` when the model
    /// cannot tell: a sum of charges past u128::MAX is over every N × W, but a token bucket's
    /// debt that deep may refill back below it, which this model does not follow.
    fn fits(&self, at_ms: u64, cost: u64) -> Option<bool> {
        let room = self
            .limit
            .tokens()
            .checked_sub(cost)
            .map(|room| scaled(self.limit, room));
        match (cost, room, self.used_scaled(at_ms)) {
            (0, _, _) => Some(true),
            (_, None, _) => Some(false),
            (_, Some(room), Some(used)) => Some(used <= room),
            (_, Some(_), None) => (self.algorithm != Algorithm::TokenBucket).then_some(false),
        }
    }

    fn charge(&mut self, at_ms: u64, cost: u64) {
        self.latest_ms = at_ms;
        self.charges.push((at_ms, cost));
    }

    fn reset(&mut self) {
        *self = Model::new(self.algorithm, self.limit);
    }
}

/// `tokens × W`, in the scaled units of `Tokens::numerator`.
fn scaled(limit: Limit, tokens: u64) -> u128 {
    u128::from(tokens) * u128::from(limit.window_ms())
}

/// One request as the checks see it, for the message when one fails.
struct Seen<'a> {
    case: &'a Case,
    index: usize,
    now: u64,
    decision: Decision,
}

impl Seen<'_> {
    fn request(&self) -> Request {
        self.case.requests[self.index]
    }

    #[track_caller]
    fn ensure(&self, holds: bool, what: impl FnOnce() -> String) {
        if !holds {
            let earlier = &self.case.requests[..self.index];
            panic!(
                "{}\n  request #{} {:?} at now = {}\n  decision {:?}\n  case: {:?} keyed={} \
                 limit {:?}\n  requests before: {earlier:?}",
                what(),
                self.index,
                self.request(),
                self.now,
                self.decision,
                self.case.algorithm,
                self.case.keyed,
                self.case.limit,
            );
        }
    }
}

/// A retry time is exact when the request fits at `now + retry_after_ms` and not 1 ms
/// before. A wait too long for u64 saturates at u64::MAX ("as good as never"), and then
/// nothing the clock can name may fit.
fn retry_is_exact(now: u64, retry_after_ms: u64, fits: impl Fn(u64) -> bool) -> bool {
    retry_after_ms >= 1
        && match now.checked_add(retry_after_ms) {
            Some(due) if retry_after_ms == MAX && !fits(due) => true,
            Some(due) => fits(due) && !fits(due - 1),
            None => !fits(MAX),
        }
}

/// Runs the case on one limiter, checking every answer; returns the retries checked.
fn follow_one(case: &Case, limit: Limit) -> u64 {
    let mut limiter = Limiter::with_algorithm(case.algorithm, limit);
    let mut model = Model::new(case.algorithm, limit);
    let mut now = 0;
    let mut exact_retries = 0;
    for (index, request) in case.requests.iter().enumerate() {
        now = request.step.from(now);
        let cost = request.cost;
        let before = limiter.clone();
        let looked = before.peek(now, cost);
        let decision = match request.op {
            Op::Hit => limiter.hit(now, cost),
            Op::Peek => limiter.peek(now, cost),
            Op::Record => limiter.record(now, cost),
            Op::Reset => {
                limiter.reset();
                model.reset();
                assert_eq!(limiter, Limiter::with_algorithm(case.algorithm, limit));
                continue;
            }
        };
        let seen = Seen {
            case,
            index,
            now,
            decision,
        };
        is_consistent(&seen, limit);
        agrees_with_the_model(&seen, &mut model);
        match request.op {
            Op::Hit => hit_keeps_the_rule(&seen, &looked, &limiter),
            Op::Peek => seen.ensure(limiter == before, || "a peek changed the state".into()),
            Op::Record | Op::Reset => {}
        }
        if let Outcome::Denied { retry_after_ms } = decision.outcome {
            seen.ensure(
                retry_is_exact(now, retry_after_ms, |at| {
                    limiter.peek(at, cost).is_allowed()
                }),
                || "retry_after_ms is not the first moment a peek allows".into(),
            );
            seen.ensure(
                retry_is_exact(now, retry_after_ms, |at| {
                    limiter.clone().hit(at, cost).is_allowed()
                }),
                || "retry_after_ms is not the first moment a hit is allowed".into(),
            );
            exact_retries += 1;
        }
    }
    exact_retries
}

/// What holds of any decision, whatever came before: the numbers agree with each other.
fn is_consistent(seen: &Seen<'_>, limit: Limit) {
    let decision = &seen.decision;
    let request = seen.request();
    let used = decision.used.numerator();
    seen.ensure(decision.cost == request.cost, || "cost".into());
    seen.ensure(decision.limit == limit, || "limit".into());
    seen.ensure(decision.used.denominator() == limit.window_ms(), || {
        "used's denominator is not W".into()
    });
    let remaining =
        scaled(limit, limit.tokens()).saturating_sub(used) / u128::from(limit.window_ms());
    seen.ensure(u128::from(decision.remaining()) == remaining, || {
        "remaining is not floor(N − used), or 0".into()
    });
    seen.ensure(decision.remaining() <= limit.tokens(), || {
        "remaining above N".into()
    });
    seen.ensure(decision.used.as_f64().is_finite(), || {
        "used shows as no number".into()
    });
    seen.ensure(
        decision.status() == if decision.is_allowed() { 200 } else { 429 },
        || "status".into(),
    );
    match decision.outcome {
        Outcome::Allowed => {}
        Outcome::ExceedsLimit => seen.ensure(
            request.op != Op::Record && request.cost > limit.tokens(),
            || "ExceedsLimit for a cost that fits N".into(),
        ),
        Outcome::Denied { retry_after_ms } => seen.ensure(
            request.op != Op::Record
                && (1..=limit.tokens()).contains(&request.cost)
                && decision.retry_after_s() == Some(retry_after_ms.div_ceil(1000)),
            || "a denial of a cost that is 0 or above N, or a Retry-After not rounded up".into(),
        ),
    }
    let headers = esi::headers(decision);
    seen.ensure(
        headers.len() == 3 + usize::from(decision.retry_after_ms().is_some()),
        || format!("headers {headers:?}"),
    );
    let counters_shown = decision.counters.is_some();
    seen.ensure(
        counters_shown == (seen.case.algorithm == Algorithm::Floating),
        || "counters for the wrong algorithm".into(),
    );
    if let Some(counters) = decision.counters {
        let window = u128::from(limit.window_ms());
        let formula = counters
            .previous
            .checked_mul(u128::from(counters.overlap_ms()))
            .and_then(|previous| previous.checked_add(counters.current.checked_mul(window)?));
        seen.ensure(
            counters.elapsed_ms == decision.at_ms % limit.window_ms()
                && formula.unwrap_or(u128::MAX) == used
                && counters.overlap() > 0.0
                && counters.overlap() <= 1.0,
            || format!("counters {counters:?} do not make used"),
        );
    }
}

/// The decision is the one the rule gives, from the charges alone.
fn agrees_with_the_model(seen: &Seen<'_>, model: &mut Model) {
    let request = seen.request();
    let (now, cost) = (seen.now, request.cost);
    let at_ms = model.at(now);
    seen.ensure(seen.decision.at_ms == at_ms, || {
        format!(
            "decided at {}, not at the latest time {at_ms}",
            seen.decision.at_ms
        )
    });
    let fits = model.fits(at_ms, cost);
    if let Some(fits) = fits {
        let expected = if request.op == Op::Record || fits {
            "allowed"
        } else if cost > model.limit.tokens() {
            "too large ever to fit"
        } else {
            "denied"
        };
        let outcome = match seen.decision.outcome {
            Outcome::Allowed => "allowed",
            Outcome::ExceedsLimit => "too large ever to fit",
            Outcome::Denied { .. } => "denied",
        };
        seen.ensure(outcome == expected, || {
            let used = model.used_scaled(at_ms);
            format!("the rule says {expected}; used × W by the rule: {used:?}")
        });
    }
    match request.op {
        Op::Record => model.charge(at_ms, cost),
        Op::Hit if fits.unwrap_or(seen.decision.is_allowed()) => model.charge(at_ms, cost),
        Op::Hit => model.latest_ms = at_ms,
        Op::Peek | Op::Reset => {}
    }
    if let Some(used) = model.reported_used_scaled(at_ms) {
        seen.ensure(seen.decision.used.numerator() == used, || {
            format!("used × W is {used} by the rule")
        });
    }
    if let (Outcome::Denied { retry_after_ms }, Some(_)) = (seen.decision.outcome, fits) {
        seen.ensure(
            retry_is_exact(now, retry_after_ms, |at| {
                model.fits(model.at(at), cost) == Some(true)
            }),
            || "retry_after_ms is not the first moment the rule allows".into(),
        );
    }
}

/// A hit decides as the peek before it; allowed, it spends its cost and leaves `used ≤ N`
/// (a cost of 0 excepted, which fits even after records pushed `used` past N); refused, it
/// spends nothing: a peek after it sees what the peek before it saw.
fn hit_keeps_the_rule(seen: &Seen<'_>, looked: &Decision, limiter: &Limiter) {
    let decision = &seen.decision;
    let limit = decision.limit;
    let cost = seen.request().cost;
    seen.ensure(
        decision.outcome == looked.outcome && decision.at_ms == looked.at_ms,
        || format!("the peek before said {looked:?}"),
    );
    if decision.is_allowed() {
        seen.ensure(
            looked.used.numerator().checked_add(scaled(limit, cost))
                == Some(decision.used.numerator()),
            || format!("spent other than the cost: used before {}", looked.used),
        );
        seen.ensure(
            cost == 0 || decision.used.numerator() <= scaled(limit, limit.tokens()),
            || "used above N after an allowed hit".into(),
        );
    } else {
        seen.ensure(
            decision.spent() == 0 && decision.used == looked.used,
            || "a refused hit spent".into(),
        );
        let after = limiter.peek(seen.now, cost);
        seen.ensure(after == *looked, || {
            format!("a refused hit changed what a peek sees: {after:?}")
        });
    }
}

/// Runs the case on a keyed limiter over four keys, against an independent bucket per key
/// fed the shared clock (the latest time any key has seen), and checks that the table holds
/// no more buckets than keys touched in the last two windows.
fn follow_keyed<S: State + Default + Clone + Debug>(case: &Case, limit: Limit) {
    let mut limiter: KeyedLimiter<u8, S> = KeyedLimiter::new(limit);
    let mut buckets: Vec<Bucket<S>> = (0..KEYS).map(|_| Bucket::new(limit)).collect();
    // The shared clock, and each key's last hit or record on it.
    let mut latest_ms = 0u64;
    let mut touched: Vec<Option<u64>> = vec![None; usize::from(KEYS)];
    // A record can put a token bucket in debt for longer than any window; its memory is
    // bounded by how long the debt takes to refill instead.
    let mut unbounded = false;
    let mut now = 0;
    for (index, request) in case.requests.iter().enumerate() {
        now = request.step.from(now);
        let (key, cost) = (request.key, request.cost);
        let bucket = &mut buckets[usize::from(key)];
        if matches!(request.op, Op::Hit | Op::Record) {
            latest_ms = latest_ms.max(now);
            touched[usize::from(key)] = Some(latest_ms);
        }
        let at_ms = latest_ms.max(now);
        let (decision, expected) = match request.op {
            Op::Hit => (limiter.hit(key, now, cost), bucket.hit(at_ms, cost)),
            Op::Peek => (limiter.peek(&key, now, cost), bucket.peek(at_ms, cost)),
            Op::Record => {
                unbounded |= case.algorithm == Algorithm::TokenBucket && cost > 0;
                (limiter.record(key, now, cost), bucket.record(at_ms, cost))
            }
            Op::Reset => {
                limiter.reset(&key);
                bucket.reset();
                touched[usize::from(key)] = None;
                continue;
            }
        };
        let seen = Seen {
            case,
            index,
            now,
            decision,
        };
        is_consistent(&seen, limit);
        let expected = told_from(expected, at_ms - now);
        seen.ensure(decision == expected, || {
            format!("key {key}'s own bucket, at {at_ms}, says {expected:?}")
        });
        let window = latest_ms / limit.window_ms();
        let active = touched
            .iter()
            .flatten()
            .filter(|touched_ms| *touched_ms / limit.window_ms() >= window.saturating_sub(1))
            .count();
        seen.ensure(unbounded || limiter.len() <= active, || {
            format!(
                "{} buckets kept, {active} keys active in the last two windows",
                limiter.len()
            )
        });
    }
}

/// A decision made at the shared clock, told from the caller's earlier `now`.
fn told_from(mut decision: Decision, shift_ms: u64) -> Decision {
    if let Outcome::Denied { retry_after_ms } = &mut decision.outcome {
        *retry_after_ms = retry_after_ms.saturating_add(shift_ms);
    }
    decision
}
