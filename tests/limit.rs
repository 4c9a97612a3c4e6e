//! Limits as ESI writes them (`150/15m`), their errors, and the algorithms' names.

use trickle_core::{Algorithm, AlgorithmError, Limit, LimitError, Limiter};

const MAX: u64 = u64::MAX;

/// text, tokens, window in ms.
#[rustfmt::skip]
const PARSED: &[(&str, u64, u64)] = &[
    ("6/8s",                                         6,    8_000),
    ("150/15m",                                      150,  900_000),
    ("7/1000ms",                                     7,    1_000),
    ("5000/1h",                                      5000, 3_600_000),
    ("1/1ms",                                        1,    1),
    ("300/15m",                                      300,  900_000),
    // Whitespace around the whole text is ignored.
    ("  6/8s\n",                                     6,    8_000),
    ("\t150/15m ",                                   150,  900_000),
    // Leading zeros are still whole numbers.
    ("06/008s",                                      6,    8_000),
    // Beyond 2^53, where a JavaScript number would round: exact here.
    ("9007199254740993/1ms",                         9_007_199_254_740_993, 1),
    ("18446744073709551615/18446744073709551615ms",  MAX,  MAX),
    // The longest windows each unit can write: floor(u64::MAX / unit).
    ("1/18446744073709551s",                         1,    18_446_744_073_709_551_000),
    ("1/307445734561825m",                           1,    18_446_744_073_709_500_000),
    ("1/5124095576030h",                             1,    18_446_744_073_708_000_000),
];

#[test]
fn parses_tokens_per_window() {
    for &(text, tokens, window_ms) in PARSED {
        let limit: Limit = text
            .parse()
            .unwrap_or_else(|error| panic!("{text:?}: {error}"));
        assert_eq!(
            (limit.tokens(), limit.window_ms()),
            (tokens, window_ms),
            "{text:?}"
        );
        assert_eq!(Limit::new(tokens, window_ms), Ok(limit), "{text:?}");
    }
}

fn missing_slash(text: &str) -> LimitError {
    LimitError::MissingSlash { text: text.into() }
}
fn bad_tokens(text: &str, tokens: &str) -> LimitError {
    LimitError::BadTokens {
        text: text.into(),
        tokens: tokens.into(),
    }
}
fn bad_window(text: &str, window: &str) -> LimitError {
    LimitError::BadWindow {
        text: text.into(),
        window: window.into(),
    }
}
fn unknown_unit(text: &str, unit: &str) -> LimitError {
    LimitError::UnknownUnit {
        text: text.into(),
        unit: unit.into(),
    }
}
fn too_long(text: &str) -> LimitError {
    LimitError::WindowTooLong { text: text.into() }
}

#[rustfmt::skip]
#[test]
fn rejects_what_is_not_a_limit() {
    let cases: &[(&str, LimitError)] = &[
        ("",                          missing_slash("")),
        ("6-8s",                      missing_slash("6-8s")),
        ("6",                         missing_slash("6")),
        ("/8s",                       bad_tokens("/8s", "")),
        ("x/8s",                      bad_tokens("x/8s", "x")),
        // `u64::from_str` alone would take these two.
        ("+6/8s",                     bad_tokens("+6/8s", "+6")),
        ("-6/8s",                     bad_tokens("-6/8s", "-6")),
        ("6 /8s",                     bad_tokens("6 /8s", "6 ")),
        ("6.5/8s",                    bad_tokens("6.5/8s", "6.5")),
        ("18446744073709551616/8s",   bad_tokens("18446744073709551616/8s", "18446744073709551616")),
        ("6/",                        bad_window("6/", "")),
        ("6/s",                       bad_window("6/s", "s")),
        ("6/-8s",                     bad_window("6/-8s", "-8s")),
        ("6/ 8s",                     bad_window("6/ 8s", " 8s")),
        ("6/8",                       unknown_unit("6/8", "")),
        ("6/8x",                      unknown_unit("6/8x", "x")),
        ("6/8S",                      unknown_unit("6/8S", "S")),
        ("6/8 s",                     unknown_unit("6/8 s", " s")),
        ("6/8sec",                    unknown_unit("6/8sec", "sec")),
        ("6/8.5s",                    unknown_unit("6/8.5s", ".5s")),
        ("6/8s/2",                    unknown_unit("6/8s/2", "s/2")),
        // The error keeps the text as given, the unit as found in the trimmed text.
        (" 6/8x ",                    unknown_unit(" 6/8x ", "x")),
        // The unit is checked before the number's size.
        ("1/99999999999999999999x",   unknown_unit("1/99999999999999999999x", "x")),
        ("0/8s",                      LimitError::ZeroTokens),
        ("6/0s",                      LimitError::ZeroWindow),
        ("6/0ms",                     LimitError::ZeroWindow),
        ("0/0s",                      LimitError::ZeroTokens),
        ("1/18446744073709551616ms",  too_long("1/18446744073709551616ms")),
        ("1/18446744073709552s",      too_long("1/18446744073709552s")),
        ("1/307445734561826m",        too_long("1/307445734561826m")),
        ("1/5124095576031h",          too_long("1/5124095576031h")),
    ];
    for (text, expected) in cases {
        assert_eq!(text.parse::<Limit>().as_ref(), Err(expected), "{text:?}");
    }
}

