//! One scope's controller (a namespace, or all): the TFJob watch and this operator's pod,
//! service, PodGroup and (in the Kueue mode) Workload watches, feeding kube-runtime's
//! `Controller`, which runs the pass (`reconcile`) for each job they wake. I/O.

use std::sync::Arc;

use futures::{FutureExt, Stream, StreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Config as ControllerConfig, Controller, Error as ControllerError};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use tokio::sync::watch;

use crate::child::{ChildPod, ChildService};
use crate::crd::cached::CachedJob;
use crate::crd::labels::{LABEL_OPERATOR_NAME, OPERATOR_NAME};
use crate::kueue::cache::WorkloadCache;
use crate::kueue::janitor;
use crate::reconcile::{Context, Shared, error_policy, reconcile};
use crate::runtime::cache::{Watched, child_events};
use crate::runtime::departed::Departed;
use crate::runtime::first_list::note_first_list;
use crate::runtime::listing::watch as watch_api;
use crate::runtime::podgroups::GroupCache;
use crate::runtime::store::ChildCache;
use crate::runtime::watches::{Caches, jobs_applied, owners_to_wake};

/// Watch `namespace` (None = all) and reconcile its TFJobs until `shutdown` resolves.
/// `on_ready` runs once, when the child caches first hold a complete view.
pub async fn run_scope(
    shared: Arc<Shared>,
    namespace: Option<String>,
    concurrency: u16,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    on_ready: impl FnOnce() + Send + 'static,
) {
    let shutdown = shutdown.shared();
    let client = shared.client.clone();
    let (jobs_api, pods_api, services_api): (
        Api<CachedJob>,
        Api<Watched<ChildPod>>,
        Api<Watched<ChildService>>,
    ) = match &namespace {
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
    // Only our children are cached, read into what the planner needs (`runtime::cache`).
    let ours = watcher::Config::default().labels(&format!("{LABEL_OPERATOR_NAME}={OPERATOR_NAME}"));
    let (pods, services) = (ChildCache::default(), ChildCache::default());
    let (jobs, job_writer) = reflector::store();
    let (pods_synced, pod_sync) = watch::channel(false);
    let (services_synced, service_sync) = watch::channel(false);
    let departed = Departed::default();
    let noted = departed.clone();
    let pod_events = child_events(pods_api, ours.clone())
        .inspect(move |event| event.iter().for_each(|e| noted.note(e)));
    let service_events = child_events(services_api, ours);
    // Each child watch runs on its own task (decoding a busy watch is real work, which then
    // runs beside the reconciles) and hands the jobs to wake to the controller over a channel.
    // Dropping the set when this scope ends stops them.
    let (wake, woken) = futures::channel::mpsc::unbounded();
    let lists = |resource| {
        let labels = crate::metrics::WatchLabels { resource };
        shared.metrics.watch_lists.get_or_create(&labels).clone()
    };
    let mut watches = tokio::task::JoinSet::new();
    let podgroups = shared.settings.gang.as_ref().map(|gang| {
        GroupCache::start(
            &shared.client,
            gang.api_resource(),
            namespace.as_deref(),
            wake.clone(),
        )
    });
    // The Kueue mode: the scope's Workloads (their changes wake their jobs) and the janitor
    // that releases those of deleted jobs.
    let kueue = shared.kueue.as_ref().map(|side| {
        kueue_watches(
            side,
            namespace.as_deref(),
            wake.clone(),
            &jobs,
            &mut watches,
        )
    });
    let (workloads, orphans) = kueue.unzip();
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
    let (job_events, first_list) = note_first_list(
        watch_api(jobs_api, watcher::Config::default())
            .default_backoff()
            .reflect(job_writer),
    );
    let memory = shared.clone();
    let jobs_applied = jobs_applied(job_events, jobs.clone(), move |uid| {
        memory.memory.forget(uid);
        if let Some(orphans) = &orphans {
            orphans(uid);
        }
    });
    let (jobs_applied, woken) = counted(&shared, concurrency, &jobs, jobs_applied, woken);
    let queue = shared.metrics.queue.clone();
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
        departed,
        podgroups,
        workloads,
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
        .graceful_shutdown_on(shutdown.clone())
        .run(reconcile, error_policy, ctx)
        .for_each(move |result| {
            match result {
                // kube drops a trigger for a job gone from its cache: so does the ledger.
                Err(ControllerError::ObjectNotFound(job)) => {
                    queue.forget(job.namespace.as_deref().unwrap_or_default(), &job.name)
                }
                Err(e) => tracing::debug!(error = %e, "reconcile"),
                Ok(_) => {}
            }
            futures::future::ready(())
        });
    let ready = async move {
        if caches.wait().await {
            on_ready();
        }
        futures::future::pending::<()>().await
    };
    // kube's controller would wait for ever for a first list it no longer reads
    // (`runtime::first_list`).
    let unlisted = first_list.stopped_before(shutdown);
    tokio::select! {
        _ = controller => {},
        _ = ready => {},
        _ = unlisted => tracing::info!(
            scope = namespace.as_deref().unwrap_or("all namespaces"),
            "stopped before the TFJobs were listed: no pass had started"
        ),
    }
}

/// Starts the Workload cache and the janitor of the Kueue mode (on `watches`, so they stop
/// with the scope); returns the cache and what a deleted job's uid is handed to.
fn kueue_watches(
    side: &Arc<crate::kueue::KueueSide>,
    namespace: Option<&str>,
    wake: futures::channel::mpsc::UnboundedSender<kube::runtime::reflector::ObjectRef<CachedJob>>,
    jobs: &reflector::Store<CachedJob>,
    watches: &mut tokio::task::JoinSet<Result<(), futures::channel::mpsc::SendError>>,
) -> (WorkloadCache, impl Fn(&str) + Send + 'static) {
    let (orphans, keys) = futures::channel::mpsc::unbounded();
    let cache = WorkloadCache::start(&side.client, namespace, wake, orphans.clone());
    let janitor = janitor::run(
        side.clone(),
        cache.index().clone(),
        jobs.clone(),
        keys,
        orphans.clone(),
    );
    watches.spawn(async move {
        janitor.await;
        Ok(())
    });
    let index = cache.index().clone();
    let gone = move |uid: &str| {
        for key in index.jobs_with_uid(uid) {
            let _ = orphans.unbounded_send(key);
        }
    };
    (cache, gone)
}

/// The scope's metrics start (at zero, as controller-runtime starts its series), and every
/// trigger handed to kube's controller, a TFJob's or a child's, enters the work-queue ledger
/// (`metrics::queue`).
fn counted<A, W>(
    shared: &Shared,
    concurrency: u16,
    jobs: &Store<CachedJob>,
    applied: A,
    woken: W,
) -> (
    impl Stream<Item = watcher::Result<CachedJob>> + use<A, W>,
    impl Stream<Item = ObjectRef<CachedJob>> + use<A, W>,
)
where
    A: Stream<Item = watcher::Result<CachedJob>>,
    W: Stream<Item = ObjectRef<CachedJob>>,
{
    let metrics = &shared.metrics;
    metrics.queue.start();
    metrics.controller.start(concurrency.max(1));
    metrics.jobs.count(jobs.clone());
    let (queue, also) = (metrics.queue.clone(), metrics.queue.clone());
    let applied = applied.inspect(move |job| {
        if let Ok(job) = job {
            queue.add(&job.namespace().unwrap_or_default(), &job.name_any());
        }
    });
    let woken =
        woken.inspect(move |job| also.add(job.namespace.as_deref().unwrap_or_default(), &job.name));
    (applied, woken)
}

/// Passes kube may hold started at once: four per turn.
fn in_flight(concurrency: u16) -> u16 {
    concurrency.max(1).saturating_mul(4)
}
