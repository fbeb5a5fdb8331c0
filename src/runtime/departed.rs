//! The last state of child pods that were deleted while a disruption ended them, as the
//! watch's delete event showed it. In memory only, fed by the pod watch.
//!
//! Why: a disruption is not charged to the job (docs/behaviour.md §6.8), but some disruptions
//! delete their pod at once: pod GC marks an orphaned pod `DisruptionTarget` and Failed and
//! force-deletes it in the next breath, so no pass may ever see the pod in that state. The
//! delete event still carries it. What is kept here lets the pass tell such a pod, now gone,
//! from one deleted from outside (which is charged).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::runtime::watcher::Event;

use crate::child::ChildPod;

/// How long a departed pod's last state is kept: its replacement is created within moments,
/// and once it exists the last state is no longer asked for.
pub const KEPT_FOR: Duration = Duration::from_secs(600);

/// (namespace, job name) → pod name → (when it went, its last state).
type Departures = HashMap<(String, String), HashMap<String, (Instant, Arc<ChildPod>)>>;

/// The departed pods of a watch; cheap to clone (one shared map).
#[derive(Clone, Default)]
pub struct Departed {
    by_job: Arc<Mutex<Departures>>,
}

impl Departed {
    /// Notes a watch event: a deleted pod that a disruption may have ended (its
    /// `DisruptionTarget` condition, or a pod-level reason such as `Evicted`) is kept; any
    /// other deleted pod removes what was kept under its name.
    pub fn note(&self, event: &Event<ChildPod>) {
        let Event::Delete(pod) = event else { return };
        if pod.job.is_empty() || pod.namespace.is_empty() {
            return;
        }
        let (ns, name, job) = (
            pod.namespace.to_string(),
            pod.name.clone(),
            pod.job.to_string(),
        );
        let telling = pod.disruption.is_some();
        let now = Instant::now();
        let mut by_job = self.by_job.lock().unwrap_or_else(|e| e.into_inner());
        by_job.retain(|_, pods| {
            pods.retain(|_, (at, _)| now.duration_since(*at) < KEPT_FOR);
            !pods.is_empty()
        });
        let pods = by_job.entry((ns, job)).or_default();
        match telling {
            true => drop(pods.insert(name, (now, Arc::new(pod.clone())))),
            false => drop(pods.remove(&name)),
        }
    }

    /// The last states kept of the job's departed pods, except those whose name a live pod
    /// (another uid) holds again: their replacement is there.
    pub fn of_job(&self, namespace: &str, job: &str, live: &[ChildPod]) -> Vec<ChildPod> {
        let mut by_job = self.by_job.lock().unwrap_or_else(|e| e.into_inner());
        let key = (namespace.to_string(), job.to_string());
        let Some(pods) = by_job.get_mut(&key) else {
            return Vec::new();
        };
        pods.retain(|name, (_, last)| !live.iter().any(|p| p.name == *name && p.uid != last.uid));
        pods.values().map(|(_, last)| (**last).clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(uid: &str, condition: Option<&str>) -> ChildPod {
        let conditions: Vec<_> = condition
            .map(|r| json!({"type": "DisruptionTarget", "status": "True", "reason": r}))
            .into_iter()
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "j-worker-0", "namespace": "ns", "uid": uid,
                         "labels": {"training.kubeflow.org/job-name": "j"}},
            "status": {"phase": "Failed", "conditions": conditions}
        }))
        .unwrap()
    }

    fn uids(pods: &[ChildPod]) -> Vec<&str> {
        pods.iter().filter_map(|p| p.uid.as_deref()).collect()
    }

    #[test]
    fn a_disrupted_pod_deleted_is_kept_until_its_name_is_taken_again() {
        let departed = Departed::default();
        departed.note(&Event::Apply(pod("1", Some("DeletionByPodGC"))));
        assert!(departed.of_job("ns", "j", &[]).is_empty(), "only deletions");
        departed.note(&Event::Delete(pod("1", Some("DeletionByPodGC"))));
        assert_eq!(uids(&departed.of_job("ns", "j", &[])), ["1"]);
        assert!(departed.of_job("ns", "other", &[]).is_empty());
        let replacement = pod("2", None);
        assert!(departed.of_job("ns", "j", &[replacement]).is_empty());
        assert!(
            departed.of_job("ns", "j", &[]).is_empty(),
            "forgotten once replaced"
        );
    }

    #[test]
    fn a_pod_deleted_without_a_disruption_clears_its_name() {
        let departed = Departed::default();
        departed.note(&Event::Delete(pod("1", Some("EvictionByEvictionAPI"))));
        departed.note(&Event::Delete(pod("2", None)));
        assert!(departed.of_job("ns", "j", &[]).is_empty());
    }
}
