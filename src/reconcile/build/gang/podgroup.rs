//! The PodGroup a job should have (docs/behaviour.md §8): its `minMember`, its
//! `minResources` and the whole object for the job's gang scheduler. Pure.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Map, Value, json};

use super::Gang;
use super::quantity::Amount;
use crate::crd::labels::{
    LABEL_JOB_NAME, LABEL_OPERATOR_NAME, OPERATOR_NAME, job_name, job_namespace,
};
use crate::crd::{ReplicaType, SchedulingPolicy, TFJob};
use crate::reconcile::build::children::owner_reference;

/// The PodGroup's `minMember`: `schedulingPolicy.minAvailable`, else every replica of the job.
pub fn min_member(job: &TFJob) -> i32 {
    policy(job)
        .and_then(|p| p.min_available)
        .unwrap_or_else(|| total_replicas(job))
}

fn total_replicas(job: &TFJob) -> i32 {
    job.spec
        .tf_replica_specs
        .iter()
        .map(|(_, s)| s.count())
        .sum()
}

fn policy(job: &TFJob) -> Option<&SchedulingPolicy> {
    job.spec.run_policy.as_ref()?.scheduling_policy.as_ref()
}

/// The PodGroup's `minResources`: `schedulingPolicy.minResources` as written, else the sum
/// of what the first `min_member` pods request, taking replica types by their template's
/// PriorityClass value, highest first (the pods a priority-aware scheduler places first), as
/// Kubeflow's `CalcPGMinResources` does. Per container, its `requests`, or its `limits` when
/// it has no `requests` (Kubernetes defaults requests to limits); init containers are not
/// counted (nor by Kubeflow). Equal priorities keep the canonical type order (Chief, Master,
/// PS, Worker, Evaluator) so the result is the same on every pass.
pub fn min_resources(
    job: &TFJob,
    min_member: i32,
    priorities: &BTreeMap<String, i32>,
) -> BTreeMap<String, Quantity> {
    if let Some(given) = policy(job).and_then(|p| p.min_resources.clone()) {
        return given;
    }
    let priority = |t: ReplicaType| {
        job.spec
            .tf_replica_specs
            .get(t)
            .and_then(|s| s.template.priority_class_name())
            .and_then(|name| priorities.get(name).copied())
            .unwrap_or(0)
    };
    let mut types: Vec<ReplicaType> = job.spec.tf_replica_specs.iter().map(|(t, _)| t).collect();
    types.sort_by_key(|t| std::cmp::Reverse(priority(*t)));
    let mut sums: BTreeMap<String, Amount> = BTreeMap::new();
    let mut counted = 0;
    for t in types {
        let Some(spec) = job.spec.tf_replica_specs.get(t) else {
            continue;
        };
        let pods = spec.count().min(min_member - counted).max(0);
        counted += pods;
        // Decoded on each pass of a gang-scheduled job that sets no minResources: only that
        // mode reads what the containers request.
        let pod = spec.template.decode().spec.unwrap_or_default();
        for container in &pod.containers {
            let resources = container.resources.as_ref();
            let wanted = resources
                .and_then(|r| r.requests.as_ref())
                .or_else(|| resources.and_then(|r| r.limits.as_ref()));
            for (name, q) in wanted.into_iter().flatten() {
                let Some(amount) = Amount::parse(&q.0) else {
                    continue;
                };
                let per_pod = Amount {
                    nanos: amount.nanos.saturating_mul(i128::from(pods)),
                    ..amount
                };
                let sum = sums.entry(name.clone()).or_insert(Amount::ZERO);
                *sum = sum.plus(per_pod);
            }
        }
    }
    sums.into_iter()
        .map(|(name, sum)| (name, sum.to_quantity()))
        .collect()
}

/// The PodGroup the job should have, or why it cannot have one (field-path style).
pub fn desired(
    job: &TFJob,
    gang: &Gang,
    priorities: &BTreeMap<String, i32>,
) -> Result<Value, String> {
    let min = min_member(job);
    let total = total_replicas(job);
    let field = "spec.runPolicy.schedulingPolicy.minAvailable";
    if min < 1 {
        return Err(format!(
            "{field}: Invalid value: {min}: a PodGroup needs at least 1 member"
        ));
    }
    if min > total {
        return Err(format!(
            "{field}: Invalid value: {min}: more than the job's {total} replicas, so the gang could never be scheduled"
        ));
    }
    let policy = policy(job).cloned().unwrap_or_default();
    let mut spec = Map::new();
    spec.insert("minMember".into(), json!(min));
    let resources = min_resources(job, min, priorities);
    if !resources.is_empty() {
        spec.insert("minResources".into(), json!(resources));
    }
    let set = |spec: &mut Map<String, Value>, key: &str, value: Option<Value>| {
        if let Some(v) = value {
            spec.insert(key.to_string(), v);
        }
    };
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty()).map(Value::String);
    match gang {
        Gang::Volcano => {
            set(&mut spec, "queue", nonempty(policy.queue));
            set(
                &mut spec,
                "priorityClassName",
                nonempty(policy.priority_class),
            );
        }
        Gang::SchedulerPlugins { .. } => {
            let timeout = policy.schedule_timeout_seconds.map(|s| json!(s));
            set(&mut spec, "scheduleTimeoutSeconds", timeout);
        }
    }
    let api = gang.api_resource();
    let name = job_name(job);
    Ok(json!({
        "apiVersion": api.api_version,
        "kind": api.kind,
        "metadata": {
            "name": name,
            "namespace": job_namespace(job),
            "labels": {LABEL_JOB_NAME: name, LABEL_OPERATOR_NAME: OPERATOR_NAME},
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
    }))
}

#[cfg(test)]
mod tests;