#[test]
fn new_rejects_zero() {
    assert_eq!(Limit::new(0, 1000), Err(LimitError::ZeroTokens));
    assert_eq!(Limit::new(6, 0), Err(LimitError::ZeroWindow));
    assert_eq!(Limit::new(0, 0), Err(LimitError::ZeroTokens));
    assert!(Limit::new(1, 1).is_ok());
}

#[rustfmt::skip]
#[test]
fn errors_say_what_was_wrong_and_what_is_allowed() {
    let form = "write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m";
    let cases: &[(LimitError, String)] = &[
        (missing_slash("6-8s"),     format!("limit \"6-8s\" has no '/'; {form}")),
        (bad_tokens("x/8s", "x"),   format!("limit \"x/8s\": tokens \"x\" is not a whole number from 1 to 18446744073709551615; {form}")),
        (bad_window("6/s", "s"),    format!("limit \"6/s\": window \"s\" is not a whole number followed by a unit; {form}")),
        (unknown_unit("6/8x", "x"), "limit \"6/8x\": unknown unit \"x\"; the unit must be ms, s, m or h, as in 6/8s".to_string()),
        (LimitError::ZeroTokens,    "a limit needs at least 1 token per window, got 0".to_string()),
        (LimitError::ZeroWindow,    "a window must be at least 1 ms long, got 0".to_string()),
        (too_long("1/5124095576031h"), "limit \"1/5124095576031h\": the window is longer than 18446744073709551615 ms, the longest allowed".to_string()),
    ];
    for (error, expected) in cases {
        assert_eq!(&error.to_string(), expected);
    }
}

/// tokens, window in ms, the shortest text: the largest unit that divides the window.
#[rustfmt::skip]
const SHOWN: &[(u64, u64, &str)] = &[
    (6,    8_000,                      "6/8s"),
    (150,  900_000,                    "150/15m"),
    (7,    1_000,                      "7/1s"),
    (7,    1_500,                      "7/1500ms"),
    (5000, 3_600_000,                  "5000/1h"),
    (1,    1,                          "1/1ms"),
    (60,   60_000,                     "60/1m"),
    (1,    61_000,                     "1/61s"),
    (1,    5_400_000,                  "1/90m"),
    (1,    7_200_000,                  "1/2h"),
    (1,    18_446_744_073_708_000_000, "1/5124095576030h"),
    // u64::MAX ends in 615: only ms divide it.
    (MAX,  MAX,                        "18446744073709551615/18446744073709551615ms"),
];

#[test]
fn shows_the_shortest_form_and_reads_it_back() {
    for &(tokens, window_ms, text) in SHOWN {
        let limit = Limit::new(tokens, window_ms).expect("a valid limit");
        assert_eq!(limit.to_string(), text);
        assert_eq!(text.parse::<Limit>(), Ok(limit), "{text}");
    }
}

#[test]
fn algorithms_by_name() {
    let names = [
        (Algorithm::Floating, "floating"),
        (Algorithm::SlidingLog, "sliding-log"),
        (Algorithm::Fixed, "fixed"),
        (Algorithm::TokenBucket, "token-bucket"),
    ];
    for (algorithm, name) in names {
        assert_eq!(algorithm.name(), name);
        assert_eq!(algorithm.to_string(), name);
        assert_eq!(name.parse::<Algorithm>(), Ok(algorithm));
    }
    // All four, in the order the docs present them.
    assert_eq!(Algorithm::ALL, names.map(|(algorithm, _)| algorithm));
    assert_eq!(Algorithm::default(), Algorithm::Floating);
}

#[test]
fn rejects_unknown_algorithms_and_lists_the_known_ones() {
    for name in [
        "",
        "Floating",
        "sliding_log",
        "sliding log",
        "token bucket",
        " fixed",
        "gcra",
    ] {
        let error = name.parse::<Algorithm>().unwrap_err();
        assert_eq!(
            error,
            AlgorithmError {
                name: name.to_string()
            }
        );
        assert_eq!(
            error.to_string(),
            format!("unknown algorithm {name:?}; use floating, sliding-log, fixed or token-bucket")
        );
    }
}

#[test]
fn a_limiter_knows_its_algorithm_and_limit() {
    let limit: Limit = "150/15m".parse().expect("a valid limit");
    for algorithm in Algorithm::ALL {
        let limiter = Limiter::with_algorithm(algorithm, limit);
        assert_eq!(limiter.algorithm(), algorithm);
        assert_eq!(limiter.limit(), limit);
    }
}
