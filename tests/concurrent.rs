//! The keyed limiter shared by threads (`ConcurrentKeyedLimiter`): at a frozen clock T
//! threads admit exactly what one thread would, never a token more; over many keys each key
//! admits what the sequential `KeyedLimiter` admits for the same requests; idle keys go
//! after two windows while threads keep deciding; and a clock going backwards in one thread
//! lets nothing extra in.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Barrier;
use std::thread;

use trickle_core::state::{
    AnyState, FixedState, FloatingState, SlidingLogState, State, TokenBucketState,
};
use trickle_core::{ConcurrentKeyedLimiter, KeyedLimiter, Limit, Op, Outcome, TooManyKeys};

fn limit(text: &str) -> Limit {
    text.parse().expect("a valid limit")
}

fn shards(count: usize) -> NonZeroUsize {
    NonZeroUsize::new(count).expect("at least one shard")
}

/// A fixed pseudo-random sequence, the same every run.
struct Sequence(u64);

impl Sequence {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for last in (1..items.len()).rev() {
            let other = self.below(last as u64 + 1) as usize;
            items.swap(last, other);
        }
    }
}

/// Fails to compile unless the limiter can be shared by threads as it is, with any of the
/// four states and with keys that own memory.
#[test]
fn is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ConcurrentKeyedLimiter<(u32, u64)>>();
    shareable::<ConcurrentKeyedLimiter<String, SlidingLogState>>();
    shareable::<ConcurrentKeyedLimiter<u64, FixedState>>();
    shareable::<ConcurrentKeyedLimiter<u64, TokenBucketState>>();
}

/// T threads start together on one fresh key at one frozen time, each asking for more than
/// the whole limit in requests of cost c: between them they spend exactly ⌊N / c⌋ × c
/// tokens, what one thread alone would, in every one of 200 runs.
fn one_key_at_a_frozen_clock_admits_exactly_the_limit<
    S: State + Clone + Default + Send + Sync + 'static,
>(
    cases: &[(Limit, u64)],
    packed: bool,
) {
    const RUNS: u64 = 200;
    for threads in [2, 4, 8] {
        for &(shared_limit, cost) in cases {
            let text = shared_limit.to_string();
            let limiter: ConcurrentKeyedLimiter<u64, S> = ConcurrentKeyedLimiter::new(shared_limit);
            assert_eq!(limiter.is_packed(), packed, "{text}");
            let tokens = shared_limit.tokens();
            // Every thread alone would exhaust the key, so all of them race to the end.
            let requests = tokens / cost + 2;
            let barrier = Barrier::new(threads);
            let frozen_ms = 12_345;
            let spent_by_run: Vec<u64> = thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut spent = vec![0; RUNS as usize];
                            for run in 0..RUNS {
                                barrier.wait();
                                for _ in 0..requests {
                                    let decision = limiter.hit(run, frozen_ms, cost);
                                    spent[run as usize] += decision.spent();
                                }
                            }
                            spent
                        })
                    })
                    .collect();
                let mut total = vec![0; RUNS as usize];
                for worker in workers {
                    let spent = worker.join().expect("a worker finishes");
                    for (sum, own) in total.iter_mut().zip(spent) {
                        *sum += own;
                    }
                }
                total
            });
            for (run, spent) in spent_by_run.into_iter().enumerate() {
                assert_eq!(
                    spent,
                    tokens / cost * cost,
                    "{threads} threads, {text}, cost {cost}, run {run}"
                );
            }
        }
    }
}

/// Everyday limits, each with a cost that divides N and one that does not.
fn frozen_cases() -> Vec<(Limit, u64)> {
    #[rustfmt::skip]
    let cases = [
        // limit,   cost
        ("1/1s",    1),
        ("6/8s",    1),
        ("6/8s",    4),
        ("100/1s",  1),
        ("100/1s",  3),
        ("150/15m", 2),
    ];
    cases
        .iter()
        .map(|&(text, cost)| (limit(text), cost))
        .collect()
}

/// A window of 2^40 ms leaves the packed counters 12 bits, so 4,095 tokens pack and 4,096
/// do not; one of 2^56 ms leaves them 4 bits, 15 tokens.
fn at_the_packed_bound() -> [Limit; 2] {
    [window(4_095, 1 << 40), window(15, 1 << 56)]
}

