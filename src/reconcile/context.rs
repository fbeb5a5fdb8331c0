//! What passes work with: the state shared by every scope (`Shared`: client, settings,
//! event queue, metrics, per-job memory, the Kueue side) and one scope's caches (`Context`).

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::child::{ChildPod, ChildService};
use crate::crd::cached::CachedJob;
use crate::error::Error;
use crate::kueue::KueueSide;
use crate::kueue::cache::WorkloadCache;
use crate::metrics::Metrics;
use crate::reconcile::job::JobMeta;
use crate::reconcile::memory::Memory;
use crate::reconcile::plan::model::Settings;
use crate::runtime::departed::Departed;
use crate::runtime::podgroups::GroupCache;
use crate::runtime::publisher::EventQueue;
use crate::runtime::store::ChildCache;
use crate::runtime::watches::Caches;

/// State shared by every pass of every watched namespace.
pub struct Shared {
    pub client: Client,
    pub settings: Settings,
    /// Where passes queue their events (`runtime::publisher`).
    pub events: EventQueue,
    pub metrics: Metrics,
    /// What is remembered about each job between passes.
    pub memory: Memory,
    /// The cap of the per-job retry backoff after failed passes.
    pub max_backoff: Duration,
    /// The Kueue mode's side (`--kueue`), when on.
    pub kueue: Option<Arc<KueueSide>>,
}

/// What one namespace's controller reconciles with.
pub struct Context {
    pub shared: Arc<Shared>,
    pub jobs: Store<CachedJob>,
    pub pods: ChildCache<ChildPod>,
    pub services: ChildCache<ChildService>,
    pub caches: Caches,
    /// The last state of pods a disruption deleted (`runtime::departed`).
    pub departed: Departed,
    /// The PodGroups of the scope, when gang scheduling is on.
    pub podgroups: Option<GroupCache>,
    /// The Workloads of the scope, in the Kueue mode.
    pub workloads: Option<WorkloadCache>,
    /// `--concurrency` passes plan and write children at once, taking turns first come, first
    /// served; a pass's status write follows after its turn. (kube's
    /// own limit picks the next job from a hash set: when saturated, some jobs waited over
    /// 10 s while others were served at once.)
    pub turns: tokio::sync::Semaphore,
}

impl Context {
    /// Ok once every cache a pass reads holds a complete view (an error to retry soon after
    /// a bounded wait), so a pass never acts on a partial view.
    pub async fn synced(&self) -> Result<(), Error> {
        self.caches.synced().await?;
        if let Some(workloads) = &self.workloads {
            workloads.synced().await?;
        }
        match &self.podgroups {
            Some(podgroups) => podgroups.synced().await,
            None => Ok(()),
        }
    }

    /// The job as the cache has it now (it may have changed while the pass waited for its
    /// turn); None once it is gone.
    pub fn latest(&self, object: &CachedJob) -> Option<Arc<CachedJob>> {
        self.jobs.get(&ObjectRef::from_obj(object))
    }

    /// Passes that must not plan: a job being deleted is left to garbage collection (and
    /// forgotten), and a cached job older than our own last status write would make the pass
    /// redo what that write recorded (the cache catches up within moments).
    pub fn not_now(&self, job: &JobMeta<'_>) -> Option<Action> {
        let memory = &self.shared.memory;
        if job.deleting {
            memory.forget(job.uid);
            return Some(Action::await_change());
        }
        let stale = memory.with(job.uid, |m| m.predates_our_write(job.resource_version));
        if stale {
            tracing::debug!("cached job predates our last status write; waiting for it");
        }
        stale.then(|| Action::requeue(Duration::from_millis(100)))
    }
}
