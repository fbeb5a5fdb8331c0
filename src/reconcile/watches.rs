//! The watches behind one scope's controller (a namespace, or all): TFJobs, and this
//! operator's pods and services, each cached. I/O.
//!
//! Child events wake the job that controls the child, including children deleted while a
//! watch was down (seen by their absence from the re-list, `triggers`). Each child watch
//! drives its own cache on its own task and sends the jobs to wake over a channel: no
//! shared-store subscription, whose subscriber in kube-runtime 5 can miss a wake-up for good
//! when an object is deleted while its update is still queued — the controller then never
//! hears of pods again.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_api};
use kube::{Api, Resource};
use tokio::sync::watch;

use super::cached::{CachedPod, CachedService, ChildCache};
use super::labels::{LABEL_OPERATOR_NAME, OPERATOR_NAME};
use super::triggers::{Change, Tracker};
use super::{Context, Shared, error_policy, reconcile};
use crate::crd::TFJob;
use crate::crd::object::JobObject;
use crate::error::Error;

/// How long a pass waits for the child caches to complete before it is retried instead.
const SYNC_WAIT: Duration = Duration::from_secs(10);

/// Watch `namespace` (None = all) and reconcile its TFJobs until `shutdown` resolves.
/// `on_ready` runs once, when the child caches first hold a complete view.
pub async fn run_scope(
    shared: Arc<Shared>,
    namespace: Option<String>,
    concurrency: u16,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    on_ready: impl FnOnce() + Send + 'static,
) {
    let client = shared.client.clone();
    let (jobs_api, pods_api, services_api): (Api<JobObject>, Api<CachedPod>, Api<CachedService>) =
        match &namespace {
            Some(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client, ns),
            ),
            None => (
                Api::all(client.clone()),
                Api::all(client.clone()),
                Api::all(client),
            ),
        };
    // Only our children are cached, read into what the planner needs (`cached`).
    let ours = watcher::Config::default().labels(&format!("{LABEL_OPERATOR_NAME}={OPERATOR_NAME}"));
    let (pods, services) = (ChildCache::default(), ChildCache::default());
    let (jobs, job_writer) = reflector::store();
    let (pods_synced, pod_sync) = watch::channel(false);
    let (services_synced, service_sync) = watch::channel(false);
    let pod_events = watch_api(pods_api, ours.clone()).default_backoff();
    let service_events = watch_api(services_api, ours).default_backoff();
    // Each child watch runs on its own task (decoding a busy watch is real work, which then
    // runs beside the reconciles) and hands the jobs to wake to the controller over a channel.
    // Dropping the set when this scope ends stops them.
    let (wake, woken) = futures::channel::mpsc::unbounded();
    let lists = |resource| {
        let labels = crate::metrics::WatchLabels { resource };
        shared.metrics.watch_lists.get_or_create(&labels).clone()
    };
    let mut watches = tokio::task::JoinSet::new();
    let podgroups = super::gang::cache::GroupCache::start(
        &shared.client,
        shared.settings.gang.as_ref(),
        namespace.as_deref(),
        wake.clone(),
    );
    watches.spawn(
        owners_to_wake(pod_events, pods.clone(), pods_synced, lists("pods"))
            .map(Ok)
            .forward(wake.clone()),
    );
    watches.spawn(
        owners_to_wake(
            service_events,
            services.clone(),
            services_synced,
            lists("services"),
        )
        .map(Ok)
        .forward(wake),
    );
    let job_events = watch_api(jobs_api, watcher::Config::default())
        .default_backoff()
        .reflect(job_writer);
    let jobs_applied = forget_gone_jobs(job_events, jobs.clone(), shared.clone());
    let caches = Caches {
        pods: pod_sync,
        services: service_sync,
    };
    let ctx = Arc::new(Context {
        shared,
        jobs: jobs.clone(),
        pods,
        services,
        caches: caches.clone(),
        podgroups,
        turns: tokio::sync::Semaphore::new(usize::from(concurrency.max(1))),
    });
    // kube's controller starts a pass per triggered job (one at a time per job) and
    // `Context::turns` bounds how many do work, first come, first served. kube's own bound is
    // kept a few times wider than the turns: unbounded, every job of a re-list (10k) waits in
    // kube's map of running passes, which kube polls whole on every wake-up, so a resync cost
    // grew with the square of the jobs (9.8 s of CPU for 10k no-op passes).
    let controller = Controller::for_stream(jobs_applied, jobs)
        .reconcile_on(woken)
        .with_config(ControllerConfig::default().concurrency(in_flight(concurrency)))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile");
            }
        });
    let ready = async move {
        if caches.wait().await {
            on_ready();
        }
        futures::future::pending::<()>().await
    };
    tokio::select! {
        _ = controller => {},
        _ = ready => {},
    }
}