fn beyond_the_packed_bound() -> [Limit; 2] {
    [window(4_096, 1 << 40), window(16, 1 << 56)]
}

fn window(tokens: u64, window_ms: u64) -> Limit {
    Limit::new(tokens, window_ms).expect("a valid limit")
}

/// Costs for a bound's limits: 64 for 4,095 or 4,096 tokens keeps the runs short.
fn with_costs(limits: [Limit; 2]) -> Vec<(Limit, u64)> {
    limits
        .iter()
        .flat_map(|&limit| [(limit, 1), (limit, 3), (limit, limit.tokens() / 64 + 1)])
        .collect()
}

#[test]
fn floating_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<FloatingState>(&frozen_cases(), true);
}

/// The floating window chosen at run time, as the tower layer chooses it, packs as the
/// floating window's own state does.
#[test]
fn any_state_floating_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<AnyState>(&frozen_cases(), true);
}

#[test]
fn any_state_floating_beyond_the_packed_bound_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    let cases = with_costs(beyond_the_packed_bound());
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<AnyState>(&cases, false);
}

#[test]
fn floating_at_the_packed_bound_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    let cases = with_costs(at_the_packed_bound());
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<FloatingState>(&cases, true);
}

#[test]
fn floating_beyond_the_packed_bound_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    let cases = with_costs(beyond_the_packed_bound());
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<FloatingState>(&cases, false);
}

#[test]
fn sliding_log_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<SlidingLogState>(&frozen_cases(), false);
}

#[test]
fn fixed_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<FixedState>(&frozen_cases(), false);
}

#[test]
fn token_bucket_one_key_at_a_frozen_clock_admits_exactly_the_limit() {
    one_key_at_a_frozen_clock_admits_exactly_the_limit::<TokenBucketState>(&frozen_cases(), false);
}

/// Rounds of requests over 40 keys, each round at one frozen time (rounds a few ms to a few
/// windows apart, times on and beside window edges). In a round every key gets between 0
/// and 3N requests of one cost (from 0 to N + 1), shuffled and dealt to T threads.
///
/// Why the check is exact: at one time, the requests of one key are all the same request,
/// so the order they are decided in cannot change how many go in, nor the key's state after
/// the round. Each round, per key, the threads must admit exactly as many as the sequential
/// `KeyedLimiter` given the same requests; after it, `peek` must answer the same for every
/// key, and after a sweep at the round's time both hold the same number of keys.
fn many_keys_admit_per_key_what_the_sequential_core_admits<S>(shared_limit: Limit)
where
    S: State + Clone + Default + Send + Sync + 'static,
{
    const KEYS: u64 = 40;
    const ROUNDS: u64 = 60;
    let window_ms = shared_limit.window_ms();
    let tokens = shared_limit.tokens();
    for threads in [2, 4, 8] {
        let mut sequence = Sequence(0x5eed ^ threads as u64);
        // Four shards for 40 keys: threads often meet in one.
        let limiter: ConcurrentKeyedLimiter<u64, S> =
            ConcurrentKeyedLimiter::with_shards(shared_limit, shards(4));
        let mut sequential: KeyedLimiter<u64, S> = KeyedLimiter::new(shared_limit);
        let mut now_ms = 0;
        for round in 0..ROUNDS {
            now_ms += match sequence.below(4) {
                0 => 0,
                1 => sequence.below(20),
                2 => window_ms - now_ms % window_ms - sequence.below(2),
                _ => sequence.below(3 * window_ms),
            };
            let mut requests = Vec::new();
            for key in 0..KEYS {
                let cost = sequence.below(tokens + 2);
                for _ in 0..sequence.below(3 * tokens + 1) {
                    requests.push((key, cost));
                }
            }
            sequence.shuffle(&mut requests);

            let mut expected: HashMap<u64, u64> = HashMap::new();
            for &(key, cost) in &requests {
                if sequential.hit(key, now_ms, cost).is_allowed() {
                    *expected.entry(key).or_default() += 1;
                }
            }

            let share = requests.len().div_ceil(threads);
            let admitted: HashMap<u64, u64> = thread::scope(|scope| {
                let workers: Vec<_> = requests
                    .chunks(share.max(1))
                    .map(|dealt| {
                        let limiter = &limiter;
                        scope.spawn(move || {
                            let mut admitted: HashMap<u64, u64> = HashMap::new();
                            for &(key, cost) in dealt {
                                if limiter.hit(key, now_ms, cost).is_allowed() {
                                    *admitted.entry(key).or_default() += 1;
                                }
                            }
                            admitted
                        })
                    })
                    .collect();
                let mut total: HashMap<u64, u64> = HashMap::new();
                for worker in workers {
                    for (key, count) in worker.join().expect("a worker finishes") {
                        *total.entry(key).or_default() += count;
                    }
                }
                total
            });

            assert_eq!(
                admitted, expected,
                "{threads} threads, round {round} at {now_ms}"
            );
            for key in 0..KEYS {
                for cost in [1, tokens] {
                    assert_eq!(
                        limiter.peek(&key, now_ms, cost),
                        sequential.peek(&key, now_ms, cost),
                        "{threads} threads, round {round} at {now_ms}, key {key}"
                    );
                }
            }
            limiter.sweep(now_ms);
            sequential.sweep(now_ms);
            assert_eq!(limiter.len(), sequential.len(), "round {round} at {now_ms}");
        }
    }
}

