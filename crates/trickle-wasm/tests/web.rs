//! The raw JavaScript boundary (`crates/trickle-wasm`), run as WebAssembly under Node and in
//! headless Chromium: `wasm-pack test --node` and `wasm-pack test --headless --chrome`.
//!
//! Only the translation is tested here: outcome codes, the decision buffer read the way the
//! JS wrapper reads it (a `Float64Array` over the wasm memory), getters, `respond` (the
//! core's reserve-then-settle flow at one moment), the core's exact message for every bad
//! limit, algorithm or cost table, and the handles the exports take. The arithmetic itself
//! is the core's, tested natively in the crate's other test files.
//!
//! The binding is a cdylib only (an rlib beside it would grow the widget's wasm), so its
//! source is compiled in here as a module: the same exports, called directly.
#![cfg(target_arch = "wasm32")]

#[path = "../src/lib.rs"]
mod binding;

use binding::{
    algorithms, decision_buffer, error, field, limiter_free, limiter_hit, limiter_limit,
    limiter_new, limiter_peek, limiter_record, limiter_reset, limiter_respond, limiter_tokens,
    limiter_window_ms, RawLimiter, ALLOWED, DECISION_FIELDS, DENIED, EXCEEDS_LIMIT,
};
#[cfg(feature = "algorithms")]
use binding::{
    cost_table_cost, cost_table_free, cost_table_new, cost_table_statuses, RawCostTable,
};
use js_sys::{Float64Array, WebAssembly};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;

#[cfg(feature = "algorithms")]
/// How every cost-table message that is not about a class ends.
macro_rules! table_form {
    () => {
        "write a table as STATUS:COST entries separated by spaces, where STATUS is a status from 100 to 599 or a class 1xx to 5xx and COST a whole number of tokens, as in \"200:2 304:1 4xx:5 429:0 5xx:0\", or name the preset \"esi\""
    };
}
/// The algorithms this build runs: the default module, the floating window alone; with
/// `--features algorithms` (trickle_algorithms_bg.wasm), all four.
fn runs() -> Vec<&'static str> {
    if cfg!(feature = "algorithms") {
        vec!["floating", "sliding-log", "fixed", "token-bucket"]
    } else {
        vec!["floating"]
    }
}

fn limiter(limit: &str, algorithm: &str) -> RawLimiter {
    RawLimiter::new(limit, algorithm).unwrap_or_else(|err| panic!("{err}"))
}

/// The decision buffer as the JS wrapper sees it: a view of the wasm memory at the offset
/// `decision_buffer()` gives.
fn fields() -> Vec<f64> {
    let memory: WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    let view = Float64Array::new_with_byte_offset_and_length(
        &memory.buffer(),
        decision_buffer(),
        DECISION_FIELDS as u32,
    );
    view.to_vec()
}

#[wasm_bindgen_test]
fn the_readme_example_fills_every_field() {
    let mut bucket = limiter("6/8s", "floating");
    for t in [0.0, 1_000.0, 2_000.0, 3_000.0, 9_000.0, 10_000.0] {
        assert_eq!(bucket.hit(t, 1.0), ALLOWED, "t = {t}");
    }

    assert_eq!(bucket.hit(11_000.0, 1.0), ALLOWED);
    #[rustfmt::skip]
    let expected = [
        (field::COST, 1.0), (field::USED, 5.5), (field::REMAINING, 0.0),
        (field::RETRY_AFTER_MS, 0.0), (field::RETRY_AFTER, 0.0), (field::T, 11_000.0),
        (field::PREVIOUS, 4.0), (field::CURRENT, 3.0), (field::OVERLAP, 0.625),
        (field::ELAPSED_MS, 3_000.0), (field::COUNTED, 1.0), (field::LIMIT, 6.0),
        (field::WINDOW_MS, 8_000.0), (field::RESERVED, 0.0),
    ];
    let allowed = fields();
    for (index, value) in expected {
        assert_eq!(allowed[index], value, "field {index}");
    }

    assert_eq!(bucket.hit(11_000.0, 1.0), DENIED);
    let denied = fields();
    assert_eq!(denied[field::RETRY_AFTER_MS], 1_000.0);
    assert_eq!(denied[field::RETRY_AFTER], 1.0);
    assert_eq!(denied[field::USED], 5.5, "a denial spends nothing");
}

