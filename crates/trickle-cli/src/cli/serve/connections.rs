//! How `trickle serve` treats its connections: a cap on how many are open, a deadline for
//! every moment a connection holds a slot without a request being served, and a stop that
//! waits only for the requests really in flight.
//!
//! Each connection is in one [`Phase`] at a time: reading a request head (from the moment
//! it is accepted, or from the first byte after an idle spell), busy serving a request (from
//! the moment hyper hands the head to the router until the response's body is written), or
//! idle between requests. Reading a head has `--header-timeout` to finish, idle has
//! `--idle-timeout`, busy has no deadline (the handlers are the server's own and finish).
//! On a stop, a connection that is not busy is closed at once, and a busy one finishes its
//! request and then closes: so a stop with nothing in flight is immediate, however many
//! connections are open, and one with requests in flight lasts as long as the slowest.
//!
//! hyper's own `header_read_timeout` is not used: it also starts when a kept-alive
//! connection goes idle, so it cannot tell an idle client from a slow one, and hyper has no
//! idle timeout of its own; the stop needs to know the phase anyway.

use std::convert::Infallible;
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long a client has to send a whole request head, from connecting (or from its first
/// byte after an idle spell). A real client sends its head in one packet within
/// milliseconds; 10 s leaves room for a slow mobile link, while a client that trickles its
/// head (slowloris) holds a slot 10 s at most.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a kept-alive connection may sit between requests. Long enough for a page's
/// next calls to reuse it; behind a proxy, set it above the proxy's own idle timeout, so
/// that the proxy, not serve, closes idle connections and never reuses one serve closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How many connections may be open at once; nginx's default `worker_connections`. It
/// stays below the usual 1024 file descriptors a process may open, with room for the
/// listener, Redis and the logs.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The most `--max-connections` accepts: far above any file descriptor limit, so the cap
/// is never what stops a big server, and small enough to be a semaphore's permits.
pub const MAX_MAX_CONNECTIONS: usize = 1_000_000;

/// After SIGTERM or SIGINT, how long the requests in flight may take to finish.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(10);

/// The longest timeout or drain accepted: a day. Nothing a server should wait for is
/// longer, and it keeps every deadline far from the end of the clock.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// After a failed accept that is not one connection's own failure (out of file
/// descriptors, mostly), how long to wait before the next: closing connections is what
/// frees descriptors, and retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How often, at most, the cap's warning is logged while the server stays full.
const FULL_WARNING_EVERY: Duration = Duration::from_secs(60);

/// The timeouts and the cap (`--header-timeout`, `--idle-timeout`, `--max-connections`,
/// `--drain-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    /// At least 1, at most [`MAX_MAX_CONNECTIONS`].
    pub max_connections: usize,
    pub drain: Duration,
}

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            drain: DEFAULT_DRAIN,
        }
    }
}

/// `text` as a duration, written as a limit's window is (a whole number and a unit ms, s,
/// m or h: `500ms`, `10s`, `2m`), from 1 ms to `max`; `None` otherwise.
pub fn parse_duration(text: &str, max: Duration) -> Option<Duration> {
    if text.trim() != text {
        return None;
    }
    // One grammar for every length of time serve reads: the core's, for a window.
    let window_ms = format!("1/{text}")
        .parse::<trickle_core::Limit>()
        .ok()?
        .window_ms();
    let duration = Duration::from_millis(window_ms);
    (duration <= max).then_some(duration)
}

/// `duration` in the largest unit that divides it exactly, as a limit's window is
/// written: `500ms`, `10s`, `744h`.
pub fn duration_text(duration: Duration) -> String {
    let ms = duration.as_millis();
    let unit = [("h", 3_600_000), ("m", 60_000), ("s", 1_000)]
        .into_iter()
        .find(|(_, unit_ms)| ms >= *unit_ms && ms.is_multiple_of(*unit_ms));
    match unit {
        Some((name, unit_ms)) => format!("{}{name}", ms / unit_ms),
        None => format!("{ms}ms"),
    }
}

/// The accept loop and its connections, running on the runtime until [`Server::stop`].
pub struct Server {
    stop: CancellationToken,
    tracker: TaskTracker,
    in_flight: Arc<AtomicUsize>,
}

impl Server {
    /// Serves `router` on `listener` with `settings`, from tasks of the current runtime.
    pub fn start(listener: TcpListener, router: Router, settings: Connections) -> Server {
        let server = Server {
            stop: CancellationToken::new(),
            tracker: TaskTracker::new(),
            in_flight: Arc::new(AtomicUsize::new(0)),
        };
        let shared = Shared {
            router,
            settings,
            stop: server.stop.clone(),
            tracker: server.tracker.clone(),
            in_flight: Arc::clone(&server.in_flight),
        };
        server.tracker.spawn(accept_loop(listener, shared));
        server
    }

