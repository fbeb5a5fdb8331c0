//! Reconciling a TFJob. One pass is [`reconcile`]: decode → (wait for complete caches) →
//! observe → plan → apply → write status, each step its own module.
//!
//! Pure: naming and labels, TF_CONFIG, desired children, the decision core (`plan` and its
//! rules, over the vocabulary of `model`), and the per-job `memory`. I/O: `observe` (cache
//! reads), `apply` and `status` (API writes), `watches` (the watches feeding the controller).
//! `gang`: gang scheduling's PodGroup (its rule pure, its cache and writes I/O).

pub mod apply;
pub mod cached;
pub mod children;
pub mod conditions;
pub mod counts;
pub mod desired;
pub mod events;
pub mod expectations;
pub mod finish;
pub mod gang;
pub mod job;
pub mod labels;
pub mod memory;
pub mod model;
pub mod observe;
pub mod plan;
pub mod progress;
pub mod recorder;
pub mod replicas;
pub mod restarts;
pub mod status;
pub mod summary;
pub mod suspend;
#[cfg(test)]
pub mod testing;
pub mod tf_config;
pub mod timers;
pub mod triggers;
pub mod unreadable;
pub mod view;
pub mod watches;

use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};

use self::apply::Target;
use self::cached::{CachedPod, CachedService, ChildCache};
use self::job::Job;
use self::memory::{JobMemory, Memory};
use self::model::{Plan, Settings};
use self::watches::Caches;
use crate::crd::object::JobObject;
use crate::error::Error;
use crate::metrics::Metrics;

/// State shared by every pass of every watched namespace.
pub struct Shared {
    pub client: Client,
    pub settings: Settings,
    pub recorder: recorder::EventRecorder,
    pub metrics: Metrics,
    /// What is remembered about each job between passes.
    pub memory: Memory,
    /// The cap of the per-job retry backoff after failed passes.
    pub max_backoff: Duration,
}

/// What one namespace's controller reconciles with.
pub struct Context {
    pub shared: Arc<Shared>,
    pub jobs: Store<JobObject>,
    pub pods: ChildCache<CachedPod>,
    pub services: ChildCache<CachedService>,
    pub caches: Caches,
    /// The PodGroups of the scope, when gang scheduling is on.
    pub podgroups: Option<gang::cache::GroupCache>,
    /// `--concurrency` passes work at once, taking turns first come, first served. (kube's
    /// own limit picks the next job from a hash set: when saturated, some jobs waited over
    /// 10 s while others were served at once.)
    pub turns: tokio::sync::Semaphore,
}

impl Context {
    /// The job as the cache has it now (it may have changed while the pass waited for its
    /// turn); None once it is gone.
    fn latest(&self, object: &JobObject) -> Option<Arc<JobObject>> {
        self.jobs.get(&ObjectRef::from_obj(object))
    }
}

/// One pass for one job.
#[tracing::instrument(skip_all, fields(job = %object.name_any(), namespace = object.namespace().unwrap_or_default()))]
pub async fn reconcile(object: Arc<JobObject>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.caches.synced().await?;
    if let Some(podgroups) = &ctx.podgroups {
        podgroups.synced().await?;
    }
    let (Ok(_turn), Some(object)) = (ctx.turns.acquire().await, ctx.latest(&object)) else {
        return Ok(Action::await_change());
    };
    let started = Instant::now();
    let shared = &ctx.shared;
    let job = Job::decode(&object)?;
    if let Some(action) = not_now(shared, &job) {
        return Ok(action);
    }
    let now = Timestamp::now();
    let observed = observe::observe_children(&ctx, &job, now);
    let plan = job.plan(&observed, now, &shared.settings);
    let ends = status::ends(job.status(), plan.status.as_ref());
    if ends {
        let status = with_create_failure(plan.status.clone(), None, now);
        status::write(shared, &job, status.as_ref()).await?;
    }
    let applied = apply::apply_plan(&Target::new(shared, &job), &plan).await;
    // A status counting a restart is stored only once the failed pod is gone: were the
    // delete lost, the next pass would count it again.
    applied.deleted?;
    if let Err(Error::NamespaceTerminating { .. }) = applied.created {
        tracing::debug!("namespace is being deleted; the job is left to go with it");
        return Ok(Action::await_change());
    }
    if !ends {
        let failure = applied
            .created
            .as_ref()
            .err()
            .and_then(Error::create_failure);
        let status = with_create_failure(plan.status.clone(), failure, now);
        status::write(shared, &job, status.as_ref()).await?;
    }
    if plan.delete_job {
        apply::delete_job(shared, &job).await?;
    }
    applied.created?;
    Ok(pass_done(shared, &job, &plan, started, now))
}

/// A pass that went through: its failures are forgotten and measured, and the job comes back
/// when the plan asks (a deadline, a TTL), else on its next change.
fn pass_done(
    shared: &Shared,
    job: &Job<'_>,
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

/// The planned status with the `ReplicaFailure` condition as this pass's creates left it.
fn with_create_failure(
    status: Option<crate::crd::TFJobStatus>,
    failure: Option<(&'static str, String)>,
    now: Timestamp,
) -> Option<crate::crd::TFJobStatus> {
    status.map(|mut s| {
        conditions::replica_failure(&mut s.conditions, failure, now);
        s
    })
}

/// Passes that must not plan: a job being deleted is left to garbage collection (and
/// forgotten), and a cached job older than our own last status write would make the pass
/// redo what that write recorded (the cache catches up within moments).
fn not_now(shared: &Shared, job: &Job<'_>) -> Option<Action> {
    if job.deleting {
        shared.memory.forget(job.uid);
        return Some(Action::await_change());
    }
    let stale = shared
        .memory
        .with(job.uid, |m| m.predates_our_write(job.resource_version));
    if stale {
        tracing::debug!("cached job predates our last status write; waiting for it");
    }
    stale.then(|| Action::requeue(Duration::from_millis(100)))
}

/// A failed pass is retried: soon when it only has to wait (caches re-listing, a conflict
/// with a newer version of the job), else with exponential backoff per job (0.5 s doubling
/// to `--max-error-backoff`, 60 s by default), so an overloaded or failing API server is not
/// hammered, and a job refused for a cause nobody tells us is gone (a quota raised) goes on
/// within that bound (docs/behaviour.md §13).
pub fn error_policy(object: Arc<JobObject>, error: &Error, ctx: Arc<Context>) -> Action {
    let shared = &ctx.shared;
    shared
        .metrics
        .reconcile_errors
        .get_or_create(&crate::metrics::ErrorLabels {
            error: error.metric_label(),
        })
        .inc();
    if error.is_wait() {
        tracing::debug!(error = %error, "reconcile deferred");
        return Action::requeue(Duration::from_millis(500));
    }
    let uid = object.uid().unwrap_or_default();
    let attempts = shared.memory.with(&uid, JobMemory::failed);
    tracing::warn!(error = %error, attempts, "reconcile failed");
    Action::requeue(backoff(attempts, shared.max_backoff))
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
