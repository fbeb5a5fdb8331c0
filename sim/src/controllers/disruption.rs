//! The `DisruptionTarget` pod condition, as the components that end a pod from outside write it
//! (Kubernetes 1.34): the Eviction API (`EvictionByEvictionAPI`, `Eviction API: evicting`,
//! pkg/registry/core/pod/storage/eviction.go), pod GC for a pod whose node is gone
//! (`DeletionByPodGC`, `PodGC: node no longer exists`, pkg/controller/podgc), the taint
//! manager, the scheduler's preemption and the kubelet's eviction (`TerminationByKubelet`).
//! Each writes it before the pod ends, and the kubelet keeps it in the statuses it writes
//! after (it owns other conditions only). Pure.

use jiff::Timestamp;
use serde_json::{Value, json};

pub(crate) const TYPE: &str = "DisruptionTarget";
pub(crate) const EVICTION_API: (&str, &str) = ("EvictionByEvictionAPI", "Eviction API: evicting");
pub(crate) const POD_GC: (&str, &str) = ("DeletionByPodGC", "PodGC: node no longer exists");

/// Sets `DisruptionTarget` True with `(reason, message)` in a pod status, as
/// `podutil.UpdatePodCondition` does: an existing one is replaced, its transition time kept
/// when its status does not change.
pub(crate) fn mark(status: &mut Value, (reason, message): (&str, &str), now: Timestamp) {
    let mut list = status["conditions"].as_array().cloned().unwrap_or_default();
    let old = list.iter().position(|c| c["type"] == TYPE);
    let since = old
        .map(|i| &list[i])
        .filter(|c| c["status"] == "True")
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now.to_string()));
    let condition = json!({
        "type": TYPE, "status": "True", "reason": reason, "message": message,
        "lastProbeTime": null, "lastTransitionTime": since,
    });
    match old {
        Some(i) => list[i] = condition,
        None => list.push(condition),
    }
    status["conditions"] = json!(list);
}

/// The pod's `DisruptionTarget` condition, if it has one (to be kept by the kubelet).
pub(crate) fn of(status: &Value) -> Option<Value> {
    let list = status["conditions"].as_array()?;
    list.iter().find(|c| c["type"] == TYPE).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_once_with_the_first_transition_time() {
        let t = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
        let mut status = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        mark(&mut status, EVICTION_API, t(1));
        mark(&mut status, POD_GC, t(2));
        let list = status["conditions"].as_array().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1]["reason"], "DeletionByPodGC");
        assert_eq!(list[1]["lastTransitionTime"], t(1).to_string());
        assert_eq!(
            of(&status).unwrap()["message"],
            "PodGC: node no longer exists"
        );
    }
}
