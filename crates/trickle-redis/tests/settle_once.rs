//! A settle applies once, however often it is sent: against a real redis-server that a test
//! pauses, or whose answer a proxy loses, for every algorithm, compared with the core
//! applying the settle once. And the pending record that makes it so: what it holds, how
//! long it lasts, where Cluster puts it, and what a settle does without it.
//!
//! The rule under test: an admitted reserve writes a pending record under its ticket, and a
//! settle applies its difference only when it deletes that record; a copy that finds none
//! changes no counts and answers the bucket as it stands. The limiter sends a settle again
//! while its outcome is unknown, and never anything else.

mod common;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{assert_expires_near, limit, script_runs, slot, LosingProxy, RedisServer};
use redis::Commands;
use trickle_core::{Admission, Algorithm, Decision, Limit, Limiter, Op, Reservation, Store};
use trickle_redis::{Clock, RedisError, RedisLimiter, RedisStore, EXPIRY_GRACE_MS, MAX_TIME_MS};

const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::Floating,
    Algorithm::Fixed,
    Algorithm::TokenBucket,
    Algorithm::SlidingLog,
];

fn limiter(algorithm: Algorithm, prefix: &str) -> RedisLimiter {
    RedisLimiter::new(algorithm, limit("6/8s"), prefix).expect("a small limit")
}

/// The settle of `reservation` as an op, to send more than once.
fn settle_op(reservation: &Reservation) -> Op {
    Op::Settle {
        reserved_at_ms: reservation.at_ms(),
        reserved: reservation.cost(),
        ticket: reservation.ticket(),
    }
}

/// The core's answer to a copy of the settle `op` once it has been applied: a settle with
/// nothing to settle (reserved = final cost) at the copy's time.
fn nothing_settled(core: &mut Limiter, op: Op, now_ms: u64, cost: u64) -> Decision {
    let Op::Settle {
        reserved_at_ms,
        ticket,
        ..
    } = op
    else {
        panic!("{op:?} is not a settle");
    };
    let nothing = Op::Settle {
        reserved_at_ms,
        reserved: cost,
        ticket,
    };
    core.decide(nothing, now_ms, cost)
}

/// Three hits of one token, then a reserve of 2 at 1_000 ms under `ticket`, in Redis and in
/// the core alike: the bucket a settle then changes, and the reservation.
fn reserved(
    redis: &RedisLimiter,
    conn: &mut redis::Connection,
    key: &str,
    ticket: u64,
) -> (Limiter, Reservation) {
    let mut core = Limiter::with_algorithm(redis.algorithm(), redis.limit());
    for t in [0, 100, 200] {
        assert_eq!(redis.hit(conn, key, t, 1).unwrap(), core.hit(t, 1));
    }
    let op = Op::Reserve { ticket };
    let decision = redis.decide(conn, key, op, 1_000, 2).unwrap();
    assert_eq!(decision, core.decide(op, 1_000, 2), "{}", redis.algorithm());
    assert!(decision.is_allowed(), "{}", redis.algorithm());
    (core, Reservation::from_parts(decision.at_ms, 2, ticket))
}

/// Everything Redis holds for `key`'s bucket: its hash, and the sliding log's entries.
fn held(
    conn: &mut redis::Connection,
    redis: &RedisLimiter,
    key: &str,
) -> (HashMap<String, String>, Vec<String>) {
    let keys = redis.redis_keys(key);
    let entries = match keys.get(1) {
        Some(log) => conn.lrange(log, 0, -1).unwrap(),
        None => Vec::new(),
    };
    (common::stored(conn, &keys[0]), entries)
}

/// Redis's bucket is the core's: a peek of nothing answers the same.
fn assert_same_bucket(
    redis: &RedisLimiter,
    conn: &mut redis::Connection,
    key: &str,
    core: &Limiter,
    now_ms: u64,
) {
    assert_eq!(
        redis.peek(conn, key, now_ms, 0).unwrap(),
        core.peek(now_ms, 0),
        "{}: the bucket differs from the core's",
        redis.algorithm()
    );
}

/// Waits up to 5 s for the server to have run `runs` scripts in all: copies queued on a
/// connection that timed out are run once the server wakes, and a fresh connection may be
/// served before them.
fn wait_for_runs(conn: &mut redis::Connection, runs: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while script_runs(conn) < runs && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(script_runs(conn), runs, "scripts run");
}