#[wasm_bindgen_test]
fn the_layout_is_fourteen_distinct_slots_in_the_documented_order() {
    #[rustfmt::skip]
    let order = [
        field::COST, field::USED, field::REMAINING, field::RETRY_AFTER_MS, field::RETRY_AFTER,
        field::T, field::PREVIOUS, field::CURRENT, field::OVERLAP, field::ELAPSED_MS,
        field::COUNTED, field::LIMIT, field::WINDOW_MS, field::RESERVED,
    ];
    assert_eq!(order.len(), DECISION_FIELDS);
    assert!(order.iter().enumerate().all(|(i, slot)| i == *slot));
    assert_eq!(
        decision_buffer() % 8,
        0,
        "a Float64Array needs an aligned offset"
    );
}

// The other algorithms run in the algorithms module (`--features algorithms`).
#[cfg(feature = "algorithms")]
#[wasm_bindgen_test]
fn counters_are_zero_and_not_counted_for_algorithms_without_them() {
    for algorithm in ["sliding-log", "fixed", "token-bucket"] {
        let mut bucket = limiter("6/8s", algorithm);
        assert_eq!(bucket.algorithm(), algorithm);
        assert_eq!(bucket.hit(0.0, 2.0), ALLOWED);
        let decision = fields();
        assert_eq!(decision[field::USED], 2.0, "{algorithm}");
        assert_eq!(decision[field::COUNTED], 0.0, "{algorithm}");
        for index in [
            field::PREVIOUS,
            field::CURRENT,
            field::OVERLAP,
            field::ELAPSED_MS,
        ] {
            assert_eq!(decision[index], 0.0, "{algorithm}: field {index}");
        }
    }
}

#[wasm_bindgen_test]
fn a_cost_above_the_limit_is_refused_without_a_retry() {
    let mut bucket = limiter("6/8s", "floating");
    assert_eq!(bucket.hit(0.0, 7.0), EXCEEDS_LIMIT);
    let decision = fields();
    assert_eq!(decision[field::RETRY_AFTER_MS], 0.0);
    assert_eq!(decision[field::RETRY_AFTER], 0.0);
    assert_eq!(decision[field::COST], 7.0);
}

#[wasm_bindgen_test]
fn peek_spends_nothing_record_charges_past_the_limit_and_reset_forgets() {
    let mut bucket = limiter("6/8s", "floating");
    assert_eq!(bucket.peek(0.0, 6.0), ALLOWED);
    assert_eq!(fields()[field::USED], 0.0, "nothing was spent");
    assert_eq!(bucket.peek(0.0, 7.0), EXCEEDS_LIMIT);

    assert_eq!(bucket.record(0.0, 8.0), ALLOWED);
    assert_eq!(fields()[field::USED], 8.0);
    assert_eq!(fields()[field::REMAINING], 0.0);
    assert_eq!(bucket.hit(0.0, 1.0), DENIED);

    bucket.reset();
    assert_eq!(bucket.peek(0.0, 0.0), ALLOWED);
    assert_eq!(fields()[field::USED], 0.0);
}

/// ESI on `6/8s`, reserving 1 before each answer, one row per press at `t`: the answer's
/// price, then the code and the buffer's cost, reserved and used after it.
#[cfg(feature = "algorithms")]
#[rustfmt::skip]
const ESI_PRESSES: &[(f64, f64, u32, f64, f64, f64)] = &[
    // t,    price, code,    cost, reserved, used
    (0.0,    2.0,   ALLOWED, 2.0,  1.0,      2.0), // 200: 1 reserved, 1 more charged
    (100.0,  5.0,   ALLOWED, 5.0,  1.0,      7.0), // 404: past the limit, as ESI's may go
    (200.0,  2.0,   DENIED,  0.0,  0.0,      7.0), // no room for the reserve: a free 429
    (300.0,  0.0,   DENIED,  0.0,  0.0,      7.0),
];

