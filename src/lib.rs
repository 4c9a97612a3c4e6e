//! An exact rate-limiter core: the floating window that ESI, Cloudflare and Upstash use,
//! the exact sliding log it approximates, the fixed window and the token bucket.
//!
//! Pure logic: the caller passes the time in integer milliseconds, so the same code
//! enforces a limit in a server, replays a request log, and runs in a browser as the
//! `<rate-limit-demo>` docs widget. Every decision is made in exact integer arithmetic;
//! `f64` is only used to show a number.
//!
//! # One rule for every algorithm
//!
//! A limit is N tokens per window of W ms ([`Limit`], written `6/8s` or `150/15m`). A
//! request of cost c at time t is allowed iff `used + c ≤ N`, and then spends c. A denied
//! request spends nothing and learns `retry_after_ms`: the smallest wait after which the
//! same request fits. A request of cost 0 always fits; one of cost above N never does
//! ([`Outcome::ExceedsLimit`]).
//!
//! # The floating window, worked through
//!
//! With `6/8s`, windows are [0 s, 8 s), [8 s, 16 s), … Four tokens spent in the first
//! window and two in the second, at t = 11 s (3 s into the second window) the sliding
//! window still covers 5/8 of the first one:
//!
//! ```text
//! used = previous × overlap + current = 4 × 0.625 + 2 = 4.5
//! ```
//!
//! ```
//! use trickle_core::{FloatingWindow, Outcome};
//!
//! let mut bucket = FloatingWindow::new("6/8s".parse().unwrap());
//! for t in [0, 1_000, 2_000, 3_000, 9_000, 10_000] {
//!     assert!(bucket.hit(t, 1).is_allowed());
//! }
//! let decision = bucket.hit(11_000, 1);
//! let counters = decision.counters.unwrap();
//! assert_eq!((counters.previous, counters.current), (4, 3));
//! assert_eq!(counters.overlap(), 0.625);
//! assert_eq!(decision.used.to_string(), "5.500");
//! assert_eq!(decision.remaining(), 0);
//!
//! // A sixth token would make 6.5 > 6: denied until enough of the previous
//! // window has slid out, 4 × (8000 − e) / 8000 + 3 + 1 ≤ 6, at e = 4000 ms.
//! let denied = bucket.hit(11_000, 1);
//! assert_eq!(denied.outcome, Outcome::Denied { retry_after_ms: 1_000 });
//! assert!(bucket.peek(12_000, 1).is_allowed());
//! assert!(!bucket.peek(11_999, 1).is_allowed());
//! ```
//!
//! # Where to start
//!
//! - One bucket: [`FloatingWindow`], [`SlidingLog`], [`FixedWindow`], [`TokenBucket`],
//!   each with `hit`, `peek` (look without spending) and `record` (charge after the fact).
//! - A cost known only from the response: `reserve` before the work, `settle` after it
//!   ([`reservation`]), and the whole flow of a server that charges by status, the one the
//!   tower layer and the docs widget run: [`flow`].
//! - The algorithm chosen at run time: [`Limiter`] with an [`Algorithm`].
//! - Several limits on the same requests, a burst and a sustained rate (`10/1s 1000/1h`),
//!   decided all or nothing: a [`Policy`], in a [`PolicyLimiter`].
//! - A bucket per key, and a limit per group: [`KeyedLimiter`], [`GroupedLimiter`]; shared
//!   by a server's threads through `&self`: [`ConcurrentKeyedLimiter`].
//! - The same code over any of those, or over buckets in Redis (`trickle_redis`): [`Store`].
//! - ESI's cost by status and its headers: [`esi`].
//! - How far an approximation strays from the exact sliding log: [`compare`].
//! - A request log replayed: its rows and their messages ([`request_log`], CSV and HAR),
//!   and the figures of the replay ([`replay`]).
//! - What a response costs by its status, written as text: [`CostTable`] (its errors are in
//!   [`costs`]).
//! - The per-key state of each algorithm, for a keyed limiter of another algorithm than the
//!   floating window (`KeyedLimiter<K, state::SlidingLogState>`) or a state of your own:
//!   [`state`].
//!
//! # Without `std`
//!
//! The crate is `no_std` with `alloc` when its default feature `std` is turned off, as the
//! WebAssembly binding (`crates/trickle-wasm`) uses it. `std` adds the keyed limiters,
//! whose map is std's `HashMap`. The replay CLI is its own crate, `crates/trickle-cli`, so
//! the library has no dependencies.
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

// The modules are grouped by layer, and a module only imports from its own layer or the
// layers before it (tests/layers.rs keeps it so):
// - values: text, tokens, a limit, a decision: what every layer speaks in;
// - algorithms: the per-key state of each algorithm, the rule they share, reservations,
//   and the one dispatch over them (`algorithms::any`);
// - stores: where states live (one bucket, a keyed map, the concurrent map) and the
//   `Store` trait over them;
// - serving and analysis: what a server does with a store (costs by status, ESI's
//   headers, the reserve-then-settle flow), and how far an algorithm strays (compare).
// The public paths below are the API; the layout behind them is free to change.
mod algorithms;
mod analysis;
mod serving;
mod stores;
mod values;

pub use algorithms::reservation;
pub use analysis::{compare, replay};
pub use serving::{costs, esi, flow, ietf, request_log};

pub mod state {
    //! What every algorithm does with a request, and the rule they all share.
    //!
    //! Each algorithm keeps its per-key numbers in a small state type that implements
    //! [`State`]. The limit lives outside the state, so a keyed limiter stores one limit for
    //! many keys, and the state only ever holds counters and the latest time it has seen.
    //!
    //! The shared rule: a request of cost c is allowed iff `used + c ≤ N`. A cost of 0 always
    //! fits, a cost above N never does, and a denial spends nothing. Times earlier than the
    //! latest time already seen are treated as that latest time.
    pub use crate::algorithms::any::AnyState;
    pub use crate::algorithms::fixed::FixedState;
    pub use crate::algorithms::floating::FloatingState;
    pub use crate::algorithms::sliding_log::SlidingLogState;
    pub use crate::algorithms::state::State;
    pub use crate::algorithms::token_bucket::TokenBucketState;
}

pub use algorithms::any::{Algorithm, AlgorithmError};
pub use algorithms::reservation::{Admission, Reservation};
pub use serving::costs::CostTable;
pub use serving::esi::StatusError;
pub use stores::bucket::{Bucket, FixedWindow, FloatingWindow, Limiter, SlidingLog, TokenBucket};
#[cfg(feature = "std")]
pub use stores::concurrent::{ConcurrentKeyedLimiter, TooManyKeys};
#[cfg(feature = "std")]
pub use stores::keyed::{GroupedLimiter, KeyedLimiter};
#[cfg(feature = "std")]
pub use stores::keyed_policy::{ConcurrentKeyedPolicyLimiter, KeyedPolicyLimiter};
pub use stores::policy::{PolicyBucket, PolicyLimiter};
pub use stores::store::{Op, PolicyStore, Store};
pub use values::decision::{Counters, Decision, Outcome};
pub use values::limit::{Limit, LimitError};
pub use values::policy::{Policy, PolicyDecision, PolicyError};
pub use values::tokens::Tokens;

// The Rust examples of the README and of the docs site's Rust chapter compile and run as
// doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[doc = include_str!("../docs/src/rust.md")]
#[cfg(doctest)]
pub struct RustChapterDoctests;