#[test]
fn a_settle_sent_three_times_applies_once() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    for algorithm in ALGORITHMS {
        let redis = limiter(algorithm, "thrice");
        // Through the core's Store, as a server would: its reserve draws the ticket.
        let mut store = RedisStore::new(redis.clone(), server.connect());
        for (key, final_cost) in [("more", 5), ("less", 0), ("same", 2)] {
            let mut core = Limiter::with_algorithm(algorithm, redis.limit());
            let Admission::Admitted {
                reservation,
                decision,
            } = store.reserve(key, 1_000, 2).unwrap()
            else {
                panic!("{algorithm}: an empty bucket has room");
            };
            assert_eq!(decision, core.hit(1_000, 2), "{algorithm} {key}");
            assert_eq!((reservation.at_ms(), reservation.cost()), (1_000, 2));
            let pending = redis.reservation_key(key, reservation.ticket());
            let record: Option<String> = conn.get(&pending).unwrap();
            assert_eq!(record.as_deref(), Some("1000:2"), "{algorithm} {key}");

            let op = settle_op(&reservation);
            let in_core = Reservation::from_parts(1_000, 2, reservation.ticket());
            let first = store.settle(key, reservation, 1_500, final_cost).unwrap();
            assert_eq!(
                first,
                core.settle(in_core, 1_500, final_cost),
                "{algorithm} {key}"
            );
            assert!(
                !conn.exists::<_, bool>(&pending).unwrap(),
                "{algorithm} {key}"
            );
            let after_first = held(&mut conn, &redis, key);
            for copy in 1..=2 {
                let again = store.decide(key, op, 1_500, final_cost).unwrap();
                let want = nothing_settled(&mut core, op, 1_500, final_cost);
                assert_eq!(again, want, "{algorithm} {key}: copy {copy}");
                assert_eq!(again.used, first.used, "{algorithm} {key}: copy {copy}");
                assert_eq!(
                    held(&mut conn, &redis, key),
                    after_first,
                    "{algorithm} {key}"
                );
            }
        }
    }
}

/// The server stops (SIGSTOP) with the settle on its way: the first attempt times out, the
/// limiter sends it again on the same connection, the server wakes and runs both copies in
/// order, and the answer read is the copy's. The bucket changed once.
#[test]
fn a_settle_retried_past_a_paused_server_applies_once() {
    let server = RedisServer::start();
    let mut observer = server.connect();
    for algorithm in ALGORITHMS {
        let redis = limiter(algorithm, "paused").with_settle_attempts(NonZeroU32::new(8).unwrap());
        let mut conn = server.connect();
        let (mut core, reservation) = reserved(&redis, &mut conn, "k", 41);
        let op = settle_op(&reservation);
        let runs = script_runs(&mut observer);
        conn.set_read_timeout(Some(Duration::from_millis(250)))
            .unwrap();
        let began = Instant::now();
        server.pause();
        let settled = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(400));
                server.resume();
            });
            redis.decide(&mut conn, "k", op, 1_500, 5)
        });
        let settled = settled.unwrap_or_else(|err| panic!("{algorithm}: {err}"));
        assert!(began.elapsed() >= Duration::from_millis(400), "{algorithm}");
        assert_eq!(settled, core.settle(reservation, 1_500, 5), "{algorithm}");
        // Every copy was run before the one whose answer came back.
        let copies = script_runs(&mut observer) - runs;
        assert!(
            copies >= 2,
            "{algorithm}: the settle reached the server {copies} times"
        );
        assert_same_bucket(&redis, &mut observer, "k", &core, 1_500);
    }
}

/// Paused through every attempt: the error says the outcome is unknown and how often it was
/// sent; once the server wakes it runs all three copies, and the bucket changed once.
#[test]
fn a_settle_whose_every_attempt_times_out_says_its_outcome_is_unknown() {
    let server = RedisServer::start();
    let mut observer = server.connect();
    let redis = limiter(Algorithm::Floating, "unknown");
    assert_eq!(redis.settle_attempts().get(), 3, "the default");
    let mut conn = server.connect();
    let (mut core, reservation) = reserved(&redis, &mut conn, "k", 42);
    let op = settle_op(&reservation);
    let runs = script_runs(&mut observer);
    conn.set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    server.pause();
    let result = redis.decide(&mut conn, "k", op, 1_500, 5);
    server.resume();
    let err = result.expect_err("a paused server answers nothing");
    let message = err.to_string();
    match err {
        RedisError::SettleUnknown { attempts, error } => {
            assert_eq!(attempts, 3);
            assert!(error.is_timeout(), "{error}");
        }
        other => panic!("expected SettleUnknown, got {other:?}"),
    }
    assert!(
        message.starts_with("the settle's outcome is unknown after 3 attempts: "),
        "{message}"
    );
    wait_for_runs(&mut observer, runs + 3);
    core.settle(reservation, 1_500, 5);
    assert_same_bucket(&redis, &mut observer, "k", &core, 1_500);
}

