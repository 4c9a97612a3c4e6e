//! The budget of answers that cost nothing, through real HTTP on 127.0.0.1: ESI's table
//! prices a 5XX and a 429 at 0, so without a budget a client whose requests all fail runs
//! the handler without limit; with one, exactly the budget's runs reach it, however the
//! requests come.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Path;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use support::{runtime, serve, subject, SubjectFn};
use trickle_core::{Algorithm, FloatingWindow};
use trickle_tower::{InProcess, RateLimitLayer};

fn backend() -> InProcess {
    InProcess::new().with_group("fitting", Algorithm::Floating, "150/15m".parse().unwrap())
}

/// The figure: 40 requests with `?status=500` all reached the handler. With ESI's
/// table and a budget of 5/1m, exactly 5 do; the other 35 get 429 with the budget's wait,
/// the group's limit and name, and no count, as the bucket was not asked.
#[test]
fn forty_requests_answered_500_reach_the_handler_exactly_5_times() {
    let server = serve(runtime(), backend(), 0, |layer| {
        layer.free_runs("5/1m".parse().unwrap())
    });
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let answer = server.get("/status/500", Some("app-7"), None);
        if answer.status == 429 {
            assert_eq!(answer.limit.as_deref(), Some("150/15m"));
            assert_eq!(answer.group.as_deref(), Some("fitting"));
            assert_eq!((answer.remaining, answer.used), (None, None));
            // Five runs at 0 ms in a floating window of 1 min: one fits again once
            // 5 × overlap ≤ 4, a fifth of the way into the next window.
            assert_eq!(answer.retry_after.as_deref(), Some("72"));
            assert!(
                answer.body.contains("budget of answers that cost nothing")
                    && answer.body.contains("5/1m"),
                "{}",
                answer.body
            );
        }
        statuses.push(answer.status);
    }
    assert_eq!(server.calls(), 5);
    assert_eq!(statuses[..5], [500; 5]);
    assert_eq!(statuses[5..], [429; 35]);
    // Another client, and another group, have budgets of their own.
    assert_eq!(server.get("/status/500", Some("app-8"), None).status, 500);
}

/// Off by default: ESI's table as it is, every 500 runs the handler.
#[test]
fn without_a_budget_every_request_answered_500_reaches_the_handler() {
    let server = serve(runtime(), backend(), 0, |layer| layer);
    for _ in 0..40 {
        assert_eq!(server.get("/status/500", Some("app-7"), None).status, 500);
    }
    assert_eq!(server.calls(), 40);
}

/// An answer that costs something hands its run back, so a client that pays is never
/// stopped by the budget; once its free answers have spent the budget, every request of
/// the key waits (which will be free is known only after the handler), until the exact
/// moment the core's floating window frees a run.
#[test]
fn paying_answers_keep_the_budget_and_a_spent_one_refuses_until_a_run_fades() {
    let server = serve(runtime(), backend(), 0, |layer| {
        layer.free_runs("2/10s".parse().unwrap())
    });
    let status = |path: &str| server.get(path, Some("a"), None).status;
    for _ in 0..10 {
        assert_eq!(status("/status/200"), 200);
        assert_eq!(status("/status/404"), 404);
    }
    assert_eq!(status("/status/503"), 503);
    server.set_time(4_000);
    assert_eq!(status("/status/429"), 429, "the handler's own 429 is free");
    assert_eq!(server.calls(), 22);
    let refused = server.get("/status/200", Some("a"), None);
    assert_eq!((refused.status, refused.remaining), (429, None));
    assert_eq!(server.calls(), 22, "a paying request waits too");

    // The core's answer for the same runs: one at 0 ms, one at 4,000 ms.
    let mut model = FloatingWindow::new("2/10s".parse().unwrap());
    model.record(0, 1);
    model.record(4_000, 1);
    let retry_after_ms = model.peek(4_000, 1).retry_after_ms().expect("a run fades");
    assert_eq!(
        refused.retry_after,
        Some(retry_after_ms.div_ceil(1_000).to_string())
    );
    server.set_time(4_000 + retry_after_ms - 1);
    assert_eq!(status("/status/200"), 429, "1 ms early");
    server.set_time(4_000 + retry_after_ms);
    assert_eq!(status("/status/200"), 200, "on the moment");
    assert_eq!(server.calls(), 23);
}

/// A request the bucket refuses gives its run back, since no handler ran: with a budget
/// of 1, five refusals leave it whole, and the first free answer after them spends it.
#[test]
fn a_request_the_bucket_refuses_gives_its_run_back() {
    let backend =
        InProcess::new().with_group("fitting", Algorithm::Floating, "3/1h".parse().unwrap());
    let server = serve(runtime(), backend, 0, |layer| {
        layer.free_runs("1/1h".parse().unwrap())
    });
    let status = |client: &str, path: &str| server.get(path, Some(client), None).status;
    // ESI: a 2XX costs 2. Client a: 200 (bucket at 2), 200 (reserve fits at 2 + 1 ≤ 3,
    // bucket at 4), then the bucket refuses; the budget's run is handed back each time,
    // so a's one free answer is still there once its bucket has room again.
    assert_eq!(status("a", "/status/200"), 200);
    assert_eq!(status("a", "/status/200"), 200);
    for _ in 0..5 {
        let refused = server.get("/status/500", Some("a"), None);
        assert_eq!(refused.status, 429);
        assert!(refused.body.contains("rate limit 3/1h"), "{}", refused.body);
    }
    server.set_time(2 * 3_600_000);
    assert_eq!(status("a", "/status/500"), 500);
    let spent = server.get("/status/500", Some("a"), None);
    assert_eq!(spent.status, 429);
    assert!(spent.body.contains("budget"), "{}", spent.body);
}

/// 200 parallel requests answered 500 on one key, each on a connection of its own, released
/// at once, against a handler that awaits 20 ms: every one is in flight while the others
/// are decided, and still exactly the budget's 5 reach the handler.
#[test]
fn a_burst_of_200_answered_500_reaches_the_handler_exactly_5_times() {
    const CLIENTS: usize = 200;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let subject: SubjectFn = subject;
    let app = Router::new()
        .route(
            "/status/{code}",
            get(move |Path(code): Path<u16>| {
                let calls = Arc::clone(&counted);
                async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    StatusCode::from_u16(code).expect("a valid status")
                }
            }),
        )
        .layer(
            RateLimitLayer::new(backend(), subject)
                .free_runs("5/1m".parse().unwrap())
                .clock(|| 30_000),
        );
    let statuses = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a port on 127.0.0.1");
        let address = listener.local_addr().expect("the bound address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                tokio::spawn(async move {
                    let stream = tokio::net::TcpStream::connect(address)
                        .await
                        .expect("connect");
                    let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
                        .await
                        .expect("an HTTP/1 handshake");
                    tokio::spawn(connection);
                    barrier.wait().await;
                    let request = Request::get("/status/500")
                        .header("host", "127.0.0.1")
                        .header("x-client-id", "one-key")
                        .body(Empty::<Bytes>::new())
                        .expect("a request");
                    let response = sender.send_request(request).await.expect("an answer");
                    let status = response.status().as_u16();
                    response.into_body().collect().await.expect("the body");
                    status
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for client in clients {
            statuses.push(client.await.expect("a client finishes"));
        }
        statuses
    });
    let reached = statuses.iter().filter(|status| **status == 500).count();
    let refused = statuses.iter().filter(|status| **status == 429).count();
    assert_eq!((reached, refused), (5, CLIENTS - 5), "{statuses:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 5);
}
