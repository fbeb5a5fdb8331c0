//! The Workloads of a watched scope that TFJobs control, indexed by their job, fed by a watch
//! that runs only in the Kueue mode. I/O.
//!
//! A Workload's change wakes the TFJob that controls it, so passes read Workloads from here,
//! never from the API. Workloads whose job is gone (deleted, or replaced by a newer one of the
//! same name) are handed to the janitor (`janitor`): the controller never runs a pass for a
//! job that is no longer there, yet its Workload must give its quota back and lose its
//! finalizer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::runtime::listing::watch as watch_api;
use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::Client;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::plan::workload::Workload;
use crate::crd::cached::CachedJob;
use crate::error::Error;
use crate::runtime::triggers::{Seen, Tracker};
use crate::runtime::watches::controller_ref;

/// How long a pass waits for the Workload cache's first list before it is retried.
const SYNC_WAIT: Duration = Duration::from_secs(10);

/// (namespace, name of the controlling TFJob).
pub type JobKey = (String, String);

/// One scope's TFJob Workloads; the watch stops when it is dropped.
pub struct WorkloadCache {
    index: Index,
    synced: watch::Receiver<bool>,
    watch: JoinHandle<()>,
}

impl Drop for WorkloadCache {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// Workloads by their job, and each Workload's job (to move or drop it on change).
#[derive(Clone, Default)]
pub struct Index(Arc<RwLock<Inner>>);

#[derive(Default)]
struct Inner {
    by_job: HashMap<JobKey, BTreeMap<String, Arc<Workload>>>,
    job_of: HashMap<(String, String), JobKey>,
}

impl Index {
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The Workloads controlled by TFJob `job` in `namespace`.
    pub fn of_job(&self, namespace: &str, job: &str) -> Vec<Arc<Workload>> {
        let key = (namespace.to_string(), job.to_string());
        self.read()
            .by_job
            .get(&key)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The jobs whose Workloads name `uid` as their controller's.
    pub fn jobs_with_uid(&self, uid: &str) -> Vec<JobKey> {
        let inner = self.read();
        let mut keys: Vec<JobKey> = inner
            .by_job
            .iter()
            .filter(|(_, ws)| {
                ws.values()
                    .any(|w| w.controller().is_some_and(|(u, _)| u == uid))
            })
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        keys
    }

    fn all(&self) -> Vec<Arc<Workload>> {
        let inner = self.read();
        inner
            .by_job
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    fn apply(&self, event: &Event<Workload>) {
        match event {
            Event::Apply(w) | Event::InitApply(w) => self.put(w),
            Event::Delete(w) => self.remove(w),
            Event::Init | Event::InitDone => {}
        }
    }

    fn put(&self, w: &Workload) {
        self.remove(w);
        let (Some(namespace), Some((_, job))) = (w.metadata.namespace.clone(), w.controller())
        else {
            return;
        };
        let key = (namespace.clone(), job.to_string());
        let mut inner = self.write();
        inner
            .job_of
            .insert((namespace, w.name().to_string()), key.clone());
        inner
            .by_job
            .entry(key)
            .or_default()
            .insert(w.name().to_string(), Arc::new(w.clone()));
    }

    fn remove(&self, w: &Workload) {
        let namespace = w.metadata.namespace.clone().unwrap_or_default();
        let mut inner = self.write();
        let Some(key) = inner.job_of.remove(&(namespace, w.name().to_string())) else {
            return;
        };
        if let Some(ws) = inner.by_job.get_mut(&key) {
            ws.remove(w.name());
            if ws.is_empty() {
                inner.by_job.remove(&key);
            }
        }
    }

    /// After a re-list: drops the Workloads the list no longer had.
    fn drop_gone(&self, gone: &[Workload]) {
        for w in gone {
            self.remove(w);
        }
    }
}

impl WorkloadCache {
    /// Starts the watch of Workloads in `namespace` (None = all): the jobs to wake go to
    /// `wake`, those of Workloads whose job may be gone to `orphans`.
    pub fn start(
        client: &Client,
        namespace: Option<&str>,
        wake: UnboundedSender<ObjectRef<CachedJob>>,
        orphans: UnboundedSender<JobKey>,
    ) -> WorkloadCache {
        let api: Api<Workload> = match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let index = Index::default();
        let (synced_tx, synced) = watch::channel(false);
        let events = watch_api(api, watcher::Config::default())
            .default_backoff()
            .modify(|w| w.metadata.managed_fields = None);
        let watch = tokio::spawn(follow(events, index.clone(), synced_tx, wake, orphans));
        WorkloadCache {
            index,
            synced,
            watch,
        }
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The queue of the Workload job `name` (with `uid`) has, while it is not finished.
    pub fn queue_of(&self, namespace: &str, name: &str, uid: &str) -> Option<String> {
        let workloads = self.index.of_job(namespace, name);
        let live = workloads
            .iter()
            .find(|w| w.controller().is_some_and(|(u, _)| u == uid) && !w.finished())?;
        live.spec.queue_name.clone()
    }

    /// Ok once the cache has listed; an error (retry soon) after a bounded wait, so a pass
    /// never makes a second Workload for a job whose first it could not see yet.
    pub async fn synced(&self) -> Result<(), Error> {
        let mut synced = self.synced.clone();
        match tokio::time::timeout(SYNC_WAIT, synced.wait_for(|s| *s)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(Error::WorkloadsNotSynced),
        }
    }
}

/// Follows the Workload watch: the index, its sync state, the jobs to wake and the jobs that
/// may be gone.
async fn follow(
    events: impl futures::Stream<Item = watcher::Result<Event<Workload>>>,
    index: Index,
    synced: watch::Sender<bool>,
    wake: UnboundedSender<ObjectRef<CachedJob>>,
    orphans: UnboundedSender<JobKey>,
) {
    let mut tracker = Tracker::default();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(error = %e, "Workload watch (is Kueue's Workload CRD installed?)");
                continue;
            }
        };
        index.apply(&event);
        let mut gone = Vec::new();
        let state = tracker.on_event(
            &event,
            || index.all(),
            |w: &Workload, seen| {
                if let Some(job) = controller_ref(&w.metadata) {
                    let key = (job.namespace.clone().unwrap_or_default(), job.name.clone());
                    let _ = orphans.unbounded_send(key);
                    let _ = wake.unbounded_send(job);
                }
                if seen == Seen::Gone {
                    gone.push(w.clone());
                }
            },
        );
        index.drop_gone(&gone);
        if let Some(state) = state {
            synced.send_replace(state);
        }
    }
}
