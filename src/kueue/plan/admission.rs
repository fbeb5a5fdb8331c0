//! Starting and stopping a job as Kueue's job reconciler does (Kueue v0.19.2:
//! `getPodSetsInfoFromStatus`, `podset.FromAssignment`, `podset.Merge`, `RestorePodSpec`,
//! `KubeflowJob.RunWithPodSetsInfo`/`RestorePodSetsInfo`): what admission adds to each
//! replica type's pod template, and the templates given back on eviction. They work on the
//! job as stored (JSON), so the job's own spelling of its replica types is kept. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use serde_json::{Map, Value, json};

use super::workload::{
    CLUSTER_QUEUE_LABEL, FlavorSpec, LOCAL_QUEUE_LABEL, PODSET_LABEL, PREFERRED_TOPOLOGY, PodSet,
    REQUIRED_TOPOLOGY, TOPOLOGY_GATE, UNCONSTRAINED_TOPOLOGY, WORKLOAD_ANNOTATION, Workload,
};
use crate::crd::ReplicaType;

/// What admission adds to one PodSet's pods.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodSetInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Value>,
    pub scheduling_gates: Vec<Value>,
}

/// Why a job cannot start with its admission: Kueue finishes such a Workload (`FailedToStart`)
/// rather than retry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("invalid podset infos: expecting {want} podset, got {got}")]
    Count { want: usize, got: usize },
    #[error(
        "invalid admission check PodSetUpdate: conflict for {field}: conflict for key={key}, value1={old}, value2={new}"
    )]
    Conflict {
        field: &'static str,
        key: String,
        old: String,
        new: String,
    },
}

/// The ResourceFlavors an admitted Workload names, in order, without repeats.
pub fn flavor_names(workload: &Workload) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let assignments = workload
        .status
        .admission
        .iter()
        .flat_map(|a| &a.pod_set_assignments);
    for flavor in assignments.flat_map(|a| a.flavors.values()) {
        if !names.contains(flavor) {
            names.push(flavor.clone());
        }
    }
    names
}

/// Each PodSet's info from the Workload's admission: its flavors' node labels and
/// tolerations (flavors in resource-name order, which Kueue leaves to Go's map order), the
/// PodSet label, the queue labels, the Workload annotation, the topology gate when placed by
/// topology, and the admission checks' updates.
pub fn infos(
    workload: &Workload,
    flavors: &BTreeMap<String, FlavorSpec>,
) -> Result<Vec<PodSetInfo>, StartError> {
    let Some(admission) = &workload.status.admission else {
        return Ok(Vec::new());
    };
    let mut infos = Vec::new();
    for (i, assignment) in admission.pod_set_assignments.iter().enumerate() {
        let mut info = PodSetInfo {
            name: assignment.name.clone(),
            ..PodSetInfo::default()
        };
        let mut seen: Vec<&String> = Vec::new();
        for flavor in assignment.flavors.values() {
            if seen.contains(&flavor) {
                continue;
            }
            seen.push(flavor);
            let spec = flavors.get(flavor).cloned().unwrap_or_default();
            info.node_selector.extend(spec.node_labels);
            info.tolerations
                .extend(spec.tolerations.iter().map(to_value));
        }
        let podset = workload.spec.pod_sets.get(i);
        if assignment.topology_assignment.is_some() {
            if !asks_for_topology(podset) {
                info.annotations
                    .insert(UNCONSTRAINED_TOPOLOGY.into(), "true".into());
            }
            info.scheduling_gates.push(json!({"name": TOPOLOGY_GATE}));
        }
        info.annotations
            .insert(WORKLOAD_ANNOTATION.into(), workload.name().into());
        info.labels
            .insert(PODSET_LABEL.into(), assignment.name.clone());
        queue_labels(&mut info.labels, workload, &admission.cluster_queue);
        for check in &workload.status.admission_checks {
            if let Some(update) = check.pod_set_updates.iter().find(|u| u.name == info.name) {
                let from_update = PodSetInfo {
                    labels: update.labels.clone(),
                    annotations: update.annotations.clone(),
                    node_selector: update.node_selector.clone(),
                    tolerations: update.tolerations.iter().map(to_value).collect(),
                    ..PodSetInfo::default()
                };
                merge_info(&mut info, &from_update)?;
            }
        }
        infos.push(info);
    }
    Ok(infos)
}