    /// Stops accepting (the listener closes, so new connections are refused), closes every
    /// connection that has no request in flight, and lets the others finish theirs; returns
    /// how many requests are in flight.
    pub fn stop(&self) -> usize {
        self.stop.cancel();
        self.tracker.close();
        self.in_flight.load(Ordering::SeqCst)
    }

    /// When the accept loop and every connection have ended, after [`Server::stop`].
    pub async fn stopped(&self) {
        self.tracker.wait().await;
    }
}

/// What the accept loop hands every connection.
#[derive(Clone)]
struct Shared {
    router: Router,
    settings: Connections,
    stop: CancellationToken,
    tracker: TaskTracker,
    in_flight: Arc<AtomicUsize>,
}

/// Accepts while there is a free slot; at the cap, leaves new connections in the kernel's
/// listen queue until one closes. Waiting rather than refusing: a client that comes while
/// the server is full is served late instead of failed, an attacker's surplus costs the
/// server nothing (an accept-and-close loop would spin on it), and the timeouts bound how
/// long a slot can be held without a request being served.
async fn accept_loop(listener: TcpListener, shared: Shared) {
    let slots = Arc::new(Semaphore::new(shared.settings.max_connections));
    let mut warned_full: Option<Instant> = None;
    loop {
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if warned_full.is_none_or(|at| at.elapsed() >= FULL_WARNING_EVERY) {
                    warned_full = Some(Instant::now());
                    tracing::warn!(
                        "{} connections are open, the most --max-connections allows; new \
                         ones wait to be accepted until one closes",
                        shared.settings.max_connections
                    );
                }
                tokio::select! {
                    slot = Arc::clone(&slots).acquire_owned() => match slot {
                        Ok(slot) => slot,
                        // Never closed; should it be, nothing more can be accepted.
                        Err(_) => return,
                    },
                    () = shared.stop.cancelled() => return,
                }
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shared.stop.cancelled() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                shared
                    .tracker
                    .spawn(serve_connection(stream, slot, shared.clone()));
            }
            Err(error) if is_connection_error(&error) => {}
            Err(error) => {
                tracing::error!(
                    %error,
                    "cannot accept a connection; trying again in {} ms",
                    ACCEPT_BACKOFF.as_millis()
                );
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                    () = shared.stop.cancelled() => return,
                }
            }
        }
    }
}

/// A failure of the one connection being accepted (it was reset before it was taken),
/// not of the listener.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// One connection, from accept to close: hyper's HTTP/1 connection driven until it ends,
/// its phase's deadline passes (the connection is dropped, which closes it), or the server
/// stops.
async fn serve_connection(stream: TcpStream, slot: OwnedSemaphorePermit, shared: Shared) {
    // Held until the connection is closed, when the next one may be accepted.
    let _slot = slot;
    let phase = Arc::new(PhaseCell::new());
    let io = TokioIo::new(Watched {
        stream,
        phase: Arc::clone(&phase),
    });
    let service = {
        let (phase, router, in_flight) = (
            Arc::clone(&phase),
            shared.router.clone(),
            Arc::clone(&shared.in_flight),
        );
        hyper::service::service_fn(move |request: Request<Incoming>| {
            let busy = Busy::begin(Arc::clone(&phase), Arc::clone(&in_flight));
            let router = router.clone();
            async move {
                let response = match router.oneshot(request.map(Body::new)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response.map(|body| Tracked { body, _busy: busy }))
            }
        })
    };
    let mut connection = pin!(hyper::server::conn::http1::Builder::new()
        // The deadlines are this module's (see the module's docs); hyper's would need a
        // timer and close idle connections on the header timeout.
        .header_read_timeout(None)
        .serve_connection(io, service));

    let settings = shared.settings;
    let mut deadline = phase.deadline(&settings);
    let mut timer = pin!(tokio::time::sleep_until(
        deadline.unwrap_or_else(Instant::now)
    ));
    let mut stopping = false;
    loop {
        tokio::select! {
            ended = connection.as_mut() => {
                if let Err(error) = ended {
                    // A client that went away or sent garbage: its own business.
                    tracing::debug!(%error, "connection ended");
                }
                return;
            }
            () = timer.as_mut(), if deadline.is_some() => {
                // The phase may have changed since the timer was set; only its own
                // deadline closes the connection.
                if phase.deadline(&settings).is_some_and(|due| due <= Instant::now()) {
                    return;
                }
            }
            () = phase.changed.notified() => {}
            () = shared.stop.cancelled(), if !stopping => {
                stopping = true;
                if !phase.is_busy() {
                    return;
                }
                // Keep-alive off: the response in progress says `Connection: close`, and
                // hyper closes the connection once it is written.
                connection.as_mut().graceful_shutdown();
            }
        }
        deadline = phase.deadline(&settings);
        if let Some(due) = deadline {
            timer.as_mut().reset(due);
        }
    }
}