/// The server runs the settle and its answer is lost with the connection (a proxy drops it
/// mid-reply). The limiter's further attempts find the connection closed and never reach
/// the server, so the error says the outcome is unknown; the settle was applied once, and
/// the caller sending it again on a fresh connection changes nothing.
#[test]
fn a_settle_whose_answer_is_lost_applies_once() {
    let server = RedisServer::start_tcp();
    let proxy = LosingProxy::new(&server);
    let mut direct = server.connect();
    for algorithm in ALGORITHMS {
        let redis = limiter(algorithm, "lost");
        let client = redis::Client::open(proxy.address()).unwrap();
        let mut conn = client.get_connection().unwrap();
        // The reserve loads the script, so the settle's first answer is the one lost.
        let (mut core, reservation) = reserved(&redis, &mut conn, "k", 43);
        let op = settle_op(&reservation);
        let runs = script_runs(&mut direct);
        proxy.lose_next_answer();
        let lost = redis.decide(&mut conn, "k", op, 1_500, 5);
        assert!(proxy.lost(), "{algorithm}");
        match lost {
            Err(RedisError::SettleUnknown { attempts, .. }) => {
                assert!(attempts >= 2, "{algorithm}: {attempts} attempts")
            }
            other => panic!("{algorithm}: expected SettleUnknown, got {other:?}"),
        }
        assert_eq!(script_runs(&mut direct), runs + 1, "{algorithm}: run once");
        let applied = core.settle(reservation, 1_500, 5);
        assert_same_bucket(&redis, &mut direct, "k", &core, 1_500);
        let again = redis.decide(&mut direct, "k", op, 1_500, 5).unwrap();
        assert_eq!(
            again,
            nothing_settled(&mut core, op, 1_500, 5),
            "{algorithm}"
        );
        assert_eq!(again.used, applied.used, "{algorithm}");
    }
}

/// A reserve sent twice could spend twice, so the limiter never sends one again: it times
/// out once, and the paused server runs it once when it wakes.
#[test]
fn a_reserve_that_times_out_is_sent_once() {
    let server = RedisServer::start();
    let mut observer = server.connect();
    let redis = limiter(Algorithm::Floating, "reserve-once");
    let mut conn = server.connect();
    let mut core = Limiter::with_algorithm(Algorithm::Floating, redis.limit());
    assert_eq!(redis.hit(&mut conn, "k", 0, 1).unwrap(), core.hit(0, 1));
    let runs = script_runs(&mut observer);
    conn.set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    server.pause();
    let result = redis.decide(&mut conn, "k", Op::Reserve { ticket: 44 }, 1_000, 2);
    server.resume();
    match result {
        Err(RedisError::Redis(err)) => assert!(err.is_timeout(), "{err}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    wait_for_runs(&mut observer, runs + 1);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(script_runs(&mut observer), runs + 1, "sent once");
    core.hit(1_000, 2);
    assert_same_bucket(&redis, &mut observer, "k", &core, 1_000);
}

/// Absence means "nothing to do", never "apply": a settle whose pending record is gone (as
/// when it expired) changes no counts, where the core's settle would.
#[test]
fn a_settle_that_finds_no_pending_record_changes_nothing() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    for algorithm in ALGORITHMS {
        let redis = limiter(algorithm, "gone");
        let (mut core, reservation) = reserved(&redis, &mut conn, "k", 45);
        let pending = redis.reservation_key("k", reservation.ticket());
        assert!(conn.del::<_, bool>(&pending).unwrap(), "{algorithm}");
        let op = settle_op(&reservation);
        let got = redis.decide(&mut conn, "k", op, 1_500, 5).unwrap();
        let would = core.clone().settle(reservation, 1_500, 5);
        assert_ne!(
            got.used, would.used,
            "{algorithm}: the core's settle charges 3 more"
        );
        assert_eq!(got, nothing_settled(&mut core, op, 1_500, 5), "{algorithm}");
        assert_same_bucket(&redis, &mut conn, "k", &core, 1_500);
    }
}

/// The pending record holds `at:cost` and lasts while the reservation's tokens count, plus
/// the grace; a reserve that is refused writes none; the settle deletes it.
#[test]
fn the_pending_record_lasts_while_the_reservation_counts() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    // A reserve at 2_500 ms on 6/1s, 500 ms into its window.
    #[rustfmt::skip]
    let rows = [
        // The end of the window after the reservation's: 2_000 − 500.
        (Algorithm::Floating,    1_500),
        // The end of its window.
        (Algorithm::Fixed,         500),
        // W after the reservation.
        (Algorithm::TokenBucket, 1_000),
        (Algorithm::SlidingLog,  1_000),
    ];
    for (algorithm, counts_ms) in rows {
        let redis = RedisLimiter::new(algorithm, limit("6/1s"), "held").unwrap();
        let pending = redis.reservation_key("k", 46);
        let reserve = Op::Reserve { ticket: 46 };
        let decision = redis.decide(&mut conn, "k", reserve, 2_500, 1).unwrap();
        assert!(decision.is_allowed(), "{algorithm}");
        let record: Option<String> = conn.get(&pending).unwrap();
        assert_eq!(record.as_deref(), Some("2500:1"), "{algorithm}");
        let context = algorithm.to_string();
        assert_expires_near(&mut conn, &pending, counts_ms + EXPIRY_GRACE_MS, &context);

        // Refused (too large, then a full bucket): no record.
        let refused = [(47, 7), (48, 6)];
        for (ticket, cost) in refused {
            let op = Op::Reserve { ticket };
            let decision = redis.decide(&mut conn, "k", op, 2_500, cost).unwrap();
            assert!(!decision.is_allowed(), "{algorithm}: {cost}");
            let key = redis.reservation_key("k", ticket);
            assert!(
                !conn.exists::<_, bool>(&key).unwrap(),
                "{algorithm}: {cost}"
            );
        }

        let settle = Op::Settle {
            reserved_at_ms: 2_500,
            reserved: 1,
            ticket: 46,
        };
        redis.decide(&mut conn, "k", settle, 2_600, 0).unwrap();
        assert!(!conn.exists::<_, bool>(&pending).unwrap(), "{algorithm}");
    }
}