/// Whether the PodSet's topology request names a topology (else admission marks the pods
/// unconstrained).
fn asks_for_topology(podset: Option<&PodSet>) -> bool {
    let request = podset.and_then(|p| p.topology_request.as_ref());
    request.is_some_and(|r| {
        ["required", "preferred", "unconstrained"]
            .iter()
            .any(|k| !r[*k].is_null())
    }) || podset.is_some_and(|p| {
        let annotations = &p.template["metadata"]["annotations"];
        [
            REQUIRED_TOPOLOGY,
            PREFERRED_TOPOLOGY,
            UNCONSTRAINED_TOPOLOGY,
        ]
        .iter()
        .any(|k| !annotations[*k].is_null())
    })
}

/// `kueue.x-k8s.io/local-queue-name` and, when it is a DNS label, the ClusterQueue's name.
fn queue_labels(labels: &mut BTreeMap<String, String>, workload: &Workload, cluster_queue: &str) {
    let local = workload.spec.queue_name.clone().unwrap_or_default();
    labels.insert(LOCAL_QUEUE_LABEL.into(), local);
    if is_dns_label(cluster_queue) {
        labels.insert(CLUSTER_QUEUE_LABEL.into(), cluster_queue.into());
    }
}

fn is_dns_label(s: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    !s.is_empty() && s.len() <= 63 && s.chars().all(ok) && !s.starts_with('-') && !s.ends_with('-')
}

fn to_value(t: &Toleration) -> Value {
    serde_json::to_value(t).unwrap_or_default()
}

/// Kueue's `PodSetInfo.Merge`: maps may only add keys (a key already there with another value
/// is a conflict); tolerations and scheduling gates are added when not there yet.
fn merge_info(into: &mut PodSetInfo, other: &PodSetInfo) -> Result<(), StartError> {
    merge_map(&mut into.annotations, &other.annotations, "annotations")?;
    merge_map(&mut into.labels, &other.labels, "labels")?;
    merge_map(
        &mut into.node_selector,
        &other.node_selector,
        "nodeSelector",
    )?;
    add_missing(&mut into.tolerations, &other.tolerations);
    add_missing(&mut into.scheduling_gates, &other.scheduling_gates);
    Ok(())
}

fn merge_map(
    into: &mut BTreeMap<String, String>,
    other: &BTreeMap<String, String>,
    field: &'static str,
) -> Result<(), StartError> {
    for (k, v) in other {
        if let Some(old) = into.get(k).filter(|old| *old != v) {
            return Err(StartError::Conflict {
                field,
                key: k.clone(),
                old: old.clone(),
                new: v.clone(),
            });
        }
    }
    into.extend(other.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(())
}

fn add_missing(into: &mut Vec<Value>, other: &[Value]) {
    for item in other {
        if !into.contains(item) {
            into.push(item.clone());
        }
    }
}

/// The job's replica types as stored: (its key, the type), in Kueue's order.
fn replica_keys(job: &Value) -> Vec<(String, ReplicaType)> {
    let specs = job["spec"]["tfReplicaSpecs"].as_object();
    let mut keys: Vec<(String, ReplicaType)> = specs
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| Some((k.clone(), ReplicaType::parse(k)?)))
        .collect();
    keys.sort_by_key(|(_, t)| *t);
    keys
}

