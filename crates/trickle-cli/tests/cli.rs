#![cfg(not(target_arch = "wasm32"))]
//! The replay CLI through the real binary: arguments in, CSV on stdin, rows on stdout,
//! one summary or error line on stderr, and the exit code.

mod binary;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::thread;

use binary::{trickle, Run};

const HEADER: &str = "t_ms,cost,allowed,used,remaining,retry_after_ms";

/// The header and `rows`, as the binary writes them.
fn csv(rows: &[&str]) -> String {
    let mut text = format!("{HEADER}\n");
    for row in rows {
        text.push_str(row);
        text.push('\n');
    }
    text
}

fn assert_no_panic(run: &Run, case: &str) {
    assert!(
        !run.stderr.contains("panicked"),
        "{case}: the binary panicked:\n{}",
        run.stderr
    );
}

/// A replay that must succeed with exactly `rows`.
/// `trickle replay --limit 6/8s` on `input` exits 1 with `trickle: EXPECTED…` on stderr.
fn assert_refused(input: &str, case: &str, expected: &str) -> Run {
    let run = trickle(&["replay", "--limit", "6/8s"], input);
    assert_no_panic(&run, case);
    assert_eq!(run.code, 1, "{case}: exit code; stderr: {}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!("trickle: {expected}")),
        "{case}: {}",
        run.stderr
    );
    run
}

fn assert_replays(args: &[&str], stdin: &str, rows: &[&str], case: &str) {
    let run = trickle(args, stdin);
    assert_no_panic(&run, case);
    assert_eq!(run.code, 0, "{case}: exit code; stderr: {}", run.stderr);
    assert_eq!(run.stdout, csv(rows), "{case}: stdout");
}

// A small floating-window trace under 6/8s: windows [0, 8000), [8000, 16000), …; at e ms
// into a window, used = previous × (8000 − e) / 8000 + current.
//
//   t=0      cost 2: current 2                                  → 2.000, 4 left
//   t=2000   cost 3: current 5                                  → 5.000, 1 left
//   t=4000   cost 2: 5 + 2 > 6, denied. Nothing fits in this window (current + cost = 7),
//            so wait for the next one: 5 × (8000 − e) / 8000 + 2 ≤ 6 at e = 1600, i.e.
//            t = 9600, which is 4000 + 1600 + 4000 → retry 5600
//   t=9600   cost 2: 5 × 6400/8000 + 2 = 4 + 2                  → 6.000, 0 left
//   t=10000  cost 1: 5 × 6000/8000 + 2 = 5.75; + 1 > 6, denied. 5 × (8000 − e)/8000 + 2 + 1
//            ≤ 6 at e = 3200, t = 11200                         → 5.750, 0 left, retry 1200
//   t=11200  cost 1: 5 × 4800/8000 + 2 + 1 = 3 + 3              → 6.000, 0 left
//   t=13000  cost 0: always fits; 5 × 3000/8000 + 3 = 1.875 + 3 → 4.875, 1 left
//   t=17000  cost 9 > 6: never. Window 2 with previous = 3: 3 × 7000/8000 = 2.625, 3 left
//   t=20000  cost 4: 3 × 4000/8000 + 4 = 1.5 + 4                → 5.500, 0 left
//   t=23001  cost 0: 3 × 999/8000 + 4 = 4.374625, shown rounded half up → 4.375, 1 left
#[test]
fn floating_window_trace_worked_by_hand() {
    let input = "t_ms,cost\n0,2\n2000,3\n4000,2\n9600,2\n10000,1\n11200,1\n13000,0\n17000,9\n20000,4\n23001,0\n";
    #[rustfmt::skip]
    let rows = [
        "0,2,true,2.000,4,",
        "2000,3,true,5.000,1,",
        "4000,2,false,5.000,1,5600",
        "9600,2,true,6.000,0,",
        "10000,1,false,5.750,0,1200",
        "11200,1,true,6.000,0,",
        "13000,0,true,4.875,1,",
        "17000,9,false,2.625,3,never",
        "20000,4,true,5.500,0,",
        "23001,0,true,4.375,1,",
    ];
    assert_replays(
        &["replay", "--limit", "6/8s"],
        input,
        &rows,
        "floating trace",
    );
}

// The same log under 4/1s for each algorithm (N = 4, W = 1000 ms):
//
// floating: t=400 cost 1: 4 + 1 > 4 and current + cost > 4, so the next window:
//           4 × (1000 − e)/1000 + 1 ≤ 4 at e = 250 → 600 + 250 = 850.
//           t=700 cost 3: 4 × (1000 − e)/1000 + 3 ≤ 4 at e = 750 → 300 + 750 = 1050.
//           t=1100 cost 2: 4 × 900/1000 + 2 = 5.6 > 4; 4 × (1000 − e)/1000 + 2 ≤ 4 at
//           e = 500 → 500 − 100 = 400. t=1500 cost 2: 4 × 0.5 + 2 = 4, allowed.
// sliding-log: t=400 needs used ≤ 3: the 2 tokens of t=0 come back at 1000 → 600.
//           t=700 needs used ≤ 1: both entries must go, the second at 1200 → 500.
//           t=1100: t=0's tokens are back, 2 + 2 = 4. t=1500: t=200's too, 2 + 2 = 4.
// fixed:    t=400 and t=700 wait for the window at 1000: 600 and 300. t=1100 starts afresh.
// token-bucket: 4 tokens per 1000 ms come back, 0.004 per ms, continuously.
//           t=200: 2 − 0.8 + 2 = 3.2. t=400: 3.2 − 0.8 + 1 = 3.4. t=700: 3.4 − 1.2 = 2.2,
//           + 3 > 4, denied until 2.2 − 0.004 d + 3 ≤ 4 at d = 300. t=1100: 2.2 − 1.6 + 2
//           = 2.6. t=1500: 2.6 − 1.6 + 2 = 3.
#[test]
fn every_algorithm_on_the_same_log() {
    let input = "t_ms,cost\n0,2\n200,2\n400,1\n700,3\n1100,2\n1500,2\n";
    #[rustfmt::skip]
    let cases: [(&str, [&str; 6]); 4] = [
        ("floating", [
            "0,2,true,2.000,2,",
            "200,2,true,4.000,0,",
            "400,1,false,4.000,0,850",
            "700,3,false,4.000,0,1050",
            "1100,2,false,3.600,0,400",
            "1500,2,true,4.000,0,",
        ]),
        ("sliding-log", [
            "0,2,true,2.000,2,",
            "200,2,true,4.000,0,",
            "400,1,false,4.000,0,600",
            "700,3,false,4.000,0,500",
            "1100,2,true,4.000,0,",
            "1500,2,true,4.000,0,",
        ]),
        ("fixed", [
            "0,2,true,2.000,2,",
            "200,2,true,4.000,0,",
            "400,1,false,4.000,0,600",
            "700,3,false,4.000,0,300",
            "1100,2,true,2.000,2,",
            "1500,2,true,4.000,0,",
        ]),
        ("token-bucket", [
            "0,2,true,2.000,2,",
            "200,2,true,3.200,0,",
            "400,1,true,3.400,0,",
            "700,3,false,2.200,1,300",
            "1100,2,true,2.600,1,",
            "1500,2,true,3.000,1,",
        ]),
    ];
    for (algorithm, rows) in cases {
        let args = ["replay", "--limit", "4/1s", "--algorithm", algorithm];
        assert_replays(&args, input, &rows, algorithm);
    }
}

