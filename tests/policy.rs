//! A policy of several limits against its limits decided one by one, on random traces for
//! every algorithm: the policy allows a request exactly when every limit, fed the same
//! history, would; a refusal spends in no limit; its Retry-After is the first
//! moment every limit has room; and a policy of one limit is that limit.
// proptest has no random source on wasm32; these run natively only.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::thread;

use trickle_core::state::AnyState;
use trickle_core::{
    Algorithm, ConcurrentKeyedPolicyLimiter, KeyedPolicyLimiter, Limit, Limiter, Op, Outcome,
    Policy, PolicyDecision, PolicyError, PolicyLimiter, PolicyStore, Reservation,
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

    /// Each limit's `next_token_ms` (the IETF field's `t`) is exact: when nothing more is
    /// spent, that limit has room for one whole token more than it had left at that moment,
    /// and not 1 ms before it; `None` only for a limit with every token free.
    #[test]
    fn more_room_comes_exactly_when_next_token_ms_says(algorithm in algorithm(), limits in limits(), trace in trace()) {
        let mut policy = PolicyLimiter::with_algorithm(algorithm, Policy::new(limits).unwrap());
        let mut now = 0u64;
        for request in trace {
            now = now_after(now, request.step);
            let decision = match request.action {
                Action::Peek => policy.peek(now, request.cost),
                Action::Record => policy.record(now, request.cost),
                _ => policy.hit(now, request.cost),
            };
            for (index, own) in decision.decisions().iter().enumerate() {
                let (at, remaining) = (own.at_ms, own.remaining());
                let tokens = own.limit.tokens();
                match decision.next_token_ms(index) {
                    None => prop_assert_eq!(remaining, tokens, "limit {} has tokens out", index),
                    Some(wait) => {
                        prop_assert!(remaining < tokens && wait >= 1);
                        let room = |t: u64| policy.peek(t, 0).decisions()[index].remaining();
                        prop_assert_eq!(room(at + wait - 1), remaining, "limit {} early", index);
                        prop_assert!(room(at + wait) > remaining, "limit {} at its time", index);
                    }
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

/// The rule every store must follow, written with one `PolicyLimiter` per key: the clock
/// is shared by all keys (a key is decided at the latest time any request brought, and
/// told its wait from its own time), and a key dropped while idle decides as a fresh one.
struct Model {
    algorithm: Algorithm,
    policy: Policy,
    keys: HashMap<u8, PolicyLimiter>,
    latest: u64,
}

impl Model {
    fn decide(&mut self, key: u8, op: Op, now: u64, cost: u64) -> PolicyDecision {
        let at = match op {
            Op::Peek => self.latest.max(now),
            _ => {
                self.latest = self.latest.max(now);
                self.latest
            }
        };
        let (algorithm, policy) = (self.algorithm, &self.policy);
        let bucket = self
            .keys
            .entry(key)
            .or_insert_with(|| PolicyLimiter::with_algorithm(algorithm, policy.clone()));
        let decided = bucket.decide(op, at, cost);
        // Told in the caller's time: a wait counts from `now`, `at − now` before `at`.
        let decisions = decided
            .decisions()
            .iter()
            .map(|&decision| {
                let mut told = decision;
                if let Outcome::Denied { retry_after_ms } = &mut told.outcome {
                    *retry_after_ms += at - now;
                }
                told
            })
            .collect();
        let next_token_ms = (0..self.policy.len())
            .map(|index| decided.next_token_ms(index).map(|ms| ms + (at - now)))
            .collect();
        PolicyDecision::new(decisions, next_token_ms)
    }
}

/// Runs `trace` over three keys through `store` and the model, comparing every decision.
fn store_decides_as_the_model<S: PolicyStore<u8>>(
    store: &mut S,
    algorithm: Algorithm,
    trace: &[(Request, u8)],
) -> Result<(), TestCaseError>
where
    S::Error: std::fmt::Debug,
{
    let mut model = Model {
        algorithm,
        policy: store.policy().clone(),
        keys: HashMap::new(),
        latest: 0,
    };
    let mut now = 0u64;
    for (i, &(request, key)) in trace.iter().enumerate() {
        now = now_after(now, request.step);
        let cost = request.cost;
        let ops = match request.action {
            Action::Hit => vec![(Op::Hit, cost)],
            Action::Peek => vec![(Op::Peek, cost)],
            Action::Record => vec![(Op::Record, cost)],
            Action::ReserveSettle(final_cost) => {
                let reserve = Op::Reserve { ticket: i as u64 };
                let reserved = model.decide(key, reserve, now, cost);
                let got = store.decide(&key, reserve, now, cost).unwrap();
                prop_assert_eq!(&got, &reserved, "reserve {} of key {}", i, key);
                if !got.is_allowed() {
                    continue;
                }
                let at = now.max(model.latest);
                let reservation = Reservation::from_parts(at, cost, i as u64);
                vec![(Op::settle(reservation), final_cost)]
            }
        };
        for (op, cost) in ops {
            let want = model.decide(key, op, now, cost);
            let got = store.decide(&key, op, now, cost).unwrap();
            prop_assert_eq!(&got, &want, "{:?} {} of key {} at {} ms", op, i, key, now);
        }
    }
    Ok(())
}

fn keyed_trace() -> impl Strategy<Value = Vec<(Request, u8)>> {
    trace().prop_flat_map(|requests| {
        let len = requests.len();
        (Just(requests), prop::collection::vec(0u8..3, len))
            .prop_map(|(requests, keys)| requests.into_iter().zip(keys).collect())
    })
}

proptest! {
    #![proptest_config(config(200))]

    /// The keyed stores decide every key as a `PolicyLimiter` of its own would, on the
    /// clock all keys share; through the `PolicyStore` trait.
    #[test]
    fn every_store_decides_each_key_as_the_policy_does(
        algorithm in algorithm(),
        limits in limits(),
        trace in keyed_trace(),
        shards in 1usize..=3,
    ) {
        let policy = Policy::new(limits).unwrap();
        let mut keyed: KeyedPolicyLimiter<u8, AnyState> =
            KeyedPolicyLimiter::with_state(policy.clone(), AnyState::new(algorithm));
        store_decides_as_the_model(&mut keyed, algorithm, &trace)?;
        let shared: ConcurrentKeyedPolicyLimiter<u8, AnyState> =
            ConcurrentKeyedPolicyLimiter::with_state_and_shards(
                policy,
                AnyState::new(algorithm),
                NonZeroUsize::new(shards).unwrap(),
            );
        store_decides_as_the_model(&mut &shared, algorithm, &trace)?;
    }
}

/// Real threads at once on a frozen clock: each key lets in exactly as many unit requests as
/// its tightest limit holds, however the threads interleave, and refuses the rest with the
/// answer of that limit.
#[test]
fn threads_at_once_get_exactly_the_tightest_limit_in() {
    for algorithm in Algorithm::ALL {
        let policy: Policy = "7/1s 5/1m 9/1h".parse().unwrap();
        let limiter: ConcurrentKeyedPolicyLimiter<u8, AnyState> =
            ConcurrentKeyedPolicyLimiter::with_state_and_shards(
                policy,
                AnyState::new(algorithm),
                NonZeroUsize::new(2).unwrap(),
            );
        let threads = thread::available_parallelism()
            .map_or(2, |n| n.get())
            .max(4);
        let answers: Vec<(u8, PolicyDecision)> = thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let limiter = &limiter;
                    scope.spawn(move || {
                        (0..24u8)
                            .map(|i| {
                                let key = (i + t as u8) % 3;
                                (key, limiter.hit(key, 1_000, 1))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|handle| handle.join().unwrap())
                .collect()
        });
        for key in 0..3u8 {
            let of_key: Vec<_> = answers.iter().filter(|(k, _)| *k == key).collect();
            let allowed = of_key.iter().filter(|(_, d)| d.is_allowed()).count();
            assert_eq!(allowed, 5, "{algorithm}: key {key}");
            for (_, refused) in of_key.iter().filter(|(_, d)| !d.is_allowed()) {
                assert_eq!(refused.answered_by(), Some(1), "{algorithm}: key {key}");
            }
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
    let cases: [(&str, &str); 8] = [
        (
            "",
            "limit \"\" has no '/'; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m",
        ),
        (
            // One limit meant, and its own error, not that of a policy of "6" and "/8s".
            "6 /8s",
            "limit \"6 /8s\": tokens \"6 \" is not a whole number from 1 to 18446744073709551615; write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m",
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

/// A capped concurrent store turns a new key's hit away while its shard is full of keys
/// that still count, says when the next sweep may make room, lets a record land, and takes
/// the new key once the others have gone idle.
#[test]
fn a_capped_store_turns_new_keys_away_until_old_ones_go_idle() {
    let policy: Policy = "2/1s 3/4s".parse().unwrap();
    let store: ConcurrentKeyedPolicyLimiter<String, AnyState> =
        ConcurrentKeyedPolicyLimiter::with_state_and_shards(
            policy,
            AnyState::new(Algorithm::SlidingLog),
            NonZeroUsize::MIN,
        )
        .with_max_keys(NonZeroUsize::new(2).unwrap());
    assert_eq!(store.max_keys(), Some(2));
    assert!(store.try_decide("a", Op::Hit, 100, 1).unwrap().is_allowed());
    assert!(store.try_decide("b", Op::Hit, 200, 1).unwrap().is_allowed());
    let full = store.try_decide("c", Op::Hit, 1_000, 1).unwrap_err();
    assert_eq!((full.max_keys, full.retry_after_ms), (2, 3_000));
    // Through the infallible API, the same refusal is a denial with that wait.
    let denied = store.hit("c".to_string(), 1_000, 1);
    assert_eq!(denied.retry_after_ms(), Some(3_000));
    // A charge for a request already answered lands, full or not.
    assert!(store.try_decide("d", Op::Record, 1_000, 1).is_ok());
    assert_eq!(store.len(), 3);
    // At 4.3 s the first window of the longest limit is over: a and b hold nothing and are
    // dropped; d, charged at 1 s, still counts and is kept.
    assert!(store
        .try_decide("c", Op::Hit, 4_300, 1)
        .unwrap()
        .is_allowed());
    assert_eq!(store.len(), 2);
}
