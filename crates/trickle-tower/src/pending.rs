//! The reservations a fallback limiter made and has not seen settled, by ticket, so that
//! each settle goes where its reserve was made: a reserve made in process is settled in
//! process, and a settle whose ticket is not here belongs to the store.
//!
//! Bounded two ways. A ticket is forgotten two windows after its reservation: by then its
//! tokens no longer count under any algorithm (the floating window's last reach is the end
//! of the window after the reservation's), so the core's settle would change nothing, and
//! forgetting it loses nothing. And at most [`MAX_PENDING`] tickets are kept per group,
//! the oldest forgotten first: those are the requests whose clients hung up, which are never
//! settled. A forgotten ticket's settle goes to the store, which finds no pending record
//! for it and changes nothing.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// The most reservations a group's fallback keeps track of: about 40 bytes each, some
/// 2.6 MB when full. Past it the oldest is forgotten, and its settle, should it come,
/// changes nothing.
pub const MAX_PENDING: usize = 1 << 16;

#[derive(Debug)]
pub(crate) struct Pending {
    /// How long after its reservation a ticket is kept: two windows.
    keep_ms: u64,
    /// How many tickets `tickets` holds, read without the lock: with the store up, the
    /// fallback has none, and a settle finds that out in one load.
    count: AtomicUsize,
    forgotten: AtomicU64,
    tickets: Mutex<Tickets>,
}

#[derive(Debug, Default)]
struct Tickets {
    /// Each ticket's expiry, in ms on the layer's clock.
    expires: HashMap<u64, u64>,
    /// (expiry, ticket) in the order they came. A settled ticket leaves `expires` at once
    /// and this queue when it reaches the front, so the queue bounds both.
    order: VecDeque<(u64, u64)>,
}

impl Pending {
    pub(crate) fn new(window_ms: u64) -> Pending {
        Pending {
            keep_ms: window_ms.saturating_mul(2),
            count: AtomicUsize::new(0),
            forgotten: AtomicU64::new(0),
            tickets: Mutex::new(Tickets::default()),
        }
    }

    /// Keeps `ticket`, reserved at `at_ms`, dropping what has expired at `now_ms` and, past
    /// the cap, the oldest.
    pub(crate) fn insert(&self, ticket: u64, at_ms: u64, now_ms: u64) {
        let mut tickets = self.lock();
        tickets.expire(now_ms);
        while tickets.order.len() >= MAX_PENDING {
            if tickets.pop_front() {
                self.forgotten.fetch_add(1, Ordering::Relaxed);
            }
        }
        let expires = at_ms.saturating_add(self.keep_ms);
        tickets.expires.insert(ticket, expires);
        tickets.order.push_back((expires, ticket));
        self.count.store(tickets.expires.len(), Ordering::SeqCst);
    }

    /// Whether `ticket` was kept here, forgetting it: its settle belongs here.
    pub(crate) fn take(&self, ticket: u64) -> bool {
        if self.count.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let mut tickets = self.lock();
        let found = tickets.expires.remove(&ticket).is_some();
        self.count.store(tickets.expires.len(), Ordering::SeqCst);
        found
    }

    /// Drops the tickets expired at `now_ms`.
    pub(crate) fn sweep(&self, now_ms: u64) {
        let mut tickets = self.lock();
        tickets.expire(now_ms);
        self.count.store(tickets.expires.len(), Ordering::SeqCst);
    }

    /// How many reservations are waiting for their settle.
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// How many were forgotten unsettled because the cap was reached.
    pub(crate) fn forgotten(&self) -> u64 {
        self.forgotten.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tickets> {
        // Nothing panics while it is held; should something, the map is still whole.
        self.tickets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Tickets {
    fn expire(&mut self, now_ms: u64) {
        while self
            .order
            .front()
            .is_some_and(|&(expires, _)| expires <= now_ms)
        {
            self.pop_front();
        }
    }

    /// Drops the oldest entry; whether it was a ticket still waiting for its settle.
    fn pop_front(&mut self) -> bool {
        let Some((expires, ticket)) = self.order.pop_front() else {
            return false;
        };
        // Only if it is still this entry's: a settled ticket has left the map already.
        if self.expires.get(&ticket) == Some(&expires) {
            self.expires.remove(&ticket);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_is_taken_once() {
        let pending = Pending::new(1_000);
        assert!(!pending.take(7));
        pending.insert(7, 0, 0);
        assert_eq!(pending.len(), 1);
        assert!(pending.take(7));
        assert!(!pending.take(7));
        assert_eq!(pending.len(), 0);
    }

    #[test]
    fn a_ticket_is_forgotten_two_windows_after_its_reservation() {
        let pending = Pending::new(1_000);
        pending.insert(1, 100, 100);
        pending.insert(2, 500, 500);
        pending.sweep(2_099);
        assert_eq!(pending.len(), 2);
        pending.sweep(2_100);
        assert_eq!(pending.len(), 1);
        assert!(!pending.take(1));
        assert!(pending.take(2));
        // A settled ticket's entry leaves the queue when it expires, counting nothing.
        pending.sweep(10_000);
        assert_eq!(pending.forgotten(), 0);
    }

    #[test]
    fn past_the_cap_the_oldest_is_forgotten_and_the_queue_stays_bounded() {
        let pending = Pending::new(1_000);
        // A frozen clock: nothing expires, and settled tickets pile up in the queue.
        for ticket in 0..MAX_PENDING as u64 {
            pending.insert(ticket, 0, 0);
            if ticket % 2 == 1 {
                assert!(pending.take(ticket));
            }
        }
        for ticket in 0..MAX_PENDING as u64 {
            pending.insert(1_000_000 + ticket, 0, 0);
        }
        let tickets = pending.lock();
        assert!(tickets.order.len() <= MAX_PENDING);
        assert_eq!(tickets.expires.len(), MAX_PENDING);
        drop(tickets);
        // The unsettled half of the first batch, forgotten oldest first.
        assert_eq!(pending.forgotten(), MAX_PENDING as u64 / 2);
        assert!(!pending.take(0));
        assert!(pending.take(1_000_000));
    }
}