#[test]
fn the_default_algorithm_is_floating() {
    let input = "t_ms,cost\n0,4\n400,1\n";
    let rows = ["0,4,true,4.000,0,", "400,1,false,4.000,0,850"];
    assert_replays(
        &["replay", "--limit", "4/1s"],
        input,
        &rows,
        "no --algorithm",
    );
    let args = ["replay", "--limit=4/1s", "--algorithm=floating"];
    assert_replays(&args, input, &rows, "--flag=value forms");
}

#[test]
fn status_is_charged_by_esis_table() {
    #[rustfmt::skip]
    let cases = [
        // status, ESI's cost
        ("200", 2), ("201", 2), ("299", 2),
        ("300", 1), ("304", 1), ("399", 1),
        ("400", 5), ("404", 5), ("428", 5), ("429", 0), ("430", 5), ("499", 5),
        ("500", 0), ("503", 0), ("599", 0),
        (" 200 ", 2), ("0200", 2),
    ];
    for (status, cost) in cases {
        let input = format!("t_ms,status\n0,{status}\n");
        let row = format!("0,{cost},true,{cost}.000,{},", 100 - cost);
        assert_replays(&["replay", "--limit", "100/1s"], &input, &[&row], status);
    }
}

// 6/8s, all at t=0 in window 0: 200 → 2, 304 → 1, 429 and 503 → 0, so 3 in use. The 404
// costs 5: 3 + 5 > 6, and nothing more fits in this window, so in the next one
// 3 × (8000 − e)/8000 + 5 ≤ 6 from e = 5334 (3 × 2666 = 7998 ≤ 8000): 8000 + 5334.
#[test]
fn a_status_log_is_replayed_with_esi_costs() {
    let input = "t_ms,status\n0,200\n0,304\n0,429\n0,503\n0,404\n";
    #[rustfmt::skip]
    let rows = [
        "0,2,true,2.000,4,",
        "0,1,true,3.000,3,",
        "0,0,true,3.000,3,",
        "0,0,true,3.000,3,",
        "0,5,false,3.000,3,13334",
    ];
    assert_replays(&["replay", "--limit", "6/8s"], input, &rows, "status log");
}

#[test]
fn costs_at_the_edges() {
    #[rustfmt::skip]
    let cases = [
        // case, algorithm, input, expected row
        ("cost 0 always fits",        "floating",     "t_ms,cost\n0,0\n", "0,0,true,0.000,6,"),
        ("cost N fits an empty limit", "sliding-log", "t_ms,cost\n0,6\n", "0,6,true,6.000,0,"),
        ("cost above N never fits",   "floating",     "t_ms,cost\n0,7\n", "0,7,false,0.000,6,never"),
        ("never, sliding log",        "sliding-log",  "t_ms,cost\n0,7\n", "0,7,false,0.000,6,never"),
        ("never, fixed",              "fixed",        "t_ms,cost\n0,7\n", "0,7,false,0.000,6,never"),
        ("never, token bucket",       "token-bucket", "t_ms,cost\n0,7\n", "0,7,false,0.000,6,never"),
        ("the largest cost",          "floating",     "t_ms,cost\n0,18446744073709551615\n",
            "0,18446744073709551615,false,0.000,6,never"),
        ("the latest time",           "floating",     "t_ms,cost\n18446744073709551615,1\n",
            "18446744073709551615,1,true,1.000,5,"),
    ];
    for (case, algorithm, input, row) in cases {
        let args = ["replay", "--limit", "6/8s", "--algorithm", algorithm];
        assert_replays(&args, input, &[row], case);
    }
}

#[test]
fn accepted_input_shapes() {
    #[rustfmt::skip]
    let cases = [
        ("extra and reordered columns",
            "path,cost,t_ms,user_agent\n/v2/status,2,0,\"Mozilla/5.0 (X11, Linux)\"\n/v1/x,1,10,curl\n",
            vec!["0,2,true,2.000,4,", "10,1,true,3.000,3,"]),
        ("status among extra columns",
            "status,path,t_ms\n404,/v1/missing,5\n",
            vec!["5,5,true,5.000,1,"]),
        ("CRLF line endings",
            "t_ms,cost\r\n0,2\r\n10,1\r\n",
            vec!["0,2,true,2.000,4,", "10,1,true,3.000,3,"]),
        ("spaces around names and values",
            " t_ms , cost \n 0 , 2 \n",
            vec!["0,2,true,2.000,4,"]),
        ("blank lines, at the end and between",
            "t_ms,cost\n0,2\n\n10,1\n\n\n   \n",
            vec!["0,2,true,2.000,4,", "10,1,true,3.000,3,"]),
        ("no newline at the end",
            "t_ms,cost\n0,2",
            vec!["0,2,true,2.000,4,"]),
        ("a UTF-8 byte order mark",
            "\u{feff}t_ms,cost\n0,2\n",
            vec!["0,2,true,2.000,4,"]),
        ("equal times",
            "t_ms,cost\n5,1\n5,1\n",
            vec!["5,1,true,1.000,5,", "5,1,true,2.000,4,"]),
        ("header only",
            "t_ms,cost\n",
            vec![]),
        ("header only, status",
            "t_ms,status",
            vec![]),
    ];
    for (case, input, rows) in cases {
        assert_replays(&["replay", "--limit", "6/8s"], input, &rows, case);
    }
}

