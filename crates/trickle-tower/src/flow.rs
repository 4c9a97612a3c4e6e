//! The flow each limited request goes through: the core's [`trickle_core::flow`] (reserve,
//! answer, settle) over an async [`Backend`], with the budget of free runs, shadow mode and
//! the failure rules around it.

use std::panic::resume_unwind;
use std::sync::Arc;

use http::{Request, Response, StatusCode};
use http_body_util::Either;
use tower_service::Service;
use trickle_core::flow::{policy_reservation, Answer};
use trickle_core::{Admission, Decision, Op, PolicyDecision, Reservation};

use crate::answers::{
    free_runs_spent, json_error, mark_would_refuse, set_headers, too_many_keys, too_many_requests,
    unavailable, Body, Group,
};
use crate::backend::Backend;
use crate::config::Config;
use crate::failure::{Failure, OnFailure};
use crate::free_runs::FreeRuns;
use crate::future::Caught;
use crate::observe::{FailureKind, Observed, Reason, StoreOp};
use crate::subject::{Rejection, Subject};

/// One request through the flow. Dropped at any await (the client hung up, an outer
/// timeout), it leaves the bucket as far as it got: a reservation made and not yet settled
/// stays charged.
pub(crate) async fn limit<S, B, F, ReqBody, ResBody>(
    config: Arc<Config<B, F>>,
    mut inner: S,
    request: Request<ReqBody>,
) -> Result<Response<Body<ResBody>>, S::Error>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    B: Backend,
    F: Fn(&Request<ReqBody>) -> Result<Option<Subject>, Rejection>,
{
    let subject = match (config.subject)(&request) {
        Ok(Some(subject)) => subject,
        Ok(None) => return Ok(inner.call(request).await?.map(Either::Left)),
        Err(rejection) => return Ok(json_error(rejection.status(), rejection.message())),
    };
    let Subject { group, key } = &subject;
    let Some(policy) = config.backend.policy(group) else {
        tracing::error!(group = %group, "the subject function named a rate-limit group the backend does not have");
        return Ok(json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "this route's rate limit is not configured",
        ));
    };

    let answers = Group {
        name: group,
        policy,
        dialect: config.headers,
        unit: config.pricing.quota_unit(),
    };
    let observed = config.observer.group(group);
    observed.decided();

    // The budget of answers that cost nothing, before the bucket: it is in process, so a
    // request it refuses costs the store no round trip, and a run the bucket then refuses
    // is handed back at once.
    let free_run = match &config.free_runs {
        None => None,
        Some(free_runs) => match free_runs.reserve(group, key, (config.clock)()) {
            None => None,
            Some(Admission::Admitted { reservation, .. }) => Some((&**free_runs, reservation)),
            Some(Admission::Refused(refusal)) => {
                let refusal = Refusal::FreeRuns(&refusal);
                return refuse(&config, &observed, inner, request, refusal, answers).await;
            }
        },
    };

    let backend = &config.backend;
    let reserve = config.pricing.reserve_cost();
    let ticket = Reservation::new_ticket();
    let reserved = observed
        .timed(
            StoreOp::Reserve,
            backend.decide(
                group,
                key,
                Op::Reserve { ticket },
                (config.clock)(),
                reserve,
            ),
        )
        .await;
    let admitted = reserved.map(|decision| match policy_reservation(&decision, ticket) {
        Some(reservation) => Ok(reservation),
        None => Err(decision),
    });
    let reservation = match admitted {
        Ok(Ok(reservation)) => {
            observed.admitted();
            reservation
        }
        Ok(Err(refusal)) => {
            // The handler does not run (or, in shadow mode, runs as if it did not): no run
            // of the budget is spent.
            settle_run(free_run, &subject, (config.clock)(), false);
            let refusal = Refusal::Limit(&refusal);
            return refuse(&config, &observed, inner, request, refusal, answers).await;
        }
        Err(error) => {
            let failure = B::failure(&error);
            observed.failure(StoreOp::Reserve, FailureKind::of(failure));
            if let Failure::Data { problem } = failure {
                // Not an outage: the store is up, and this key would fail the same way on
                // every request; failing open would switch its limit off until someone
                // noticed, and shadow mode too answers it, as it is no refusal.
                settle_run(free_run, &subject, (config.clock)(), false);
                tracing::error!(
                    group = %group, key = %key, %error,
                    "rate limiter cannot decide this request: {problem}; answering 500 (the \
                     failure rule is for outages, and this is none)"
                );
                let message = format!("the rate limiter cannot decide this request: {problem}");
                let mut response = json_error(StatusCode::INTERNAL_SERVER_ERROR, &message);
                set_headers(&mut response, None, answers);
                return Ok(response);
            }
            if let (Failure::Full { retry_after_ms }, false) = (failure, config.shadow) {
                // Not an outage either: failing open here would let every new key through
                // uncharged while the table is full, which is what a flood of keys aims at.
                settle_run(free_run, &subject, (config.clock)(), false);
                tracing::warn!(
                    group = %group, %error,
                    "rate limiter holds as many keys as it may: a new key is answered 503"
                );
                return Ok(too_many_keys(answers, retry_after_ms));
            }
            // Shadow mode refuses nothing, a 503 of a store that is away included: it fails
            // open whatever the rule says.
            let on_failure = if config.shadow {
                OnFailure::Open
            } else {
                config.on_failure
            };
            match on_failure {
                OnFailure::Open => {
                    tracing::warn!(
                        group = %group, key = %key, %error,
                        "rate limiter could not decide; failing open: the request goes through \
                         unreserved (if the store timed out, whether it charged the reserve is \
                         unknown)"
                    );
                    // Not settled: a store that could not reserve would most likely fail the
                    // settle too, after as long a wait, with a second warning. (A reserve that
                    // timed out on Redis may still have run: its reserve then stays charged.)
                    // The budget still counts what the answer would have cost.
                    let outcome = inner.call(request).await;
                    let cost_nothing = costs_nothing(&config, answer_of(&outcome));
                    settle_run(free_run, &subject, (config.clock)(), cost_nothing);
                    let mut response = outcome?.map(Either::Left);
                    set_headers(&mut response, None, answers);
                    return Ok(response);
                }
                OnFailure::Closed => {
                    settle_run(free_run, &subject, (config.clock)(), false);
                    tracing::warn!(
                        group = %group, key = %key, %error,
                        "rate limiter could not decide; failing closed: 503 (if the store timed \
                         out, whether it charged the reserve is unknown)"
                    );
                    return Ok(unavailable(answers));
                }
            }
        }
    };

    let outcome = Caught::call(&mut inner, request).await;
    let answer = match &outcome {
        Ok(outcome) => answer_of(outcome),
        Err(_) => Answer::Failed,
    };
    let (cost, unpriced) = config.pricing.charge(answer);
    if let Some(unpriced) = unpriced {
        tracing::warn!(%unpriced, "the response's status has no price; it costs nothing");
    }
    settle_run(free_run, &subject, (config.clock)(), cost == 0);
    let reserved = reservation.cost();
    let settled = observed
        .timed(
            StoreOp::Settle,
            backend.decide(group, key, Op::settle(reservation), (config.clock)(), cost),
        )
        .await
        .inspect_err(|error| {
            let failure = B::failure(error);
            observed.failure(StoreOp::Settle, FailureKind::of(failure));
            match failure {
                // The settle may have run before the error: the bucket holds the reserve or
                // the cost, and which is not known here (the error says when it is: a
                // settle never sent).
                Failure::Outage => tracing::warn!(
                    group = %group, key = %key, status = answer.status(), reserved, cost, %error,
                    "rate limiter could not settle the request; unless the error says it was \
                     not sent, its outcome is unknown: the bucket holds its reserve, or its \
                     cost if the settle ran"
                ),
                // A settle always lands in process, so this is a store of someone else's.
                Failure::Full { .. } => tracing::warn!(
                    group = %group, key = %key, status = answer.status(), reserved, cost, %error,
                    "rate limiter could not settle the request, being full: the bucket holds \
                     its reserve"
                ),
                Failure::Data { problem } => tracing::error!(
                    group = %group, key = %key, status = answer.status(), reserved, cost, %error,
                    "rate limiter could not settle the request: {problem}; the bucket holds \
                     its reserve, or its cost if the settle ran before the error"
                ),
            }
        })
        .ok();
    match outcome {
        Ok(Ok(response)) => {
            let mut response = response.map(Either::Left);
            set_headers(&mut response, settled.as_ref(), answers);
            Ok(response)
        }
        Ok(Err(error)) => Err(error),
        // The handler's panic goes on, now that its request is paid for.
        Err(panic) => resume_unwind(panic),
    }
}