/// A bucket evicted or expired while its request was in flight: the settle is decided as
/// the core's on a fresh bucket, at the reservation's time when the caller's clock is
/// behind it (the core decides a settle at max(now, latest, reserved_at)).
#[test]
fn a_settle_after_its_bucket_is_gone_is_decided_at_the_reservation_time() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    for algorithm in ALGORITHMS {
        let redis = limiter(algorithm, "evicted");
        let reserve = Op::Reserve { ticket: 49 };
        assert!(redis
            .decide(&mut conn, "k", reserve, 5_000, 2)
            .unwrap()
            .is_allowed());
        for key in redis.redis_keys("k") {
            let _: () = conn.del(&key).unwrap();
        }
        let settle = Op::Settle {
            reserved_at_ms: 5_000,
            reserved: 2,
            ticket: 49,
        };
        let got = redis.decide(&mut conn, "k", settle, 4_000, 3).unwrap();
        let mut fresh = Limiter::with_algorithm(algorithm, redis.limit());
        assert_eq!(got, fresh.decide(settle, 4_000, 3), "{algorithm}");
        assert_eq!(got.at_ms, 5_000, "{algorithm}");
        assert_same_bucket(&redis, &mut conn, "k", &fresh, 5_000);
    }
}

/// A settle that would take the bucket past 2^53 tokens × ms is refused as a record is,
/// writing nothing and leaving the reservation pending, so a settle at a smaller cost still
/// applies; a cost past 2^53 is refused before any script runs.
#[test]
fn a_settle_past_the_exact_range_is_refused_and_stays_pending() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    for algorithm in ALGORITHMS {
        let redis = limiter(algorithm, "range");
        let (mut core, reservation) = reserved(&redis, &mut conn, "k", 50);
        let op = settle_op(&reservation);
        let before = held(&mut conn, &redis, "k");
        for (cost, message) in [
            (
                MAX_TIME_MS,
                "settling a reserve of 2 tokens at 9007199254740992 would take the bucket past \
                 2^53 tokens × ms, the largest count the Redis script holds exactly; nothing \
                 was charged, and the reservation is still pending",
            ),
            (
                MAX_TIME_MS + 1,
                "a settle's reserve and final cost must each be at most 2^53 = \
                 9007199254740992 tokens, the largest the Redis script holds exactly; got a \
                 reserve of 2 and a final cost of 9007199254740993; nothing was charged, and \
                 the reservation is still pending",
            ),
        ] {
            let err = redis.decide(&mut conn, "k", op, 1_500, cost).unwrap_err();
            assert!(
                matches!(err, RedisError::SettleOutOfRange { reserved: 2, cost: c } if c == cost),
                "{algorithm}: {err:?}"
            );
            assert_eq!(err.to_string(), message);
            assert_eq!(held(&mut conn, &redis, "k"), before, "{algorithm}");
            let pending = redis.reservation_key("k", 50);
            assert!(conn.exists::<_, bool>(&pending).unwrap(), "{algorithm}");
        }
        let settled = redis.decide(&mut conn, "k", op, 1_500, 4).unwrap();
        assert_eq!(settled, core.settle(reservation, 1_500, 4), "{algorithm}");
    }
}

