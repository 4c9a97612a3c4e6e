//! Bad input to the Rust API, one table per entry point: zero, negative, fractional, NaN,
//! Infinity, empty, beyond u64, the wrong unit, missing parts, whitespace, non-ASCII and
//! markup. Each row is the input and the whole message it must get: what was wrong, and
//! what is allowed, as plain text. Nothing panics. The replay CLI's table is in
//! `tests/cli.rs`; the JavaScript boundary's in `tests/web.rs`.
//!
//! Next to the errors, the edges that are not errors: costs of 0 and `u64::MAX`, records of
//! `u64::MAX`, times at `u64::MAX`, and numbers beyond 2^53, each with its exact answer.
//! Limit texts that look odd but are valid (whitespace, leading zeros, beyond 2^53) are in
//! `tests/limit.rs`'s table of parsed limits.

use trickle_core::esi::cost_for_status;
use trickle_core::{Algorithm, Limit, LimitError, Limiter, Outcome};

const MAX: u64 = u64::MAX;

/// How every limit message that is not about a number's size ends.
macro_rules! form {
    () => {
        "write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"
    };
}

/// `Limit::from_str`: text, then its whole message.
#[rustfmt::skip]
const LIMIT_TEXTS: &[(&str, &str)] = &[
    // Zero.
    ("0/8s",        "a limit needs at least 1 token per window, got 0"),
    ("6/0s",        "a window must be at least 1 ms long, got 0"),
    ("0/0ms",       "a limit needs at least 1 token per window, got 0"),
    // Negative.
    ("-6/8s",       concat!("limit \"-6/8s\": tokens \"-6\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/-8s",       concat!("limit \"6/-8s\": window \"-8s\" is not a whole number followed by a unit; ", form!())),
    // Fractional.
    ("1.5/8s",      concat!("limit \"1.5/8s\": tokens \"1.5\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/.5s",       concat!("limit \"6/.5s\": window \".5s\" is not a whole number followed by a unit; ", form!())),
    ("6/1.5s",      "limit \"6/1.5s\": unknown unit \".5s\"; the unit must be ms, s, m or h, as in 6/8s"),
    // NaN and Infinity, as JavaScript would write them.
    ("NaN/8s",      concat!("limit \"NaN/8s\": tokens \"NaN\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/NaNs",      concat!("limit \"6/NaNs\": window \"NaNs\" is not a whole number followed by a unit; ", form!())),
    ("Infinity/8s", concat!("limit \"Infinity/8s\": tokens \"Infinity\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/Infinity",  concat!("limit \"6/Infinity\": window \"Infinity\" is not a whole number followed by a unit; ", form!())),
    ("1e3/8s",      concat!("limit \"1e3/8s\": tokens \"1e3\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    // Empty.
    ("",            concat!("limit \"\" has no '/'; ", form!())),
    // Beyond u64.
    ("18446744073709551616/8s", concat!("limit \"18446744073709551616/8s\": tokens \"18446744073709551616\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/18446744073709551616ms", "limit \"6/18446744073709551616ms\": the window is longer than 18446744073709551615 ms, the longest allowed"),
    ("6/5124095576031h", "limit \"6/5124095576031h\": the window is longer than 18446744073709551615 ms, the longest allowed"),
    // The wrong unit.
    ("6/8x",        "limit \"6/8x\": unknown unit \"x\"; the unit must be ms, s, m or h, as in 6/8s"),
    ("6/8S",        "limit \"6/8S\": unknown unit \"S\"; the unit must be ms, s, m or h, as in 6/8s"),
    ("6/8sec",      "limit \"6/8sec\": unknown unit \"sec\"; the unit must be ms, s, m or h, as in 6/8s"),
    ("6/8",         "limit \"6/8\": unknown unit \"\"; the unit must be ms, s, m or h, as in 6/8s"),
    ("6/8d",        "limit \"6/8d\": unknown unit \"d\"; the unit must be ms, s, m or h, as in 6/8s"),
    // Missing parts.
    ("6/",          concat!("limit \"6/\": window \"\" is not a whole number followed by a unit; ", form!())),
    ("/8s",         concat!("limit \"/8s\": tokens \"\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("/",           concat!("limit \"/\": tokens \"\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6",           concat!("limit \"6\" has no '/'; ", form!())),
    ("6/s",         concat!("limit \"6/s\": window \"s\" is not a whole number followed by a unit; ", form!())),
    ("6//8s",       concat!("limit \"6//8s\": window \"/8s\" is not a whole number followed by a unit; ", form!())),
    // Whitespace inside (around the whole text it is allowed, see below).
    ("6 /8s",       concat!("limit \"6 /8s\": tokens \"6 \" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/ 8s",       concat!("limit \"6/ 8s\": window \" 8s\" is not a whole number followed by a unit; ", form!())),
    ("6/8 s",       "limit \"6/8 s\": unknown unit \" s\"; the unit must be ms, s, m or h, as in 6/8s"),
    (" \t\n",       concat!("limit \" \\t\\n\" has no '/'; ", form!())),
    // Non-ASCII: digits of other scripts are not ASCII digits.
    ("６/8s",       concat!("limit \"６/8s\": tokens \"６\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("٦/8s",        concat!("limit \"٦/8s\": tokens \"٦\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/８s",       concat!("limit \"6/８s\": window \"８s\" is not a whole number followed by a unit; ", form!())),
    ("6/8秒",       "limit \"6/8秒\": unknown unit \"秒\"; the unit must be ms, s, m or h, as in 6/8s"),
    ("6/8ｓ",       "limit \"6/8ｓ\": unknown unit \"ｓ\"; the unit must be ms, s, m or h, as in 6/8s"),
    // Markup stays text: quoted, never interpreted.
    ("<img src=x onerror=alert(1)>", concat!("limit \"<img src=x onerror=alert(1)>\" has no '/'; ", form!())),
    ("6/8s<script>", "limit \"6/8s<script>\": unknown unit \"s<script>\"; the unit must be ms, s, m or h, as in 6/8s"),
    // A quote or a control character inside is escaped, so the message stays one line.
    ("6\"/8s",      concat!("limit \"6\\\"/8s\": tokens \"6\\\"\" is not a whole number from 1 to 18446744073709551615; ", form!())),
    ("6/8s\u{0}",   "limit \"6/8s\\0\": unknown unit \"s\\0\"; the unit must be ms, s, m or h, as in 6/8s"),
];

#[test]
fn limit_text_errors_say_what_is_allowed() {
    for (text, expected) in LIMIT_TEXTS {
        let message = match text.parse::<Limit>() {
            Ok(limit) => panic!("{text:?} was accepted as {limit}"),
            Err(error) => error.to_string(),
        };
        assert_eq!(&message, expected, "{text:?}");
        assert!(!message.contains('\n'), "{text:?}: one line");
    }
}

/// `Limit::new`: tokens, window in ms, then the error and its whole message.
#[rustfmt::skip]
const LIMIT_NUMBERS: &[(u64, u64, LimitError, &str)] = &[
    (0, 8_000, LimitError::ZeroTokens, "a limit needs at least 1 token per window, got 0"),
    (6, 0,     LimitError::ZeroWindow, "a window must be at least 1 ms long, got 0"),
    (0, 0,     LimitError::ZeroTokens, "a limit needs at least 1 token per window, got 0"),
    (0, MAX,   LimitError::ZeroTokens, "a limit needs at least 1 token per window, got 0"),
    (MAX, 0,   LimitError::ZeroWindow, "a window must be at least 1 ms long, got 0"),
];

#[test]
fn limit_number_errors_say_what_is_allowed() {
    for (tokens, window_ms, error, message) in LIMIT_NUMBERS {
        let result = Limit::new(*tokens, *window_ms);
        assert_eq!(result.as_ref(), Err(error), "{tokens}, {window_ms}");
        assert_eq!(error.to_string(), *message);
    }
}

/// `Algorithm::from_str`: names are matched exactly, as the CLI and the widget write them.
#[rustfmt::skip]
const ALGORITHMS: &[(&str, &str)] = &[
    ("",            "unknown algorithm \"\"; use floating, sliding-log, fixed or token-bucket"),
    ("0",           "unknown algorithm \"0\"; use floating, sliding-log, fixed or token-bucket"),
    ("-1",          "unknown algorithm \"-1\"; use floating, sliding-log, fixed or token-bucket"),
    ("NaN",         "unknown algorithm \"NaN\"; use floating, sliding-log, fixed or token-bucket"),
    ("Infinity",    "unknown algorithm \"Infinity\"; use floating, sliding-log, fixed or token-bucket"),
    ("Floating",    "unknown algorithm \"Floating\"; use floating, sliding-log, fixed or token-bucket"),
    ("FIXED",       "unknown algorithm \"FIXED\"; use floating, sliding-log, fixed or token-bucket"),
    (" floating",   "unknown algorithm \" floating\"; use floating, sliding-log, fixed or token-bucket"),
    ("fixed\n",     "unknown algorithm \"fixed\\n\"; use floating, sliding-log, fixed or token-bucket"),
    ("sliding_log", "unknown algorithm \"sliding_log\"; use floating, sliding-log, fixed or token-bucket"),
    ("sliding log", "unknown algorithm \"sliding log\"; use floating, sliding-log, fixed or token-bucket"),
    ("leaky",       "unknown algorithm \"leaky\"; use floating, sliding-log, fixed or token-bucket"),
    ("gcra",        "unknown algorithm \"gcra\"; use floating, sliding-log, fixed or token-bucket"),
    ("flöating",    "unknown algorithm \"flöating\"; use floating, sliding-log, fixed or token-bucket"),
    ("<img src=x onerror=alert(1)>",
                    "unknown algorithm \"<img src=x onerror=alert(1)>\"; use floating, sliding-log, fixed or token-bucket"),
];

#[test]
fn algorithm_errors_name_the_four_algorithms() {
    for (name, expected) in ALGORITHMS {
        match name.parse::<Algorithm>() {
            Ok(algorithm) => panic!("{name:?} was accepted as {algorithm}"),
            Err(error) => assert_eq!(error.to_string(), *expected, "{name:?}"),
        }
    }
}

/// `esi::cost_for_status`: anything outside 200 to 599 has no price.
#[test]
fn statuses_outside_200_to_599_say_what_is_allowed() {
    for status in [0, 1, 99, 100, 101, 199, 600, 999, 1000, u16::MAX] {
        let error = cost_for_status(status).expect_err("no price");
        assert_eq!(
            error.to_string(),
            format!("status {status} has no cost in ESI's table; expected an HTTP status from 200 to 599")
        );
    }
    for (status, cost) in [
        (200, 2),
        (299, 2),
        (300, 1),
        (399, 1),
        (400, 5),
        (429, 0),
        (499, 5),
        (500, 0),
        (599, 0),
    ] {
        assert_eq!(cost_for_status(status), Ok(cost), "{status}");
    }
}

/// A request made before the probe: (time, cost, recorded rather than hit).
type Before = &'static [(u64, u64, bool)];

/// A row: name, limit, what came before, the probe (time, cost), and the outcome of
/// floating, sliding-log, fixed and token-bucket.
type Edge = (&'static str, &'static str, Before, (u64, u64), [Outcome; 4]);

/// Costs and times at the ends of u64, on every algorithm.
#[rustfmt::skip]
const EDGES: &[Edge] = &[
    ("cost 0 always fits", "6/8s", &[], (0, 0), [ALLOWED; 4]),
    ("cost 0 fits a full bucket", "6/8s", &[(0, 6, false)], (0, 0), [ALLOWED; 4]),
    ("cost N + 1 never fits", "6/8s", &[], (0, 7), [EXCEEDS; 4]),
    ("cost u64::MAX never fits", "6/8s", &[], (0, MAX), [EXCEEDS; 4]),
    ("cost u64::MAX fits a limit of u64::MAX", "18446744073709551615/1s", &[], (0, MAX), [ALLOWED; 4]),
    ("a first request at u64::MAX", "6/8s", &[], (MAX, 6), [ALLOWED; 4]),
    // Full at u64::MAX, which is 7615 ms into its 8 s window: floating waits out the window
    // (385 ms) and then 6 × (8000 − e)/8000 + 1 ≤ 6 at e = 1334; sliding-log 8000 ms;
    // fixed to the window's end; token-bucket one token, ⌈8000/6⌉ ms. All past u64::MAX.
    ("full at u64::MAX", "6/8s", &[(MAX, 6, false)], (MAX, 1),
        [denied(1_719), denied(8_000), denied(385), denied(1_334)]),
    // u64::MAX recorded at 0: floating fits again only once window 0 has slid out whole, at
    // 16 s (MAX × (8000 − e)/8000 is above 5 for every e < 8000); the token bucket owes more
    // than the u64 clock can ever refill, so its wait saturates at u64::MAX: never.
    ("u64::MAX recorded", "6/8s", &[(0, MAX, true)], (0, 1),
        [denied(16_000), denied(8_000), denied(8_000), denied(MAX)]),
    ("u64::MAX recorded twice", "6/8s", &[(0, MAX, true), (0, MAX, true)], (8_000, 1),
        [denied(8_000), ALLOWED, ALLOWED, denied(MAX)]),
    ("a clock back from u64::MAX to 0", "6/8s", &[(MAX, 6, false)], (0, 1),
        [denied(MAX), denied(MAX), denied(MAX), denied(MAX)]),
    // Beyond 2^53 tokens, counted exactly: one token short of full, then exactly full.
    ("2^53 + 1 tokens", "9007199254740993/1h", &[(0, 9_007_199_254_740_992, false)], (1, 1), [ALLOWED; 4]),
];

const ALLOWED: Outcome = Outcome::Allowed;
const EXCEEDS: Outcome = Outcome::ExceedsLimit;

const fn denied(retry_after_ms: u64) -> Outcome {
    Outcome::Denied { retry_after_ms }
}

#[test]
fn costs_and_times_at_the_ends_of_u64_get_exact_answers() {
    let mut failures = Vec::new();
    for (name, text, before, (now, cost), outcomes) in EDGES {
        let limit: Limit = text.parse().expect("a valid limit");
        for (algorithm, expected) in Algorithm::ALL.into_iter().zip(outcomes) {
            let mut limiter = Limiter::with_algorithm(algorithm, limit);
            for &(at, spent, recorded) in *before {
                if recorded {
                    limiter.record(at, spent);
                } else {
                    assert!(
                        limiter.hit(at, spent).is_allowed(),
                        "{name}: {algorithm} before"
                    );
                }
            }
            let decision = limiter.hit(*now, *cost);
            if decision.outcome != *expected {
                failures.push(format!(
                    "{name}, {algorithm}: {:?}, expected {expected:?}",
                    decision.outcome
                ));
            }
            // Shown as a number, never NaN, and the headers build.
            assert!(decision.used.as_f64().is_finite(), "{name}: {algorithm}");
            assert!(
                decision.remaining() <= limit.tokens(),
                "{name}: {algorithm}"
            );
            assert!(trickle_core::esi::headers(&decision).len() >= 3);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
