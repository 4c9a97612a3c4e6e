//! The policy parity check shared by policy.rs (one redis-server) and cluster.rs (a Redis
//! Cluster): random policies of one to three limits and random traces of peeks, hits,
//! records, reserves and their settles, run through the core's `PolicyLimiter` and through
//! Redis, must give the same `PolicyDecision`, and write only what policy.rs's header says.

#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use redis::{Commands, ConnectionLike};
use trickle_core::flow::policy_reservation;
use trickle_core::state::AnyState;
use trickle_core::{
    Algorithm, Decision, Limit, Op, Policy, PolicyDecision, PolicyLimiter, Reservation,
};
use trickle_redis::{RedisError, RedisLimiter, RedisPolicyLimiter, EXPIRY_GRACE_MS, MAX_TIME_MS};

use crate::common::{self, hold_still, past_exact_range, pttl};
use crate::traces::{
    check_log_layout, cost, counts_ms, final_cost, limit, next_ms, record_cost, start_ms, step,
    Final, Step,
};

#[derive(Debug, Clone, Copy)]
enum Action {
    /// A peek alone.
    Peek(u64),
    /// A peek, then a hit of the same cost.
    Hit(u64),
    /// A record: charged to every limit whether it fits or not.
    Record(u64),
    /// A reserve; when admitted, its reservation is open until settled.
    Reserve(u64),
    /// Settles one of the open reservations (`pick` modulo how many are open), or does
    /// nothing when none is; `twice` sends the same settle again at once.
    Settle {
        pick: usize,
        final_cost: Final,
        twice: bool,
    },
}

/// Costs around any one limit's N, so that one limit refuses while another has room.
fn action(tokens: Vec<u64>) -> impl Strategy<Value = Action> {
    prop::sample::select(tokens).prop_flat_map(|tokens| {
        prop_oneof![
            1 => cost(tokens).prop_map(Action::Peek),
            3 => cost(tokens).prop_map(Action::Hit),
            1 => record_cost(tokens).prop_map(Action::Record),
            3 => cost(tokens).prop_map(Action::Reserve),
            3 => (any::<usize>(), final_cost(tokens), prop::bool::weighted(0.25)).prop_map(
                |(pick, final_cost, twice)| Action::Settle {
                    pick,
                    final_cost,
                    twice,
                }
            ),
        ]
    })
}

/// One to three limits, each as parity.rs draws them (small ones mostly, some at the
/// algorithm's bound), named by their text or by names given.
fn policy(algorithm: Algorithm) -> impl Strategy<Value = Policy> {
    (
        prop::collection::vec(limit(algorithm), 1..=3),
        any::<bool>(),
    )
        .prop_filter_map("two limits alike need names", |(limits, named)| {
            if named {
                let names = limits
                    .iter()
                    .enumerate()
                    .map(|(i, &limit)| (format!("l{i}"), limit));
                Policy::named(names).ok()
            } else {
                Policy::new(limits).ok()
            }
        })
}

#[derive(Debug, Clone)]
struct Trace {
    policy: Policy,
    start_ms: u64,
    /// How time moves before each step, by the window of one of the limits (so that the
    /// trace meets every limit's edges), and the step.
    steps: Vec<(u64, Step, Action)>,
}

fn trace(algorithm: Algorithm) -> impl Strategy<Value = Trace> {
    policy(algorithm).prop_flat_map(|policy| {
        let windows: Vec<u64> = policy.limits().map(|limit| limit.window_ms()).collect();
        let tokens: Vec<u64> = policy.limits().map(|limit| limit.tokens()).collect();
        let moves = prop::sample::select(windows.clone())
            .prop_flat_map(|window_ms| (Just(window_ms), step(window_ms)));
        let steps = prop::collection::vec(
            (moves, action(tokens))
                .prop_map(|((window_ms, step), action)| (window_ms, step, action)),
            1..=40,
        );
        (Just(policy), start_ms(windows[0]), steps).prop_map(|(policy, start_ms, steps)| Trace {
            policy,
            start_ms,
            steps,
        })
    })
}

/// What Redis holds for one limit of a key: its hash, and for the sliding log its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    hash: HashMap<String, String>,
    entries: Vec<String>,
}

fn held_at(conn: &mut impl ConnectionLike, keys: &[String]) -> Held {
    let entries = match keys.get(1) {
        Some(log) => conn.lrange(log, 0, -1).expect("LRANGE"),
        None => Vec::new(),
    };
    Held {
        hash: crate::common::stored(conn, &keys[0]),
        entries,
    }
}

/// Every limit's, in the policy's order.
fn held(conn: &mut impl ConnectionLike, redis: &RedisPolicyLimiter, key: &str) -> Vec<Held> {
    (0..redis.policy().len())
        .map(|index| held_at(conn, &redis.limit_keys(key, index)))
        .collect()
}

