//! What the load benchmarks report, shared by this crate's (`load.rs`) and trickle-tower's
//! (`http_load.rs`, which includes this file): p50, p99 and throughput from each request's
//! time, their medians over rounds, and where the JSON for `benches/report.mjs` goes.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

/// p50, p99 and requests per second of one phase.
#[derive(Clone, Copy, Debug)]
pub struct Figures {
    pub p50_us: f64,
    pub p99_us: f64,
    pub per_second: f64,
}

impl Figures {
    /// The figures of a phase that took `seconds` for requests that took `latencies_ns`.
    pub fn from_ns(mut latencies_ns: Vec<u64>, seconds: f64) -> Figures {
        latencies_ns.sort_unstable();
        Figures {
            p50_us: percentile_us(&latencies_ns, 50),
            p99_us: percentile_us(&latencies_ns, 99),
            per_second: latencies_ns.len() as f64 / seconds,
        }
    }

    /// The same from `Duration`s.
    pub fn from_durations(latencies: &[Duration], wall: Duration) -> Figures {
        let ns = latencies
            .iter()
            .map(|latency| u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX))
            .collect();
        Figures::from_ns(ns, wall.as_secs_f64())
    }

    pub fn json(&self) -> String {
        format!(
            r#"{{ "p50Us": {:.3}, "p99Us": {:.3}, "perSecond": {:.1} }}"#,
            self.p50_us, self.p99_us, self.per_second
        )
    }
}

/// The nearest-rank percentile of sorted latencies, in µs.
fn percentile_us(sorted_ns: &[u64], percent: usize) -> f64 {
    let rank = (sorted_ns.len() * percent).div_ceil(100).max(1);
    sorted_ns[rank - 1] as f64 / 1_000.0
}

/// Each figure's median over the rounds, figure by figure.
pub fn median_figures(figures: impl Iterator<Item = Figures> + Clone) -> Figures {
    let median = |pick: fn(&Figures) -> f64| {
        let mut values: Vec<f64> = figures.clone().map(|figures| pick(&figures)).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Figures {
        p50_us: median(|figures| figures.p50_us),
        p99_us: median(|figures| figures.p99_us),
        per_second: median(|figures| figures.per_second),
    }
}

/// Cargo's target folder, where `benches/report.mjs` reads `bench/*.json`.
pub fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}