#[test]
fn floating_many_keys_admit_per_key_what_the_sequential_core_admits() {
    many_keys_admit_per_key_what_the_sequential_core_admits::<FloatingState>(limit("5/1000ms"));
}

#[test]
fn any_state_floating_many_keys_admit_per_key_what_the_sequential_core_admits() {
    many_keys_admit_per_key_what_the_sequential_core_admits::<AnyState>(limit("5/1000ms"));
}

/// 15 tokens per 2^56 ms: packed with nothing to spare (4-bit counters).
#[test]
fn floating_at_the_packed_bound_many_keys_admit_per_key_what_the_sequential_core_admits() {
    let [_, shared_limit] = at_the_packed_bound();
    many_keys_admit_per_key_what_the_sequential_core_admits::<FloatingState>(shared_limit);
}

/// 16 tokens per 2^56 ms: the wide floating state, under the write lock.
#[test]
fn floating_beyond_the_packed_bound_many_keys_admit_per_key_what_the_sequential_core_admits() {
    let [_, shared_limit] = beyond_the_packed_bound();
    many_keys_admit_per_key_what_the_sequential_core_admits::<FloatingState>(shared_limit);
}

#[test]
fn sliding_log_many_keys_admit_per_key_what_the_sequential_core_admits() {
    many_keys_admit_per_key_what_the_sequential_core_admits::<SlidingLogState>(limit("5/1000ms"));
}

#[test]
fn fixed_many_keys_admit_per_key_what_the_sequential_core_admits() {
    many_keys_admit_per_key_what_the_sequential_core_admits::<FixedState>(limit("5/1000ms"));
}

#[test]
fn token_bucket_many_keys_admit_per_key_what_the_sequential_core_admits() {
    many_keys_admit_per_key_what_the_sequential_core_admits::<TokenBucketState>(limit("5/1000ms"));
}

/// Records past the packed counters: a key pushed beyond them moves to the wide state, and
/// every answer, before and after, through window rolls, idle drops and a clock going
/// back, is the sequential core's, call for call. Limits at the packed bound, so that
/// small records overflow, and `6/8s` with records near `u64::MAX`, past any `u64` counter.
#[test]
fn records_past_the_packed_counters_answer_as_the_core() {
    let [thousands, fifteen] = at_the_packed_bound();
    for (shared_limit, largest_record) in [
        (fifteen, 8),
        (thousands, 1_500),
        (limit("6/8s"), u64::MAX / 2),
    ] {
        let window_ms = shared_limit.window_ms();
        let limiter: ConcurrentKeyedLimiter<u64> =
            ConcurrentKeyedLimiter::with_shards(shared_limit, shards(1));
        assert!(limiter.is_packed(), "{shared_limit}");
        let mut sequential: KeyedLimiter<u64> = KeyedLimiter::new(shared_limit);
        let mut sequence = Sequence(0x7ec0_4d00);
        let mut window = 0u64;
        for call in 0..20_000 {
            // Mostly within a window, at its edges, sometimes one or three windows on, and
            // now and then a time from the window before.
            // Windows of 2^56 ms run out of u64 after 256: there the clock stays in the last.
            let last_window = u64::MAX / window_ms - 1;
            match sequence.below(40) {
                0 => window = (window + 1).min(last_window),
                1 => window = (window + 3).min(last_window),
                _ => {}
            }
            let offset_ms = match sequence.below(5) {
                0 => 0,
                1 => window_ms - 1,
                2 => window_ms / 2,
                _ => sequence.below(window_ms.min(1 << 40)),
            };
            let later_ms = window * window_ms + offset_ms;
            let now_ms = if sequence.below(20) == 0 {
                later_ms.saturating_sub(window_ms)
            } else {
                later_ms
            };
            let key = sequence.below(4);
            let context = format!("{shared_limit}, call {call}: key {key} at {now_ms}");
            match sequence.below(6) {
                0 | 1 => {
                    let cost = match sequence.below(3) {
                        0 => largest_record,
                        _ => sequence.below(largest_record),
                    };
                    assert_eq!(
                        limiter.record(key, now_ms, cost),
                        sequential.record(key, now_ms, cost),
                        "record {cost}, {context}"
                    );
                }
                2 => {
                    let cost = sequence.below(shared_limit.tokens() + 2);
                    assert_eq!(
                        limiter.peek(&key, now_ms, cost),
                        sequential.peek(&key, now_ms, cost),
                        "peek {cost}, {context}"
                    );
                }
                _ => {
                    let cost = sequence.below(shared_limit.tokens() + 2);
                    assert_eq!(
                        limiter.hit(key, now_ms, cost),
                        sequential.hit(key, now_ms, cost),
                        "hit {cost}, {context}"
                    );
                }
            }
            assert_eq!(limiter.len(), sequential.len(), "len after {context}");
        }
    }
}

