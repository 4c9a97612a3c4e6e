//! How exact is the floating window? Synthetic, seeded workloads through the floating
//! window, the fixed window and the token bucket, each compared with the exact sliding log
//! by `trickle_core::compare::Comparison`, written as Markdown on stdout: one table per algorithm, with
//! the disagreements counted both ways (each on its own history, and on the log's).
//!
//! `make accuracy` runs it (`cargo run --release --locked --example accuracy`) and keeps the
//! table in `target/accuracy.md`; the README shows it. The same seed gives the same table.
//!
//! Every request costs one token. Each workload runs for the same stretch of simulated
//! time. A client that reacts to answers (the retry loop) is shown the answers of the
//! algorithm being measured, the limiter it talks to; both limiters then see the requests
//! it sent. Open-loop clients send the same requests whatever the answers, so all three
//! algorithms see the very same log.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use trickle_core::compare::{Accuracy, Comparison, Ratio};
use trickle_core::{Algorithm, Limit};

/// The seed of every workload; each table row draws from its own ChaCha stream of it.
const SEED: u64 = 2026;
/// ESI's limit for most route groups.
const LIMIT: &str = "150/15m";
/// How long each workload runs, in windows: 2,000 windows of 15 minutes are about 21 days.
const WINDOWS: u64 = 2_000;
/// The algorithms measured against the sliding log, in the table's order.
const APPROXIMATIONS: [(Algorithm, &str); 3] = [
    (Algorithm::Floating, "floating"),
    (Algorithm::Fixed, "fixed"),
    (Algorithm::TokenBucket, "token bucket"),
];

/// A source of requests of one token each.
trait Client {
    /// The time of the next request in ms, not before the last one. `last_allowed` says
    /// whether the last request was let through (`None` before the first); only clients
    /// that react to answers look at it.
    fn next(&mut self, rng: &mut ChaCha8Rng, last_allowed: Option<bool>) -> u64;
}

/// One table row: a name, the id its figures go by in `--json`, and a way to make a fresh
/// client for a limit.
struct Workload {
    name: String,
    id: String,
    client: Box<dyn Fn(Limit) -> Box<dyn Client>>,
}

/// The limit's pace in requests per ms, N / W.
fn pace(limit: Limit) -> f64 {
    limit.tokens() as f64 / limit.window_ms() as f64
}

/// Exponential gaps with `rate` requests per ms on average.
fn gaps(rate: f64) -> Exp<f64> {
    Exp::new(rate).expect("a positive, finite rate")
}

/// Poisson arrivals: independent, exponentially distributed gaps.
struct Poisson {
    t_ms: f64,
    gap: Exp<f64>,
}

impl Client for Poisson {
    fn next(&mut self, rng: &mut ChaCha8Rng, _: Option<bool>) -> u64 {
        self.t_ms += self.gap.sample(rng);
        self.t_ms as u64
    }
}

/// Bursts of Poisson arrivals at `gap`'s rate, of exponential length, between exponential
/// silences. Both are memoryless, so a burst cut short at its end loses nothing.
struct OnOff {
    t_ms: f64,
    burst_ends_ms: f64,
    gap: Exp<f64>,
    burst: Exp<f64>,
    silence: Exp<f64>,
}

impl Client for OnOff {
    fn next(&mut self, rng: &mut ChaCha8Rng, _: Option<bool>) -> u64 {
        loop {
            let t_ms = self.t_ms + self.gap.sample(rng);
            if t_ms < self.burst_ends_ms {
                self.t_ms = t_ms;
                return t_ms as u64;
            }
            self.t_ms = self.burst_ends_ms + self.silence.sample(rng);
            self.burst_ends_ms = self.t_ms + self.burst.sample(rng);
        }
    }
}

/// New work arrives as Poisson traffic; a denied request is sent again `retry_ms` later,
/// and again, until it is let through: Retry-After is never read.
struct RetryLoop {
    t_ms: f64,
    think: Exp<f64>,
    retry_ms: f64,
}

impl Client for RetryLoop {
    fn next(&mut self, rng: &mut ChaCha8Rng, last_allowed: Option<bool>) -> u64 {
        self.t_ms += match last_allowed {
            Some(false) => self.retry_ms,
            _ => self.think.sample(rng),
        };
        self.t_ms as u64
    }
}

/// Exactly N requests per W, evenly spaced: the k-th at `phase + ⌊k × W / N⌋`.
struct Paced {
    limit: Limit,
    phase_ms: u64,
    sent: u64,
}

impl Client for Paced {
    fn next(&mut self, _: &mut ChaCha8Rng, _: Option<bool>) -> u64 {
        let offset = u128::from(self.sent) * u128::from(self.limit.window_ms())
            / u128::from(self.limit.tokens());
        self.sent += 1;
        self.phase_ms + offset as u64
    }
}

