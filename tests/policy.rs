//! A policy of several limits against its limits decided one by one, on random traces for
//! every algorithm: the policy allows a request exactly when every limit, fed the same
//! history, would; a refusal spends in no limit; its Retry-After is the first
//! moment every limit has room; and a policy of one limit is that limit.
// proptest has no random source on wasm32; these run natively only.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use trickle_core::{
    Algorithm, Limit, Limiter, Op, Outcome, Policy, PolicyError, PolicyLimiter, Reservation,
};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/policy.txt",
        ))),
        ..ProptestConfig::default()
    }
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Hit,
    Peek,
    Record,
    /// A reserve, settled at once at another cost if it was allowed.
    ReserveSettle(u64),
}

#[derive(Debug, Clone, Copy)]
struct Request {
    /// How far the clock moves first; a backwards step is a clock that went back.
    step: i64,
    cost: u64,
    action: Action,
}

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

/// 1 to 3 limits of small numbers, so that traces meet every limit's edge.
fn limits() -> impl Strategy<Value = Vec<Limit>> {
    prop::collection::vec(
        (1u64..=8, 1u64..=5_000).prop_map(|(tokens, window)| Limit::new(tokens, window).unwrap()),
        1..=3,
    )
    .prop_filter("names are the limits' text: no two alike", |limits| {
        limits
            .iter()
            .enumerate()
            .all(|(i, limit)| !limits[..i].contains(limit))
    })
}

fn trace() -> impl Strategy<Value = Vec<Request>> {
    let action = prop_oneof![
        6 => Just(Action::Hit),
        1 => Just(Action::Peek),
        1 => Just(Action::Record),
        2 => (0u64..=4).prop_map(Action::ReserveSettle),
    ];
    let step = prop_oneof![8 => 0i64..=1_500, 1 => -300i64..0, 1 => 0i64..=20_000];
    prop::collection::vec(
        (step, 0u64..=9, action).prop_map(|(step, cost, action)| Request { step, cost, action }),
        1..120,
    )
}

fn now_after(now: u64, step: i64) -> u64 {
    now.saturating_add_signed(step)
}

proptest! {
    #![proptest_config(config(400))]

    /// The policy's answer is the conjunction of its limits' answers, each limit kept as
    /// if it saw only what the policy let through and what it refused itself; a refusal
    /// spends in no limit.
    #[test]
    fn a_policy_decides_as_its_limits_do_together(algorithm in algorithm(), limits in limits(), trace in trace()) {
        let mut policy = PolicyLimiter::with_algorithm(algorithm, Policy::new(limits.clone()).unwrap());
        let mut alone: Vec<Limiter> = limits.iter().map(|&limit| Limiter::with_algorithm(algorithm, limit)).collect();
        let mut now = 0u64;
        for request in trace {
            now = now_after(now, request.step);
            let cost = request.cost;
            match request.action {
                Action::Peek => {
                    let decision = policy.peek(now, cost);
                    let each: Vec<_> = alone.iter().map(|limiter| limiter.peek(now, cost)).collect();
                    prop_assert_eq!(decision.decisions(), &each[..]);
                }
                Action::Record => {
                    let decision = policy.record(now, cost);
                    let each: Vec<_> = alone.iter_mut().map(|limiter| limiter.record(now, cost)).collect();
                    prop_assert_eq!(decision.decisions(), &each[..]);
                    prop_assert!(decision.is_allowed());
                }
                Action::Hit | Action::ReserveSettle(_) => {
                    let before = policy.clone();
                    let fits_each = alone.iter().all(|limiter| limiter.peek(now, cost).is_allowed());
                    let op = match request.action {
                        Action::Hit => Op::Hit,
                        _ => Op::Reserve { ticket: 7 },
                    };
                    let decision = policy.decide(op, now, cost);
                    prop_assert_eq!(decision.is_allowed(), fits_each);
                    if !fits_each {
                        // What a refusal does to a limit alone, it does to the limits that
                        // refused; the others never see the request.
                        for (limiter, own) in alone.iter_mut().zip(decision.decisions()) {
                            if !own.is_allowed() {
                                prop_assert_eq!(&limiter.hit(now, cost), own);
                            }
                        }
                    }
                    if fits_each {
                        let each: Vec<_> = alone.iter_mut().map(|limiter| limiter.hit(now, cost)).collect();
                        prop_assert_eq!(decision.decisions(), &each[..]);
                        if let Action::ReserveSettle(final_cost) = request.action {
                            // A reservation is settled once; the model's limiters each hold
                            // their own of the same parts.
                            let reservation = || Reservation::from_parts(now, cost, 7);
                            let settled = policy.decide(Op::settle(reservation()), now, final_cost);
                            let each: Vec<_> = alone
                                .iter_mut()
                                .map(|limiter| limiter.settle(reservation(), now, final_cost))
                                .collect();
                            prop_assert_eq!(settled.decisions(), &each[..]);
                        }
                    } else {
                        prop_assert_eq!(decision.status(), 429);
                        // Nothing was spent anywhere: at the refusal's own time, every limit
                        // answers any request as it did before it.
                        for probe in 0..=9 {
                            prop_assert_eq!(policy.peek(now, probe), before.peek(now, probe));
                        }
                    }
                }
            }
        }
    }

    /// A refused request's Retry-After is exact: at `now + retry_after_ms` it fits every
    /// limit, 1 ms earlier some limit still refuses it, and the limit the policy names as
    /// the one that answered is one that refuses it then.
    #[test]
    fn a_refusal_waits_until_every_limit_has_room(algorithm in algorithm(), limits in limits(), trace in trace()) {
        let mut policy = PolicyLimiter::with_algorithm(algorithm, Policy::new(limits).unwrap());
        let mut now = 0u64;
        for request in trace {
            now = now_after(now, request.step);
            let decision = policy.hit(now, request.cost);
            match decision.outcome() {
                Outcome::Allowed => prop_assert!(decision.decisions().iter().all(|d| d.is_allowed())),
                Outcome::ExceedsLimit => {
                    let index = decision.answered_by().unwrap();
                    prop_assert!(request.cost > policy.policy().limit(index).unwrap().tokens());
                }
                Outcome::Denied { retry_after_ms } => {
                    prop_assert!(policy.peek(now + retry_after_ms, request.cost).is_allowed());
                    let early = policy.peek(now + retry_after_ms - 1, request.cost);
                    prop_assert!(!early.is_allowed());
                    let index = decision.answered_by().unwrap();
                    prop_assert!(!early.decisions()[index].is_allowed());
                }
            }
        }
    }

    /// A policy of one limit answers exactly as that limit alone, every field.
    #[test]
    fn a_policy_of_one_limit_is_that_limit(algorithm in algorithm(), limits in limits(), trace in trace()) {
        let limit = limits[0];
        let mut policy = PolicyLimiter::with_algorithm(algorithm, Policy::single(limit));
        let mut alone = Limiter::with_algorithm(algorithm, limit);
        let mut now = 0u64;
        for request in trace {
            now = now_after(now, request.step);
            let (decision, expected) = match request.action {
                Action::Peek => (policy.peek(now, request.cost), alone.peek(now, request.cost)),
                Action::Record => (policy.record(now, request.cost), alone.record(now, request.cost)),
                _ => (policy.hit(now, request.cost), alone.hit(now, request.cost)),
            };
            prop_assert_eq!(decision.decisions(), &[expected][..]);
            prop_assert_eq!(decision.outcome(), expected.outcome);
            prop_assert_eq!(decision.remaining(), expected.remaining());
        }
    }
}

