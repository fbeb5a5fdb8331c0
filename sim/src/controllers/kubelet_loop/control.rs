//! Test-side control of the pod loop: scripts set by `SimHandle::script_pod` and lost nodes,
//! shared between the handle and the loop (no I/O).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::controllers::kubelet::PREFIX;
use crate::store::meta;

type PodKey = (String, String);

/// Test-side control of the loop: per-pod scripts and lost nodes.
#[derive(Default)]
pub struct Control {
    scripts: Mutex<BTreeMap<PodKey, BTreeMap<String, String>>>,
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
        if let Some(keys) = scripts.get(&key) {
            if !out["metadata"]["annotations"].is_object() {
                out["metadata"]["annotations"] = json!({});
            }
            for (k, v) in keys {
                out["metadata"]["annotations"][format!("{PREFIX}{k}")] = json!(v);
            }
        }
        out
    }
}