/// The same requests every three windows: `schedule`, offsets into the cycle in ms.
struct Cycle {
    schedule: Vec<u64>,
    cycle_ms: u64,
    sent: usize,
}

impl Client for Cycle {
    fn next(&mut self, _: &mut ChaCha8Rng, _: Option<bool>) -> u64 {
        let (cycle, index) = (
            self.sent / self.schedule.len(),
            self.sent % self.schedule.len(),
        );
        self.sent += 1;
        cycle as u64 * self.cycle_ms + self.schedule[index]
    }
}

/// The adversarial cycle: a whole window's N requests sent within one second, at its end
/// (`late`) or at its start, then through the whole next window a request every W / 4N
/// (four times the limit's pace), then a quiet window, so that every cycle starts afresh.
fn spend_then_push(limit: Limit, late: bool) -> Cycle {
    let (tokens, window_ms) = (limit.tokens(), limit.window_ms());
    let spend_ms = 1_000.min(window_ms);
    let start_ms = if late { window_ms - spend_ms } else { 0 };
    let spent = (0..tokens).map(|i| start_ms + i * spend_ms / tokens);
    let pushed = (0..4 * tokens).map(|i| window_ms + i * window_ms / (4 * tokens));
    Cycle {
        schedule: spent.chain(pushed).collect(),
        cycle_ms: 3 * window_ms,
        sent: 0,
    }
}

fn workloads() -> Vec<Workload> {
    let mut rows: Vec<Workload> = [50, 90, 100, 110, 200]
        .into_iter()
        .map(|percent| Workload {
            name: format!("steady Poisson, {percent}% of the limit"),
            id: format!("poisson{percent}"),
            client: Box::new(move |limit| {
                Box::new(Poisson {
                    t_ms: 0.0,
                    gap: gaps(pace(limit) * f64::from(percent) / 100.0),
                })
            }),
        })
        .collect();
    rows.push(Workload {
        name: "on/off: bursts at 20× the limit's pace for 1 min, 20 min off (on average)".into(),
        id: "onOff".into(),
        client: Box::new(|limit| {
            Box::new(OnOff {
                t_ms: 0.0,
                burst_ends_ms: 0.0,
                gap: gaps(20.0 * pace(limit)),
                burst: gaps(1.0 / 60_000.0),
                silence: gaps(1.0 / 1_200_000.0),
            })
        }),
    });
    rows.push(Workload {
        name: "retry loop: work at 2× the limit's pace, a 429 retried every second".into(),
        id: "retry".into(),
        client: Box::new(|limit| {
            Box::new(RetryLoop {
                t_ms: 0.0,
                think: gaps(2.0 * pace(limit)),
                retry_ms: 1_000.0,
            })
        }),
    });
    rows.push(Workload {
        name: "the limit as a target: exactly N per W, evenly spaced".into(),
        id: "target".into(),
        client: Box::new(|limit| {
            Box::new(Paced {
                limit,
                // Off the windows' edges, as a client's clock would be.
                phase_ms: 1_234,
                sent: 0,
            })
        }),
    });
    rows.push(Workload {
        name: "adversarial: N in the last second of a window, then 4× pace".into(),
        id: "adversarial".into(),
        client: Box::new(|limit| Box::new(spend_then_push(limit, true))),
    });
    rows.push(Workload {
        name: "mirror: N in the first second of a window, then 4× pace".into(),
        id: "mirror".into(),
        client: Box::new(|limit| Box::new(spend_then_push(limit, false))),
    });
    rows
}

/// Runs `workload` for [`WINDOWS`] windows with `approximation` answering the client, and
/// compares it with the sliding log.
fn run(workload: &Workload, stream: u64, limit: Limit, approximation: Algorithm) -> Accuracy {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    rng.set_stream(stream);
    let mut client = (workload.client)(limit);
    let mut comparison = Comparison::new(limit, approximation, Algorithm::SlidingLog);
    let end_ms = WINDOWS * limit.window_ms();
    let mut last_allowed = None;
    loop {
        let t_ms = client.next(&mut rng, last_allowed);
        if t_ms >= end_ms {
            return comparison.accuracy();
        }
        last_allowed = Some(comparison.hit(t_ms, 1).approximation.is_allowed());
    }
}

/// 1234567 as `1,234,567`.
fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// `count` as a percentage of `total`, three decimals, rounded half up as the core's
/// `Ratio` writes the table's cells.
fn percent(count: u64, total: u64) -> String {
    let total = u128::from(total.max(1));
    let thousandths = (u128::from(count) * 200_000 + total) / (2 * total);
    format!("{}.{:03}%", thousandths / 1000, thousandths % 1000)
}