/// T threads record at one frozen time into a key whose packed counters hold 15, 40 tokens
/// between them, so the key moves to the wide state while the others are still swapping:
/// every record sees all the ones before it, so their `used` are exactly 1, 2, …, 40 tokens,
/// each once, and the key ends as the sequential core's after 40 records.
#[test]
fn records_overflowing_the_packed_counters_from_many_threads_are_each_seen_once() {
    const THREADS: u64 = 4;
    const EACH: u64 = 10;
    let [_, fifteen] = at_the_packed_bound();
    for run in 0..200 {
        let limiter: ConcurrentKeyedLimiter<u64> = ConcurrentKeyedLimiter::new(fifteen);
        limiter.hit(run, 1_000, 0);
        let barrier = Barrier::new(THREADS as usize);
        let mut used: Vec<u128> = thread::scope(|scope| {
            let workers: Vec<_> = (0..THREADS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        (0..EACH)
                            .map(|_| limiter.record(run, 1_000, 1).used.floor())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| worker.join().expect("a worker finishes"))
                .collect()
        });
        used.sort_unstable();
        let expected: Vec<u128> = (1..=u128::from(THREADS * EACH)).collect();
        assert_eq!(used, expected, "run {run}");
        let mut sequential: KeyedLimiter<u64> = KeyedLimiter::new(fifteen);
        for _ in 0..THREADS * EACH {
            sequential.record(run, 1_000, 1);
        }
        assert_eq!(
            limiter.peek(&run, 1_000, 1),
            sequential.peek(&run, 1_000, 1)
        );
    }
}

/// From one thread, with one shard (so that idle buckets are dropped at the same moments),
/// every call answers exactly as `KeyedLimiter`'s: hit, peek, record and reset, at times
/// that go forward, stand still, jump windows and go back, and the two hold the same keys.
fn follows_the_keyed_limiter_call_for_call<S: State + Clone + Default>() {
    let shared_limit = limit("6/1000ms");
    let limiter: ConcurrentKeyedLimiter<u64, S> =
        ConcurrentKeyedLimiter::with_shards(shared_limit, shards(1));
    let mut sequential: KeyedLimiter<u64, S> = KeyedLimiter::new(shared_limit);
    let mut sequence = Sequence(0x0dd_ba11);
    let mut now_ms: u64 = 0;
    for call in 0..20_000 {
        now_ms = match sequence.below(10) {
            0 => now_ms.saturating_sub(sequence.below(3_000)),
            1 => now_ms + sequence.below(2_500),
            _ => now_ms + sequence.below(40),
        };
        let key = sequence.below(30);
        let cost = sequence.below(8);
        let context = format!("call {call}: key {key} at {now_ms}, cost {cost}");
        match sequence.below(10) {
            0 => assert_eq!(
                limiter.peek(&key, now_ms, cost),
                sequential.peek(&key, now_ms, cost),
                "peek, {context}"
            ),
            1 => assert_eq!(
                limiter.record(key, now_ms, cost),
                sequential.record(key, now_ms, cost),
                "record, {context}"
            ),
            2 if sequence.below(10) == 0 => {
                limiter.reset(&key);
                sequential.reset(&key);
            }
            _ => assert_eq!(
                limiter.hit(key, now_ms, cost),
                sequential.hit(key, now_ms, cost),
                "hit, {context}"
            ),
        }
        assert_eq!(limiter.len(), sequential.len(), "len after {context}");
    }
    assert_eq!(limiter.limit(), shared_limit);
    assert_eq!(limiter.shards(), 1);
}

