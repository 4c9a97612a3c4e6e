//! Shadow mode through real HTTP on 127.0.0.1: every request reaches the handler, and the
//! requests it marks as would-be refusals are exactly those a normal layer over an
//! identical bucket refuses, request for request, with the same counts in the headers.

mod support;

use std::future::Future;

use support::{runtime, serve, Answer};
use trickle_core::{Algorithm, FloatingWindow, Op, Policy, PolicyDecision};
use trickle_tower::{Backend, InProcess, OnFailure};

fn backend(algorithm: Algorithm, limit: &str) -> InProcess {
    InProcess::new().with_group("fitting", algorithm, limit.parse().unwrap())
}

/// Not 429: a handler's own 429 would look like the layer's.
const STATUSES: [u16; 12] = [200, 200, 404, 304, 503, 200, 201, 400, 200, 302, 200, 500];

/// Two servers on identical buckets and clocks, one normal and one in shadow mode, asked
/// the same 160 requests on two keys at irregular times (bursts and pauses of most of a
/// window), for each algorithm. The shadow server answers every one from its handler; it
/// marks exactly the requests the normal one refuses, with the wait that 429 gave; every
/// other header is the same on both, so its bucket went exactly as the normal one's.
#[test]
fn shadow_mode_admits_every_request_and_marks_exactly_what_a_normal_layer_refuses() {
    for algorithm in Algorithm::ALL {
        let limit = "12/10s";
        let normal = serve(runtime(), backend(algorithm, limit), 0, |layer| layer);
        let shadow = serve(runtime(), backend(algorithm, limit), 0, |layer| {
            layer.shadow(true)
        });
        let (mut refused, mut marked) = (0, 0);
        let mut now_ms = 0;
        for step in 0..160u64 {
            now_ms += (step * step * 37 + step * 11) % 2_300;
            normal.set_time(now_ms);
            shadow.set_time(now_ms);
            let status = STATUSES[(step as usize * 7) % STATUSES.len()];
            let path = format!("/status/{status}");
            let client = format!("key-{}", u8::from(step % 3 == 0));
            let context = format!("{algorithm} step {step} at {now_ms} ms, status {status}");

            let expected = normal.get(&path, Some(&client), None);
            let seen = shadow.get(&path, Some(&client), None);
            assert_eq!(seen.status, status, "the handler answered: {context}");
            assert_eq!(seen.limit, expected.limit, "{context}");
            assert_eq!(seen.group, expected.group, "{context}");
            assert_eq!(seen.remaining, expected.remaining, "{context}");
            assert_eq!(seen.used, expected.used, "{context}");
            assert_eq!(
                seen.retry_after, None,
                "no Retry-After on an answer: {context}"
            );
            if expected.status == 429 {
                refused += 1;
                let wait = expected
                    .retry_after
                    .as_deref()
                    .expect("a 429's Retry-After");
                assert_eq!(
                    seen.shadow.as_deref(),
                    Some(format!("would-refuse;reason=limit;retry-after={wait}").as_str()),
                    "{context}"
                );
            } else {
                assert_eq!(expected.status, status, "{context}");
                assert_eq!(seen.shadow, None, "{context}");
            }
            marked += usize::from(seen.shadow.is_some());
        }
        assert_eq!(marked, refused, "{algorithm}");
        assert!(
            (5..150).contains(&refused),
            "{algorithm}: the run must refuse some and admit some, refused {refused}"
        );
        assert_eq!(
            shadow.calls(),
            160,
            "{algorithm}: shadow mode runs every handler"
        );
        assert_eq!(normal.calls(), 160 - refused, "{algorithm}");
    }
}