#[test]
fn a_policy_is_written_as_apis_publish_it() {
    let policy: Policy = " burst=10/1s,  1000/1h\tday=5000/24h ".parse().unwrap();
    assert_eq!(policy.to_string(), "burst=10/1s 1000/1h day=5000/24h");
    assert_eq!(
        policy.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        ["burst", "1000/1h", "day"]
    );
    assert_eq!(
        policy.limit(2),
        Some(Limit::new(5_000, 86_400_000).unwrap())
    );
    assert_eq!(policy.to_string().parse::<Policy>(), Ok(policy));
}

#[test]
fn a_bad_policy_says_what_is_wrong_and_what_is_allowed() {
    let cases: [(&str, &str); 7] = [
        (
            "",
            "a policy needs at least one limit; write one or more limits separated by spaces, each TOKENS/WINDOW or NAME=TOKENS/WINDOW, as in 10/1s 1000/1h",
        ),
        (
            "10/1s 1000/1x",
            "limit 2 of the policy: limit \"1000/1x\": unknown unit \"x\"; the unit must be ms, s, m or h, as in 6/8s",
        ),
        (
            "10/1s 10/1s",
            "two limits named \"10/1s\" in one policy; give each limit its own name, as in burst=10/1s",
        ),
        (
            "a=1/1s a=2/1m",
            "two limits named \"a\" in one policy; give each limit its own name, as in burst=10/1s",
        ),
        (
            "Burst=10/1s",
            "limit name \"Burst\" must be 1 to 32 characters of a-z, 0-9, _, - and ., starting with a letter",
        ),
        (
            "=10/1s",
            "limit name \"\" must be 1 to 32 characters of a-z, 0-9, _, - and ., starting with a letter",
        ),
        (
            "1/1s 2/1s 3/1s 4/1s 5/1s 6/1s 7/1s 8/1s 9/1s",
            "a policy holds at most 8 limits",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(
            text.parse::<Policy>().unwrap_err().to_string(),
            message,
            "{text:?}"
        );
    }
    assert_eq!(Policy::new([]), Err(PolicyError::Empty));
    assert!(matches!(
        Policy::named([("no spaces", Limit::new(1, 1).unwrap())]),
        Err(PolicyError::BadName { .. })
    ));
}