/// One case: the policy on Redis, and beside a policy of one limit a `RedisLimiter` of that
/// limit on the same key under its own prefix, which must answer and store exactly the same.
struct Case<'a, C> {
    conn: &'a mut C,
    redis: RedisPolicyLimiter,
    single: Option<RedisLimiter>,
    key: String,
}

impl<C: ConnectionLike> Case<'_, C> {
    fn decide(
        &mut self,
        op: Op,
        now: u64,
        cost: u64,
    ) -> Result<Result<PolicyDecision, RedisError>, TestCaseError> {
        let got = self.redis.decide(self.conn, &self.key, op, now, cost);
        if let Some(single) = &self.single {
            let alone = single.decide(self.conn, &self.key, op, now, cost);
            match (&got, &alone) {
                (Ok(policy), Ok(alone)) => {
                    prop_assert_eq!(&policy.decisions()[0], alone, "{:?} alone", op)
                }
                (Err(policy), Err(alone)) => {
                    prop_assert_eq!(policy.to_string(), alone.to_string(), "{:?} alone", op)
                }
                _ => prop_assert!(false, "{:?}: policy {:?}, alone {:?}", op, got, alone),
            }
            let stored = held_at(self.conn, &self.redis.limit_keys(&self.key, 0));
            let stored_alone = held_at(self.conn, &single.redis_keys(&self.key));
            prop_assert_eq!(stored, stored_alone, "{:?}: what the two store", op);
        }
        Ok(got)
    }

    /// Takes the expiry off every key of the case, the open reservations' records included.
    fn hold_still(&mut self, open: &[Reservation]) {
        let mut keys = self.redis.redis_keys(&self.key);
        keys.extend(
            open.iter()
                .map(|reservation| self.redis.reservation_key(&self.key, reservation.ticket())),
        );
        if let Some(single) = &self.single {
            keys.extend(single.redis_keys(&self.key));
            keys.extend(
                open.iter()
                    .map(|reservation| single.reservation_key(&self.key, reservation.ticket())),
            );
        }
        hold_still(self.conn, &keys);
    }

    /// Whether no key of the limits whose decision `had_room` has an expiry, as after
    /// `hold_still`: a request wrote nothing there, not even an expiry.
    fn untouched_expiry(&mut self, had_room: impl Fn(usize) -> bool) -> Result<(), TestCaseError> {
        for index in (0..self.redis.policy().len()).filter(|&index| had_room(index)) {
            for key in self.redis.limit_keys(&self.key, index) {
                let ttl = pttl(self.conn, &key);
                prop_assert!(ttl < 0, "{} was given an expiry of {} ms", key, ttl);
            }
        }
        Ok(())
    }
}

/// A refused hit or reserve, in one limit (`own` is its decision): one that had room is
/// left exactly as it was; one that refused keeps its counters, and writes at most the time
/// it was decided at, and for the sliding log drops entries that no longer count then.
fn check_refused(
    algorithm: Algorithm,
    limit: Limit,
    own: &Decision,
    before: &Held,
    after: &Held,
) -> Result<(), TestCaseError> {
    if own.is_allowed() {
        prop_assert_eq!(after, before, "a limit with room was written");
        return Ok(());
    }
    let counters = |held: &Held| {
        let mut hash = held.hash.clone();
        hash.remove("seen");
        if algorithm == Algorithm::SlidingLog {
            // The sum of the entries, checked against them by check_log_layout.
            hash.remove("total");
        }
        hash
    };
    prop_assert_eq!(
        counters(after),
        counters(before),
        "a refusing limit's counters"
    );
    let seen = after.hash.get("seen");
    prop_assert!(
        seen == before.hash.get("seen") || seen == Some(&own.at_ms.to_string()),
        "seen {:?} after {:?}, decided at {}",
        seen,
        before.hash.get("seen"),
        own.at_ms
    );
    let dropped = before.entries.len().checked_sub(after.entries.len());
    let Some(dropped) = dropped else {
        return Err(TestCaseError::fail("a refusal logged an entry"));
    };
    prop_assert_eq!(
        &before.entries[dropped..],
        &after.entries[..],
        "entries kept"
    );
    for entry in &before.entries[..dropped] {
        let spent_at: u64 = entry
            .split_once(':')
            .expect("ms:cost")
            .0
            .parse()
            .expect("ms");
        prop_assert!(
            own.at_ms - spent_at >= limit.window_ms(),
            "dropped {} still counting at {}",
            entry,
            own.at_ms
        );
    }
    Ok(())
}

/// Whether any limit's charge (a record's, a settle's) left it past 2^53 scaled by W, where
/// Redis refuses it.
fn any_past_exact_range(charged: &PolicyDecision) -> bool {
    charged.decisions().iter().any(past_exact_range)
}