#[test]
fn floating_follows_the_keyed_limiter_call_for_call() {
    follows_the_keyed_limiter_call_for_call::<FloatingState>();
}

#[test]
fn sliding_log_follows_the_keyed_limiter_call_for_call() {
    follows_the_keyed_limiter_call_for_call::<SlidingLogState>();
}

#[test]
fn fixed_follows_the_keyed_limiter_call_for_call() {
    follows_the_keyed_limiter_call_for_call::<FixedState>();
}

#[test]
fn token_bucket_follows_the_keyed_limiter_call_for_call() {
    follows_the_keyed_limiter_call_for_call::<TokenBucketState>();
}

/// 4 threads bring 5,000 new keys in each of 40 windows of the floating window, each
/// spending one token at times spread over the window. After every window, the limiter
/// holds exactly the keys of that window and the one before (whose tokens still count as
/// `previous`), never the 200,000 seen: a key idle for two whole windows was dropped while
/// the threads were deciding.
#[test]
fn idle_keys_go_after_two_windows_under_concurrent_use() {
    const WINDOWS: u64 = 40;
    const PER_WINDOW: u64 = 5_000;
    const THREADS: u64 = 4;
    let window_ms = 8_000;
    let limiter: ConcurrentKeyedLimiter<u64> = ConcurrentKeyedLimiter::new(limit("6/8s"));
    for window in 0..WINDOWS {
        thread::scope(|scope| {
            for worker in 0..THREADS {
                let limiter = &limiter;
                scope.spawn(move || {
                    for i in (worker..PER_WINDOW).step_by(THREADS as usize) {
                        let key = window * PER_WINDOW + i;
                        let now_ms = window * window_ms + i * window_ms / PER_WINDOW;
                        assert!(limiter.hit(key, now_ms, 1).is_allowed());
                    }
                });
            }
        });
        let active = PER_WINDOW * (window + 1).min(2);
        assert_eq!(limiter.len() as u64, active, "after window {window}");
    }
    // Two whole windows later, one sweep leaves nothing.
    limiter.sweep((WINDOWS + 1) * window_ms);
    assert!(limiter.is_empty());
}

/// The same churn for every algorithm, with keys repeating: after every window, no more keys
/// hold a bucket than made a request in that window or the one before.
fn len_stays_within_the_keys_of_the_last_two_windows<
    S: State + Clone + Default + Send + Sync + 'static,
>() {
    const WINDOWS: u64 = 30;
    const PER_WINDOW: u64 = 2_000;
    const THREADS: u64 = 4;
    let window_ms = 100;
    let limiter: ConcurrentKeyedLimiter<u64, S> = ConcurrentKeyedLimiter::new(limit("5/100ms"));
    let mut keys_by_window: Vec<Vec<u64>> = Vec::new();
    let mut sequence = Sequence(0x9e37_79b9_7f4a_7c15);
    for window in 0..WINDOWS {
        // Half the keys new, half drawn again from a small set.
        let keys: Vec<u64> = (0..PER_WINDOW)
            .map(|i| {
                if i % 2 == 0 {
                    sequence.below(100)
                } else {
                    1_000 + window * PER_WINDOW + i
                }
            })
            .collect();
        thread::scope(|scope| {
            for worker in 0..THREADS {
                let (limiter, keys) = (&limiter, &keys);
                scope.spawn(move || {
                    for i in (worker..PER_WINDOW).step_by(THREADS as usize) {
                        let now_ms = window * window_ms + i * window_ms / PER_WINDOW;
                        limiter.hit(keys[i as usize], now_ms, 1 + i % 2);
                    }
                });
            }
        });
        keys_by_window.push(keys);
        let mut active: Vec<u64> = keys_by_window
            .iter()
            .rev()
            .take(2)
            .flatten()
            .copied()
            .collect();
        active.sort_unstable();
        active.dedup();
        assert!(
            limiter.len() <= active.len(),
            "after window {window}: {} buckets, {} keys active in the last two windows",
            limiter.len(),
            active.len()
        );
    }
}

