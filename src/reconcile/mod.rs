//! Reconciling a TFJob: one pass is [`reconcile`], one line per step — observe, plan, write
//! the children, write the status, delete the job when its TTL is due.
//!
//! The layers, each a folder, arrows pointing down: `plan/` decides (pure: the job, what was
//! observed and `now` in, the `Plan` out), building the objects it wants with `build/` (pure);
//! `observe` reads the caches, `apply/` makes the writes; `memory/` keeps what a job's passes
//! must remember between them; `context` holds what passes share. The caches and watches
//! below them are `runtime/`; the API types are `crd/`.

pub mod apply;
pub mod build;
pub(crate) mod context;
pub(crate) mod error;
pub(crate) mod job;
pub(crate) mod memory;
pub(crate) mod observe;
pub(crate) mod plan;

use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;

use crate::crd::cached::CachedJob;
use crate::metrics::controller::Outcome;
use crate::metrics::queue::Pass;
use apply::Target;
pub use context::{Context, Shared};
use error::{PassError, Step};
use job::JobMeta;
use memory::JobMemory;
use plan::model::Plan;

/// One pass for one job (docs/behaviour.md §6), counted as controller-runtime counts its
/// reconciles (docs/metrics.md). Its span (the job's name on the pass's log lines) is a debug
/// one: at the default `info` it is never made, which saved about 6% of the CPU per job.
#[tracing::instrument(level = "debug", skip_all, fields(job = %object.name_any(), namespace = object.namespace().unwrap_or_default()))]
pub async fn reconcile(object: Arc<CachedJob>, ctx: Arc<Context>) -> Result<Action, PassError> {
    let metrics = &ctx.shared.metrics;
    let mut counted = metrics
        .queue
        .pass(&object.namespace().unwrap_or_default(), &object.name_any());
    let result = pass(object, &ctx, &mut counted).await;
    // A failed pass is requeued too, by `error_policy`.
    let outcome = match &result {
        Err(_) => Outcome::Error,
        Ok(action) if *action == Action::await_change() => Outcome::Success,
        Ok(_) => {
            metrics.queue.requeued();
            Outcome::RequeueAfter
        }
    };
    metrics.controller.finished(outcome, counted.took());
    result
}

/// The pass itself. A refused create fails the pass only after the status is written, so the
/// job tells why (`ReplicaFailure`) while it is retried.
async fn pass(
    object: Arc<CachedJob>,
    ctx: &Context,
    counted: &mut Pass,
) -> Result<Action, PassError> {
    ctx.synced().await.map_err(Step::Observe.failed())?;
    let (Ok(turn), Some(object)) = (ctx.turns.acquire().await, ctx.latest(&object)) else {
        return Ok(Action::await_change());
    };
    counted.working();
    let started = Instant::now();
    let job = JobMeta::of(&object).map_err(Step::Decode.failed())?;
    if let (Some(side), Some(workloads)) = (&ctx.shared.kueue, &ctx.workloads) {
        // Kueue's half first, as Kueue's webhook and controller would have acted on the job
        // already: a queued job not admitted is suspended before it can get a pod, and a pass
        // that wrote the job (or failed to) ends here.
        let wrote_job = crate::kueue::pass::step(side, workloads, &object)
            .await
            .map_err(Step::Kueue.failed())?;
        if wrote_job {
            return Ok(Action::await_change());
        }
    }
    if let Some(action) = ctx.not_now(&job) {
        return Ok(action);
    }
    let (shared, now) = (&ctx.shared, Timestamp::now());
    let observed = observe::observe(ctx, &object, &job, now);
    let plan = plan::plan(
        object.0.as_ref(),
        job.name,
        &observed,
        now,
        &shared.settings,
    );
    let refused = apply::children(&Target::new(ctx, &job), &plan)
        .await
        .map_err(Step::WriteChildren.failed())?;
    // The turn bounds the passes planning and writing children. The status write that follows
    // is one request: held through it, a creating pass kept its turn for two round trips, and
    // 200 jobs applied at once got their first pods up to 3 s later (BENCHMARKS.md). kube's
    // own bound (`controller::in_flight`) still caps the passes in flight.
    drop(turn);
    apply::status::write(shared, &job, plan.status.as_ref())
        .await
        .map_err(Step::WriteStatus.failed())?;
    if plan.delete_job {
        apply::job::delete(shared, &job)
            .await
            .map_err(Step::DeleteJob.failed())?;
    }
    if let Some(error) = refused {
        return Err(Step::WriteChildren.failed()(error));
    }
    Ok(pass_done(shared, &job, &plan, started, now))
}

/// A pass that went through: its failures are forgotten and measured, and the job comes back
/// when the plan asks (a deadline, a TTL), else on its next change.
fn pass_done(
    shared: &Shared,
    job: &JobMeta<'_>,
    plan: &Plan,
    started: Instant,
    now: Timestamp,
) -> Action {
    shared.memory.with(job.uid, JobMemory::succeeded);
    shared.metrics.observe_reconcile(started.elapsed());
    tracing::debug!(
        took_ms = started.elapsed().as_millis() as u64,
        created = plan.create_pods.len() + plan.create_services.len(),
        deleted = plan.delete_pods.len() + plan.delete_services.len(),
        "pass done"
    );
    match plan.requeue_at {
        Some(at) => Action::requeue(Duration::try_from(at.duration_since(now)).unwrap_or_default()),
        None => Action::await_change(),
    }
}

/// A failed pass is retried: soon when it only has to wait (caches re-listing, a conflict
/// with a newer version of the job), else with exponential backoff per job (0.5 s doubling
/// to `--max-error-backoff`, 60 s by default), so an overloaded or failing API server is not
/// hammered, and a job refused for a cause nobody tells us is gone (a quota raised) goes on
/// within that bound (docs/behaviour.md §13).
pub fn error_policy(object: Arc<CachedJob>, error: &PassError, ctx: Arc<Context>) -> Action {
    let shared = &ctx.shared;
    shared
        .metrics
        .reconcile_errors
        .get_or_create(&crate::metrics::ErrorLabels {
            error: error.metric_label(),
        })
        .inc();
    let after = if error.source.is_wait() {
        tracing::debug!(error = %error, "reconcile deferred");
        Duration::from_millis(500)
    } else {
        let uid = object.uid().unwrap_or_default();
        let attempts = shared.memory.with(&uid, JobMemory::failed);
        tracing::warn!(
            job = %object.name_any(),
            namespace = object.namespace().unwrap_or_default(),
            error = %error,
            attempts,
            "reconcile failed"
        );
        backoff(attempts, shared.max_backoff)
    };
    shared.metrics.queue.requeued();
    Action::requeue(after)
}

fn backoff(attempts: u32, max: Duration) -> Duration {
    let millis = 500u64.saturating_mul(1u64 << attempts.saturating_sub(1).min(20));
    Duration::from_millis(millis).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let got: Vec<u64> = [1, 2, 3, 10, 30]
            .iter()
            .map(|&a| backoff(a, Duration::from_secs(300)).as_millis() as u64)
            .collect();
        assert_eq!(got, [500, 1000, 2000, 256_000, 300_000]);
        assert_eq!(backoff(30, Duration::from_secs(2)), Duration::from_secs(2));
    }
}