/// Passes kube may hold started at once: four per turn.
fn in_flight(concurrency: u16) -> u16 {
    concurrency.max(1).saturating_mul(4)
}

/// Whether the child caches of a scope hold a complete view: false from the start of each
/// (re-)list until its end.
#[derive(Clone, Debug)]
pub struct Caches {
    pods: watch::Receiver<bool>,
    services: watch::Receiver<bool>,
}

impl Caches {
    /// Waits until both caches are complete; false if their watches are gone.
    async fn wait(&self) -> bool {
        let (mut pods, mut services) = (self.pods.clone(), self.services.clone());
        pods.wait_for(|s| *s).await.is_ok() && services.wait_for(|s| *s).await.is_ok()
    }

    /// Ok once both caches are complete; an error (retry later) after a bounded wait, so a
    /// pass never acts on a partial view and never blocks shutdown for long.
    pub async fn synced(&self) -> Result<(), Error> {
        match tokio::time::timeout(SYNC_WAIT, self.wait()).await {
            Ok(true) => Ok(()),
            _ => Err(Error::CachesNotSynced),
        }
    }
}

/// Applies a child watch's events to its cache and yields the jobs to wake, reporting the
/// cache's sync state on the way.
fn owners_to_wake<K>(
    events: impl Stream<Item = watcher::Result<Event<K>>> + Send + 'static,
    cache: ChildCache<K>,
    synced: watch::Sender<bool>,
    lists: prometheus_client::metrics::counter::Counter,
) -> impl Stream<Item = ObjectRef<JobObject>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let mut tracker = Tracker::default();
    events.flat_map(move |event| {
        let mut owners = Vec::new();
        match event {
            Ok(event) => {
                cache.apply(&event);
                let state = tracker.on_event(
                    &event,
                    || cache.all(),
                    |child: &K, change| {
                        tracing::trace!(
                            child = child.meta().name.as_deref(),
                            ?change,
                            "child event"
                        );
                        owners.extend(controller_ref(child.meta()))
                    },
                );
                if let Some(state) = state {
                    synced.send_replace(state);
                }
                if state == Some(false) && lists.inc() > 0 {
                    // The watch lost its place in the history (410): passes wait for the list.
                    tracing::info!(resource = K::plural(&()).as_ref(), "re-listing");
                }
            }
            Err(e) => tracing::debug!(error = %e, "child watch"),
        }
        stream::iter(owners)
    })
}

/// The TFJobs a watch applied (the controller's own triggers); a job deleted, or missing
/// from a re-list, has its memory dropped.
fn forget_gone_jobs(
    events: impl Stream<Item = watcher::Result<Event<JobObject>>> + Send + 'static,
    cache: Store<JobObject>,
    shared: Arc<Shared>,
) -> impl Stream<Item = watcher::Result<JobObject>> + Send + 'static {
    let mut tracker = Tracker::default();
    events.flat_map(move |event| {
        let applied = match event {
            Ok(event) => {
                tracker.on_event(
                    &event,
                    || cache.state(),
                    |job: &JobObject, change| {
                        if let (Change::Gone, Some(uid)) = (change, &job.meta().uid) {
                            shared.memory.forget(uid);
                        }
                    },
                );
                match event {
                    Event::Apply(job) | Event::InitApply(job) => Some(Ok(job)),
                    Event::Delete(_) | Event::Init | Event::InitDone => None,
                }
            }
            Err(e) => Some(Err(e)),
        };
        stream::iter(applied)
    })
}

