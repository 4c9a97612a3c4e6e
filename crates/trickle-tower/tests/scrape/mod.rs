//! Prometheus's text format as the metrics tests read it: every sample of one scrape, and
//! the layer's counters by name. Shared by trickle-tower's tests and trickle serve's.

// Each test file is its own crate and uses only some of these helpers.
#![allow(dead_code)]

/// A sample's labels, sorted by name.
type Labels = Vec<(String, String)>;

/// One scrape: every sample line, as (name, labels, value).
pub struct Scrape(Vec<(String, Labels, f64)>);

impl Scrape {
    /// The samples of `text`, a scrape's body.
    pub fn parse(text: &str) -> Scrape {
        let mut samples = Vec::new();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect("NAME{LABELS} VALUE");
            let value: f64 = value.parse().expect("a number");
            let (name, labels) = match series.split_once('{') {
                None => (series, Vec::new()),
                Some((name, rest)) => {
                    let inside = rest.strip_suffix('}').expect("labels closed");
                    // Our label values hold no ',' nor '"'.
                    let mut labels: Vec<_> = inside
                        .split(',')
                        .map(|pair| {
                            let (key, value) = pair.split_once('=').expect("KEY=\"VALUE\"");
                            (key.to_string(), value.trim_matches('"').to_string())
                        })
                        .collect();
                    labels.sort();
                    (name, labels)
                }
            };
            samples.push((name.to_string(), labels, value));
        }
        Scrape(samples)
    }

    /// The value of `name` with exactly `labels`, if the series exists.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut wanted: Vec<_> = labels
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        wanted.sort();
        self.0
            .iter()
            .find(|(seen, seen_labels, _)| seen == name && *seen_labels == wanted)
            .map(|(_, _, value)| *value)
    }

    /// The value, which must exist.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no series {name}{labels:?}"))
    }

    /// Every counter of `group`, in one tuple: decisions, admitted, refused by the limit,
    /// refused by the budget, would-refuse by the limit, would-refuse by the budget.
    pub fn counts(&self, group: &str) -> [f64; 6] {
        let by = |name, reason| self.value(name, &[("group", group), ("reason", reason)]);
        [
            self.value("trickle_decisions_total", &[("group", group)]),
            self.value("trickle_admitted_total", &[("group", group)]),
            by("trickle_refused_total", "limit"),
            by("trickle_refused_total", "free_runs"),
            by("trickle_would_refuse_total", "limit"),
            by("trickle_would_refuse_total", "free_runs"),
        ]
    }

    /// How many reserves (or settles) of `group` the store duration histogram holds.
    pub fn timed(&self, group: &str, op: &str) -> f64 {
        self.value(
            "trickle_store_duration_seconds_count",
            &[("group", group), ("op", op)],
        )
    }

    /// Failed store calls of `group` by `op` and `kind`.
    pub fn failures(&self, group: &str, op: &str, kind: &str) -> f64 {
        self.value(
            "trickle_failures_total",
            &[("group", group), ("op", op), ("kind", kind)],
        )
    }

    /// Keys holding a bucket in `group`.
    pub fn live_keys(&self, group: &str) -> f64 {
        self.value("trickle_live_keys", &[("group", group)])
    }
}
