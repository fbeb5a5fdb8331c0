//! The Workload of a job (Kueue v0.19.2: `ConstructWorkload`, `NewWorkload`,
//! `PrepareWorkloadPriority`): Kueue's name, a controlling owner reference to the TFJob,
//! Kueue's finalizer, the job-uid label, the queue, the PodSets, the priority and the
//! execution limit. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use super::job::JobFacts;
use super::workload::{
    API_VERSION, FINALIZER, JOB_UID_LABEL, PriorityClassRef, Workload, WorkloadSpec, workload_name,
};

/// Where the Workload's priority comes from, as resolved against the cluster: the
/// `kueue.x-k8s.io/priority-class` WorkloadPriorityClass, else the job's PriorityClass,
/// else the cluster's default PriorityClass, else none (0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Priority {
    pub class: Option<PriorityClassRef>,
    pub value: i32,
}

/// What to look up to know the job's priority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrioritySource {
    WorkloadClass(String),
    PodClass(String),
    /// The cluster's default PriorityClass (`globalDefault`), if any.
    Default,
}

/// Kueue's order of the three sources (`ExtractPriority` with Kubeflow's `PriorityClass`).
pub fn priority_source(job: &JobFacts) -> PrioritySource {
    match (&job.workload_priority_class, job.priority_class.as_str()) {
        (Some(class), _) => PrioritySource::WorkloadClass(class.clone()),
        (None, "") => PrioritySource::Default,
        (None, class) => PrioritySource::PodClass(class.to_string()),
    }
}

/// The spec Kueue gives the job's Workload; `active` is kept from an existing Workload.
pub fn spec(job: &JobFacts, priority: &Priority, active: Option<bool>) -> WorkloadSpec {
    WorkloadSpec {
        pod_sets: job.pod_sets.clone(),
        queue_name: job.queue.clone(),
        priority_class_ref: priority.class.clone(),
        priority: Some(priority.value),
        active,
        maximum_execution_time_seconds: job.max_exec_seconds,
    }
}

/// The job's new Workload.
pub fn workload(job: &JobFacts, priority: &Priority) -> Workload {
    let labels =
        is_label_value(&job.uid).then(|| [(JOB_UID_LABEL.to_string(), job.uid.clone())].into());
    let annotations =
        (!job.workload_annotations.is_empty()).then(|| job.workload_annotations.clone());
    Workload {
        api_version: Some(API_VERSION.into()),
        kind: Some("Workload".into()),
        metadata: ObjectMeta {
            name: Some(workload_name(&job.name, &job.uid)),
            namespace: Some(job.namespace.clone()),
            labels,
            annotations,
            finalizers: Some(vec![FINALIZER.into()]),
            owner_references: Some(vec![OwnerReference {
                api_version: "kubeflow.org/v1".into(),
                kind: "TFJob".into(),
                name: job.name.clone(),
                uid: job.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: spec(job, priority, None),
        status: Default::default(),
    }
}

/// The patch that brings a Workload's priority in line (`UpdateWorkloadPriority`).
pub fn priority_patch(priority: &Priority) -> Value {
    json!({"spec": {"priorityClassRef": priority.class, "priority": priority.value}})
}

fn is_label_value(s: &str) -> bool {
    s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && s.chars().next().is_none_or(|c| c.is_ascii_alphanumeric())
        && s.chars().last().is_none_or(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::TFJob;

    fn facts(labels: Value, policy: Value) -> JobFacts {
        let job: TFJob = serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "a", "namespace": "ns", "uid": "2f1c-uid", "labels": labels,
                         "annotations": {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "60", "other": "x"}},
            "spec": {"runPolicy": policy, "tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {
                "spec": {"priorityClassName": "tpl", "containers": [{"name": "tensorflow", "image": "i"}]}}}}}
        }))
        .unwrap();
        JobFacts::of(&job)
    }

    #[test]
    fn the_workload_is_kueues() {
        let f = facts(
            json!({"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/max-exec-time-seconds": "600"}),
            json!({}),
        );
        let priority = Priority {
            class: Some(PriorityClassRef::pod("tpl")),
            value: 7,
        };
        let w = workload(&f, &priority);
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["metadata"]["name"], json!(workload_name("a", "2f1c-uid")));
        assert_eq!(
            v["metadata"]["finalizers"],
            json!(["kueue.x-k8s.io/resource-in-use"])
        );
        assert_eq!(
            v["metadata"]["labels"],
            json!({"kueue.x-k8s.io/job-uid": "2f1c-uid"})
        );
        assert_eq!(
            v["metadata"]["annotations"],
            json!({"provreq.kueue.x-k8s.io/ValidUntilSeconds": "60"})
        );
        assert_eq!(
            v["metadata"]["ownerReferences"][0]["controller"],
            json!(true)
        );
        assert_eq!(v["spec"]["queueName"], json!("q"));
        assert_eq!(v["spec"]["maximumExecutionTimeSeconds"], json!(600));
        assert_eq!(v["spec"]["priority"], json!(7));
        assert_eq!(
            v["spec"]["priorityClassRef"],
            json!({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "tpl"})
        );
        assert_eq!(v["spec"]["podSets"][0]["name"], json!("worker"));
        assert_eq!(v["spec"]["podSets"][0]["count"], json!(2));
    }

    /// The three sources, in Kueue's order.
    #[test]
    fn the_priority_label_then_the_scheduling_policy_then_the_templates() {
        let all = facts(
            json!({"kueue.x-k8s.io/priority-class": "wpc"}),
            json!({"schedulingPolicy": {"priorityClass": "policy"}}),
        );
        assert_eq!(
            priority_source(&all),
            PrioritySource::WorkloadClass("wpc".into())
        );
        let policy = facts(
            json!({}),
            json!({"schedulingPolicy": {"priorityClass": "policy"}}),
        );
        assert_eq!(
            priority_source(&policy),
            PrioritySource::PodClass("policy".into())
        );
        let template = facts(json!({}), json!({}));
        assert_eq!(
            priority_source(&template),
            PrioritySource::PodClass("tpl".into())
        );
        let none = JobFacts {
            priority_class: String::new(),
            ..template
        };
        assert_eq!(priority_source(&none), PrioritySource::Default);
    }
}
