//! A TFJob as Kueue's job reconciler sees it (Kueue v0.19.2, `kubeflowjob_controller.go`): its
//! queue, priority sources, whether it is suspended, active or finished, and its PodSets. Pure.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::workload::{
    MAX_EXEC_TIME_LABEL, PODSET_GROUP_NAME, PREFERRED_TOPOLOGY, PRIORITY_CLASS_LABEL, PodSet,
    QUEUE_LABEL, REQUIRED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE, UNCONSTRAINED_TOPOLOGY,
};
use crate::crd::labels::LABEL_REPLICA_INDEX;
use crate::crd::{ConditionStatus, ConditionType, TFJob};

/// What the Kueue side reads of a job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFacts {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    /// `kueue.x-k8s.io/queue-name`, when set and not empty.
    pub queue: Option<String>,
    /// `kueue.x-k8s.io/priority-class`: a WorkloadPriorityClass.
    pub workload_priority_class: Option<String>,
    /// `runPolicy.schedulingPolicy.priorityClass`, else the first template's
    /// `priorityClassName` in type order; empty when neither is set.
    pub priority_class: String,
    /// `kueue.x-k8s.io/max-exec-time-seconds`, when a positive 32-bit integer.
    pub max_exec_seconds: Option<i32>,
    /// Annotations copied to the Workload (ProvisioningRequest settings, admission gate).
    pub workload_annotations: BTreeMap<String, String>,
    pub suspended: bool,
    pub deleting: bool,
    /// `Succeeded` or `Failed` True: (success, the condition's message).
    pub finished: Option<(bool, String)>,
    /// Some replica type counts an active pod (Kueue releases the quota only when none does).
    pub active: bool,
    /// `Running` True: Kueue's "pods ready".
    pub running: bool,
    /// One PodSet per replica type, in Kueue's order (Chief, Master, PS, Worker, Evaluator).
    pub pod_sets: Vec<PodSet>,
}

impl JobFacts {
    pub fn of(job: &TFJob) -> Self {
        let meta = &job.metadata;
        let label = |key: &str| {
            meta.labels
                .as_ref()
                .and_then(|l| l.get(key))
                .filter(|v| !v.is_empty())
                .cloned()
        };
        let status = job.status.as_ref();
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let is_true = |c: &crate::crd::JobCondition| c.status == ConditionStatus::True;
        let run_policy = job.spec.run_policy.as_ref();
        Self {
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            queue: label(QUEUE_LABEL),
            workload_priority_class: label(PRIORITY_CLASS_LABEL),
            priority_class: priority_class(job),
            max_exec_seconds: label(MAX_EXEC_TIME_LABEL)
                .and_then(|v| v.parse::<i32>().ok())
                .filter(|v| *v > 0),
            workload_annotations: workload_annotations(meta.annotations.as_ref()),
            suspended: run_policy.and_then(|r| r.suspend) == Some(true),
            deleting: meta.deletion_timestamp.is_some(),
            // The first terminal condition that is True decides, as Kueue reads it.
            finished: conditions
                .iter()
                .find(|c| {
                    matches!(c.type_, ConditionType::Succeeded | ConditionType::Failed)
                        && is_true(c)
                })
                .map(|c| {
                    let success = c.type_ != ConditionType::Failed;
                    (success, c.message.clone().unwrap_or_default())
                }),
            active: status.is_some_and(|s| {
                s.replica_statuses
                    .values()
                    .any(|r| r.active.unwrap_or(0) != 0)
            }),
            running: conditions
                .iter()
                .any(|c| c.type_ == ConditionType::Running && is_true(c)),
            pod_sets: pod_sets(job),
        }
    }
}

/// Kubeflow's `PriorityClass()`: the scheduling policy's, else the first template's.
fn priority_class(job: &TFJob) -> String {
    let policy = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.scheduling_policy.as_ref())
        .and_then(|s| s.priority_class.clone())
        .filter(|p| !p.is_empty());
    policy
        .or_else(|| {
            job.spec.tf_replica_specs.iter().find_map(|(_, s)| {
                s.template
                    .priority_class_name()
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
            })
        })
        .unwrap_or_default()
}