#[test]
fn floating_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<FloatingState>();
}

#[test]
fn sliding_log_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<SlidingLogState>();
}

#[test]
fn fixed_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<FixedState>();
}

#[test]
fn token_bucket_len_stays_within_the_keys_of_the_last_two_windows() {
    len_stays_within_the_keys_of_the_last_two_windows::<TokenBucketState>();
}

/// One thread asks with a clock running backwards from `start_ms` to 0 while the others ask
/// with clocks running forward from `start_ms` (or frozen at it): the late thread's requests
/// are decided at the latest time the limiter has seen, so nothing extra goes in. All times
/// fall within one window of a fresh key, where each window algorithm admits exactly N; the
/// token bucket refills as time passes, so for it the forward clocks stand still. Every
/// denial's retry, counted from the caller's own clock, lands after the time it was decided
/// at.
fn a_clock_going_backwards_admits_nothing_extra<
    S: State + Clone + Default + Send + Sync + 'static,
>(
    forward_step_ms: u64,
) {
    const RUNS: u64 = 100;
    let shared_limit = limit("20/1000ms");
    let start_ms = 5_000;
    for threads in [2, 4, 8] {
        let limiter: ConcurrentKeyedLimiter<u64, S> = ConcurrentKeyedLimiter::new(shared_limit);
        let barrier = Barrier::new(threads);
        let spent: u64 = thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|worker| {
                    let (limiter, barrier) = (&limiter, &barrier);
                    scope.spawn(move || {
                        let mut spent = 0;
                        for run in 0..RUNS {
                            // Each run a fresh key, a window further on.
                            let base_ms = start_ms + run * 1_000;
                            barrier.wait();
                            for step in 0..50 {
                                let now_ms = if worker == 0 {
                                    base_ms.saturating_sub(step * 200)
                                } else {
                                    base_ms + step * forward_step_ms
                                };
                                let decision = limiter.hit(run, now_ms, 1);
                                spent += decision.spent();
                                if let Outcome::Denied { retry_after_ms } = decision.outcome {
                                    assert!(now_ms + retry_after_ms > decision.at_ms);
                                }
                            }
                        }
                        spent
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| worker.join().expect("a worker finishes"))
                .sum()
        });
        assert_eq!(spent, RUNS * shared_limit.tokens(), "{threads} threads");
    }
}

#[test]
fn floating_a_clock_going_backwards_admits_nothing_extra() {
    a_clock_going_backwards_admits_nothing_extra::<FloatingState>(19);
}

#[test]
fn sliding_log_a_clock_going_backwards_admits_nothing_extra() {
    a_clock_going_backwards_admits_nothing_extra::<SlidingLogState>(19);
}

#[test]
fn fixed_a_clock_going_backwards_admits_nothing_extra() {
    a_clock_going_backwards_admits_nothing_extra::<FixedState>(19);
}

#[test]
fn token_bucket_a_clock_going_backwards_admits_nothing_extra() {
    a_clock_going_backwards_admits_nothing_extra::<TokenBucketState>(0);
}

/// The shared clock as the keyed limiter has it: a request stamped before the latest time
/// any key has seen is decided at that time, and its retry is told from its own `now`.
#[test]
fn shared_clock_going_backwards() {
    let limiter: ConcurrentKeyedLimiter<&str> = ConcurrentKeyedLimiter::new(limit("2/1s"));
    limiter.hit("a", 5_000, 1);
    let decision = limiter.hit("b", 1_000, 1);
    assert!(decision.is_allowed());
    assert_eq!(decision.at_ms, 5_000);
    assert!(limiter.hit("b", 1_000, 1).is_allowed());
    // Decided at 5000 with current = 2: 2 × (1000 − e)/1000 + 1 ≤ 2 from e = 500 of the
    // next window, at 6500: 5500 after the caller's 1000.
    let denied = limiter.hit("b", 1_000, 1);
    assert_eq!(
        denied.outcome,
        Outcome::Denied {
            retry_after_ms: 5_500
        }
    );
    assert_eq!(limiter.peek(&"b", 1_000, 1).outcome, denied.outcome);
    assert!(limiter.hit("b", 6_500, 1).is_allowed());
}