#[test]
fn pending_records_share_their_buckets_cluster_slot() {
    let redis = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "api").unwrap();
    assert_eq!(
        redis.reservation_key("user-42", 0xff),
        "{api:user-42}:floating:reservation:00000000000000ff"
    );
    for algorithm in ALGORITHMS {
        let redis = limiter(algorithm, "slots");
        for key in ["a", "user-42", "7:90000001", "ünïcode"] {
            for ticket in [0, 1, u64::MAX] {
                assert_eq!(
                    slot(&redis.reservation_key(key, ticket)),
                    slot(&redis.redis_key(key)),
                    "{algorithm} {key} {ticket}"
                );
            }
        }
    }
}

fn system_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since.as_millis()).unwrap()
}

/// With `Clock::Server` a reservation's time is the reserve's decision's, on the server's
/// clock, and the settle is decided on that clock too: the caller's times are ignored.
#[test]
fn reserve_and_settle_on_the_server_clock() {
    let server = RedisServer::start();
    // Window edges decades away, as in server_clock.rs.
    let limit = Limit::new(5, 1 << 42).unwrap();
    for algorithm in ALGORITHMS {
        let redis = RedisLimiter::new(algorithm, limit, "server")
            .unwrap()
            .with_clock(Clock::Server);
        let mut store = RedisStore::new(redis, server.connect());
        let mut core = Limiter::with_algorithm(algorithm, limit);
        let before = system_ms();
        let Admission::Admitted {
            reservation,
            decision,
        } = store.reserve("k", 0, 2).unwrap()
        else {
            panic!("{algorithm}: room for 2");
        };
        let after = system_ms();
        let at_ms = reservation.at_ms();
        assert!(
            (before..=after).contains(&at_ms),
            "{algorithm}: reserved at {at_ms}"
        );
        let op = settle_op(&reservation);
        assert_eq!(decision, core.hit(at_ms, 2), "{algorithm}");
        let settled = store.settle("k", reservation, u64::MAX, 4).unwrap();
        assert!(
            settled.at_ms >= at_ms && settled.at_ms <= system_ms(),
            "{algorithm}"
        );
        assert_eq!(settled, core.decide(op, settled.at_ms, 4), "{algorithm}");
    }
}

/// A caller whose clock runs behind the bucket's latest time (another server's is 5.5 s
/// ahead) is decided at that latest time, and its reservation counts from there: the
/// pending record, and the bucket, must last from that time too, not from the slow clock's
/// reading, or a refund the core applies 2.6 s later finds nothing left in Redis.
#[test]
fn a_reservation_decided_ahead_of_the_callers_clock_lasts_as_long_as_it_counts() {
    let server = RedisServer::start();
    let mut conn = server.connect();
    let limit = limit("6/1s");
    let redis = RedisLimiter::new(Algorithm::Floating, limit, "skew").expect("a small limit");
    let mut core = Limiter::with_algorithm(Algorithm::Floating, limit);
    let fast = 1_000_000 + 5_500;
    assert_eq!(
        redis.hit(&mut conn, "k", fast, 1).unwrap(),
        core.hit(fast, 1)
    );
    let slow = 1_000_000;
    let reserve = Op::Reserve { ticket: 42 };
    let reserved = redis.decide(&mut conn, "k", reserve, slow, 3).unwrap();
    assert_eq!(reserved, core.decide(reserve, slow, 3));
    std::thread::sleep(Duration::from_millis(2_600));
    let settle = Op::Settle {
        reserved_at_ms: reserved.at_ms,
        reserved: 3,
        ticket: 42,
    };
    let now = slow + 2_600;
    let want = core.decide(settle, now, 0);
    assert_eq!(redis.decide(&mut conn, "k", settle, now, 0).unwrap(), want);
    assert_eq!(want.counters.map(|counters| counters.current), Some(1));
}
