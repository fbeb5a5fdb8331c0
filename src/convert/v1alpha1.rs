//! tf-operator `v1alpha1` to `kubeflow.org/v1`: the `replicaSpecs` list becomes the
//! `tfReplicaSpecs` map (`tfReplicaType` `MASTER`/`WORKER`/`PS` → `Master`/`Worker`/`PS`), the
//! template's restart policy becomes the replica's, `tfPort` becomes the `tfjob-port`, and a
//! PS without a template — which the old operator filled with its own gRPC server — gets a
//! template running a standard TensorFlow server. Pure.

use serde_json::{Map, Value, json};

use super::notes::Notes;
use super::replica::{insert, v1_replica};
use crate::crd::ReplicaType;
use crate::crd::defaults::{TF_CONTAINER, TF_DEFAULT_PORT, TF_PORT_NAME};

/// The image v1alpha1 gave the PS it generated when `spec.tfImage` was not set.
pub const DEFAULT_TF_IMAGE: &str = "tensorflow/tensorflow:1.3.0";

/// The volume the v1alpha1 operator mounted its gRPC server script from, in a PS it generated.
const PS_CONFIG_VOLUME: &str = "ps-config-volume";

/// The replica fields read here rather than copied.
const HANDLED: [&str; 3] = ["tfReplicaType", "tfPort", "template"];

/// A standard TensorFlow gRPC server for the replica `TF_CONFIG` describes; `tf.train.Server`
/// on TensorFlow 1 (the old operator's default image), `tf.distribute.Server` on 2.
const PS_SERVER: &str = "import json, os, tensorflow as tf; \
c = json.loads(os.environ['TF_CONFIG']); \
server = getattr(getattr(tf, 'distribute', None), 'Server', None) or tf.train.Server; \
server(tf.train.ClusterSpec(c['cluster']), job_name=c['task']['type'], \
task_index=c['task']['index']).join()";

/// Rewrites `spec` in place.
pub fn convert(spec: &mut Map<String, Value>, notes: &mut Notes) -> Result<(), String> {
    let items = match spec.remove("replicaSpecs") {
        Some(Value::Array(items)) => items,
        _ => return Err("spec.replicaSpecs: must be a list of replica specs".into()),
    };
    let image = spec
        .get("tfImage")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_TF_IMAGE)
        .to_string();
    let mut out = Map::new();
    let mut generated_ps = false;
    for (i, item) in items.iter().enumerate() {
        let at = format!("spec.replicaSpecs[{i}]");
        let Value::Object(fields) = item else {
            return Err(format!("{at}: must be a replica spec"));
        };
        let raw = fields.get("tfReplicaType").and_then(Value::as_str);
        let t = match raw.unwrap_or("MASTER") {
            "MASTER" => ReplicaType::Master,
            "WORKER" => ReplicaType::Worker,
            "PS" => ReplicaType::Ps,
            other => {
                return Err(format!(
                    "{at}.tfReplicaType: \"{other}\" is not a v1alpha1 replica type (MASTER, WORKER, PS)"
                ));
            }
        };
        notes.changed(format!(
            "{at} (tfReplicaType {}) -> spec.tfReplicaSpecs.{t}",
            raw.unwrap_or("unset, v1alpha1's default MASTER")
        ));
        let mut replica = v1_replica(fields, &HANDLED, &at, notes);
        let template = fields.get("template");
        let generated = t == ReplicaType::Ps && template.is_none_or(is_generated_ps);
        match template {
            _ if generated => {
                replica["template"] = generated_ps_template(&image);
                replica["restartPolicy"] = json!("OnFailure");
                generated_ps = true;
                let what = if template.is_none() {
                    "has no template: the old operator generated one"
                } else {
                    "has the template the old operator generated"
                };
                notes.check(format!(
                    "{at} {what}, running its own grpc_tensorflow_server.py from a ConfigMap it \
                     created (ps-config-volume); spec.tfReplicaSpecs.PS now runs a standard \
                     TensorFlow gRPC server from TF_CONFIG in {image} (spec.tfImage or \
                     v1alpha1's default), restarted on failure: check that the image has \
                     TensorFlow and that the server suits the training code"
                ));
            }
            Some(template) => replica["template"] = template.clone(),
            None => return Err(format!("{at}: no template (v1alpha1 refused this too)")),
        }
        lift_restart_policy(&mut replica, t, &at, notes);
        tf_port(&mut replica, fields.get("tfPort"), &at, notes);
        insert(&mut out, t, replica, &at)?;
    }
    termination_policy(spec, &out, notes);
    scheduler_name(spec, &mut out, notes);
    if spec.remove("tfImage").is_some() && !generated_ps {
        notes.dropped(
            "spec.tfImage: only the image of a PS the old operator generated; none is here",
        );
    }
    if spec.remove("RuntimeId").is_some() {
        notes.dropped(
            "spec.RuntimeId: kubeflow.org/v1 names every pod and service <name>-<type>-<index>",
        );
    }
    let others: Vec<String> = spec.keys().cloned().collect();
    for k in others {
        spec.remove(&k);
        notes.dropped(format!("spec.{k}: no kubeflow.org/v1 equivalent"));
    }
    spec.insert("tfReplicaSpecs".into(), Value::Object(out));
    Ok(())
}