/// The job's annotations Kueue copies onto the Workload it makes.
fn workload_annotations(
    annotations: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    annotations
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            k.starts_with(super::workload::PROVREQ_PREFIX)
                || k.as_str() == super::workload::ADMISSION_GATED_BY_ANNOTATION
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// One PodSet per replica type (`KubeflowJob.PodSets`): the lower-case type, `replicas` pods
/// (1 when unset), the template with each container's environment variables made unique by
/// name (the last value wins, at the first one's place: `SanitizePodSet`), and the topology
/// request Kueue builds from the template's annotations. The template is read from its JSON
/// text straight to a value (the form a PodSet keeps), never decoded.
pub fn pod_sets(job: &TFJob) -> Vec<PodSet> {
    job.spec
        .tf_replica_specs
        .iter()
        .map(|(t, spec)| {
            let mut template = spec.template.to_value();
            for list in ["/spec/containers", "/spec/initContainers"] {
                if let Some(Value::Array(containers)) = template.pointer_mut(list) {
                    containers.iter_mut().for_each(sanitize);
                }
            }
            let topology_request = topology_request(&template["metadata"]["annotations"]);
            PodSet {
                name: t.lower().to_string(),
                count: spec.replicas.unwrap_or(1),
                min_count: None,
                template,
                topology_request,
            }
        })
        .collect()
}

/// A container (as JSON) with its environment variables made unique by name.
fn sanitize(container: &mut Value) {
    let Some(Value::Array(env)) = container.get_mut("env") else {
        return;
    };
    let mut order: Vec<String> = Vec::new();
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    for var in env.drain(..) {
        let name = var["name"].as_str().unwrap_or_default().to_string();
        if !last.contains_key(&name) {
            order.push(name.clone());
        }
        last.insert(name, var);
    }
    *env = order.into_iter().filter_map(|n| last.remove(&n)).collect();
}

/// Kueue's topology request of a Kubeflow PodSet (`NewPodSetTopologyRequest(...)
/// .PodIndexLabel(replica-index).Build()`): always the pod index label, plus what the
/// template's annotations (a JSON object, or null) ask for.
fn topology_request(annotations: &Value) -> Option<Value> {
    let get = |key: &str| annotations.get(key).and_then(Value::as_str);
    let mut request = json!({"podIndexLabel": LABEL_REPLICA_INDEX});
    let (required, preferred) = (get(REQUIRED_TOPOLOGY), get(PREFERRED_TOPOLOGY));
    if let Some(required) = required {
        request["required"] = json!(required);
    } else if let Some(preferred) = preferred {
        request["preferred"] = json!(preferred);
    } else if let Some(unconstrained) = get(UNCONSTRAINED_TOPOLOGY) {
        // An unparsable value makes Kueue's PodSets fail; here it counts as not set.
        if let Ok(value) = unconstrained.parse::<bool>() {
            request["unconstrained"] = json!(value);
        }
    } else if let (Some(topology), Some(size)) = (get(SLICE_REQUIRED_TOPOLOGY), get(SLICE_SIZE))
        && let Ok(size) = size.parse::<i32>()
    {
        request["podSetSliceRequiredTopology"] = json!(topology);
        request["podSetSliceSize"] = json!(size);
    }
    if let Some(group) = get(PODSET_GROUP_NAME)
        && (required.is_some() || preferred.is_some())
    {
        request["podSetGroupName"] = json!(group);
    }
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(value: Value) -> TFJob {
        serde_json::from_value(value).unwrap()
    }

    fn template(priority: Option<&str>) -> Value {
        json!({"spec": {"priorityClassName": priority, "containers": [
            {"name": "tensorflow", "image": "i", "env": [
                {"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}
            ]}
        ]}})
    }

    #[test]
    fn podsets_follow_kueues_order_names_and_counts() {
        let j = job(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "a", "namespace": "n", "uid": "u",
                         "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"tfReplicaSpecs": {
                "Worker": {"replicas": 2, "template": template(None)},
                "PS": {"template": template(Some("low"))},
                "Chief": {"replicas": 1, "template": template(Some("high"))}
            }}
        }));
        let facts = JobFacts::of(&j);
        let names: Vec<(&str, i32)> = facts
            .pod_sets
            .iter()
            .map(|p| (p.name.as_str(), p.count))
            .collect();
        assert_eq!(names, [("chief", 1), ("ps", 1), ("worker", 2)]);
        assert_eq!(facts.queue.as_deref(), Some("q"));
        // The first template in type order names the class: the Chief's.
        assert_eq!(facts.priority_class, "high");
        let env = &facts.pod_sets[0].template["spec"]["containers"][0]["env"];
        assert_eq!(
            env,
            &json!([{"name": "A", "value": "3"}, {"name": "B", "value": "2"}])
        );
        assert_eq!(
            facts.pod_sets[0].topology_request,
            Some(json!({"podIndexLabel": "training.kubeflow.org/replica-index"}))
        );
    }

    #[test]
    fn the_scheduling_policy_class_comes_before_the_templates() {
        let j = job(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "a", "labels": {"kueue.x-k8s.io/max-exec-time-seconds": "30"}},
            "spec": {"runPolicy": {"schedulingPolicy": {"priorityClass": "policy"}},
                     "tfReplicaSpecs": {"Worker": {"template": template(Some("tpl"))}}}
        }));
        let facts = JobFacts::of(&j);
        assert_eq!(facts.priority_class, "policy");
        assert_eq!(facts.max_exec_seconds, Some(30));
        assert_eq!(facts.queue, None);
    }

    #[test]
    fn finished_active_and_running_come_from_the_status() {
        let j = job(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "a"},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": template(None)}}},
            "status": {
                "conditions": [
                    {"type": "Running", "status": "False"},
                    {"type": "Failed", "status": "True", "message": "boom"}
                ],
                "replicaStatuses": {"Worker": {"active": 1}}
            }
        }));
        let facts = JobFacts::of(&j);
        assert_eq!(facts.finished, Some((false, "boom".to_string())));
        assert!(facts.active);
        assert!(!facts.running);
    }
}