/// Why a request is refused before its handler: the buckets' refusal, or the budget's.
enum Refusal<'a> {
    Limit(&'a PolicyDecision),
    FreeRuns(&'a Decision),
}

impl Refusal<'_> {
    fn reason(&self) -> Reason {
        match self {
            Refusal::Limit(_) => Reason::Limit,
            Refusal::FreeRuns(_) => Reason::FreeRuns,
        }
    }

    /// The wait a 429 would say, in whole seconds rounded up.
    fn retry_after_s(&self) -> Option<u64> {
        match self {
            Refusal::Limit(decision) => decision.retry_after_ms().map(|ms| ms.div_ceil(1000)),
            Refusal::FreeRuns(decision) => decision.retry_after_s(),
        }
    }
}

/// A request the bucket or the budget refuses: a 429, or in shadow mode the handler's
/// answer, marked, and charged nothing anywhere, exactly as the 429 would have been, so
/// the buckets go on as a normal layer's.
async fn refuse<S, B, F, ReqBody, ResBody>(
    config: &Config<B, F>,
    observed: &Observed,
    mut inner: S,
    request: Request<ReqBody>,
    refusal: Refusal<'_>,
    answers: Group<'_>,
) -> Result<Response<Body<ResBody>>, S::Error>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    let reason = refusal.reason();
    if !config.shadow {
        observed.refused(reason);
        return Ok(match refusal {
            Refusal::Limit(decision) => too_many_requests(decision, answers),
            Refusal::FreeRuns(decision) => free_runs_spent(decision, answers),
        });
    }
    observed.would_refuse(reason);
    // Debug, not a warning: under a flood it would be a line per request, and the counter
    // and the header already say it.
    tracing::debug!(
        group = %answers.name, reason = reason.name(),
        "shadow mode: a request the limit would refuse goes through, uncharged"
    );
    let mut response = inner.call(request).await?.map(Either::Left);
    let counted = match refusal {
        Refusal::Limit(decision) => Some(decision),
        Refusal::FreeRuns(_) => None,
    };
    let wait = refusal.retry_after_s();
    mark_would_refuse(&mut response, counted, wait, answers, reason.name());
    Ok(response)
}

/// How a handler's call ended, as far as its price goes.
fn answer_of<ResBody, E>(outcome: &Result<Response<ResBody>, E>) -> Answer {
    match outcome {
        Ok(response) => Answer::Status(response.status().as_u16()),
        Err(_) => Answer::Failed,
    }
}

/// Whether `answer` is one the budget of free runs counts: its price is 0.
fn costs_nothing<B, F>(config: &Config<B, F>, answer: Answer) -> bool {
    config.pricing.charge(answer).0 == 0
}

/// Settles the budget's run, when the layer has a budget: kept when the answer cost
/// nothing, handed back otherwise.
fn settle_run(
    run: Option<(&FreeRuns, Reservation)>,
    subject: &Subject,
    now_ms: u64,
    cost_nothing: bool,
) {
    if let Some((free_runs, run)) = run {
        // An in-process decision: nothing to wait for, nothing that can fail.
        let _settled = free_runs.settle(&subject.group, &subject.key, run, now_ms, cost_nothing);
    }
}