/// Figures for the docs, `ALGORITHM.ROW.COLUMN` → the cell as the table writes it.
type Figures = Vec<(String, String)>;

/// One algorithm's table: a row per workload, and each cell in `figures`.
fn table(
    limit: Limit,
    approximation: Algorithm,
    name: &str,
    figures: &mut Figures,
) -> (Vec<String>, Vec<Ratio>) {
    let mut lines = vec![
        format!("**{name}** against the sliding log:"),
        String::new(),
        "| workload | requests | own history: wrongly allowed | wrongly limited | \
         same history: wrongly allowed | wrongly limited | worst / N |"
            .to_string(),
        "|---|---:|---:|---:|---:|---:|---:|".to_string(),
    ];
    let mut log_worst = Vec::new();
    for (stream, workload) in workloads().iter().enumerate() {
        let accuracy = run(workload, stream as u64, limit, approximation);
        let cells = [
            ("requests", thousands(accuracy.requests)),
            (
                "own.allowed",
                format!("{:.3}%", accuracy.wrongly_allowed_percent()),
            ),
            (
                "own.limited",
                format!("{:.3}%", accuracy.wrongly_limited_percent()),
            ),
            (
                "own.either",
                percent(
                    accuracy.wrongly_allowed + accuracy.wrongly_limited,
                    accuracy.requests,
                ),
            ),
            ("own.allowedCount", thousands(accuracy.wrongly_allowed)),
            ("own.limitedCount", thousands(accuracy.wrongly_limited)),
            (
                "same.allowed",
                format!("{:.3}%", accuracy.same_history_wrongly_allowed_percent()),
            ),
            (
                "same.limited",
                format!("{:.3}%", accuracy.same_history_wrongly_limited_percent()),
            ),
            (
                "same.either",
                percent(
                    accuracy.same_history_wrongly_allowed + accuracy.same_history_wrongly_limited,
                    accuracy.requests,
                ),
            ),
            ("worst", format!("{:.2}×", accuracy.worst_window_share())),
        ];
        let key = approximation.name();
        for (column, cell) in cells {
            figures.push((format!("{key}.{}.{column}", workload.id), cell));
        }
        lines.push(format!(
            "| {} | {} | {:.3}% | {:.3}% | {:.3}% | {:.3}% | {:.2}× |",
            workload.name,
            thousands(accuracy.requests),
            accuracy.wrongly_allowed_percent(),
            accuracy.wrongly_limited_percent(),
            accuracy.same_history_wrongly_allowed_percent(),
            accuracy.same_history_wrongly_limited_percent(),
            accuracy.worst_window_share(),
        ));
        log_worst.push(accuracy.reference_worst_window_share());
    }
    (lines, log_worst)
}

fn main() {
    let limit: Limit = LIMIT.parse().expect("a valid limit");
    let mut lines = Vec::new();
    let mut log_worst = Vec::new();
    let mut figures = Figures::new();
    for (approximation, name) in APPROXIMATIONS {
        let (table, worst) = table(limit, approximation, name, &mut figures);
        lines.push(String::new());
        lines.extend(table);
        log_worst.extend(worst);
    }
    let log_worst = log_worst
        .iter()
        .max_by_key(|share| share.numerator())
        .expect("at least one row");

    println!(
        "Limit {limit} (N = {}), each request 1 token, {} windows ({:.1} days) of each \
         workload, seed {SEED} (ChaCha8, one stream per row). Each algorithm against the \
         sliding log; the log's own worst window in any row: {log_worst:.2}× N.",
        limit.tokens(),
        thousands(WINDOWS),
        (WINDOWS * limit.window_ms()) as f64 / 86_400_000.0,
    );
    for line in lines {
        println!("{line}");
    }
    figures.push(("log.worst".into(), format!("{log_worst:.2}×")));
    figures.push(("windows".into(), thousands(WINDOWS)));
    // `--json PATH`: the cells for the docs, which `make accuracy` records
    // (scripts/figures.mjs), so that no page copies a figure by hand.
    let mut args = std::env::args().skip(1);
    if let (Some(flag), Some(path)) = (args.next(), args.next()) {
        if flag == "--json" {
            let body: Vec<String> = figures
                .iter()
                .map(|(key, value)| format!("  \"{key}\": \"{value}\""))
                .collect();
            let json = format!("{{\n{}\n}}\n", body.join(",\n"));
            if let Err(error) = std::fs::write(&path, json) {
                eprintln!("accuracy: cannot write {path}: {error}");
                std::process::exit(1);
            }
        }
    }
}
