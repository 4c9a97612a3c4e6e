//! Replay mode's boundary (`--features extras`, `src/replay.rs`), run as WebAssembly under
//! Node: `wasm-pack test --node -- --features extras --test replay`.
//!
//! What crosses is tested here: a CSV log fed in chunks of lines keeps the file's line
//! numbers and order across chunks, a HAR's entries play in time order a chunk at a time,
//! each chunk's times and outcome codes, the figures' getters (−1 for none), and a bad row
//! thrown as an `Error` with the core's message. The rules and figures themselves are the
//! core's, tested natively (`request_log`, `replay`), and against the CLI end to end.
#![cfg(all(target_arch = "wasm32", feature = "extras"))]

// The whole binding comes in, and this suite calls only replay's part of it.
#[allow(dead_code)]
#[path = "../src/lib.rs"]
mod binding;

use binding::replay::RawReplay;
use js_sys::Error;
use wasm_bindgen::{JsCast, JsError, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

fn message(err: JsError) -> String {
    let value = JsValue::from(err);
    let error: &Error = value.dyn_ref().expect("bindings throw JS Error objects");
    assert_eq!(error.name(), "Error");
    error.message().into()
}

fn replay(limit: &str, algorithm: &str) -> RawReplay {
    RawReplay::new(limit, algorithm).unwrap_or_else(|err| panic!("{}", message(err)))
}

/// 2/1s on the sliding log: 0 and 100 fill it, 200 waits until 0's token leaves at 1000,
/// 1100 fits.
#[wasm_bindgen_test]
fn a_csv_log_in_chunks_counts_as_the_cli_does() {
    let mut log = replay("2/1s", "sliding-log");
    assert_eq!(log.allowed(), 0.0);
    assert_eq!(log.first_refused_t(), -1.0);
    assert_eq!(log.longest_wait_ms(), -1.0);
    assert_eq!(log.csv("t_ms,cost\r\n0,1").unwrap(), 1);
    assert_eq!(log.csv("100,1\n200,1\n\n1100,1").unwrap(), 3);
    assert_eq!(log.times(), [100.0, 200.0, 1_100.0]);
    assert_eq!(log.codes(), [0, 1, 0]);
    log.finish().unwrap();
    assert_eq!(
        (log.allowed(), log.denied(), log.never_fit()),
        (3.0, 1.0, 0.0)
    );
    assert_eq!(
        (log.first_refused_request(), log.first_refused_t()),
        (3.0, 200.0)
    );
    assert_eq!(log.longest_wait_ms(), 800.0);
    assert_eq!(
        log.summary(),
        "replayed 4 requests against 2/1s (sliding-log): 3 allowed, 1 denied, 0 never fit; \
         first 429 at request 3, t_ms 200; longest wait 800 ms"
    );
}

#[wasm_bindgen_test]
fn a_bad_row_throws_the_cores_message_with_the_files_line() {
    let mut log = replay("6/8s", "floating");
    log.csv("t_ms,status\n0,200").unwrap();
    let error = log.csv("\n10,ok").map(|_| ()).unwrap_err();
    assert_eq!(
        message(error),
        "line 4: status \"ok\" is not an HTTP status; expected a whole number from 200 to 599"
    );
    let empty = replay("6/8s", "floating");
    assert_eq!(
        message(empty.finish().unwrap_err()),
        "the input is empty; expected a CSV header line, t_ms,cost or t_ms,status, then one line per request"
    );
    let bad = RawReplay::new("6/8x", "floating").map(|_| ()).unwrap_err();
    assert!(message(bad).starts_with("limit \"6/8x\""));
}

#[wasm_bindgen_test]
fn har_entries_play_in_time_order_a_chunk_at_a_time() {
    let mut log = replay("6/8s", "fixed");
    log.har_entry(Some("2026-12-04T10:00:01Z".into()), 200.0)
        .unwrap();
    log.har_entry(Some("2026-12-04T10:00:00Z".into()), 404.0)
        .unwrap();
    log.har_entry(Some("2026-12-04T10:00:02Z".into()), 0.0)
        .unwrap();
    log.har_entry(Some("2026-12-04T10:00:03Z".into()), 304.0)
        .unwrap();
    let error = log.har_entry(None, f64::NAN).unwrap_err();
    assert!(message(error).starts_with("entry 5: no startedDateTime"));
    assert_eq!(log.har_play(2), 2);
    assert_eq!(log.times(), [0.0, 1_000.0]);
    // 404 costs 5, then a 200's 2 does not fit: 5 + 2 > 6.
    assert_eq!(log.codes(), [0, 1]);
    assert_eq!(log.left(), 1);
    assert_eq!(log.har_play(2), 1);
    assert_eq!(log.times(), [3_000.0]);
    assert_eq!(log.har_play(2), 0);
    assert_eq!(
        log.summary().split(';').next(),
        Some("replayed 3 requests against 6/8s (fixed): 2 allowed, 1 denied, 0 never fit")
    );
}
