//! What the three older forms share once their replicas are found: the replica-type key, the
//! replica fields `kubeflow.org/v1` has, the template's own restart policy, and the run policy
//! fields that moved under `runPolicy`. Pure.

use serde_json::{Map, Value};

use super::notes::Notes;
use crate::crd::ReplicaType;
use crate::crd::form::EARLY_V1_FIELDS;

/// The fields of a `kubeflow.org/v1` replica spec.
const REPLICA_FIELDS: [&str; 3] = ["replicas", "template", "restartPolicy"];

/// A replica's fields that `kubeflow.org/v1` has, with a note for each one dropped. `at` is the
/// replica's path in the source, for the notes.
pub fn v1_replica(
    source: &Map<String, Value>,
    skip: &[&str],
    at: &str,
    notes: &mut Notes,
) -> Value {
    let mut out = Map::new();
    for (k, v) in source {
        if REPLICA_FIELDS.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        } else if !skip.contains(&k.as_str()) {
            notes.dropped(format!("{at}.{k}: no kubeflow.org/v1 equivalent"));
        }
    }
    Value::Object(out)
}

/// A Check note when the pod template sets a restart policy: `kubeflow.org/v1` overrides it
/// with the replica's (default Never), as v1alpha2 and later always did.
pub fn note_template_restart_policy(t: ReplicaType, replica: &Value, notes: &mut Notes) {
    let Some(in_template) = replica
        .pointer("/template/spec/restartPolicy")
        .and_then(Value::as_str)
    else {
        return;
    };
    let own = replica
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Never");
    if in_template != own {
        notes.check(format!(
            "spec.tfReplicaSpecs.{t}.template.spec.restartPolicy {in_template} is overridden by the \
             replica's restartPolicy ({own}); set spec.tfReplicaSpecs.{t}.restartPolicy: {in_template} \
             if the pods should restart that way"
        ));
    }
}

/// Moves the early-v1 fields from `spec` under `spec.runPolicy` (kept there when `runPolicy`
/// already sets them, as the operator would), noting each.
pub fn fold_run_policy(spec: &mut Map<String, Value>, notes: &mut Notes) {
    for field in EARLY_V1_FIELDS {
        let Some(value) = spec.remove(field) else {
            continue;
        };
        let run_policy = spec
            .entry("runPolicy")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(rp) = run_policy.as_object_mut() else {
            continue;
        };
        if rp.contains_key(field) {
            notes.dropped(format!(
                "spec.{field}: spec.runPolicy.{field} is set and wins, as it would in kubeflow.org/v1"
            ));
        } else {
            rp.insert(field.to_string(), value);
            notes.changed(format!("spec.{field} -> spec.runPolicy.{field}"));
        }
    }
}

/// Inserts a replica under its canonical key; an error when the type is already there.
pub fn insert(
    specs: &mut Map<String, Value>,
    t: ReplicaType,
    replica: Value,
    at: &str,
) -> Result<(), String> {
    if specs.contains_key(t.as_str()) {
        return Err(format!(
            "{at}: a second {t} replica spec; kubeflow.org/v1 has one spec per replica type \
             (merge them, e.g. by adding up their replicas)"
        ));
    }
    specs.insert(t.as_str().to_string(), replica);
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn run_policy_fields_move_unless_set_there() {
        let mut spec = json!({"cleanPodPolicy": "None", "backoffLimit": 3, "runPolicy": {"backoffLimit": 1}, "tfReplicaSpecs": {}});
        let mut notes = Notes::default();
        fold_run_policy(spec.as_object_mut().unwrap(), &mut notes);
        assert_eq!(
            spec,
            json!({"runPolicy": {"backoffLimit": 1, "cleanPodPolicy": "None"}, "tfReplicaSpecs": {}})
        );
        assert_eq!(
            notes.0,
            [
                super::super::notes::Note::Changed("spec.cleanPodPolicy -> spec.runPolicy.cleanPodPolicy".into()),
                super::super::notes::Note::Dropped(
                    "spec.backoffLimit: spec.runPolicy.backoffLimit is set and wins, as it would in kubeflow.org/v1".into()
                ),
            ]
        );
    }

    #[test]
    fn template_restart_policy_is_pointed_out() {
        let mut notes = Notes::default();
        let r = json!({"template": {"spec": {"restartPolicy": "OnFailure"}}});
        note_template_restart_policy(ReplicaType::Master, &r, &mut notes);
        assert_eq!(notes.checks(), 1);
        let same = json!({"restartPolicy": "OnFailure", "template": {"spec": {"restartPolicy": "OnFailure"}}});
        note_template_restart_policy(ReplicaType::Master, &same, &mut notes);
        assert_eq!(notes.checks(), 1);
    }
}