/// Where a connection is between its requests.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request head, or part of the way through one, since `since`.
    Head { since: Instant },
    /// Serving `requests` (one, unless a client pipelines), with bytes read meanwhile when
    /// `read_ahead` (the start of the next head).
    Busy { requests: usize, read_ahead: bool },
    /// The last response is written and nothing has come since `since`.
    Idle { since: Instant },
}

/// A connection's phase, shared by its reads, its requests and its task, and a
/// notification to the task at every change, so that its timer is set for the new phase.
struct PhaseCell {
    phase: Mutex<Phase>,
    changed: Notify,
}

impl PhaseCell {
    fn new() -> PhaseCell {
        PhaseCell {
            phase: Mutex::new(Phase::Head {
                since: Instant::now(),
            }),
            changed: Notify::new(),
        }
    }

    fn update(&self, change: impl FnOnce(Phase) -> Phase) {
        // Nothing panics while the lock is held, so a poisoned lock still holds a phase.
        let mut phase = self.phase.lock().unwrap_or_else(PoisonError::into_inner);
        *phase = change(*phase);
        drop(phase);
        self.changed.notify_one();
    }

    fn get(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_busy(&self) -> bool {
        matches!(self.get(), Phase::Busy { .. })
    }

    /// When the connection is to be closed unless its phase changes; none while busy.
    fn deadline(&self, settings: &Connections) -> Option<Instant> {
        match self.get() {
            Phase::Head { since } => Some(since + settings.header_timeout),
            Phase::Idle { since } => Some(since + settings.idle_timeout),
            Phase::Busy { .. } => None,
        }
    }

    /// Bytes came in: an idle connection starts a head, and its header timeout with it.
    fn read(&self) {
        match self.get() {
            Phase::Head { .. }
            | Phase::Busy {
                read_ahead: true, ..
            } => {}
            Phase::Idle { .. } => self.update(|_| Phase::Head {
                since: Instant::now(),
            }),
            Phase::Busy { requests, .. } => self.update(|_| Phase::Busy {
                requests,
                read_ahead: true,
            }),
        }
    }
}

/// A request in flight, from the moment hyper hands it over until its response's body is
/// dropped, which hyper does once the body is written: the connection is busy, and the
/// server's count of requests in flight holds it.
struct Busy {
    phase: Arc<PhaseCell>,
    in_flight: Arc<AtomicUsize>,
}

impl Busy {
    fn begin(phase: Arc<PhaseCell>, in_flight: Arc<AtomicUsize>) -> Busy {
        in_flight.fetch_add(1, Ordering::SeqCst);
        phase.update(|phase| match phase {
            Phase::Busy {
                requests,
                read_ahead,
            } => Phase::Busy {
                requests: requests + 1,
                read_ahead,
            },
            Phase::Head { .. } | Phase::Idle { .. } => Phase::Busy {
                requests: 1,
                read_ahead: false,
            },
        });
        Busy { phase, in_flight }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.phase.update(|phase| match phase {
            Phase::Busy {
                requests,
                read_ahead,
            } if requests > 1 => Phase::Busy {
                requests: requests - 1,
                read_ahead,
            },
            // Part of the next head came while this request was served: its header
            // timeout starts now.
            Phase::Busy {
                read_ahead: true, ..
            } => Phase::Head {
                since: Instant::now(),
            },
            _ => Phase::Idle {
                since: Instant::now(),
            },
        });
    }
}

/// A response body that keeps its request [`Busy`] until hyper drops it.
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The connection's socket, telling its phase when bytes come in.
struct Watched {
    stream: TcpStream,
    phase: Arc<PhaseCell>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.phase.read();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    #[test]
    fn durations() {
        let day = MAX_TIMEOUT;
        let cases: [(&str, Option<u64>); 13] = [
            ("500ms", Some(500)),
            ("10s", Some(10_000)),
            ("2m", Some(120_000)),
            ("24h", Some(86_400_000)),
            ("25h", None),
            ("0s", None),
            ("10", None),
            ("s", None),
            ("1.5s", None),
            ("-1s", None),
            (" 1s", None),
            ("1s ", None),
            ("1d", None),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text, day),
                ms.map(Duration::from_millis),
                "{text:?}"
            );
        }
    }

    #[test]
    fn durations_are_written_in_their_largest_unit() {
        for (ms, text) in [(500, "500ms"), (10_000, "10s"), (1_500, "1500ms")] {
            assert_eq!(duration_text(Duration::from_millis(ms)), text);
        }
        assert_eq!(duration_text(Duration::from_secs(744 * 3600)), "744h");
        assert_eq!(duration_text(Duration::from_secs(120)), "2m");
    }
}
