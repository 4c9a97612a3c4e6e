//! The request flow of an API that charges by the answer, written once: what a server's
//! middleware, the docs widget and its live mode all run.
//!
//! 1. Before the handler, **reserve** [`Pricing::reserve_cost`] tokens
//!    ([`Store::reserve`]). A request that does not fit is answered 429 with the refusal's
//!    `Retry-After`, and costs nothing.
//! 2. The handler answers. What that answer costs is [`Pricing::cost`]: the cost table's
//!    price for its status (ESI's: 2XX 2, 3XX 1, 4XX 5, 429 0, 5XX 0), a handler that failed
//!    (an error, a panic) priced as a 500, and a status the table does not price costing
//!    nothing.
//! 3. **Settle** the reservation at that cost ([`Store::settle`]): the difference is charged
//!    (the bucket may pass the limit, as ESI's does; later requests wait) or refunded.
//!
//! A request dropped between 1 and 3 (its client hung up) is never settled and keeps its
//! reserve. Since the reserve is spent before the handler runs, requests that arrive
//! together cannot all pass step 1: with a reserve of 1 and a limit of N, at most N of
//! them are admitted, however many they are, and once they are settled the bucket holds
//! exactly what they cost. It is a rate limit, not a cap on requests in flight: a reserve
//! stops counting as the algorithm lets any token go (the window slides on, the bucket
//! refills), so handlers that outlast that no longer hold their tokens.
//!
//! ```
//! use trickle_core::flow::{Answer, Pricing};
//! use trickle_core::{Admission, KeyedLimiter};
//!
//! let esi = Pricing::esi();
//! let mut limiter: KeyedLimiter<&str> = KeyedLimiter::new("10/1m".parse().unwrap());
//! let Admission::Admitted { reservation, .. } = esi.admit(&mut limiter, &"alice", 0).unwrap() else {
//!     panic!("room for one");
//! };
//! // … the handler answers 404 …
//! let settled = esi.settle(&mut limiter, &"alice", reservation, 20, Answer::Status(404)).unwrap();
//! assert_eq!(settled.decision.cost, 5);
//! assert_eq!(settled.decision.remaining(), 5);
//! ```

use crate::algorithms::reservation::{Admission, Reservation};
use crate::serving::costs::{CostTable, UnpricedStatus};
use crate::serving::ietf::QuotaUnit;
use crate::stores::store::Store;
use crate::values::decision::Decision;
use crate::values::policy::PolicyDecision;

/// How a request ended, as far as its price goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// The handler answered with this HTTP status.
    Status(u16),
    /// The handler failed (returned an error, or panicked) without an answer: priced as a
    /// `500 Internal Server Error`, which is what the client will see.
    Failed,
}

impl Answer {
    /// The status the answer is priced as.
    pub fn status(&self) -> u16 {
        match self {
            Answer::Status(status) => *status,
            Answer::Failed => 500,
        }
    }
}

/// What a request reserves before it is answered, and what each answer costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pricing {
    reserve: u64,
    /// `None`: every request costs its reserve, known before it is answered.
    costs: Option<CostTable>,
}

/// A settled request: the settle's decision, and the status the cost table had no price
/// for, when it had none (the request then cost nothing; say so in a log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// The bucket after the settle; its `cost` is what the request cost.
    pub decision: Decision,
    /// The status the table does not price, which cost nothing.
    pub unpriced: Option<UnpricedStatus>,
}

impl Pricing {
    /// ESI's flow: reserve 1 token, then charge what the status costs under
    /// [`CostTable::esi`].
    pub fn esi() -> Pricing {
        Pricing::by_status(1, CostTable::esi())
    }

    /// Reserve `reserve` tokens, then charge what the answer's status costs under `costs`.
    pub fn by_status(reserve: u64, costs: CostTable) -> Pricing {
        Pricing {
            reserve,
            costs: Some(costs),
        }
    }

    /// Every request costs `cost`, whatever its answer: the reserve is the charge, and the
    /// settle changes nothing.
    pub fn fixed(cost: u64) -> Pricing {
        Pricing {
            reserve: cost,
            costs: None,
        }
    }

    /// The same pricing with a reserve of `tokens`.
    pub fn with_reserve(mut self, tokens: u64) -> Pricing {
        self.reserve = tokens;
        self
    }

    /// What a request reserves before it is answered.
    pub fn reserve_cost(&self) -> u64 {
        self.reserve
    }

    /// What the quotas count under this pricing, for the IETF fields' `qu`: requests when
    /// every request costs exactly 1 whatever its answer, tokens otherwise.
    pub fn quota_unit(&self) -> QuotaUnit {
        match (&self.costs, self.reserve) {
            (None, 1) => QuotaUnit::Requests,
            _ => QuotaUnit::Tokens,
        }
    }

    /// The cost table, when answers are priced by status.
    pub fn costs(&self) -> Option<&CostTable> {
        self.costs.as_ref()
    }

    /// What a request that ended with `answer` costs. An error names a status the table
    /// does not price; the flow ([`Pricing::settle`]) charges such a request nothing.
    pub fn cost(&self, answer: Answer) -> Result<u64, UnpricedStatus> {
        match &self.costs {
            Some(costs) => costs.cost(u64::from(answer.status())),
            None => Ok(self.reserve),
        }
    }

    /// Step 1: reserves the request's tokens on `key`'s bucket, or refuses it.
    pub fn admit<K: ?Sized, S: Store<K>>(
        &self,
        store: &mut S,
        key: &K,
        now_ms: u64,
    ) -> Result<Admission, S::Error> {
        store.reserve(key, now_ms, self.reserve)
    }

    /// Step 3: settles `reservation` at what `answer` costs.
    pub fn settle<K: ?Sized, S: Store<K>>(
        &self,
        store: &mut S,
        key: &K,
        reservation: Reservation,
        now_ms: u64,
        answer: Answer,
    ) -> Result<Settled, S::Error> {
        let (cost, unpriced) = self.charge(answer);
        let decision = store.settle(key, reservation, now_ms, cost)?;
        Ok(Settled { decision, unpriced })
    }

    /// What the flow charges for `answer`: its price, or nothing for a status the table does
    /// not price, with that status.
    pub fn charge(&self, answer: Answer) -> (u64, Option<UnpricedStatus>) {
        match self.cost(answer) {
            Ok(cost) => (cost, None),
            Err(unpriced) => (0, Some(unpriced)),
        }
    }
}

/// The reservation an allowed reserve under a policy holds: its tokens, taken in every
/// limit at the decision's time, under `ticket`. `None` when the policy refused it (nothing
/// was taken anywhere). The policy's twin of [`Admission::new`], for a store that decides
/// [`Op::Reserve`](crate::Op::Reserve) itself.
pub fn policy_reservation(decision: &PolicyDecision, ticket: u64) -> Option<Reservation> {
    let own = decision.decisions().first()?;
    decision
        .is_allowed()
        .then(|| Reservation::from_parts(own.at_ms, own.cost, ticket))
}

impl Default for Pricing {
    /// ESI's.
    fn default() -> Pricing {
        Pricing::esi()
    }
}