#[test]
fn the_summary_goes_to_stderr() {
    let input = "t_ms,cost\n0,4\n400,1\n500,9\n";
    let run = trickle(
        &["replay", "--limit", "4/1s", "--algorithm", "fixed"],
        input,
    );
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stderr,
        "replayed 3 requests against 4/1s (fixed): 1 allowed, 1 denied, 1 never fit; \
         first 429 at request 2, t_ms 400; longest wait 600 ms\n"
    );
    assert!(run.stdout.lines().all(|line| line.split(',').count() == 6));

    // The limit is shown in its shortest form.
    let run = trickle(&["replay", "--limit", "6/8000ms"], "t_ms,cost\n0,1\n");
    assert_eq!(
        run.stderr,
        "replayed 1 request against 6/8s (floating): 1 allowed, 0 denied, 0 never fit; no 429\n"
    );
}

/// The compared columns after each row. The 2/1s trace, worked by hand: windows [0, 1000),
/// [1000, 2000); the floating window counts previous × (1000 − e)/1000 + current.
///
///   900, 950   both allow: 1 then 2 in use.
///   1500       floating: 2 × 0.5 + 1 = 2 ≤ 2, allowed. The log still holds 900 and 950
///              (back at 1900 and 1950): denied. Wrongly allowed.
///   1505       floating: 2 × 0.495 = 0.99, + 1 → 1.99, + 1 > 2, denied; it fits once
///              2 × (1000 − e)/1000 + 1 + 1 ≤ 2, at the next window: 2000 − 1505 = 495.
///              The log denies too.
///   1950       floating: 2 × 0.05 + 1 = 1.1, + 1 > 2, denied, retry 2000 − 1950 = 50. The
///              log has 900's and 950's tokens back (at 1900, 1950): allowed. Wrongly limited.
///   1960       cost 3 > 2: never, for both. floating 2 × 0.04 + 1 = 1.08; log 1 (1950's).
/// Floating allowed 900, 950 and 1500, all in [900, 1900): 3 tokens, 1.50 × N; the log at
/// most 2.
/// On the log's history floating has spent only 900 and 950: it allows 1500 and 1505
/// (2 × 0.495 + 1 ≤ 2), both of which the log denies, and allows 1950 (2 × 0.05 + 1 ≤ 2)
/// as the log does: 2 wrongly allowed, 0 wrongly limited. The echo at 1950 is gone.
#[test]
fn compare_adds_the_references_answer() {
    let input = "t_ms,cost\n900,1\n950,1\n1500,1\n1505,1\n1950,1\n1960,3\n";
    let run = trickle(
        &["replay", "--limit", "2/1s", "--compare", "sliding-log"],
        input,
    );
    assert_no_panic(&run, "compare");
    assert_eq!(run.code, 0, "{}", run.stderr);
    #[rustfmt::skip]
    let expected = [
        "t_ms,cost,allowed,used,remaining,retry_after_ms,reference_allowed,reference_used,disagreement",
        "900,1,true,1.000,1,,true,1.000,",
        "950,1,true,2.000,0,,true,2.000,",
        "1500,1,true,2.000,0,,false,2.000,wrongly-allowed",
        "1505,1,false,1.990,0,495,false,2.000,",
        "1950,1,false,1.100,0,50,true,1.000,wrongly-limited",
        "1960,3,false,1.080,0,never,false,1.000,",
    ];
    assert_eq!(run.stdout, format!("{}\n", expected.join("\n")));
    assert_eq!(
        run.stderr,
        "replayed 6 requests against 2/1s (floating): 3 allowed, 2 denied, 1 never fit; \
         first 429 at request 4, t_ms 1505; longest wait 495 ms\n\
         floating against sliding-log: 6 requests, 1 wrongly allowed (16.667%), 1 wrongly \
         limited (16.667%), at most 3 tokens in any 1000 ms = 1.50 x N (sliding-log: 2 = 1.00 x N)\n\
         floating judged on sliding-log's history: 2 wrongly allowed (33.333%), 0 wrongly \
         limited (0.000%)\n"
    );

    // The first six columns are what a replay without --compare writes.
    let alone = trickle(&["replay", "--limit", "2/1s"], input);
    let first_six: Vec<String> = run
        .stdout
        .lines()
        .skip(1)
        .map(|row| row.split(',').take(6).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        alone.stdout,
        csv(&first_six.iter().map(String::as_str).collect::<Vec<_>>())
    );
}

#[test]
fn compare_with_any_pair_and_with_itself() {
    // The fixed window lets 2 more in as its window turns at 1000; the log holds 999's.
    // On the log's history too (it has spent 999's 2 in the first window only), but at
    // 1999 it agrees with the log: the echo of 1000's 2 is gone.
    let input = "t_ms,cost\n999,2\n1000,2\n1999,2\n";
    let run = trickle(
        &[
            "replay",
            "--limit",
            "2/1s",
            "--algorithm",
            "fixed",
            "--compare",
            "sliding-log",
        ],
        input,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.lines().skip(1).collect::<Vec<_>>(),
        [
            "999,2,true,2.000,0,,true,2.000,",
            "1000,2,true,2.000,0,,false,2.000,wrongly-allowed",
            "1999,2,false,2.000,0,1,true,2.000,wrongly-limited",
        ]
    );
    assert!(
        run.stderr.ends_with(
            "at most 4 tokens in any 1000 ms = 2.00 x N (sliding-log: 2 = 1.00 x N)\n\
             fixed judged on sliding-log's history: 1 wrongly allowed (33.333%), 0 wrongly \
             limited (0.000%)\n"
        ),
        "{}",
        run.stderr
    );

    // Any algorithm against itself never disagrees.
    let log = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/esi-burst.csv"
    ))
    .unwrap();
    for algorithm in ["floating", "sliding-log", "fixed", "token-bucket"] {
        let run = trickle(
            &[
                "replay",
                "--limit",
                "6/8s",
                "--algorithm",
                algorithm,
                "--compare",
                algorithm,
            ],
            &log,
        );
        assert_eq!(run.code, 0, "{algorithm}: {}", run.stderr);
        let comparison = run.stderr.lines().nth(1).unwrap_or_default();
        assert!(
            comparison.starts_with(&format!(
                "{algorithm} against {algorithm}: 20 requests, 0 wrongly allowed (0.000%), \
                 0 wrongly limited (0.000%)"
            )),
            "{algorithm}: {comparison}"
        );
        assert_eq!(
            run.stderr.lines().nth(2).unwrap_or_default(),
            format!(
                "{algorithm} judged on {algorithm}'s history: 0 wrongly allowed (0.000%), \
                 0 wrongly limited (0.000%)"
            ),
            "{algorithm}"
        );
        assert!(
            run.stdout.lines().skip(1).all(|row| row.ends_with(',')),
            "{algorithm}: a disagreement in {}",
            run.stdout
        );
    }
}