/// The TFJob controlling the object with `meta`, as a reconcile trigger.
pub(super) fn controller_ref(meta: &ObjectMeta) -> Option<ObjectRef<JobObject>> {
    let owner = meta.owner_references.as_ref()?.iter().find(|o| {
        o.controller == Some(true)
            && o.kind == TFJob::kind(&())
            && o.api_version == TFJob::api_version(&())
    })?;
    Some(ObjectRef::new(&owner.name).within(meta.namespace.as_deref()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn child(name: &str, job: &str, phase: &str) -> Pod {
        let metadata = ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "kubeflow.org/v1".into(),
                kind: "TFJob".into(),
                name: job.into(),
                uid: format!("uid-{job}"),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        };
        Pod {
            metadata,
            status: Some(k8s_openapi::api::core::v1::PodStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
            ..Pod::default()
        }
    }

    /// The failure mode of kube-runtime's shared-store subscriptions: a pod's update is
    /// still queued when the pod is deleted. Every event must still wake its job, and the
    /// events after it too.
    #[tokio::test]
    async fn events_of_a_child_deleted_while_its_update_is_queued_still_wake_jobs() {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let events = [
            Event::Init,
            Event::InitApply(child("a-worker-0", "a", "Pending")),
            Event::InitDone,
            Event::Apply(child("a-worker-0", "a", "Succeeded")),
            Event::Delete(child("a-worker-0", "a", "Succeeded")),
            Event::Apply(child("b-worker-0", "b", "Running")),
        ];
        for event in events {
            tx.unbounded_send(Ok(event)).unwrap();
        }
        drop(tx);
        let cache = ChildCache::<Pod>::default();
        let (synced, sync) = watch::channel(false);
        let woken: Vec<String> = owners_to_wake(rx, cache.clone(), synced, Default::default())
            .map(|job| job.name)
            .collect()
            .await;
        assert_eq!(woken, ["a", "a", "a", "b"]);
        assert!(*sync.borrow(), "the list completed");
        let names: Vec<_> = cache
            .all()
            .iter()
            .map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, [Some("b-worker-0".to_string())]);
    }

    /// A child deleted while the watch was down is missing from the re-list: its job wakes.
    #[tokio::test]
    async fn a_child_missing_from_a_relist_wakes_its_job_and_the_cache_is_unsynced_meanwhile() {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let cache = ChildCache::<Pod>::default();
        let (synced, sync) = watch::channel(false);
        let mut woken = owners_to_wake(rx, cache, synced, Default::default()).boxed();
        let send = |e: Event<Pod>| tx.unbounded_send(Ok(e)).unwrap();
        send(Event::Init);
        send(Event::InitApply(child("a-worker-0", "a", "Running")));
        send(Event::InitApply(child("b-worker-0", "b", "Running")));
        send(Event::InitDone);
        for want in ["a", "b"] {
            assert_eq!(woken.next().await.map(|j| j.name).as_deref(), Some(want));
        }
        send(Event::Init);
        send(Event::InitApply(child("b-worker-0", "b", "Running")));
        assert_eq!(woken.next().await.map(|j| j.name).as_deref(), Some("b"));
        assert!(!*sync.borrow(), "a re-list is under way");
        send(Event::InitDone);
        assert_eq!(woken.next().await.map(|j| j.name).as_deref(), Some("a"));
        assert!(*sync.borrow());
    }

    #[test]
    fn a_child_wakes_the_tfjob_that_controls_it() {
        let owner = |kind: &str, controller: Option<bool>| OwnerReference {
            api_version: "kubeflow.org/v1".into(),
            kind: kind.into(),
            name: "mnist".into(),
            uid: "u1".into(),
            controller,
            block_owner_deletion: None,
        };
        let meta = |owners: Vec<OwnerReference>, ns: Option<&str>| ObjectMeta {
            name: Some("mnist-worker-0".into()),
            namespace: ns.map(Into::into),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        };
        let want = ObjectRef::new("mnist").within("ns");
        let cases = [
            (
                "controlled by a TFJob",
                meta(vec![owner("TFJob", Some(true))], Some("ns")),
                Some(want),
            ),
            (
                "owned but not controlled",
                meta(vec![owner("TFJob", None)], Some("ns")),
                None,
            ),
            (
                "controlled by another kind",
                meta(vec![owner("Job", Some(true))], Some("ns")),
                None,
            ),
            ("no owner", meta(vec![], Some("ns")), None),
            (
                "no namespace",
                meta(vec![owner("TFJob", Some(true))], None),
                None,
            ),
        ];
        for (name, meta, want) in cases {
            assert_eq!(controller_ref(&meta), want, "{name}");
        }
    }
}
