//! A wall clock stepped forward and back, as NTP or an operator steps it: on the wall clock
//! the in-process buckets freeze until it catches up; on the layer's clock (the wall clock
//! anchored once and moved on by a monotonic one, `trickle_tower::clock`) nothing happens.
//!
//! The sources are the test's: a wall clock it steps and a monotonic clock it moves on, so
//! that the same requests meet both clocks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use http::Request;
use tower_service::Service;
use trickle_core::Algorithm;
use trickle_tower::clock::Anchor;
use trickle_tower::{InProcess, RateLimitLayer, Subject};

/// The test's clocks: the wall clock (ms since the epoch) and a monotonic one (ms).
#[derive(Default)]
struct Clocks {
    wall_ms: AtomicU64,
    monotonic_ms: AtomicU64,
}

impl Clocks {
    /// Time passes: both clocks move on by `ms`.
    fn pass(&self, ms: u64) {
        self.wall_ms.fetch_add(ms, Ordering::SeqCst);
        self.monotonic_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// The wall clock is stepped by `ms` (back when negative); the monotonic one is not.
    fn step(&self, ms: i64) {
        let wall = self.wall_ms.load(Ordering::SeqCst);
        self.wall_ms
            .store(wall.saturating_add_signed(ms), Ordering::SeqCst);
    }
}

/// How many of `count` requests at the clocks' time the layer lets through.
fn admitted<S>(service: &mut S, count: usize) -> usize
where
    S: Service<Request<Body>, Response = http::Response<Body>>,
    S::Error: std::fmt::Debug,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    (0..count)
        .filter(|_| {
            let response = runtime
                .block_on(service.call(Request::new(Body::empty())))
                .expect("an answer");
            response.status() == 200
        })
        .count()
}

/// Two requests a second on one key (a 2XX costing 1), deciding on `clock`.
fn layer_on(
    clock: impl Fn() -> u64 + Send + Sync + 'static,
) -> impl Service<Request<Body>, Response = http::Response<Body>, Error = std::convert::Infallible>
{
    let backend = InProcess::new().with_group("api", Algorithm::Floating, "2/1s".parse().unwrap());
    let subject = |_: &Request<Body>| Ok(Some(Subject::new("api", "one-key")));
    Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(
            RateLimitLayer::new(backend, subject)
                .costs("2xx:1".parse().unwrap())
                .clock(clock),
        )
        .into_service::<Body>()
}

/// The same requests on both clocks: a full bucket, a step forward an hour and back, two
/// seconds later (everything spent has slid out) two requests again.
#[test]
fn a_wall_clock_stepped_forward_and_back_freezes_buckets_only_on_the_wall_clock() {
    let clocks = Arc::new(Clocks::default());
    clocks.wall_ms.store(1_700_000_000_000, Ordering::SeqCst);
    let wall = {
        let clocks = Arc::clone(&clocks);
        move || clocks.wall_ms.load(Ordering::SeqCst)
    };
    let anchor = Anchor::new(wall(), Duration::ZERO);
    let anchored = {
        let clocks = Arc::clone(&clocks);
        move || {
            anchor.ms_at(Duration::from_millis(
                clocks.monotonic_ms.load(Ordering::SeqCst),
            ))
        }
    };
    let mut on_wall = layer_on(wall);
    let mut on_anchor = layer_on(anchored);

    let mut both = |count: usize| {
        (
            admitted(&mut on_wall, count),
            admitted(&mut on_anchor, count),
        )
    };
    assert_eq!(both(3), (2, 2), "a full bucket");
    clocks.pass(100);
    clocks.step(3_600_000);
    assert_eq!(
        both(1),
        (1, 0),
        "an hour ahead, the wall clock's bucket is a new window's"
    );
    clocks.pass(100);
    clocks.step(-3_600_000);
    clocks.pass(2_000);
    // The wall-clock layer decides at the hour ahead it saw, where the bucket holds the
    // request made there: one more fits, and none after it for an hour.
    assert_eq!(both(3), (1, 2), "two seconds on");
    clocks.pass(2_000);
    assert_eq!(
        both(3),
        (0, 2),
        "four seconds on, the wall clock's bucket is still frozen"
    );
}
