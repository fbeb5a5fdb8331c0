//! Test-side control of the pod loop: scripts set by `SimHandle::script_pod` and lost nodes,
//! shared between the handle and the loop (no I/O).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::controllers::kubelet::PREFIX;
use crate::store::meta;

type PodKey = (String, String);

/// The key of a stored script that limits it to the first N pods of that name: later pods
/// (the ones a controller recreates) run unscripted. The annotation script has no such key:
/// a pod alone cannot know which incarnation it is.
pub const FAIL_PODS: &str = "fail-pods";

/// Test-side control of the loop: per-pod scripts and lost nodes.
#[derive(Default)]
pub struct Control {
    scripts: Mutex<BTreeMap<PodKey, BTreeMap<String, String>>>,
    /// The uids of the pods seen under each scripted name, in order.
    incarnations: Mutex<BTreeMap<PodKey, Vec<String>>>,
    lost: Mutex<BTreeSet<String>>,
    pub(crate) wake: Notify,
}

impl Control {
    /// Script keys (as in the `sim.tfjob.dev/<key>` annotations) for the pod `ns/name`, applied
    /// over its own annotations whenever the loop looks at it (it need not exist yet).
    pub fn script_pod(&self, ns: &str, name: &str, keys: BTreeMap<String, String>) {
        self.scripts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((ns.into(), name.into()), keys);
        self.wake.notify_one();
    }
    pub fn mark_lost(&self, node: &str) {
        self.lost
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node.into());
    }
    pub fn is_lost(&self, node: &str) -> bool {
        self.lost
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(node)
    }
    /// The pod with its scripted keys merged into its annotations.
    pub(super) fn effective(&self, pod: &Value) -> Value {
        let key = (
            meta::namespace(pod).to_string(),
            meta::name(pod).to_string(),
        );
        let scripts = self.scripts.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = pod.clone();
        if let Some(keys) = scripts
            .get(&key)
            .filter(|keys| self.scripted_incarnation(&key, pod, keys))
        {
            if !out["metadata"]["annotations"].is_object() {
                out["metadata"]["annotations"] = json!({});
            }
            for (k, v) in keys.iter().filter(|(k, _)| *k != FAIL_PODS) {
                out["metadata"]["annotations"][format!("{PREFIX}{k}")] = json!(v);
            }
        }
        out
    }

    /// Whether the stored script applies to this pod: always, unless `fail-pods: N` limits it
    /// to the first N pods of the name.
    fn scripted_incarnation(
        &self,
        key: &PodKey,
        pod: &Value,
        keys: &BTreeMap<String, String>,
    ) -> bool {
        let Some(limit) = keys
            .get(FAIL_PODS)
            .and_then(|n| n.trim().parse::<usize>().ok())
        else {
            return true;
        };
        let mut seen = self.incarnations.lock().unwrap_or_else(|e| e.into_inner());
        let uids = seen.entry(key.clone()).or_default();
        let uid = meta::uid(pod).to_string();
        let index = match uids.iter().position(|u| *u == uid) {
            Some(i) => i,
            None => {
                uids.push(uid);
                uids.len() - 1
            }
        };
        index < limit
    }
}
