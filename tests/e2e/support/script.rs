//! Scripted pod outcomes that work the same on both tiers. Jobs created through the harness
//! carry the annotation `sim.tfjob.dev/hold` in every pod template; neither the simulator's
//! kubelet nor the real tier's kwok starts a held pod. A scripter watches the test's pods and
//! releases each new one with a single patch that adds its script (`sim.tfjob.dev/<key>`
//! annotations) and removes the hold, so a pod's outcome never races its start.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;

/// The annotation that keeps a pod from starting until the scripter releases it.
pub const HOLD: &str = "sim.tfjob.dev/hold";

/// Script keys (without the `sim.tfjob.dev/` prefix) and values.
pub type Script = Vec<(String, String)>;

/// Scripts by pod name: the first applies to the first pod of that name, the second to the
/// next one (a pod the operator recreated), and so on; the last one to all later pods.
#[derive(Clone, Default)]
pub struct Scripts(Arc<Mutex<HashMap<String, Vec<Script>>>>);

impl Scripts {
    pub fn set(&self, pod: &str, in_turn: Vec<Script>) {
        self.0
            .lock()
            .expect("scripts")
            .insert(pod.to_string(), in_turn);
    }

    fn for_incarnation(&self, pod: &str, n: usize) -> Script {
        let scripts = self.0.lock().expect("scripts");
        scripts
            .get(pod)
            .and_then(|turns| turns.get(n).or(turns.last()))
            .cloned()
            .unwrap_or_default()
    }
}

/// Watches `pods` and releases every held pod with its script, until dropped.
pub fn spawn_scripter(pods: Api<Pod>, scripts: Scripts) -> JoinHandle<()> {
    tokio::spawn(async move {
        // Pod name → uids seen, to tell a recreated pod (the next incarnation) from an update.
        let mut seen: HashMap<String, Vec<String>> = HashMap::new();
        let mut events = std::pin::pin!(watcher(pods.clone(), watcher::Config::default()));
        while let Some(event) = events.next().await {
            let pod = match event {
                Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => p,
                // The watcher retries at once: wait between failures, or a failure that comes
                // back at once (a runtime shutting down has no I/O) spins this task forever,
                // and the test's runtime never finishes shutting down.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
                Ok(_) => continue,
            };
            let meta = &pod.metadata;
            let held = meta
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(HOLD));
            let (Some(name), Some(uid)) = (meta.name.clone(), meta.uid.clone()) else {
                continue;
            };
            if !held || meta.deletion_timestamp.is_some() {
                continue;
            }
            let uids = seen.entry(name.clone()).or_default();
            let n = uids.iter().position(|u| *u == uid).unwrap_or_else(|| {
                uids.push(uid.clone());
                uids.len() - 1
            });
            let mut annotations = Map::new();
            annotations.insert(HOLD.into(), Value::Null);
            for (key, value) in scripts.for_incarnation(&name, n) {
                annotations.insert(format!("sim.tfjob.dev/{key}"), json!(value));
            }
            let patch = json!({"metadata": {"uid": uid, "annotations": annotations}});
            // A pod deleted meanwhile (404), or replaced (uid mismatch): nothing to release.
            let _ = pods
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await;
        }
    })
}

/// Adds the hold to every pod template of a TFJob in JSON.
pub fn hold_templates(job: &mut Value) {
    if let Some(specs) = job["spec"]["tfReplicaSpecs"].as_object_mut() {
        for spec in specs.values_mut() {
            spec["template"]["metadata"]["annotations"][HOLD] = json!("");
        }
    }
}
