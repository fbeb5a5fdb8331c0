//! The PodGroups of a watched scope and the cluster's PriorityClasses, cached by watches
//! that run only when gang scheduling is on. I/O.
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
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_api};
use kube::{Client, Resource};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{CacheState, Gang, GroupView, ObservedGroup};
use crate::crd::TFJob;
use crate::crd::object::JobObject;
use crate::error::Error;
use crate::reconcile::job::Job;
use crate::reconcile::triggers::Tracker;

/// How long a pass waits for the PodGroup cache's first list before it is retried.
const SYNC_WAIT: Duration = Duration::from_secs(10);

/// One scope's PodGroup and PriorityClass caches; their watches stop when it is dropped.
pub struct GroupCache {
    gang: Gang,
    resource: ApiResource,
    groups: Store<DynamicObject>,
    priorities: Store<PriorityClass>,
    state: watch::Receiver<CacheState>,
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
    /// Starts the watches of `namespace` (None = all) when gang scheduling is on; the jobs
    /// to wake go to `wake`.
    pub fn start(
        client: &Client,
        gang: Option<&Gang>,
        namespace: Option<&str>,
        wake: UnboundedSender<ObjectRef<JobObject>>,
    ) -> Option<GroupCache> {
        let gang = gang?.clone();
        let resource = gang.api_resource();
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let writer = reflector::store::Writer::new(resource.clone());
        let groups = writer.as_reader();
        let (state_tx, state) = watch::channel(CacheState::Syncing);
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
        Some(GroupCache {
            gang,
            resource,
            groups,
            priorities,
            state,
            _watches: Watches(vec![group_watch, priority_watch]),
        })
    }

    /// Ok once the PodGroup cache has listed (or found the resource missing); an error (retry
    /// soon) after a bounded wait, so a pass never creates a PodGroup it could not see.
    pub async fn synced(&self) -> Result<(), Error> {
        let mut state = self.state.clone();
        match tokio::time::timeout(SYNC_WAIT, state.wait_for(|s| *s != CacheState::Syncing)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(Error::CachesNotSynced),
        }
    }

    /// What the caches say about the job's PodGroup and its templates' PriorityClasses.
    pub fn view(&self, job: &Job<'_>) -> GroupView {
        let key = ObjectRef::new_with(job.name, self.resource.clone()).within(job.namespace);
        let group = self.groups.get(&key).map(|g| observed(&g));
        let priorities = match job.spec {
            Ok(tfjob) => tfjob
                .spec
                .tf_replica_specs
                .iter()
                .filter_map(|(_, s)| s.template.spec.as_ref()?.priority_class_name.clone())
                .filter_map(|name| {
                    let class = self.priorities.get(&ObjectRef::new(&name))?;
                    Some((name, class.value))
                })
                .collect(),
            Err(_) => Default::default(),
        };
        GroupView {
            cache: *self.state.borrow(),
            group,
            priorities,
        }
    }

    pub fn gang(&self) -> &Gang {
        &self.gang
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

/// The view of a job when gang scheduling is off.
pub fn view(cache: Option<&GroupCache>, job: &Job<'_>) -> GroupView {
    cache.map(|c| c.view(job)).unwrap_or_default()
}

/// A cached PodGroup reduced to what the decision reads.
fn observed(group: &DynamicObject) -> ObservedGroup {
    let meta = &group.metadata;
    let controller_uid = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == TFJob::kind(&()))
        .map(|o| o.uid.clone());
    ObservedGroup {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone(),
        controller_uid,
        terminating: meta.deletion_timestamp.is_some(),
        spec: group.data.get("spec").cloned().unwrap_or_default(),
        phase: group.data["status"]["phase"].as_str().map(str::to_string),
        created: meta.creation_timestamp.as_ref().map(|t| t.0),
    }
}

/// Follows the PodGroup watch: its sync state, and the jobs to wake.
async fn follow(
    events: impl futures::Stream<Item = watcher::Result<Event<DynamicObject>>>,
    cache: Store<DynamicObject>,
    state: watch::Sender<CacheState>,
    wake: UnboundedSender<ObjectRef<JobObject>>,
) {
    let mut tracker = Tracker::default();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                if is_not_found(&e) && *state.borrow() != CacheState::Missing {
                    tracing::warn!(
                        "the PodGroup resource is not served: is its CRD installed? Gang-scheduled jobs wait for it"
                    );
                    state.send_replace(CacheState::Missing);
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
                if let Some(job) = owner(group) {
                    let _ = wake.unbounded_send(job);
                }
            },
        );
        match synced {
            Some(true) => state.send_replace(CacheState::Ready),
            Some(false) => state.send_replace(CacheState::Syncing),
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

/// The TFJob controlling a PodGroup, as a reconcile trigger.
fn owner(group: &DynamicObject) -> Option<ObjectRef<JobObject>> {
    super::super::watches::controller_ref(&group.metadata)
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
        let resource = Gang::Volcano.api_resource();
        let writer = reflector::store::Writer::new(resource);
        let cache = writer.as_reader();
        let (state_tx, mut state) = watch::channel(CacheState::Syncing);
        let task = tokio::spawn(follow(rx.reflect(writer), cache.clone(), state_tx, wake));
        tx.unbounded_send(Err(not_found())).unwrap();
        state.wait_for(|s| *s == CacheState::Missing).await.unwrap();
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
        assert_eq!(*state.borrow(), CacheState::Ready);
        // (the task is over: its sender is gone, so the stream ends)
        let jobs: Vec<String> = woken.map(|job| job.name).collect().await;
        assert_eq!(jobs, ["a", "a"], "listed, then deleted");
        let names: Vec<_> = cache
            .state()
            .iter()
            .map(|g| g.metadata.name.clone())
            .collect();
        assert_eq!(names, [Some("foreign".to_string())]);
        let seen = observed(&group("a", Some("a")));
        assert_eq!(
            (seen.phase.as_deref(), seen.controller_uid.as_deref()),
            (Some("Scheduling"), Some("u"))
        );
    }
}