/// The sliding log's entries in every limit are the core's, and obey the layout.
fn check_logs(held: &[Held], core: &PolicyLimiter) -> Result<(), TestCaseError> {
    for ((held, state), limit) in held.iter().zip(core.states()).zip(core.policy().limits()) {
        if let AnyState::SlidingLog(log) = state {
            prop_assert_eq!(held.entries.len(), log.logged_ms(), "entries");
            let stored = common::LogStored {
                hash: held.hash.clone(),
                entries: held.entries.clone(),
            };
            check_log_layout(&stored, limit.window_ms())?;
        }
    }
    Ok(())
}

/// Runs `cases` random traces of `algorithm` through the core and through Redis on `conn`
/// (a server's connection or a cluster's), each case on a key of its own, and returns the
/// first limit's bucket of every case, for a cluster test to find which masters they
/// landed on. Failures are kept beside `source_file`, the calling test's `file!()`.
pub fn policies_decide_as_the_core<C: ConnectionLike>(
    algorithm: Algorithm,
    conn: &mut C,
    cases: u32,
    source_file: &'static str,
) -> Vec<String> {
    let conn = RefCell::new(conn);
    let config = Config {
        cases,
        source_file: Some(source_file),
        ..Config::default()
    };
    let case_number = Cell::new(0u64);
    let buckets = RefCell::new(Vec::new());
    let result = TestRunner::new(config).run(&trace(algorithm), |trace| {
        case_number.set(case_number.get() + 1);
        let policy = trace.policy.clone();
        let redis =
            RedisPolicyLimiter::new(algorithm, policy.clone(), "policy").expect("within the bound");
        let single = match policy.limit(0) {
            Some(limit) if policy.len() == 1 => {
                Some(RedisLimiter::new(algorithm, limit, "single").expect("within the bound"))
            }
            _ => None,
        };
        let mut conn = conn.borrow_mut();
        let mut case = Case {
            conn: &mut **conn,
            redis,
            single,
            key: format!("case-{}", case_number.get()),
        };
        buckets
            .borrow_mut()
            .push(case.redis.redis_keys(&case.key)[0].clone());
        let mut core = PolicyLimiter::with_algorithm(algorithm, policy.clone());
        let mut open: Vec<Reservation> = Vec::new();
        let mut now = trace.start_ms;
        for (i, &(window_ms, step, action)) in trace.steps.iter().enumerate() {
            if i > 0 {
                now = next_ms(now, step, window_ms);
            }
            let before = held(case.conn, &case.redis, &case.key);
            match action {
                Action::Peek(cost) => {
                    let got = case.decide(Op::Peek, now, cost)?.expect("redis peek");
                    prop_assert_eq!(&got, &core.peek(now, cost), "peek {} at {} ms", i, now);
                    prop_assert_eq!(
                        held(case.conn, &case.redis, &case.key),
                        before,
                        "peek wrote"
                    );
                    case.untouched_expiry(|_| true)?;
                }
                Action::Hit(cost) | Action::Reserve(cost) => {
                    // A hit comes after a peek of its own, which must not change its answer.
                    if let Action::Hit(_) = action {
                        let got = case.decide(Op::Peek, now, cost)?.expect("redis peek");
                        prop_assert_eq!(&got, &core.peek(now, cost), "peek {} at {} ms", i, now);
                    }
                    // One ticket per step of the case; the key is the case's own.
                    let ticket = (case_number.get() << 32) | i as u64;
                    let op = match action {
                        Action::Hit(_) => Op::Hit,
                        _ => Op::Reserve { ticket },
                    };
                    let got = case.decide(op, now, cost)?.expect("redis hit");
                    let want = core.decide(op, now, cost);
                    prop_assert_eq!(&got, &want, "{:?} {} at {} ms, cost {}", op, i, now, cost);
                    let after = held(case.conn, &case.redis, &case.key);
                    if !got.is_allowed() {
                        let limits = policy.limits();
                        for (((own, limit), before), after) in
                            got.decisions().iter().zip(limits).zip(&before).zip(&after)
                        {
                            check_refused(algorithm, limit, own, before, after)?;
                        }
                        case.untouched_expiry(|index| got.decisions()[index].is_allowed())?;
                    }
                    if let Op::Reserve { ticket } = op {
                        let pending = case.redis.reservation_key(&case.key, ticket);
                        let record: Option<String> = case.conn.get(&pending).expect("GET");
                        match policy_reservation(&got, ticket) {
                            Some(reservation) => {
                                let text = format!("{}:{}", reservation.at_ms(), cost);
                                prop_assert_eq!(record, Some(text));
                                // Kept while the reservation counts in the last of the
                                // limits, from each one's time decided at, which a clock gone
                                // back is behind by that many ms of real time.
                                let most = got
                                    .decisions()
                                    .iter()
                                    .map(|own| {
                                        counts_ms(algorithm, own.limit, own.at_ms)
                                            .saturating_add(own.at_ms - now)
                                            .saturating_add(EXPIRY_GRACE_MS)
                                            .min(MAX_TIME_MS)
                                    })
                                    .max()
                                    .unwrap_or(0);
                                let ttl = pttl(case.conn, &pending);
                                prop_assert!(
                                    ttl <= most as i64 && ttl > most as i64 - 1_000,
                                    "reserve {}: the pending record expires in {} ms, not {}",
                                    i,
                                    ttl,
                                    most
                                );
                                open.push(reservation);
                            }
                            None => {
                                prop_assert_eq!(record, None, "refused reserve {} wrote one", i)
                            }
                        }
                    }
                }
                Action::Record(cost) => {
                    let mut recorded = core.clone();
                    let want = recorded.record(now, cost);
                    match case.decide(Op::Record, now, cost)? {
                        Ok(got) => {
                            prop_assert!(!any_past_exact_range(&want), "record {} within", i);
                            prop_assert_eq!(got, want, "record {} at {} ms, cost {}", i, now, cost);
                            core = recorded;
                        }
                        Err(RedisError::RecordOutOfRange { cost: refused }) => {
                            prop_assert_eq!(refused, cost);
                            prop_assert!(
                                any_past_exact_range(&want),
                                "record {} at {} ms, cost {} refused, but the core's {:?} is \
                                 within 2^53",
                                i,
                                now,
                                cost,
                                want
                            );
                            let after = held(case.conn, &case.redis, &case.key);
                            prop_assert_eq!(after, before, "refused record {} wrote", i);
                            case.untouched_expiry(|_| true)?;
                        }
                        Err(err) => panic!("record {i}: {err}"),
                    }
                }
                Action::Settle {
                    pick,
                    final_cost,
                    twice,
                } => {
                    if open.is_empty() {
                        continue;
                    }
                    let index = pick % open.len();
                    let reservation = &open[index];
                    let (at_ms, reserved, ticket) = (
                        reservation.at_ms(),
                        reservation.cost(),
                        reservation.ticket(),
                    );
                    let cost = final_cost.of(reserved);
                    let op = Op::Settle {
                        reserved_at_ms: at_ms,
                        reserved,
                        ticket,
                    };
                    let pending = case.redis.reservation_key(&case.key, ticket);
                    let mut settled = core.clone();
                    let want = settled.decide(op, now, cost);
                    match case.decide(op, now, cost)? {
                        Ok(got) => {
                            prop_assert!(cost <= MAX_TIME_MS && !any_past_exact_range(&want));
                            prop_assert_eq!(
                                got,
                                want,
                                "settle {} at {} ms of {:?} at {}",
                                i,
                                now,
                                op,
                                cost
                            );
                            core = settled;
                            // Settled in Redis and in the core just now.
                            let _settled = open.swap_remove(index);
                            prop_assert!(!case.conn.exists::<_, bool>(&pending).expect("EXISTS"));
                        }
                        Err(RedisError::SettleOutOfRange {
                            reserved: refused_reserve,
                            cost: refused,
                        }) => {
                            prop_assert_eq!((refused_reserve, refused), (reserved, cost));
                            prop_assert!(
                                cost > MAX_TIME_MS || any_past_exact_range(&want),
                                "settle {} at {} ms of {:?} at {} refused, but the core's \
                                 {:?} is within 2^53",
                                i,
                                now,
                                op,
                                cost,
                                want
                            );
                            // Nothing written in any limit, and it may still be settled.
                            let after = held(case.conn, &case.redis, &case.key);
                            prop_assert_eq!(after, before, "refused settle {} wrote", i);
                            prop_assert!(case.conn.exists::<_, bool>(&pending).expect("EXISTS"));
                            continue;
                        }
                        Err(err) => panic!("settle {i}: {err}"),
                    }
                    if twice {
                        // Its pending record is gone, so the copy changes no count in any
                        // limit: the core's settle with nothing to settle, at the same time.
                        let again = case.decide(op, now, cost)?.expect("again");
                        let nothing = Op::Settle {
                            reserved_at_ms: at_ms,
                            reserved: cost,
                            ticket,
                        };
                        let want = core.decide(nothing, now, cost);
                        prop_assert_eq!(again, want, "settle {} sent again", i);
                    }
                }
            }
            check_logs(&held(case.conn, &case.redis, &case.key), &core)?;
            // Redis's own clock must not expire what the trace's clock still needs.
            case.hold_still(&open);
        }
        // The reservations never settled keep their pending records until those expire.
        for reservation in open {
            let pending = case.redis.reservation_key(&case.key, reservation.ticket());
            prop_assert!(case.conn.exists::<_, bool>(&pending).expect("EXISTS"));
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{algorithm}: {failure}");
    }
    buckets.into_inner()
}
