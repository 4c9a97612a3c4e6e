//! `trickle serve --metrics ADDRESS`: the layer's counters (trickle-tower's `metrics`
//! feature) rendered as Prometheus's text at `/metrics`, on a listener of their own, so
//! that the API's clients never see them and a scraper never spends a bucket.
//!
//! The recorder is installed before the first request (each group's counters are looked
//! up with its first), and the listener is bound before the API's address is announced, so
//! an address that cannot be had stops serve at startup instead of leaving it unobserved.

use std::fmt;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::header::{HeaderValue, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;
use trickle_tower::metrics::{self, STORE_DURATION, STORE_DURATION_BUCKETS};
use trickle_tower::{Fallback, InProcess, Redis};

/// How often the exporter folds the histograms' new observations in, between scrapes:
/// without it, an unscraped histogram holds every observation since the last scrape.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Why `/metrics` cannot be served.
#[derive(Debug)]
pub enum MetricsError {
    Listen {
        address: SocketAddr,
        error: io::Error,
    },
    /// The recorder could not be installed (another one already was).
    Recorder(String),
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricsError::Listen { address, error } => write!(
                f,
                "cannot serve --metrics on {address}: {error}; give an IP address and a \
                 port that no other program, nor --listen, is using, as in --metrics \
                 127.0.0.1:9090, or leave --metrics out"
            ),
            MetricsError::Recorder(error) => {
                write!(f, "cannot record the rate limiter's metrics: {error}")
            }
        }
    }
}

impl std::error::Error for MetricsError {}

/// The exporter, installed and bound, not yet serving.
pub struct Exporter {
    listener: TcpListener,
    address: SocketAddr,
    handle: PrometheusHandle,
    /// The in-process buckets whose live keys each scrape counts (none on Redis, whose
    /// keys are Redis's to count).
    in_process: Option<Arc<InProcess>>,
    /// The fallback whose counts each scrape reads, with `--on-failure fallback`.
    fallback: Option<Arc<Fallback<Redis>>>,
}

impl Exporter {
    /// Installs the recorder and binds `address`.
    pub async fn bind(address: SocketAddr) -> Result<Exporter, MetricsError> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|error| MetricsError::Listen { address, error })?;
        let bound = listener
            .local_addr()
            .map_err(|error| MetricsError::Listen { address, error })?;
        // Buckets, so that the store's duration is a Prometheus histogram (which sums
        // across servers) rather than a summary (which does not).
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(STORE_DURATION.to_string()),
                STORE_DURATION_BUCKETS,
            )
            .and_then(PrometheusBuilder::install_recorder)
            .map_err(|error| MetricsError::Recorder(error.to_string()))?;
        metrics::describe();
        Ok(Exporter {
            listener,
            address: bound,
            handle,
            in_process: None,
            fallback: None,
        })
    }

    /// Counts `backend`'s live keys at each scrape: exact when read, and nothing spent
    /// while nobody scrapes.
    pub fn count_live_keys(&mut self, backend: Arc<InProcess>) {
        self.in_process = Some(backend);
    }

    /// Reads `fallback`'s counts at each scrape: its decisions, the outages it met, the
    /// settles whose outcome is unknown, and its breaker.
    pub fn count_fallback(&mut self, fallback: Arc<Fallback<Redis>>) {
        self.fallback = Some(fallback);
    }

    /// Says where `/metrics` is (a second line on stdout, after the API's address, and in
    /// the log), then serves it until the runtime stops.
    pub fn spawn(self) {
        let Exporter {
            listener,
            address,
            handle,
            in_process,
            fallback,
        } = self;
        let mut stdout = io::stdout().lock();
        if let Err(error) =
            writeln!(stdout, "metrics on http://{address}/metrics").and_then(|()| stdout.flush())
        {
            tracing::warn!(%error, "cannot write the metrics address to stdout");
        }
        tracing::info!("metrics on http://{address}/metrics");

        let upkept = handle.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(UPKEEP_EVERY);
            loop {
                ticks.tick().await;
                upkept.run_upkeep();
            }
        });
        let render = move || {
            let handle = handle.clone();
            let (in_process, fallback) = (in_process.clone(), fallback.clone());
            async move { scrape(&handle, in_process.as_deref(), fallback.as_deref()) }
        };
        let app = Router::new()
            .route("/metrics", get(render))
            .fallback(|| async {
                (
                    StatusCode::NOT_FOUND,
                    "this address serves only GET /metrics\n",
                )
            });
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "the metrics listener stopped");
            }
        });
    }
}

/// One scrape: the live keys counted now, then everything rendered in Prometheus's text
/// format.
fn scrape(
    handle: &PrometheusHandle,
    in_process: Option<&InProcess>,
    fallback: Option<&Fallback<Redis>>,
) -> Response {
    if let Some(backend) = in_process {
        metrics::record_live_keys(backend);
    }
    if let Some(fallback) = fallback {
        metrics::record_live_keys(fallback.secondary());
        metrics::record_fallback(fallback);
    }
    let mut response = handle.render().into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}