/// The job resumed with `infos` merged into its templates (`RunWithPodSetsInfo`): one info
/// per replica type, in order.
pub fn started(job: &Value, infos: &[PodSetInfo]) -> Result<Value, StartError> {
    let keys = replica_keys(job);
    if keys.len() != infos.len() {
        return Err(StartError::Count {
            want: keys.len(),
            got: infos.len(),
        });
    }
    let mut job = job.clone();
    job["spec"]["runPolicy"]["suspend"] = json!(false);
    for ((key, _), info) in keys.iter().zip(infos) {
        let template = &mut job["spec"]["tfReplicaSpecs"][key]["template"];
        let mut current = PodSetInfo {
            labels: string_map(&template["metadata"]["labels"]),
            annotations: string_map(&template["metadata"]["annotations"]),
            node_selector: string_map(&template["spec"]["nodeSelector"]),
            tolerations: list(&template["spec"]["tolerations"]),
            scheduling_gates: list(&template["spec"]["schedulingGates"]),
            ..PodSetInfo::default()
        };
        merge_info(&mut current, info)?;
        put(template, &current);
    }
    Ok(job)
}

/// The job suspended (`Suspend`, then `RestorePodSetsInfo` when `restore` has a PodSet per
/// replica type): each template's labels, annotations, node selector, tolerations and
/// scheduling gates as the Workload recorded them before admission.
pub fn stopped(job: &Value, restore: Option<&[PodSet]>) -> Value {
    let mut job = job.clone();
    job["spec"]["runPolicy"]["suspend"] = json!(true);
    let keys = replica_keys(&job);
    let Some(podsets) = restore.filter(|p| p.len() == keys.len()) else {
        return job;
    };
    for ((key, _), podset) in keys.iter().zip(podsets) {
        let original = &podset.template;
        let info = PodSetInfo {
            labels: string_map(&original["metadata"]["labels"]),
            annotations: string_map(&original["metadata"]["annotations"]),
            node_selector: string_map(&original["spec"]["nodeSelector"]),
            tolerations: list(&original["spec"]["tolerations"]),
            scheduling_gates: list(&original["spec"]["schedulingGates"]),
            ..PodSetInfo::default()
        };
        put(&mut job["spec"]["tfReplicaSpecs"][key]["template"], &info);
    }
    job
}

/// Writes an info's five fields into a template, leaving out the empty ones (and a
/// `metadata` left empty).
fn put(template: &mut Value, info: &PodSetInfo) {
    let Some(template) = template.as_object_mut() else {
        return;
    };
    let mut metadata = template.remove("metadata").unwrap_or(Value::Null);
    set(&mut metadata, "labels", map_value(&info.labels));
    set(&mut metadata, "annotations", map_value(&info.annotations));
    if metadata.as_object().is_some_and(|m| !m.is_empty()) {
        template.insert("metadata".into(), metadata);
    }
    let spec = template
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    set(spec, "nodeSelector", map_value(&info.node_selector));
    set(spec, "tolerations", Value::Array(info.tolerations.clone()));
    set(
        spec,
        "schedulingGates",
        Value::Array(info.scheduling_gates.clone()),
    );
}

/// Sets `key` of `object` to `value`, or removes it when `value` is empty.
fn set(object: &mut Value, key: &str, value: Value) {
    let empty = match &value {
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if !object.is_object() {
        if empty {
            return;
        }
        *object = Value::Object(Map::new());
    }
    if let Some(object) = object.as_object_mut() {
        if empty {
            object.remove(key);
        } else {
            object.insert(key.to_string(), value);
        }
    }
}

fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

fn map_value(m: &BTreeMap<String, String>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

fn list(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: changed fields, `null` for
/// removed ones. Lists are replaced whole.
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, v) in n {
                match o.get(k) {
                    Some(before) if before == v => {}
                    Some(before) => {
                        patch.insert(k.clone(), merge_patch(before, v));
                    }
                    None => {
                        patch.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in o.keys().filter(|k| !n.contains_key(*k)) {
                patch.insert(k.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        (_, n) => n.clone(),
    }
}

#[cfg(test)]
mod tests;
