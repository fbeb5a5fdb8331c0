//! The PodGroups of a watched scope and the cluster's PriorityClasses, cached by watches
//! that run only when gang scheduling is on. I/O.
//!
//! Ours rather than kube-runtime's `reflector` alone: the PodGroup resource may not be served
//! at all (its CRD not installed), which kube's watcher only retries silently; here it is a
//! state the jobs are told about, retried quickly, and PodGroup events wake their TFJobs.
//!
//! A PodGroup's change (its phase, a deletion, one gone while the watch was down) wakes the
//! TFJob that controls it, so passes read PodGroups from the cache, never from the API. A
//! scope whose API server does not know the PodGroup resource (its CRD is not installed)
//! keeps the watch retrying with backoff and reports `Missing`, so jobs are told instead of
//! failing on every pass; the CRD installed later is picked up by the next retry.

use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::listing::watch as watch_api;
use super::triggers::Tracker;
use super::watches::controller_ref;
use crate::crd::cached::CachedJob;
use crate::error::Error;

/// How long a pass waits for the PodGroup cache's first list before it is retried.
const SYNC_WAIT: Duration = Duration::from_secs(10);

/// Whether the PodGroup cache can be believed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupSync {
    /// Listing (first time, or again after its watch lost its place).
    Syncing,
    Ready,
    /// The API server does not know the PodGroup resource: its CRD is not installed.
    Missing,
}

/// One scope's PodGroup and PriorityClass caches; their watches stop when it is dropped.
pub struct GroupCache {
    resource: ApiResource,
    groups: Store<DynamicObject>,
    priorities: Store<PriorityClass>,
    state: watch::Receiver<GroupSync>,
    _watches: Watches,
}

struct Watches(Vec<JoinHandle<()>>);

impl Drop for Watches {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl GroupCache {
    /// Starts the watches of the PodGroup `resource` in `namespace` (None = all); the jobs
    /// to wake go to `wake`.
    pub fn start(
        client: &Client,
        resource: ApiResource,
        namespace: Option<&str>,
        wake: UnboundedSender<ObjectRef<CachedJob>>,
    ) -> GroupCache {
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let writer = reflector::store::Writer::new(resource.clone());
        let groups = writer.as_reader();
        let (state_tx, state) = watch::channel(GroupSync::Syncing);
        let events = watch_api(api, watcher::Config::default())
            .backoff(Retry::default())
            .modify(|g| g.metadata.managed_fields = None)
            .reflect(writer);
        let group_watch = tokio::spawn(follow(events, groups.clone(), state_tx, wake));
        let (priorities, priority_writer) = reflector::store();
        let priority_events = watch_api(
            Api::<PriorityClass>::all(client.clone()),
            Default::default(),
        )
        .default_backoff()
        .reflect(priority_writer)
        .for_each(|e| async move {
            if let Err(e) = e {
                tracing::debug!(error = %e, "PriorityClass watch");
            }
        });
        let priority_watch = tokio::spawn(priority_events);
        GroupCache {
            resource,
            groups,
            priorities,
            state,
            _watches: Watches(vec![group_watch, priority_watch]),
        }
    }

    /// Ok once the PodGroup cache has listed (or found the resource missing); an error (retry
    /// soon) after a bounded wait, so a pass never creates a PodGroup it could not see.
    pub async fn synced(&self) -> Result<(), Error> {
        let mut state = self.state.clone();
        match tokio::time::timeout(SYNC_WAIT, state.wait_for(|s| *s != GroupSync::Syncing)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(Error::CachesNotSynced),
        }
    }

    pub fn state(&self) -> GroupSync {
        *self.state.borrow()
    }

