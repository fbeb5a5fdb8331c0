//! T9k's `TensorFlowTrainingJob` (`batch.tensorstack.dev/v1beta1`) to `kubeflow.org/v1`: the
//! `replicaSpecs` list becomes the map (`type` `chief`/`worker`/`ps`/`evaluator` →
//! `Chief`/`Worker`/`PS`/`Evaluator`), `runPolicy.cleanUpPolicy` becomes `cleanPodPolicy`
//! (`Unfinished` → `Running`), a paused job (`runMode.pause`) is suspended, the T9k scheduler's
//! queue goes to `schedulingPolicy`; TensorBoard, debug mode and the queue priority have no
//! equivalent and go with a note. Pure.

use serde_json::{Map, Value, json};

use super::notes::Notes;
use super::replica::{insert, note_template_restart_policy, v1_replica};
use crate::crd::ReplicaType;

/// Run policy fields with the same name and meaning in kubeflow.org/v1.
const SAME_RUN_POLICY: [&str; 3] = [
    "backoffLimit",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
];

/// Rewrites `spec` in place.
pub fn convert(spec: &mut Map<String, Value>, notes: &mut Notes) -> Result<(), String> {
    let items = match spec.remove("replicaSpecs") {
        Some(Value::Array(items)) => items,
        _ => return Err("spec.replicaSpecs: must be a list of replica specs".into()),
    };
    let mut out = Map::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("spec.replicaSpecs[{i}]");
        let Value::Object(fields) = item else {
            return Err(format!("{at}: must be a replica spec"));
        };
        let raw = fields.get("type").and_then(Value::as_str).unwrap_or("");
        let t = ReplicaType::parse(raw)
            .filter(|t| *t != ReplicaType::Master)
            .ok_or_else(|| {
                format!("{at}.type: \"{raw}\" is not a T9k TensorFlow replica type (chief, worker, ps, evaluator)")
            })?;
        notes.changed(format!("{at} (type {raw}) -> spec.tfReplicaSpecs.{t}"));
        let replica = v1_replica(fields, &["type"], &at, notes);
        note_template_restart_policy(t, &replica, notes);
        insert(&mut out, t, replica, &at)?;
    }
    let mut run_policy = run_policy(spec.remove("runPolicy"), notes);
    run_mode(spec.remove("runMode"), &mut run_policy, notes);
    scheduler(spec.remove("scheduler"), &mut run_policy, notes);
    if spec.remove("tensorboardSpec").is_some() {
        notes.dropped(
            "spec.tensorboardSpec: TensorBoard is a T9k resource; kubeflow.org/v1 starts none \
             (run TensorBoard as its own Deployment on the same volume)",
        );
    }
    let others: Vec<String> = spec.keys().cloned().collect();
    for k in others {
        spec.remove(&k);
        notes.dropped(format!("spec.{k}: no kubeflow.org/v1 equivalent"));
    }
    spec.insert("tfReplicaSpecs".into(), Value::Object(out));
    if !run_policy.is_empty() {
        spec.insert("runPolicy".into(), Value::Object(run_policy));
    }
    Ok(())
}

fn run_policy(source: Option<Value>, notes: &mut Notes) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(Value::Object(source)) = source else {
        return out;
    };
    for (k, v) in source {
        if SAME_RUN_POLICY.contains(&k.as_str()) {
            out.insert(k, v);
        } else if k == "cleanUpPolicy" {
            let policy = match v.as_str() {
                Some("Unfinished") => "Running",
                Some("All") => "All",
                Some("None") => "None",
                _ => {
                    notes.dropped(format!(
                        "spec.runPolicy.cleanUpPolicy {v}: not a T9k policy"
                    ));
                    continue;
                }
            };
            notes.changed(format!(
                "spec.runPolicy.cleanUpPolicy {} -> spec.runPolicy.cleanPodPolicy {policy}",
                v.as_str().unwrap_or_default()
            ));
            out.insert("cleanPodPolicy".into(), json!(policy));
        } else {
            notes.dropped(format!("spec.runPolicy.{k}: no kubeflow.org/v1 equivalent"));
        }
    }
    out
}

/// `pause` is suspension; `debug` has no equivalent.
fn run_mode(source: Option<Value>, run_policy: &mut Map<String, Value>, notes: &mut Notes) {
    let Some(mode) = source else {
        return;
    };
    if let Some(pause) = mode.get("pause") {
        if pause.get("enabled").and_then(Value::as_bool) == Some(true) {
            run_policy.insert("suspend".into(), json!(true));
            notes.changed(
                "spec.runMode.pause.enabled: true -> spec.runPolicy.suspend: true (set it to \
                 false to resume)",
            );
        }
        if pause.get("resumeSpecs").is_some() {
            notes.dropped(
                "spec.runMode.pause.resumeSpecs: a resumed kubeflow.org/v1 job recreates its \
                 pods from the templates as they are then; edit the templates before resuming",
            );
        }
    }
    if let Some(debug) = mode.get("debug") {
        let on = debug.get("enabled").and_then(Value::as_bool) == Some(true);
        let text = "spec.runMode.debug: kubeflow.org/v1 has no debug mode (to keep pods up \
                    without training, give the tensorflow container a command such as sleep)";
        if on {
            notes.check(format!(
                "{text}; this job was in debug mode and will now train"
            ));
        } else {
            notes.dropped(text);
        }
    }
}

/// The T9k scheduler's queue goes to `schedulingPolicy.queue`; its integer priority has no
/// counterpart (kubeflow.org/v1 names a PriorityClass instead).
fn scheduler(source: Option<Value>, run_policy: &mut Map<String, Value>, notes: &mut Notes) {
    let Some(Value::Object(scheduler)) = source else {
        return;
    };
    for (k, v) in scheduler {
        if k != "t9kScheduler" {
            notes.dropped(format!("spec.scheduler.{k}: no kubeflow.org/v1 equivalent"));
            continue;
        }
        if let Some(queue) = v.get("queue") {
            run_policy.insert("schedulingPolicy".into(), json!({"queue": queue}));
            notes.changed(
                "spec.scheduler.t9kScheduler.queue -> spec.runPolicy.schedulingPolicy.queue \
                 (stored; see docs/behaviour.md §8 for gang scheduling)",
            );
        }
        if let Some(priority) = v.get("priority") {
            notes.dropped(format!(
                "spec.scheduler.t9kScheduler.priority {priority}: a T9k queue priority; \
                 kubeflow.org/v1 takes the name of a PriorityClass in \
                 spec.runPolicy.schedulingPolicy.priorityClass"
            ));
        }
    }
}