// The other algorithms run in the algorithms module (`--features algorithms`).
#[cfg(feature = "algorithms")]
#[wasm_bindgen_test]
fn respond_reserves_then_settles_at_the_price_and_a_refusal_costs_nothing() {
    let mut bucket = limiter("6/8s", "sliding-log");
    for &(t, price, code, cost, reserved, used) in ESI_PRESSES {
        assert_eq!(bucket.respond(t, 1.0, price), code, "t = {t}");
        let decision = fields();
        assert_eq!(
            [
                decision[field::COST],
                decision[field::RESERVED],
                decision[field::USED]
            ],
            [cost, reserved, used],
            "t = {t}: cost, reserved, used"
        );
        assert_eq!(decision[field::T], t);
    }
    // Refused, the 429 still says when the reserve fits again: at 8 s, once the first
    // answer's 2 tokens slide out and 5 are in use.
    assert_eq!(fields()[field::RETRY_AFTER_MS], 7_700.0);
    assert_eq!(fields()[field::RETRY_AFTER], 8.0);
}

#[wasm_bindgen_test]
fn a_cheaper_answer_refunds_the_reserve() {
    for algorithm in runs() {
        let mut bucket = limiter("6/8s", algorithm);
        // A 500 under ESI costs nothing: the reserve of 2 comes back at once.
        assert_eq!(bucket.respond(0.0, 2.0, 0.0), ALLOWED, "{algorithm}");
        let decision = fields();
        assert_eq!(decision[field::RESERVED], 2.0, "{algorithm}");
        assert_eq!(decision[field::COST], 0.0, "{algorithm}");
        assert_eq!(decision[field::USED], 0.0, "{algorithm}");
        assert_eq!(
            bucket.hit(0.0, 6.0),
            ALLOWED,
            "{algorithm}: the whole limit is free"
        );
    }
}

#[wasm_bindgen_test]
fn a_reserve_above_the_limit_is_refused_for_good_and_costs_nothing() {
    let mut bucket = limiter("6/8s", "floating");
    assert_eq!(bucket.respond(0.0, 7.0, 2.0), EXCEEDS_LIMIT);
    let decision = fields();
    assert_eq!(decision[field::COST], 0.0);
    assert_eq!(decision[field::RESERVED], 0.0);
    assert_eq!(decision[field::RETRY_AFTER_MS], 0.0);
    assert_eq!(decision[field::USED], 0.0);
}

/// The flow the widget ran in JS before `respond`: peek that the reserve fits, then record
/// the price, or a 429 with a cost of 0. At one moment, on a clock that does not go back,
/// `respond` must give the same numbers in every slot but `reserved`, so the widget's
/// figures did not move.
fn peek_then_record(bucket: &mut RawLimiter, t: f64, reserve: f64, price: f64) -> (u32, Vec<f64>) {
    let code = bucket.peek(t, reserve);
    if code != ALLOWED {
        let mut refusal = fields();
        refusal[field::COST] = 0.0;
        return (code, refusal);
    }
    (bucket.record(t, price), fields())
}

