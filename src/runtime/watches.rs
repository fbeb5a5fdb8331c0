//! From the watches of one scope to the controller: child events applied to their caches and
//! turned into the jobs to wake, TFJob events that drop a deleted job's memory, and whether
//! the caches hold a complete view. I/O (consumes watch streams).
//!
//! Ours rather than kube-runtime's `Controller::owns` with a shared store: child events wake
//! the job that controls the child, including children deleted while a watch was down (seen
//! by their absence from the re-list, `triggers`, or, for children this controller created
//! that the watch never showed, by the store settling them, `store`). Each child watch
//! drives its own cache on its own task and sends the jobs to wake over a channel: no
//! shared-store subscription, whose subscriber in kube-runtime 5 can miss a wake-up for good
//! when an object is deleted while its update is still queued — the controller then never
//! hears of pods again.

use std::time::Duration;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;
use tokio::time::Instant;

use super::store::ChildCache;
use super::triggers::{Seen, Tracker};
use crate::child::Identity;
use crate::crd::TFJob;
use crate::crd::cached::CachedJob;
use crate::error::Error;

/// How long a pass waits for the child caches to complete before it is retried instead.
const SYNC_WAIT: Duration = Duration::from_secs(10);

/// Whether the child caches of a scope hold a complete view: false from the start of each
/// (re-)list until its end.
#[derive(Clone, Debug)]
pub struct Caches {
    pub pods: watch::Receiver<bool>,
    pub services: watch::Receiver<bool>,
}

impl Caches {
    /// Waits until both caches are complete; false if their watches are gone.
    pub async fn wait(&self) -> bool {
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
pub fn owners_to_wake<K>(
    events: impl Stream<Item = watcher::Result<Event<K>>> + Send + 'static,
    cache: ChildCache<K>,
    synced: watch::Sender<bool>,
    lists: prometheus_client::metrics::counter::Counter,
) -> impl Stream<Item = ObjectRef<CachedJob>> + Send + 'static
where
    K: Identity + Clone + Send + Sync + 'static,
{
    let mut tracker = Tracker::default();
    events.flat_map(move |event| {
        let mut owners = Vec::new();
        match event {
            Ok(event) => {
                // Children this controller created that the event showed to be gone
                // without naming them (`store`): their jobs are woken too.
                let gone = cache.update(&event, Instant::now());
                owners.extend(gone.iter().filter_map(|child| job_to_wake(&**child)));
                let state = tracker.on_event(
                    &event,
                    || cache.all(),
                    |child: &K, change| {
                        tracing::trace!(child = child.name(), ?change, "child event");
                        owners.extend(job_to_wake(child))
                    },
                );
                if let Some(state) = state {
                    synced.send_replace(state);
                }
                if state == Some(false) && lists.inc() > 0 {
                    // The watch lost its place in the history (410): passes wait for the list.
                    tracing::info!(resource = std::any::type_name::<K>(), "re-listing");
                }
            }
            Err(e) => tracing::debug!(error = %e, "child watch"),
        }
        stream::iter(owners)
    })
}

/// The TFJobs a watch applied (the controller's own triggers); `gone` hears the uid of each
/// job deleted, or missing from a re-list.
pub fn jobs_applied(
    events: impl Stream<Item = watcher::Result<Event<CachedJob>>> + Send + 'static,
    cache: Store<CachedJob>,
    gone: impl Fn(&str) + Send + 'static,
) -> impl Stream<Item = watcher::Result<CachedJob>> + Send + 'static {
    let mut tracker = Tracker::default();
    events.flat_map(move |event| {
        let applied = match event {
            Ok(event) => {
                tracker.on_event(
                    &event,
                    || cache.state(),
                    |job: &CachedJob, change| {
                        if let (Seen::Gone, Some(uid)) = (change, job.meta().uid.as_ref()) {
                            gone(uid);
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
pub fn controller_ref(meta: &ObjectMeta) -> Option<ObjectRef<CachedJob>> {
    let owner = meta.owner_references.as_ref()?.iter().find(|o| {
        o.controller == Some(true)
            && o.kind == TFJob::kind(&())
            && o.api_version == TFJob::api_version(&())
    })?;
    Some(ObjectRef::new(&owner.name).within(meta.namespace.as_deref()?))
}

/// The TFJob controlling `child`, as a reconcile trigger.
fn job_to_wake(child: &impl Identity) -> Option<ObjectRef<CachedJob>> {
    let job = child.controlling_tfjob()?;
    Some(ObjectRef::new(job).within(child.namespace()?))
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
