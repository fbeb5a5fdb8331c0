//! `kubeflow.org/v1alpha2`, `v1beta1`, `v1beta2` and early `v1` to `kubeflow.org/v1`: the map
//! of replica specs stays (keys in their canonical spelling, `MASTER` → `Master`), the run
//! policy fields move under `runPolicy`, and what v1 lacks goes with a note. Pure.

use serde_json::{Map, Value};

use super::notes::Notes;
use super::replica::{fold_run_policy, insert, note_template_restart_policy, v1_replica};
use crate::crd::ReplicaType;

/// `spec` fields that `kubeflow.org/v1` has besides the early ones.
const V1_FIELDS: [&str; 3] = ["runPolicy", "successPolicy", "enableDynamicWorker"];

/// Rewrites `spec` in place.
pub fn convert(spec: &mut Map<String, Value>, notes: &mut Notes) -> Result<(), String> {
    let specs = match spec.remove("tfReplicaSpecs") {
        Some(Value::Object(m)) => m,
        Some(_) => return Err("spec.tfReplicaSpecs: must be a map of replica types".into()),
        None => return Err("spec.tfReplicaSpecs: Required value".into()),
    };
    let mut out = Map::new();
    for (key, replica) in specs {
        let at = format!("spec.tfReplicaSpecs.{key}");
        let Some(t) = ReplicaType::parse(&key) else {
            return Err(format!(
                "{at}: \"{key}\" is not a TensorFlow replica type (Chief, Master, PS, Worker, Evaluator)"
            ));
        };
        let Value::Object(fields) = replica else {
            return Err(format!("{at}: must be a replica spec"));
        };
        if key != t.as_str() {
            notes.changed(format!("{at} -> spec.tfReplicaSpecs.{t}"));
        }
        let replica = v1_replica(&fields, &[], &at, notes);
        note_template_restart_policy(t, &replica, notes);
        insert(&mut out, t, replica, &at)?;
    }
    fold_run_policy(spec, notes);
    let others: Vec<String> = spec
        .keys()
        .filter(|k| !V1_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in others {
        spec.remove(&k);
        let why = match k.as_str() {
            "tfRpcLayer" => {
                "kubeflow.org/v1 writes no rpcLayer into TF_CONFIG; set it in the training program"
            }
            _ => "no kubeflow.org/v1 equivalent",
        };
        notes.dropped(format!("spec.{k}: {why}"));
    }
    spec.insert("tfReplicaSpecs".into(), Value::Object(out));
    Ok(())
}