#[wasm_bindgen_test]
fn respond_gives_the_numbers_of_a_peek_then_a_record_at_one_moment() {
    // (t, reserve, price): ESI's prices, a refund, reserves of 0 and 2, a clock that stands
    // still, presses on either side of window boundaries, refusals in between.
    #[rustfmt::skip]
    let presses = [
        (0.0, 1.0, 2.0), (500.0, 1.0, 5.0), (500.0, 1.0, 2.0), (2_000.0, 2.0, 0.0),
        (7_999.0, 1.0, 1.0), (8_000.0, 1.0, 5.0), (8_001.0, 1.0, 2.0), (9_000.0, 1.0, 2.0),
        (12_500.0, 2.0, 2.0), (16_000.0, 1.0, 0.0), (16_000.0, 1.0, 5.0), (30_000.0, 1.0, 2.0),
        (30_000.0, 0.0, 5.0), (30_001.0, 0.0, 0.0), (30_002.0, 1.0, 2.0),
    ];
    let mut refused = 0;
    for algorithm in runs() {
        let mut flow = limiter("6/8s", algorithm);
        let mut copy = limiter("6/8s", algorithm);
        for (t, reserve, price) in presses {
            let code = flow.respond(t, reserve, price);
            let mut settled = fields();
            let reserved = settled[field::RESERVED];
            let expected = if code == ALLOWED { reserve } else { 0.0 };
            assert_eq!(reserved, expected, "{algorithm} at {t}: reserved");
            settled[field::RESERVED] = 0.0;
            let (old_code, old) = peek_then_record(&mut copy, t, reserve, price);
            assert_eq!(code, old_code, "{algorithm} at {t}: code");
            assert_eq!(settled, old, "{algorithm} at {t}: every field");
            refused += usize::from(code != ALLOWED);
        }
    }
    assert!(
        refused >= 4,
        "the presses must meet refusals too, met {refused}"
    );
}

#[wasm_bindgen_test]
fn respond_reads_a_clock_that_went_back_as_the_latest_time_seen() {
    // As `hit` does (the reserve is one), where a `peek` answers for the earlier time.
    let mut bucket = limiter("6/8s", "floating");
    assert_eq!(bucket.respond(8_001.0, 1.0, 5.0), ALLOWED);
    bucket.respond(7_000.0, 1.0, 2.0);
    assert_eq!(fields()[field::T], 8_001.0);
}

#[wasm_bindgen_test]
fn hit_peek_and_record_reserve_nothing() {
    let mut bucket = limiter("6/8s", "floating");
    for name in ["hit", "peek", "record"] {
        assert_eq!(bucket.respond(0.0, 1.0, 1.0), ALLOWED);
        assert_eq!(fields()[field::RESERVED], 1.0);
        match name {
            "hit" => bucket.hit(0.0, 1.0),
            "peek" => bucket.peek(0.0, 1.0),
            _ => bucket.record(0.0, 1.0),
        };
        assert_eq!(
            fields()[field::RESERVED],
            0.0,
            "{name} left the last reserve"
        );
    }
}

#[wasm_bindgen_test]
fn fractions_of_a_millisecond_are_floored() {
    let mut bucket = limiter("6/8s", "floating");
    bucket.hit(1234.9, 1.0);
    assert_eq!(fields()[field::T], 1234.0);
    bucket.hit(2.0_f64.powi(53) - 1.0, 1.0);
    assert_eq!(fields()[field::T], 9_007_199_254_740_991.0);
}

#[wasm_bindgen_test]
fn getters_describe_the_limit() {
    let bucket = limiter(" 150/900s\n", "floating");
    assert_eq!(bucket.limit(), "150/15m");
    assert_eq!(bucket.tokens(), 150.0);
    assert_eq!(bucket.window_ms(), 900_000.0);
    assert_eq!(bucket.algorithm(), "floating");
    assert_eq!(limiter("7/1500ms", "floating").limit(), "7/1500ms");
    assert_eq!(
        limiter("9007199254740993/1s", "floating").limit(),
        "9007199254740993/1s"
    );
}

#[wasm_bindgen_test]
fn huge_limits_arrive_as_the_nearest_numbers() {
    let mut bucket = limiter("18446744073709551615/1ms", "floating");
    assert_eq!(bucket.tokens(), u64::MAX as f64);
    assert_eq!(bucket.hit(0.0, 9_007_199_254_740_991.0), ALLOWED);
    assert_eq!(fields()[field::LIMIT], u64::MAX as f64);
    assert_eq!(fields()[field::COST], 9_007_199_254_740_991.0);
}