#[test]
fn peek_neither_stores_nor_moves_the_shared_clock() {
    let limiter: ConcurrentKeyedLimiter<&str> = ConcurrentKeyedLimiter::new(limit("2/1s"));
    assert!(limiter.peek(&"new", 100, 2).is_allowed());
    assert!(limiter.is_empty());
    limiter.hit("a", 0, 2);
    assert!(limiter.peek(&"a", 5_000, 2).is_allowed());
    // The clock is still at 0, so 500 is not in the past.
    assert_eq!(limiter.hit("b", 500, 1).at_ms, 500);
    assert!(!limiter.hit("a", 500, 1).is_allowed());
    assert_eq!(limiter.len(), 2);
}

#[test]
fn shards_are_a_power_of_two() {
    for (asked, made) in [(1, 1), (2, 2), (3, 4), (8, 8), (9, 16)] {
        let limiter: ConcurrentKeyedLimiter<u64> =
            ConcurrentKeyedLimiter::with_shards(limit("2/1s"), shards(asked));
        assert_eq!(limiter.shards(), made);
    }
    assert!(ConcurrentKeyedLimiter::<u64>::new(limit("2/1s")).shards() >= 4);
}

/// A capped limiter holds at most its cap of keys, however many new keys come: past it a
/// new key's hit is refused (told apart by `try_decide`, a denial elsewhere) until the
/// shard's next window, while keys already present are decided as ever and a record or a
/// settle for any key lands. Two windows on, the idle buckets leave and new keys fit again.
#[test]
fn a_capped_limiter_turns_new_keys_away_and_takes_them_again_once_buckets_go_idle() {
    let limit: Limit = "5/1s".parse().unwrap();
    let limiter = ConcurrentKeyedLimiter::<String>::with_shards(limit, NonZeroUsize::MIN)
        .with_max_keys(NonZeroUsize::new(64).unwrap());
    assert_eq!(limiter.max_keys(), Some(64));
    for n in 0..64 {
        assert!(limiter.hit(format!("key-{n}"), 100, 1).is_allowed());
    }
    let refused = limiter.try_decide("new", Op::Hit, 250, 1);
    assert_eq!(
        refused,
        Err(TooManyKeys {
            max_keys: 64,
            retry_after_ms: 750
        })
    );
    assert!(refused
        .unwrap_err()
        .to_string()
        .contains("as many keys as it may (64)"));
    let denied = limiter.hit("new".to_string(), 250, 1);
    assert_eq!(
        denied.outcome,
        Outcome::Denied {
            retry_after_ms: 750
        }
    );
    assert_eq!(limiter.len(), 64, "a refused key takes no room");
    // Keys already in are decided as ever; a record lands even for a new key.
    assert!(limiter.hit("key-7".to_string(), 300, 1).is_allowed());
    assert!(limiter.record("charged".to_string(), 300, 2).is_allowed());
    assert_eq!(limiter.len(), 65);
    // In the next window nothing has gone idle yet (the floating window counts the last one).
    assert!(limiter.try_decide("new", Op::Hit, 1_100, 1).is_err());
    // Two windows on, every bucket is idle and is dropped: new keys fit again.
    assert!(limiter
        .try_decide("new", Op::Hit, 2_000, 1)
        .expect("room")
        .is_allowed());
    assert_eq!(limiter.len(), 1);
}

/// 200,000 distinct keys through a limiter capped at 10,000: it never holds more than the
/// cap, and refuses the rest, whatever the shards.
#[test]
fn a_capped_limiter_never_holds_more_than_its_cap() {
    let limiter = ConcurrentKeyedLimiter::<u64>::new("10/1m".parse().unwrap())
        .with_max_keys(NonZeroUsize::new(10_000).unwrap());
    let cap = limiter.max_keys().expect("a cap");
    assert!((10_000..10_000 + limiter.shards()).contains(&cap), "{cap}");
    let admitted = (0..200_000_u64)
        .filter(|&key| limiter.hit(key, 1_000, 1).is_allowed())
        .count();
    assert_eq!(limiter.len(), admitted);
    assert!(
        admitted <= cap && admitted > cap - limiter.shards() * 200,
        "{admitted} of {cap}"
    );
}