/// Exit code 2: the command line is wrong, and the message says how to get help.
#[test]
fn usage_errors() {
    let log = "t_ms,cost\n0,1\n";
    #[rustfmt::skip]
    let cases: [(&[&str], &[&str]); 21] = [
        (&["replay", "--limit", "6/8x"], &["\"6/8x\"", "unit must be ms, s, m or h"]),
        (&["replay", "--limit", "6/"], &["\"6/\"", "whole number followed by a unit"]),
        (&["replay", "--limit", "/8s"], &["\"/8s\"", "tokens \"\" is not a whole number"]),
        (&["replay", "--limit", "abc"], &["\"abc\"", "no '/'", "TOKENS/WINDOW"]),
        (&["replay", "--limit", "0/8s"], &["at least 1 token"]),
        (&["replay", "--limit", "6/0s"], &["at least 1 ms"]),
        (&["replay", "--limit", "6/8s", "--algorithm", "gcra"],
            &["\"gcra\"", "floating, sliding-log, fixed or token-bucket"]),
        (&["replay", "--limit", "6/8s", "--algorithm", "Floating"], &["\"Floating\""]),
        (&["replay", "--limit", "6/8s", "--bogus"], &["'--bogus'", "--help"]),
        (&["replay", "--limit", "6/8s", "-x"], &["'-x'", "--help"]),
        (&["replay"], &["needs --limit", "6/8s"]),
        (&["replay", "--algorithm", "fixed"], &["needs --limit"]),
        (&["replay", "--limit"], &["missing argument", "--limit"]),
        (&["replay", "--limit", "6/8s", "--limit", "1/1s"], &["--limit", "more than once"]),
        (&["replay", "--limit", "6/8s", "--compare", "log"],
            &["invalid --compare", "\"log\"", "floating, sliding-log, fixed or token-bucket"]),
        (&["replay", "--limit", "6/8s", "--compare", "sliding-log", "--compare", "fixed"],
            &["--compare", "more than once"]),
        (&["replay", "--limit", "6/8s", "--compare"], &["missing argument", "--compare"]),
        (&["replay", "--compare", "sliding-log"], &["needs --limit"]),
        (&["replay", "--limit", "6/8s", "a.csv", "b.csv"], &["\"b.csv\"", "one log"]),
        (&[], &["no command", "replay"]),
        (&["--frob"], &["'--frob'", "--help"]),
    ];
    for (args, expected) in cases {
        let case = args.join(" ");
        let run = trickle(args, log);
        assert_no_panic(&run, &case);
        assert_eq!(run.code, 2, "{case}: exit code; stderr: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{case}: stdout: {}", run.stdout);
        assert!(
            run.stderr.starts_with("trickle: "),
            "{case}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("--help"),
            "{case}: no hint: {}",
            run.stderr
        );
        for text in expected {
            assert!(
                run.stderr.contains(text),
                "{case}: no {text:?} in: {}",
                run.stderr
            );
        }
    }
    let run = trickle(&["frob"], log);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("unknown command \"frob\""),
        "{}",
        run.stderr
    );
}

