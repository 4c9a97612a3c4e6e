//! Reserve, then settle: a request that holds tokens before its cost is known, and pays
//! what it really cost once it is.
//!
//! A server that charges by the response (ESI: 2XX costs 2, 4XX 5, 5XX nothing) cannot
//! charge before it answers, and a check before the handler with a charge after it lets
//! every request in flight pass the same check. A reservation closes that gap: before the
//! handler the request *reserves* a cost (spent at once, as a `hit` spends it, so requests
//! in flight together can never all pass), and after it the request *settles* at the real
//! cost: the difference is charged, or refunded.
//!
//! # What a settle means, per algorithm
//!
//! A settle at a later time leaves the bucket as if the final cost had been charged at the
//! reservation's time, as far as those tokens still count then:
//!
//! - **floating window**: the difference goes to the counter of the reservation's window,
//!   `current` while that window lasts and `previous` in the window after; once it has
//!   slid out entirely (two windows on), the settle changes nothing;
//! - **fixed window**: the difference goes to the reservation's window while it lasts;
//! - **sliding log**: the reservation's log entry takes the final cost, while it is still
//!   inside the window (`W` ms);
//! - **token bucket**: a bucket keeps only how many tokens are out, not when each was
//!   taken, so the difference is settled at the settle's time: more is taken as `record`
//!   takes it, and a refund is given back but never fills the bucket past full. A settle
//!   `W` or more after the reservation (the time a bucket takes to fill from empty)
//!   changes nothing, as the windows' do once theirs has slid out.
//!
//! A refund never takes back more than the reservation's window (or log entry, or bucket)
//! holds. A request that is never settled (its client hung up, a timeout dropped it) keeps
//! what it reserved: nobody dodges the charge by disconnecting.
//!
//! ```
//! use trickle_core::{Admission, FloatingWindow};
//!
//! let mut bucket = FloatingWindow::new("10/1m".parse().unwrap());
//! let Admission::Admitted { reservation, .. } = bucket.reserve(0, 1) else {
//!     panic!("an empty bucket has room");
//! };
//! assert_eq!(bucket.peek(0, 0).remaining(), 9); // the reserve is spent at once
//! // The handler answered 404, which ESI prices at 5: 4 more are charged.
//! let settled = bucket.settle(reservation, 20, 5);
//! assert_eq!(settled.remaining(), 5);
//! ```

use crate::values::decision::Decision;

/// Tokens a request holds from its admission until it is settled.
///
/// Made by a `reserve` that admitted the request, and consumed by the `settle` that
/// charges its final cost; it is neither `Clone` nor `Copy`, so that code holding one
/// settles it once (an in-process store keeps no record of what was settled, and applies
/// whatever settle it is given). Dropping one unsettled keeps the reserve charged.
#[derive(Debug, PartialEq, Eq, Hash)]
#[must_use = "a reservation is settled with the request's final cost; dropping it keeps the reserve charged"]
pub struct Reservation {
    at_ms: u64,
    cost: u64,
    ticket: u64,
}

impl Reservation {
    /// The reservation a store made at `at_ms` (the time its decision was made at, as
    /// [`Decision::at_ms`]) for `cost` tokens, under `ticket`.
    ///
    /// Stores make these; this is for a store outside this crate, or one that hands the
    /// parts across a boundary (the WebAssembly binding) and takes them back.
    pub fn from_parts(at_ms: u64, cost: u64, ticket: u64) -> Reservation {
        Reservation {
            at_ms,
            cost,
            ticket,
        }
    }

    /// A ticket no other reservation is likely to have, in this process or another sharing
    /// the same Redis: a per-thread counter from a random start. For an async store that decides
    /// [`Op::Reserve`](crate::Op::Reserve) itself; [`Store::reserve`](crate::Store::reserve)
    /// draws one for you.
    pub fn new_ticket() -> u64 {
        next_ticket()
    }

    /// When the tokens were taken: the reservation's decision's time.
    pub fn at_ms(&self) -> u64 {
        self.at_ms
    }

    /// How many tokens it holds.
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// What tells this reservation from every other: a store across the network (Redis)
    /// keeps it until the reservation is settled, so that a settle sent again after a
    /// timeout is applied once. In-process stores need none and ignore it.
    pub fn ticket(&self) -> u64 {
        self.ticket
    }
}

/// What a `reserve` answers.
#[derive(Debug, PartialEq, Eq, Hash)]
pub enum Admission {
    /// The request fits: its cost is spent and held by `reservation` until it is settled.
    /// `decision` is the reserve's, the cost included.
    Admitted {
        reservation: Reservation,
        decision: Decision,
    },
    /// It does not fit now (or never can): nothing was spent. Answer 429, with the
    /// decision's `Retry-After` when it has one.
    Refused(Decision),
}

impl Admission {
    /// What the decision of a reserve made under `ticket` ([`Op::Reserve`](crate::Op::Reserve))
    /// means: admitted, holding its cost from its time, when allowed; refused otherwise.
    pub fn new(decision: Decision, ticket: u64) -> Admission {
        if decision.is_allowed() {
            Admission::Admitted {
                reservation: Reservation::from_parts(decision.at_ms, decision.cost, ticket),
                decision,
            }
        } else {
            Admission::Refused(decision)
        }
    }

    /// The admission a reserve's decision (a `hit`'s) means, under a fresh ticket.
    pub(crate) fn of(decision: Decision) -> Admission {
        Admission::new(decision, next_ticket())
    }

    /// The reserve's decision, admitted or not.
    pub fn decision(&self) -> &Decision {
        match self {
            Admission::Admitted { decision, .. } | Admission::Refused(decision) => decision,
        }
    }

    /// True when the request was admitted.
    pub fn is_admitted(&self) -> bool {
        matches!(self, Admission::Admitted { .. })
    }
}

/// See [`Reservation::new_ticket`]. Under `std`, each thread counts on from a random
/// start of its own, so that no two threads (or processes) share a counter's cache line or
/// its numbers: two sequences overlap only when their random starts fall within the number
/// of tickets drawn of each other, about one chance in 2^64 per ticket. Without `std`, one
/// counter.
#[cfg(feature = "std")]
pub(crate) fn next_ticket() -> u64 {
    use core::cell::Cell;
    use std::hash::BuildHasher;
    std::thread_local! {
        static NEXT: Cell<u64> = Cell::new(std::hash::RandomState::new().hash_one(0x7469_636b_6574_u64));
    }
    NEXT.with(|next| {
        let ticket = next.get();
        next.set(ticket.wrapping_add(1));
        ticket
    })
}

#[cfg(not(feature = "std"))]
pub(crate) fn next_ticket() -> u64 {
    use core::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