#[wasm_bindgen_test]
fn algorithms_lists_the_core_names_default_first() {
    assert_eq!(algorithms(), "floating sliding-log fixed token-bucket");
    for name in runs() {
        assert_eq!(limiter("6/8s", name).algorithm(), name);
    }
}

/// `RawLimiter::new(limit, algorithm)`, one row per bad input: the arguments and the exact
/// message it refuses with, the core's own, which the JS wrapper throws.
#[rustfmt::skip]
const BAD_LIMITERS: &[(&str, &str, &str)] = &[
    ("0/8s",       "floating", r#"a limit needs at least 1 token per window, got 0"#),
    ("6/0s",       "floating", r#"a window must be at least 1 ms long, got 0"#),
    ("-6/8s",      "floating", r#"limit "-6/8s": tokens "-6" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    ("6/-8s",      "floating", r#"limit "6/-8s": window "-8s" is not a whole number followed by a unit; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    ("",           "floating", r#"limit "" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    ("6/18446744073709551616ms", "floating", r#"limit "6/18446744073709551616ms": the window is longer than 18446744073709551615 ms, the longest allowed"#),
    ("6/8x",       "floating", r#"limit "6/8x": unknown unit "x"; the unit must be ms, s, m or h, as in 6/8s"#),
    ("6/8秒",      "floating", r#"limit "6/8秒": unknown unit "秒"; the unit must be ms, s, m or h, as in 6/8s"#),
    ("\t",         "floating", r#"limit "\t" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    ("6\"/8s",     "floating", r#"limit "6\"/8s": tokens "6\"" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    ("6/8s\u{200b}", "floating", r#"limit "6/8s\u{200b}": unknown unit "s\u{200b}"; the unit must be ms, s, m or h, as in 6/8s"#),
    ("<img src=x onerror=alert(1)>", "floating", r#"limit "<img src=x onerror=alert(1)>" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m"#),
    // The limit is checked first.
    ("6/8x",       "leaky",    r#"limit "6/8x": unknown unit "x"; the unit must be ms, s, m or h, as in 6/8s"#),
    ("6/8s",       "leaky",    r#"unknown algorithm "leaky"; use floating, sliding-log, fixed or token-bucket"#),
    ("6/8s",       "",         r#"unknown algorithm ""; use floating, sliding-log, fixed or token-bucket"#),
    ("6/8s",       "Floating", r#"unknown algorithm "Floating"; use floating, sliding-log, fixed or token-bucket"#),
    ("6/8s",       "fixed\n",  r#"unknown algorithm "fixed\n"; use floating, sliding-log, fixed or token-bucket"#),
    ("6/8s",       "ﬁxed",     r#"unknown algorithm "ﬁxed"; use floating, sliding-log, fixed or token-bucket"#),
    ("6/8s",       "<img src=x onerror=alert(1)>", r#"unknown algorithm "<img src=x onerror=alert(1)>"; use floating, sliding-log, fixed or token-bucket"#),
];

/// The default module, what every widget downloads, runs the floating window alone; it
/// still knows the other names, and says which module runs them (limiter.js asks that one).
#[cfg(not(feature = "algorithms"))]
#[wasm_bindgen_test]
fn the_default_module_runs_the_floating_window_alone() {
    for algorithm in ["sliding-log", "fixed", "token-bucket"] {
        assert_eq!(limiter_new("6/8s", algorithm), 0, "{algorithm}");
        assert_eq!(
            error(),
            format!("{algorithm} runs in trickle_algorithms_bg.wasm; this module runs floating")
        );
    }
    // A bad limit is still named first.
    assert_eq!(limiter_new("6", "fixed"), 0);
    assert!(error().contains("\"6\""));
}

/// With `--features algorithms` (trickle_algorithms_bg.wasm), each runs its own.
#[cfg(feature = "algorithms")]
#[wasm_bindgen_test]
fn the_algorithms_module_runs_all_four() {
    for algorithm in ["floating", "sliding-log", "fixed", "token-bucket"] {
        assert_eq!(limiter("6/8s", algorithm).algorithm(), algorithm);
    }
    // At 8 s the sliding log has let go of the token spent at 0; the floating window still
    // counts the whole previous window.
    let mut log = limiter("2/8s", "sliding-log");
    let mut floating = limiter("2/8s", "floating");
    for t in [0.0, 7_000.0] {
        assert_eq!(log.hit(t, 1.0), ALLOWED);
        assert_eq!(floating.hit(t, 1.0), ALLOWED);
    }
    assert_eq!(log.hit(8_000.0, 1.0), ALLOWED);
    assert_eq!(floating.hit(8_000.0, 1.0), DENIED);
}

#[wasm_bindgen_test]
fn bad_limits_and_algorithms_throw_the_core_message() {
    for (limit, algorithm, expected) in BAD_LIMITERS {
        match RawLimiter::new(limit, algorithm) {
            Ok(_) => panic!("{limit:?}, {algorithm:?} was accepted"),
            Err(err) => assert_eq!(err, *expected, "{limit:?}, {algorithm:?}"),
        }
    }
}

/// The exports JS calls: handles that reach the same objects, 0 (or a cost of -1) for a
/// refusal, with the core's message from `error()`, which a second call finds taken.
#[wasm_bindgen_test]
fn the_exports_work_on_handles_and_leave_refusals_to_error() {
    let handle = limiter_new("6/8s", "floating");
    assert_ne!(handle, 0);
    assert_eq!(limiter_limit(handle), "6/8s");
    assert_eq!(
        (limiter_tokens(handle), limiter_window_ms(handle)),
        (6.0, 8_000.0)
    );
    assert_eq!(limiter_hit(handle, 0.0, 5.0), ALLOWED);
    assert_eq!(limiter_record(handle, 0.0, 1.0), ALLOWED);
    assert_eq!(limiter_peek(handle, 1.0, 1.0), DENIED);
    assert_eq!(limiter_respond(handle, 1.0, 7.0, 1.0), EXCEEDS_LIMIT);
    limiter_reset(handle);
    assert_eq!(limiter_hit(handle, 2.0, 6.0), ALLOWED);
    assert_eq!(fields()[field::USED], 6.0);
    limiter_free(handle);

    assert_eq!(limiter_new("6/8s", "leaky"), 0);
    assert_eq!(
        error(),
        r#"unknown algorithm "leaky"; use floating, sliding-log, fixed or token-bucket"#
    );
    assert_eq!(error(), "");
}

/// Cost tables are in the algorithms module alone, as the other three algorithms are.
#[cfg(feature = "algorithms")]
#[wasm_bindgen_test]
fn the_cost_table_exports_work_on_handles_and_leave_refusals_to_error() {
    let esi = cost_table_new("esi");
    assert_ne!(esi, 0);
    assert_eq!(cost_table_statuses(esi), "200 304 404 500");
    assert_eq!(cost_table_cost(esi, 404.0), 5.0);
    assert_eq!(cost_table_cost(esi, 101.0), -1.0);
    assert_eq!(
        error(),
        "status 101 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"
    );
    cost_table_free(esi);
    assert_eq!(cost_table_new(""), 0);
    assert_eq!(
        error(),
        concat!("a cost table needs at least one entry; ", table_form!())
    );
}

#[cfg(feature = "algorithms")]
fn table(text: &str) -> RawCostTable {
    RawCostTable::new(text).unwrap_or_else(|err| panic!("{err}"))
}

#[cfg(feature = "algorithms")]
#[wasm_bindgen_test]
fn esi_costs_by_status() {
    let esi = table("esi");
    #[rustfmt::skip]
    let costs = [(100.0, None), (200.0, Some(2.0)), (204.0, Some(2.0)), (304.0, Some(1.0)), (404.0, Some(5.0)),
                 (420.0, Some(5.0)), (429.0, Some(0.0)), (500.0, Some(0.0)), (503.0, Some(0.0)), (600.0, None)];
    for (status, cost) in costs {
        assert_eq!(esi.cost(status).ok(), cost, "{status}");
    }
    assert_eq!(esi.statuses(), "200 304 404 500");
    #[rustfmt::skip]
    let refused = [
        (101.0,    "status 101 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"),
        (70_000.0, "status 70000 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"),
    ];
    for (status, expected) in refused {
        assert_eq!(esi.cost(status), Err(expected.to_string()));
    }
}

#[cfg(feature = "algorithms")]
#[wasm_bindgen_test]
fn a_written_table_prices_and_offers_its_statuses() {
    let written = table("200:2 304:1 4xx:5 429:0 5xx:0");
    assert_eq!(written.statuses(), "200 304 404 500");
    assert_eq!(written.cost(200.0).ok(), Some(2.0));
    assert_eq!(written.cost(429.0).ok(), Some(0.0));
    assert_eq!(
        written.cost(201.0),
        Err("status 201 has no cost in this table, which prices 200, 304, 4xx, 429 and 5xx".into())
    );
    assert_eq!(table("1xx:0 404:3 4xx:1").statuses(), "100 404 400");
}

#[cfg(feature = "algorithms")]
#[rustfmt::skip]
const BAD_TABLES: &[(&str, &str)] = &[
    ("",          concat!("a cost table needs at least one entry; ", table_form!())),
    ("200",       concat!("cost table entry \"200\" has no ':' between a status and its cost; ", table_form!())),
    ("600:1",     concat!("cost table entry \"600:1\": \"600\" is not a status from 100 to 599 or a class 1xx to 5xx; ", table_form!())),
    ("6xx:1",     "cost table entry \"6xx:1\": \"6xx\" is not an HTTP class; the classes are 1xx, 2xx, 3xx, 4xx and 5xx"),
    ("200:-1",    concat!("cost table entry \"200:-1\": cost \"-1\" is not a whole number of tokens from 0 to 18446744073709551615; ", table_form!())),
    ("200:1 200:2", "cost table prices 200 twice; write each status or class once"),
];

#[cfg(feature = "algorithms")]
#[wasm_bindgen_test]
fn bad_tables_throw_the_core_message() {
    for (text, expected) in BAD_TABLES {
        match RawCostTable::new(text) {
            Ok(_) => panic!("{text:?} was accepted"),
            Err(err) => assert_eq!(err, *expected, "{text:?}"),
        }
    }
}

/// The module's own allocator (`src/allocator.rs`), which these tests run on too: blocks of
/// every size class, freed out of order, reused and grown, keep what was written to them.
#[wasm_bindgen_test]
fn the_allocator_keeps_every_block_apart() {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    for round in 0..3u8 {
        for size in (0..20).map(|shift| (1usize << shift) + usize::from(round)) {
            blocks.push(vec![round ^ (size as u8); size]);
        }
        // Free every other block, then grow the rest past their size class.
        let mut index = 0;
        blocks.retain(|_| {
            index += 1;
            index % 2 == 0
        });
        for block in &mut blocks {
            let fill = block[0];
            block.extend_from_slice(&[fill; 100]);
        }
    }
    for block in &blocks {
        assert!(
            block.iter().all(|byte| *byte == block[0]),
            "a block was overwritten"
        );
    }
    // A sliding log of many entries grows its queue through realloc and still counts right.
    #[cfg(feature = "algorithms")]
    {
        let mut log = limiter("100000/1h", "sliding-log");
        for t in 0..100_000 {
            assert_eq!(log.hit(f64::from(t), 1.0), ALLOWED);
        }
        assert_eq!(log.hit(100_000.0, 1.0), DENIED);
        assert_eq!(fields()[field::USED], 100_000.0);
    }
}