/// Exit code 1: the log is malformed. The message names the line as an editor numbers it
/// (the header is line 1) and says what was expected.
#[test]
fn bad_input() {
    #[rustfmt::skip]
    let cases = [
        ("non-numeric t_ms", "t_ms,cost\n0,1\nabc,1\n",
            "line 3: t_ms \"abc\" is not a whole number of milliseconds from 0 to 18446744073709551615"),
        ("negative t_ms", "t_ms,cost\n-5,1\n",
            "line 2: t_ms \"-5\" is not a whole number of milliseconds from 0 to 18446744073709551615"),
        ("t_ms with a plus sign", "t_ms,cost\n+3,1\n",
            "line 2: t_ms \"+3\" is not a whole number of milliseconds"),
        ("t_ms past u64", "t_ms,cost\n18446744073709551616,1\n",
            "line 2: t_ms \"18446744073709551616\" is not a whole number of milliseconds"),
        ("fractional cost", "t_ms,cost\n0,1.5\n",
            "line 2: cost \"1.5\" is not a whole number of tokens from 0 to 18446744073709551615"),
        ("empty cost", "t_ms,cost\n0,\n",
            "line 2: cost \"\" is not a whole number of tokens"),
        ("negative cost", "t_ms,cost\n0,-1\n",
            "line 2: cost \"-1\" is not a whole number of tokens"),
        ("decreasing timestamp", "t_ms,cost\n0,1\n1200,1\n900,1\n",
            "line 4: t_ms 900 is earlier than 1200 on line 3; the log must be sorted by time"),
        ("missing t_ms column", "time,cost\n0,1\n",
            "line 1: the header has no t_ms column; expected a header with t_ms and one of cost or status, as in t_ms,cost or t_ms,status, but found \"time,cost\""),
        ("t_ms is matched exactly", "T_MS,cost\n0,1\n",
            "line 1: the header has no t_ms column"),
        ("missing cost and status", "t_ms,path\n0,/a\n",
            "line 1: the header has no cost or status column; expected a header with t_ms and one of cost or status"),
        ("both cost and status", "t_ms,cost,status\n0,1,200\n",
            "line 1: the header has both a cost and a status column; give one of them"),
        ("a column twice", "t_ms,cost,t_ms\n0,1,0\n",
            "line 1: the header names the t_ms column more than once"),
        ("status below 100", "t_ms,status\n0,99\n",
            "line 2: status 99 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
        ("informational status", "t_ms,status\n0,150\n",
            "line 2: status 150 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
        ("status above 599", "t_ms,status\n0,600\n",
            "line 2: status 600 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
        ("status past u16", "t_ms,status\n0,70000\n",
            "line 2: status 70000 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
        ("status that is no number", "t_ms,status\n0,OK\n",
            "line 2: status \"OK\" is not an HTTP status; expected a whole number from 200 to 599"),
        ("a short line", "t_ms,path,cost\n0,/a\n",
            "line 2: no cost value; expected it in field 3, as the header says, but the line has 2 fields"),
        ("empty input", "",
            "the input is empty; expected a CSV header line, t_ms,cost or t_ms,status"),
        ("only blank lines", "\n  \n\r\n",
            "the input is empty; expected a CSV header line"),
    ];
    for (case, input, expected) in cases {
        let run = assert_refused(input, case, expected);
        assert_eq!(run.stderr.lines().count(), 1, "{case}: {}", run.stderr);
    }
}

/// The issue's list of bad inputs, each given to the CLI where it can go wrong: zero,
/// negative, fractional, NaN, Infinity, empty, beyond u64, the wrong unit, missing parts,
/// whitespace, non-ASCII and markup, in `--limit`, `--algorithm` and the log's values and
/// header. Each row: case, arguments after `replay`, the log, the exit code, and the whole
/// message after `trickle: `. A usage error (2) adds the hint to `--help` and writes nothing
/// on stdout; a bad value in the log (1) stops after the output's header, and a bad header
/// line before it.
#[test]
fn every_bad_input_gets_a_message_that_says_what_is_allowed() {
    let form = "write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m";
    let tokens = |text: &str, tokens: &str| {
        format!("invalid --limit: limit \"{text}\": tokens \"{tokens}\" is not a whole number from 1 to 18446744073709551615; {form}")
    };
    let algorithms = "use floating, sliding-log, fixed or token-bucket";
    let t_ms = |text: &str| {
        format!("line 2: t_ms \"{text}\" is not a whole number of milliseconds from 0 to 18446744073709551615")
    };
    let cost = |text: &str| {
        format!("line 2: cost \"{text}\" is not a whole number of tokens from 0 to 18446744073709551615")
    };
    let status = |text: &str| {
        format!("line 2: status \"{text}\" is not an HTTP status; expected a whole number from 200 to 599")
    };
    let header = |found: &str, name: &str| {
        format!("line 1: the header has no {name} column; expected a header with t_ms and one of cost or status, as in t_ms,cost or t_ms,status, but found \"{found}\"")
    };
    let markup = "<img src=x onerror=alert(1)>";
    let ok = "t_ms,cost\n0,1\n";
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<&str>, String, i32, String)> = vec![
        ("zero tokens",       vec!["--limit", "0/8s"], ok.into(), 2, "invalid --limit: a limit needs at least 1 token per window, got 0".into()),
        ("zero window",       vec!["--limit", "6/0s"], ok.into(), 2, "invalid --limit: a window must be at least 1 ms long, got 0".into()),
        ("negative limit",    vec!["--limit", "-6/8s"], ok.into(), 2, tokens("-6/8s", "-6")),
        ("fractional limit",  vec!["--limit", "1.5/8s"], ok.into(), 2, tokens("1.5/8s", "1.5")),
        ("NaN limit",         vec!["--limit", "NaN/8s"], ok.into(), 2, tokens("NaN/8s", "NaN")),
        ("Infinity limit",    vec!["--limit", "Infinity/8s"], ok.into(), 2, tokens("Infinity/8s", "Infinity")),
        ("empty limit",       vec!["--limit", ""], ok.into(), 2, format!("invalid --limit: limit \"\" has no '/'; {form}")),
        ("a bad second limit", vec!["--limit", "2/1s 6/8x"], ok.into(), 2,
            "invalid --limit: limit 2 of the policy: limit \"6/8x\": unknown unit \"x\"; the unit must be ms, s, m or h, as in 6/8s".into()),
        ("a policy with --compare", vec!["--limit", "2/1s 6/8s", "--compare", "sliding-log"], ok.into(), 2,
            "--compare takes one limit, and --limit gives several; give --compare one limit, or replay the policy in process without --compare".into()),
        ("limit beyond u64",  vec!["--limit", "18446744073709551616/8s"], ok.into(), 2, tokens("18446744073709551616/8s", "18446744073709551616")),
        ("window beyond u64", vec!["--limit", "6/18446744073709551616ms"], ok.into(), 2,
            "invalid --limit: limit \"6/18446744073709551616ms\": the window is longer than 18446744073709551615 ms, the longest allowed".into()),
        ("wrong unit",        vec!["--limit", "6/8x"], ok.into(), 2, "invalid --limit: limit \"6/8x\": unknown unit \"x\"; the unit must be ms, s, m or h, as in 6/8s".into()),
        ("no window",         vec!["--limit", "6/"], ok.into(), 2, format!("invalid --limit: limit \"6/\": window \"\" is not a whole number followed by a unit; {form}")),
        ("no tokens",         vec!["--limit", "/8s"], ok.into(), 2, tokens("/8s", "")),
        ("space inside",      vec!["--limit", "6 /8s"], ok.into(), 2, tokens("6 /8s", "6 ")),
        ("non-ASCII digits",  vec!["--limit", "６/8s"], ok.into(), 2, tokens("６/8s", "６")),
        ("markup limit",      vec!["--limit", markup], ok.into(), 2, format!("invalid --limit: limit \"{markup}\" has no '/'; {form}")),
        ("empty algorithm",   vec!["--limit", "6/8s", "--algorithm", ""], ok.into(), 2, format!("invalid --algorithm: unknown algorithm \"\"; {algorithms}")),
        ("NaN algorithm",     vec!["--limit", "6/8s", "--algorithm", "NaN"], ok.into(), 2, format!("invalid --algorithm: unknown algorithm \"NaN\"; {algorithms}")),
        ("spaced algorithm",  vec!["--limit", "6/8s", "--algorithm", " fixed"], ok.into(), 2, format!("invalid --algorithm: unknown algorithm \" fixed\"; {algorithms}")),
        ("non-ASCII algorithm", vec!["--limit", "6/8s", "--algorithm", "flöating"], ok.into(), 2, format!("invalid --algorithm: unknown algorithm \"flöating\"; {algorithms}")),
        ("markup algorithm",  vec!["--limit", "6/8s", "--algorithm", markup], ok.into(), 2, format!("invalid --algorithm: unknown algorithm \"{markup}\"; {algorithms}")),
        ("NaN time",          vec!["--limit", "6/8s"], "t_ms,cost\nNaN,1\n".into(), 1, t_ms("NaN")),
        ("Infinity time",     vec!["--limit", "6/8s"], "t_ms,cost\nInfinity,1\n".into(), 1, t_ms("Infinity")),
        ("fractional time",   vec!["--limit", "6/8s"], "t_ms,cost\n1.5,1\n".into(), 1, t_ms("1.5")),
        ("exponent time",     vec!["--limit", "6/8s"], "t_ms,cost\n1e3,1\n".into(), 1, t_ms("1e3")),
        ("empty time",        vec!["--limit", "6/8s"], "t_ms,cost\n,1\n".into(), 1, t_ms("")),
        ("non-ASCII time",    vec!["--limit", "6/8s"], "t_ms,cost\n５,1\n".into(), 1, t_ms("５")),
        ("markup time",       vec!["--limit", "6/8s"], format!("t_ms,cost\n{markup},1\n"), 1, t_ms(markup)),
        ("NaN cost",          vec!["--limit", "6/8s"], "t_ms,cost\n0,NaN\n".into(), 1, cost("NaN")),
        ("Infinity cost",     vec!["--limit", "6/8s"], "t_ms,cost\n0,Infinity\n".into(), 1, cost("Infinity")),
        ("cost beyond u64",   vec!["--limit", "6/8s"], "t_ms,cost\n0,18446744073709551616\n".into(), 1, cost("18446744073709551616")),
        ("fractional cost",   vec!["--limit", "6/8s"], "t_ms,cost\n0,0.5\n".into(), 1, cost("0.5")),
        ("non-ASCII cost",    vec!["--limit", "6/8s"], "t_ms,cost\n0,１\n".into(), 1, cost("１")),
        ("markup cost",       vec!["--limit", "6/8s"], format!("t_ms,cost\n0,{markup}\n"), 1, cost(markup)),
        ("NaN status",        vec!["--limit", "6/8s"], "t_ms,status\n0,NaN\n".into(), 1, status("NaN")),
        ("fractional status", vec!["--limit", "6/8s"], "t_ms,status\n0,200.0\n".into(), 1, status("200.0")),
        ("negative status",   vec!["--limit", "6/8s"], "t_ms,status\n0,-200\n".into(), 1, status("-200")),
        ("non-ASCII status",  vec!["--limit", "6/8s"], "t_ms,status\n0,２００\n".into(), 1, status("２００")),
        ("markup status",     vec!["--limit", "6/8s"], "t_ms,status\n0,<b>200</b>\n".into(), 1, status("<b>200</b>")),
        ("zero status",       vec!["--limit", "6/8s"], "t_ms,status\n0,0\n".into(), 1,
            "line 2: status 0 has no cost in ESI's table; expected an HTTP status from 200 to 599".into()),
        ("no cost column",    vec!["--limit", "6/8s"], "t_ms\n0\n".into(), 1, header("t_ms", "cost or status")),
        ("no t_ms column",    vec!["--limit", "6/8s"], "cost\n1\n".into(), 1, header("cost", "t_ms")),
        ("markup header",     vec!["--limit", "6/8s"], format!("{markup}\n0\n"), 1, header(markup, "t_ms")),
    ];
    for (case, args, input, code, message) in &cases {
        let mut argv = vec!["replay"];
        argv.extend(args);
        let run = trickle(&argv, input);
        assert_no_panic(&run, case);
        assert_eq!(run.code, *code, "{case}: exit code; stderr: {}", run.stderr);
        let expected = match code {
            2 => format!("trickle: {message}\nRun 'trickle --help' for the options, the input format and examples.\n"),
            _ => format!("trickle: {message}\n"),
        };
        assert_eq!(run.stderr, expected, "{case}");
        let header_read = *code == 1 && !message.starts_with("line 1:");
        let stdout = if header_read { csv(&[]) } else { String::new() };
        assert_eq!(run.stdout, stdout, "{case}");
    }
}

/// Whitespace around a limit and around values is not an error, and numbers beyond 2^53,
/// where a JavaScript number would round, are read exactly.
#[test]
fn whitespace_and_numbers_beyond_2_53_are_read_exactly() {
    let input = "t_ms,cost\n 9007199254740993 , 1 \n9007199254740993,9007199254740993\n";
    assert_replays(
        &["replay", "--limit", " 6/8s "],
        input,
        &[
            "9007199254740993,1,true,1.000,5,",
            "9007199254740993,9007199254740993,false,1.000,5,never",
        ],
        "whitespace and 2^53 + 1",
    );
}

// The csv crate places a record after blank lines on the first of them, and with CRLF
// endings every record after the header one line early; the messages must not.
#[test]
fn line_numbers_count_blank_lines_and_crlf() {
    #[rustfmt::skip]
    let cases = [
        ("CRLF", "t_ms,cost\r\n0,1\r\n1,1\r\nx,1\r\n", "line 4:"),
        ("blank lines between", "t_ms,cost\n0,1\n\n\n1,x\n", "line 5:"),
        ("blank lines before the header", "\n \nt_ms,cst\n", "line 3:"),
        ("CRLF and blank lines", "t_ms,cost\r\n\r\n5,1\r\n\r\n3,1\r\n",
            "line 5: t_ms 3 is earlier than 5 on line 3"),
        ("a quoted field over two lines", "t_ms,note,cost\n0,\"two\nlines\",1\n1,a,-1\n", "line 4:"),
        ("lone CR endings", "t_ms,cost\r0,1\rx,1\r", "line 3:"),
    ];
    for (case, input, expected) in cases {
        let run = trickle(&["replay", "--limit", "6/8s"], input);
        assert_eq!(run.code, 1, "{case}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(&format!("trickle: {expected}")),
            "{case}: {}",
            run.stderr
        );
    }
}

#[test]
fn invalid_utf8_names_the_line() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trickle"))
        .args(["replay", "--limit", "6/8s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"t_ms,cost\n0,1\n\n1,\xff\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "trickle: line 4: field 2 is not valid UTF-8; the log must be UTF-8 text\n"
    );
}

#[test]
fn rows_before_a_bad_line_are_written() {
    let run = trickle(
        &["replay", "--limit", "6/8s"],
        "t_ms,cost\n0,1\n10,2\n20,x\n30,1\n",
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        csv(&["0,1,true,1.000,5,", "10,2,true,3.000,3,"])
    );
    assert!(run.stderr.starts_with("trickle: line 4: cost \"x\""));
    assert!(
        !run.stderr.contains("replayed"),
        "no summary after an error"
    );

    // A bad header stops everything before the output's header.
    let run = trickle(&["replay", "--limit", "6/8s"], "time,cost\n0,1\n");
    assert_eq!((run.code, run.stdout.as_str()), (1, ""));
}

#[test]
fn a_closed_stdout_is_a_normal_end() {
    let mut input = String::from("t_ms,cost\n");
    for t in 0..200_000 {
        input.push_str(&format!("{t},1\n"));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_trickle"))
        .args(["replay", "--limit", "6/8s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let writer = thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    // Read as `head -n 1` would, then hang up.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, format!("{HEADER}\n"));
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[test]
fn input_from_a_file_or_dash() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/esi-burst.csv");
    let from_file = trickle(&["replay", "--limit", "6/8s", example], "");
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    let text = std::fs::read_to_string(example).unwrap();
    let from_dash = trickle(&["replay", "--limit", "6/8s", "-"], &text);
    let from_stdin = trickle(&["replay", "--limit", "6/8s"], &text);
    assert_eq!(from_file.stdout, from_dash.stdout);
    assert_eq!(from_file.stdout, from_stdin.stdout);

    // The example runs into the limit, is denied, and recovers: its last rows are allowed.
    let rows: Vec<&str> = from_file.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().any(|row| row.contains(",false,")));
    assert!(rows[rows.len() - 5..]
        .iter()
        .all(|row| row.contains(",true,")));

    let missing = trickle(&["replay", "--limit", "6/8s", "no/such/log.csv"], "");
    assert_eq!(missing.code, 1);
    assert!(
        missing
            .stderr
            .starts_with("trickle: cannot open \"no/such/log.csv\": "),
        "{}",
        missing.stderr
    );
}

#[test]
fn help_explains_it_all() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["replay", "--help"],
        &["replay", "--limit", "6/8x", "-h"],
        &["serve", "--help"],
        &["serve", "--listen", "nowhere", "-h"],
    ] {
        let run = trickle(args, "");
        assert_eq!(run.code, 0, "{args:?}");
        assert!(run.stderr.is_empty(), "{args:?}: {}", run.stderr);
        for text in [
            "floating",
            "sliding-log",
            "fixed",
            "token-bucket",
            HEADER,
            "t_ms,cost",
            "t_ms,status",
            "429",
            "never",
            "Exit codes",
            "trickle replay --limit",
            "--compare NAME",
            "reference_allowed,reference_used,disagreement",
            "wrongly-allowed",
            "wrongly-limited",
            "on the reference's history",
            "trickle serve --config FILE",
            "--listen ADDRESS",
            "listening on http://",
            "--on-failure open|closed",
            "X-Client-Id",
            "?status=NNN",
            "cors_origins",
            "[[group]]",
            "SIGTERM",
        ] {
            assert!(run.stdout.contains(text), "{args:?}: no {text:?}");
        }
    }
}

#[test]
fn the_help_example_is_what_the_binary_prints() {
    let help = trickle(&["--help"], "").stdout;
    let input = "t_ms,status\n0,200\n1000,200\n2000,404\n2500,429\n13000,200\n";
    let run = trickle(&["replay", "--limit", "6/8s"], input);
    for line in run.stdout.lines() {
        assert!(help.contains(&format!("  {line}\n")), "help lacks {line:?}");
    }
    // The summary is wider than the help: compared with its lines joined again.
    let squeeze = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    for line in run.stderr.lines() {
        assert!(
            squeeze(&help).contains(&squeeze(line)),
            "help lacks {line:?}"
        );
    }
}

/// The help's --compare example, its lines as wrapped in the help joined again.
#[test]
fn the_help_compare_example_is_what_the_binary_prints() {
    let squeeze = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = squeeze(&trickle(&["--help"], "").stdout);
    let run = trickle(
        &["replay", "--limit", "2/1s", "--compare", "sliding-log"],
        "t_ms,cost\n900,1\n950,1\n1500,1\n",
    );
    assert!(help.contains("trickle replay --limit 2/1s --compare sliding-log late.csv"));
    assert!(help.contains("printf 't_ms,cost\\n900,1\\n950,1\\n1500,1\\n' > late.csv"));
    for line in run.stdout.lines().chain(run.stderr.lines()) {
        assert!(help.contains(&squeeze(line)), "help lacks {line:?}");
    }
}

/// The help names every algorithm of the core, the default marked, each with its summary
/// (wrapped, so compared with the whitespace squeezed), the section no wider than 90.
#[test]
fn the_help_lists_the_cores_algorithms() {
    let squeeze = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let raw = trickle(&["--help"], "").stdout;
    let help = squeeze(&raw);
    assert!(help
        .contains("--algorithm NAME floating (the default), sliding-log, fixed or token-bucket."));
    for algorithm in trickle_core::Algorithm::ALL {
        let entry = format!("{} {}", algorithm.name(), algorithm.summary());
        assert!(help.contains(&squeeze(&entry)), "help lacks {entry:?}");
    }
    let section = &raw[raw.find("\nAlgorithms (").unwrap()..raw.find("\nExample:").unwrap()];
    let widest = section
        .lines()
        .map(|line| line.chars().count())
        .max()
        .unwrap();
    assert!(
        widest <= 90,
        "an Algorithms line is {widest} characters wide"
    );
}

#[test]
fn version() {
    let run = trickle(&["--version"], "");
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        format!("trickle {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// A HAR, as a browser's network panel exports it, out of order as a HAR may be, with an
/// entry that got no response. Sorted, relative to the earliest, 3/1s on the sliding log:
///
///   0     304, cost 1: 1 in use, 2 left
///   500   200, cost 2: 3 in use, 0 left
///   700   429, cost 0: always fits
///   800   200, cost 2: 3 + 2 > 3, denied until 500's tokens leave at 1500: retry 700
///   900   status 0 (blocked): left out
///   1100  404, cost 5 > 3: never; 0's token left at 1000, so 2 in use, 1 left
/// The third entry's time is written with an offset: 11:00:00.700+01:00 is 10:00:00.700Z.
#[test]
fn a_har_is_replayed_in_time_order_and_priced_by_status() {
    let entry = |started: &str, status: i64| {
        format!(
            r#"{{"startedDateTime": "{started}", "request": {{"method": "GET", "url": "https://esi.example/"}}, "response": {{"status": {status}}}}}"#
        )
    };
    let har = format!(
        r#"  {{"log": {{"version": "1.2", "entries": [{}, {}, {}, {}, {}, {}]}}}}"#,
        entry("2026-12-04T10:00:00.500Z", 200),
        entry("2026-12-04T10:00:00.000Z", 304),
        entry("2026-12-04T11:00:00.700+01:00", 429),
        entry("2026-12-04T10:00:00.800Z", 200),
        entry("2026-12-04T10:00:00.900Z", 0),
        entry("2026-12-04T10:00:01.100Z", 404),
    );
    let args = ["replay", "--limit", "3/1s", "--algorithm", "sliding-log"];
    let run = trickle(&args, &har);
    assert_no_panic(&run, "har");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        csv(&[
            "0,1,true,1.000,2,",
            "500,2,true,3.000,0,",
            "700,0,true,3.000,0,",
            "800,2,false,3.000,0,700",
            "1100,5,false,2.000,1,never",
        ])
    );
    assert_eq!(
        run.stderr,
        "replayed 5 requests against 3/1s (sliding-log): 3 allowed, 1 denied, 1 never fit; \
         first 429 at request 4, t_ms 800; longest wait 700 ms\n"
    );

    // From a file, as from stdin.
    let dir = std::env::temp_dir().join(format!("trickle-har-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.har");
    std::fs::write(&file, &har).unwrap();
    let from_file = trickle(&[&args[..], &[file.to_str().unwrap()]].concat(), "");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        (from_file.stdout, from_file.stderr),
        (run.stdout, run.stderr)
    );
}

#[test]
fn a_bad_har_names_the_entry() {
    #[rustfmt::skip]
    let cases = [
        ("not JSON", "{ \"log\": ",
            "line 1: the input starts with { but is not JSON, as a HAR is: EOF while parsing"),
        ("no entries", "{\"log\": {\"version\": \"1.2\"}}",
            "the input is JSON but not a HAR: it has no log.entries list; export the requests from the browser's network panel as HAR, or give a CSV log, t_ms,cost or t_ms,status"),
        ("a time that is not one", r#"{"log": {"entries": [{"startedDateTime": "2026-12-04T10:00:00Z", "response": {"status": 200}}, {"startedDateTime": "yesterday", "response": {"status": 200}}]}}"#,
            "entry 2: startedDateTime \"yesterday\" is not a date and time from 1970 on, as HAR writes it: 2026-12-04T16:55:28.123Z"),
        ("no status", r#"{"log": {"entries": [{"startedDateTime": "2026-12-04T10:00:00Z", "response": {}}]}}"#,
            "entry 1: no response.status; a HAR entry needs startedDateTime (a date and time) and response.status (a whole number)"),
        ("no time", r#"{"log": {"entries": [{"response": {"status": 200}}]}}"#,
            "entry 1: no startedDateTime; a HAR entry needs"),
        ("an unpriced status", r#"{"log": {"entries": [{"startedDateTime": "2026-12-04T10:00:00Z", "response": {"status": 101}}]}}"#,
            "entry 1: status 101 has no cost in ESI's table; expected an HTTP status from 200 to 599"),
    ];
    for (case, input, expected) in cases {
        let run = assert_refused(input, case, expected);
        // A HAR is read whole before any row: nothing on stdout.
        assert_eq!(run.stdout, "", "{case}");
    }
}

/// The example HAR, as docs/src/cli.md shows it: a burst that meets the limit at its fourth
/// request, a 304 (3 × 2 tokens in use, + 1 > 6), and an unanswered entry left out.
#[test]
fn the_example_har_replays_as_the_docs_say() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/browser-session.har"
    );
    let run = trickle(&["replay", "--limit", "6/8s", example], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "replayed 15 requests against 6/8s (floating): 10 allowed, 5 denied, 0 never fit; \
         first 429 at request 4, t_ms 260; longest wait 13767 ms\n"
    );
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/src/cli.md"
    ))
    .unwrap();
    assert!(docs.contains(run.stderr.trim_end()));
}