/// The template the v1alpha1 operator wrote into a PS it generated (seen in `kubectl get -o
/// yaml`): its `tensorflow` container mounts `ps-config-volume`, a volume the template lacks
/// (the operator added it to each pod).
fn is_generated_ps(template: &Value) -> bool {
    let declared = |name: &str| {
        template
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .is_some_and(|vs| vs.iter().any(|v| v["name"] == name))
    };
    template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["name"] == TF_CONTAINER)
        .flat_map(|c| c["volumeMounts"].as_array().cloned().unwrap_or_default())
        .any(|m| m["name"] == PS_CONFIG_VOLUME && !declared(PS_CONFIG_VOLUME))
}

fn generated_ps_template(image: &str) -> Value {
    json!({"spec": {"containers": [{
        "name": TF_CONTAINER,
        "image": image,
        "command": ["python", "-c", PS_SERVER],
    }]}})
}

/// v1alpha1 restarted pods by their template's policy; kubeflow.org/v1 by the replica's.
fn lift_restart_policy(replica: &mut Value, t: ReplicaType, at: &str, notes: &mut Notes) {
    let Some(Value::Object(pod)) = replica.pointer_mut("/template/spec") else {
        return;
    };
    match pod.remove("restartPolicy") {
        Some(policy) if replica.get("restartPolicy").is_none() => {
            notes.changed(format!(
                "{at}.template.spec.restartPolicy {} -> spec.tfReplicaSpecs.{t}.restartPolicy \
                 (kubeflow.org/v1 sets the pods' policy from the replica's)",
                policy.as_str().unwrap_or("?")
            ));
            replica["restartPolicy"] = policy;
        }
        Some(_) => {}
        None if replica.get("restartPolicy").is_none() => notes.check(format!(
            "{at} set no restartPolicy: kubeflow.org/v1 then never restarts a failed pod; set \
             spec.tfReplicaSpecs.{t}.restartPolicy (OnFailure, Always, ExitCode) to restart"
        )),
        None => {}
    }
}

/// `tfPort` becomes the `tensorflow` container's port named `tfjob-port`; 2222 is v1's default.
fn tf_port(replica: &mut Value, port: Option<&Value>, at: &str, notes: &mut Notes) {
    let Some(port) = port.and_then(Value::as_i64) else {
        return;
    };
    if port == i64::from(TF_DEFAULT_PORT) {
        notes.dropped(format!(
            "{at}.tfPort: {port}, the port kubeflow.org/v1 uses by default"
        ));
        return;
    }
    let container = replica
        .pointer_mut("/template/spec/containers")
        .and_then(Value::as_array_mut)
        .and_then(|cs| cs.iter_mut().find(|c| c["name"] == TF_CONTAINER));
    let Some(Value::Object(container)) = container else {
        notes.dropped(format!(
            "{at}.tfPort: {port}: no tensorflow container to carry it"
        ));
        return;
    };
    let ports = container
        .entry("ports")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(ports) = ports {
        ports.retain(|p| p["name"] != TF_PORT_NAME);
        ports.push(json!({"name": TF_PORT_NAME, "containerPort": port}));
    }
    notes.changed(format!(
        "{at}.tfPort {port} -> the tensorflow container's port named {TF_PORT_NAME}"
    ));
}

/// `terminationPolicy.chief` named who decides; kubeflow.org/v1 has a fixed rule: the Master
/// (or Chief), else worker 0.
fn termination_policy(
    spec: &mut Map<String, Value>,
    replicas: &Map<String, Value>,
    notes: &mut Notes,
) {
    let Some(policy) = spec.remove("terminationPolicy") else {
        return;
    };
    let name = policy
        .pointer("/chief/replicaName")
        .and_then(Value::as_str)
        .unwrap_or("MASTER");
    let index = policy
        .pointer("/chief/replicaIndex")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let has_master = replicas.contains_key(ReplicaType::Master.as_str());
    let v1_rule = match (name, index) {
        ("MASTER", 0) => has_master,
        ("WORKER", 0) => !has_master,
        _ => false,
    };
    if v1_rule {
        notes.dropped(format!(
            "spec.terminationPolicy (chief {name} {index}): kubeflow.org/v1's own rule, the \
             Master decides, else worker 0"
        ));
    } else {
        notes.check(format!(
            "spec.terminationPolicy (chief {name} {index}) cannot be expressed: in \
             kubeflow.org/v1 the Master (or Chief) decides success, else worker 0 (or every \
             worker, with spec.successPolicy: AllWorkers)"
        ));
    }
}

/// `spec.schedulerName` applied to every pod: kubeflow.org/v1 takes it from the templates.
fn scheduler_name(
    spec: &mut Map<String, Value>,
    replicas: &mut Map<String, Value>,
    notes: &mut Notes,
) {
    let Some(name) = spec.remove("schedulerName") else {
        return;
    };
    for (t, replica) in replicas.iter_mut() {
        if let Some(Value::Object(pod)) = replica.pointer_mut("/template/spec")
            && !pod.contains_key("schedulerName")
        {
            pod.insert("schedulerName".into(), name.clone());
            notes.changed(format!(
                "spec.schedulerName -> spec.tfReplicaSpecs.{t}.template.spec.schedulerName"
            ));
        }
    }
}