/// Shadow mode over a spent budget of free answers: the request goes through, marked with
/// reason `free_runs` and the budget's wait, and charged nowhere, as its 429 would have
/// been: the bucket is not asked (no count in the headers) and the budget is not spent
/// further, so a normal layer beside it refuses exactly the same requests later.
#[test]
fn shadow_mode_lets_a_spent_budget_through_marked_and_charged_nowhere() {
    let budget = "3/1m".parse().unwrap();
    // The budget is a floating window: three runs at 0 ms fade over the next window, and
    // one fits again once 3 × overlap ≤ 2, a third into it.
    let mut model = FloatingWindow::new(budget);
    model.record(0, 3);
    let wait_s = model.peek(0, 1).retry_after_s().expect("a run fits later");
    assert_eq!(wait_s, 80);
    let normal = serve(
        runtime(),
        backend(Algorithm::Floating, "100/1h"),
        0,
        |layer| layer.free_runs(budget),
    );
    let shadow = serve(
        runtime(),
        backend(Algorithm::Floating, "100/1h"),
        0,
        |layer| layer.free_runs(budget).shadow(true),
    );
    let ask = |server: &support::Server, status: u16| -> Answer {
        server.get(&format!("/status/{status}"), Some("a"), None)
    };
    // Three free answers spend the budget; a fourth and a paying one would be refused.
    for status in [500, 503, 500, 500, 200] {
        let (expected, seen) = (ask(&normal, status), ask(&shadow, status));
        assert_eq!(seen.status, status);
        assert_eq!(seen.remaining, expected.remaining, "status {status}");
        if expected.status == 429 {
            assert_eq!(expected.remaining, None, "the bucket was not asked");
            assert_eq!(expected.retry_after, Some(wait_s.to_string()));
            assert!(expected.body.contains("budget"), "{}", expected.body);
            assert_eq!(
                seen.shadow,
                Some(format!(
                    "would-refuse;reason=free_runs;retry-after={wait_s}"
                ))
            );
        } else {
            assert_eq!(seen.shadow, None);
        }
    }
    assert_eq!((normal.calls(), shadow.calls()), (3, 5));
    // When one run has faded, one fits on both: had shadow mode charged the two it let
    // through, 5 × 2/3 would still be in use and none would.
    for server in [&normal, &shadow] {
        server.set_time(wait_s * 1_000);
    }
    assert_eq!(ask(&normal, 500).status, 500);
    let seen = ask(&shadow, 500);
    assert_eq!((seen.status, seen.shadow), (500, None));
    assert_eq!(ask(&normal, 500).status, 429);
    assert!(ask(&shadow, 500).shadow.is_some());
}

/// A store that is always away.
struct Away(InProcess);

impl Backend for Away {
    type Error = std::io::Error;

    fn policy(&self, group: &str) -> Option<&Policy> {
        self.0.policy(group)
    }

    fn decide(
        &self,
        _: &str,
        _: &str,
        _: Op,
        _: u64,
        _: u64,
    ) -> impl Future<Output = Result<PolicyDecision, std::io::Error>> + Send {
        std::future::ready(Err(std::io::Error::other("the store is away")))
    }
}

/// Shadow mode refuses nothing, not even the 503 that failing closed would give while the
/// store is away: the request goes through, as failing open lets it.
#[test]
fn shadow_mode_fails_open_whatever_the_rule() {
    let closed = serve(
        runtime(),
        Away(backend(Algorithm::Floating, "6/8s")),
        0,
        |layer| layer.on_failure(OnFailure::Closed),
    );
    assert_eq!(closed.get("/status/200", Some("a"), None).status, 503);
    let shadow = serve(
        runtime(),
        Away(backend(Algorithm::Floating, "6/8s")),
        0,
        |layer| layer.on_failure(OnFailure::Closed).shadow(true),
    );
    let answer = shadow.get("/status/200", Some("a"), None);
    assert_eq!(
        (answer.status, answer.limit.as_deref()),
        (200, Some("6/8s"))
    );
    assert_eq!((answer.remaining, answer.shadow), (None, None));
    assert_eq!((closed.calls(), shadow.calls()), (0, 1));
}

/// Off, the default, the layer refuses as it always has.
#[test]
fn shadow_mode_is_off_by_default() {
    let server = serve(
        runtime(),
        backend(Algorithm::Floating, "1/1h"),
        0,
        |layer| layer,
    );
    assert_eq!(server.get("/status/200", Some("a"), None).status, 200);
    let refused = server.get("/status/200", Some("a"), None);
    assert_eq!((refused.status, refused.shadow), (429, None));
    assert_eq!(server.calls(), 1);
}