/// A policy of several limits: every row is the core's `PolicyLimiter` answer for that
/// request, the first columns of the limit nearest to refusing, then which limit refused
/// and each limit's own figures; and the summary names the policy.
#[test]
fn a_policy_replays_row_by_row_as_the_core_decides() {
    use trickle_core::{Algorithm, Outcome, Policy, PolicyLimiter};

    let text = "burst=4/1s 20/20s";
    let policy: Policy = text.parse().unwrap();
    // A seeded walk: bursts of requests a few ms apart, pauses, costs 1 to 3.
    let mut seed = 0x2545_f491_u64;
    let mut next = |bound: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % bound
    };
    let (mut log, mut t_ms, mut requests) = (String::from("t_ms,cost\n"), 0u64, Vec::new());
    for _ in 0..400 {
        t_ms += if next(8) == 0 {
            400 + next(3_000)
        } else {
            next(60)
        };
        let cost = 1 + next(3);
        log.push_str(&format!("{t_ms},{cost}\n"));
        requests.push((t_ms, cost));
    }
    for algorithm in Algorithm::ALL {
        let run = trickle(
            &["replay", "--limit", text, "--algorithm", algorithm.name()],
            &log,
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let mut rows = run.stdout.lines();
        assert_eq!(
            rows.next(),
            Some(
                "t_ms,cost,allowed,used,remaining,retry_after_ms,answered_by,\
                 used:burst,remaining:burst,next_token_ms:burst,\
                 used:20/20s,remaining:20/20s,next_token_ms:20/20s"
            )
        );
        let mut core = PolicyLimiter::with_algorithm(algorithm, policy.clone());
        let (mut allowed, mut by_burst, mut by_longer) = (0, 0, 0);
        for (&(t_ms, cost), row) in requests.iter().zip(rows.by_ref()) {
            let answer = core.hit(t_ms, cost);
            let nearest = answer.decisions()[answer.nearest()];
            let wait = match nearest.outcome {
                Outcome::Allowed => String::new(),
                Outcome::Denied { retry_after_ms } => retry_after_ms.to_string(),
                Outcome::ExceedsLimit => "never".to_string(),
            };
            let mut expected = format!(
                "{t_ms},{cost},{},{},{},{wait},{}",
                answer.is_allowed(),
                nearest.used,
                nearest.remaining(),
                answer.answered_by().map_or("", |index| policy.name(index)),
            );
            for (index, own) in answer.decisions().iter().enumerate() {
                let next = answer
                    .next_token_ms(index)
                    .map_or(String::new(), |ms| ms.to_string());
                expected.push_str(&format!(",{},{},{next}", own.used, own.remaining()));
            }
            assert_eq!(row, expected, "{algorithm:?} at {t_ms} ms");
            allowed += usize::from(answer.is_allowed());
            by_burst += usize::from(answer.answered_by() == Some(0));
            by_longer += usize::from(answer.answered_by() == Some(1));
        }
        assert_eq!(rows.next(), None, "one row per request");
        // The walk meets both limits.
        assert!(
            by_burst > 0 && by_longer > 0 && allowed > 0,
            "{algorithm:?}: {allowed} allowed, refused {by_burst} by the burst and \
             {by_longer} by the longer limit"
        );
        assert!(
            run.stderr.starts_with(&format!(
                "replayed 400 requests against {text} ({}): {allowed} allowed",
                algorithm.name()
            )),
            "{}",
            run.stderr
        );
    }
}

/// The policy example of docs/src/cli.md, rows and summary, as the binary writes them.
#[test]
fn the_policy_example_replays_as_the_docs_say() {
    let log = "t_ms,cost\n0,1\n100,1\n200,1\n1000,1\n1100,1\n2000,1\n";
    let args = [
        "replay",
        "--limit",
        "burst=2/1s 4/1h",
        "--algorithm",
        "fixed",
    ];
    let run = trickle(&args, log);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/src/cli.md"
    ))
    .unwrap();
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert!(docs.contains(shown.trim_end()), "{shown}");
}