    /// The PodGroup named `name` in `namespace`, if the cache has one.
    pub fn group(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<DynamicObject>> {
        let key = ObjectRef::new_with(name, self.resource.clone()).within(namespace);
        self.groups.get(&key)
    }

    /// The value of the PriorityClass `name`, if it exists.
    pub fn priority(&self, name: &str) -> Option<i32> {
        Some(self.priorities.get(&ObjectRef::new(name))?.value)
    }
}

/// Retries of the PodGroup watch: 0.5 s doubling to 5 s (kube's default goes to 30 s), so a
/// CRD installed while jobs wait for it is found within seconds.
struct Retry(Duration);

const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(5);

impl Default for Retry {
    fn default() -> Self {
        Retry(RETRY_FIRST)
    }
}

impl Iterator for Retry {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let wait = self.0;
        self.0 = (wait * 2).min(RETRY_MAX);
        Some(wait)
    }
}

impl Backoff for Retry {
    fn reset(&mut self) {
        self.0 = RETRY_FIRST;
    }
}

/// Follows the PodGroup watch: its sync state, and the jobs to wake.
async fn follow(
    events: impl futures::Stream<Item = watcher::Result<Event<DynamicObject>>>,
    cache: Store<DynamicObject>,
    state: watch::Sender<GroupSync>,
    wake: UnboundedSender<ObjectRef<CachedJob>>,
) {
    let mut tracker = Tracker::default();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                if is_not_found(&e) && *state.borrow() != GroupSync::Missing {
                    tracing::warn!(
                        "the PodGroup resource is not served: is its CRD installed? Gang-scheduled jobs wait for it"
                    );
                    state.send_replace(GroupSync::Missing);
                } else {
                    tracing::debug!(error = %e, "PodGroup watch");
                }
                continue;
            }
        };
        let synced = tracker.on_event(
            &event,
            || cache.state(),
            |group: &DynamicObject, _| {
                if let Some(job) = controller_ref(&group.metadata) {
                    let _ = wake.unbounded_send(job);
                }
            },
        );
        match synced {
            Some(true) => state.send_replace(GroupSync::Ready),
            Some(false) => state.send_replace(GroupSync::Syncing),
            None => continue,
        };
    }
}

/// The list or watch failed because the API server has no such resource (404).
fn is_not_found(error: &watcher::Error) -> bool {
    let source = match error {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) => e,
        watcher::Error::WatchFailed(e) => e,
        _ => return false,
    };
    matches!(source, kube::Error::Api(s) if s.code == 404)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use serde_json::json;

    fn group(name: &str, owner: Option<&str>) -> DynamicObject {
        let owners = owner.map(|job| {
            json!([{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": job,
                    "uid": "u", "controller": true}])
        });
        serde_json::from_value(json!({
            "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ns", "ownerReferences": owners},
            "spec": {"minMember": 2}, "status": {"phase": "Scheduling"}
        }))
        .unwrap()
    }

    fn not_found() -> watcher::Error {
        let mut status = Status::failure(
            "the server could not find the requested resource",
            "NotFound",
        );
        status.code = 404;
        watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status)))
    }

    /// The CRD missing, then installed: the state says so, and PodGroup events wake the
    /// TFJob that controls them (and no other).
    #[tokio::test]
    async fn a_missing_crd_is_reported_then_its_podgroups_wake_their_jobs() {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let (wake, woken) = futures::channel::mpsc::unbounded();
        let resource = ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "PodGroup"),
            "podgroups",
        );
        let writer = reflector::store::Writer::new(resource);
        let cache = writer.as_reader();
        let (state_tx, mut state) = watch::channel(GroupSync::Syncing);
        let task = tokio::spawn(follow(rx.reflect(writer), cache.clone(), state_tx, wake));
        tx.unbounded_send(Err(not_found())).unwrap();
        state.wait_for(|s| *s == GroupSync::Missing).await.unwrap();
        for event in [
            Event::Init,
            Event::InitApply(group("a", Some("a"))),
            Event::InitApply(group("foreign", None)),
            Event::InitDone,
            Event::Delete(group("a", Some("a"))),
        ] {
            tx.unbounded_send(Ok(event)).unwrap();
        }
        drop(tx);
        task.await.unwrap();
        assert_eq!(*state.borrow(), GroupSync::Ready);
        // (the task is over: its sender is gone, so the stream ends)
        let jobs: Vec<String> = woken.map(|job| job.name).collect().await;
        assert_eq!(jobs, ["a", "a"], "listed, then deleted");
        let names: Vec<_> = cache
            .state()
            .iter()
            .map(|g| g.metadata.name.clone())
            .collect();
        assert_eq!(names, [Some("foreign".to_string())]);
    }
}
