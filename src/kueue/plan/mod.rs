//! The Kueue mode's decisions (docs/kueue.md, "The operator as Kueue's external framework"):
//! the job's half of Kueue's generic job reconciler, for TFJobs, as Kueue v0.19.2 writes it
//! (`pkg/controller/jobframework/reconciler.go`, `pkg/controller/jobs/kubeflow/kubeflowjob`).
//! Pure: a job and its Workloads in, the acts out.
//!
//! `workload` holds Kueue's types and names, `job` what Kueue reads of a TFJob, `matching`
//! whether a Workload still describes its job, `build` the Workload made for a job, `admission` what admission adds to
//! and eviction takes from the templates, `conditions` the Workload conditions written, `decide`
//! the order of it all. `held` is the one rule the TFJob controller itself applies.

pub mod admission;
pub mod build;
pub mod conditions;
pub mod decide;
pub mod job;
pub mod matching;
pub mod workload;

use crate::crd::TFJob;
use workload::{PODSET_LABEL, QUEUE_LABEL};

/// Whether the TFJob controller must hold a job as if suspended: in the Kueue mode, a job with
/// the queue label runs only once admitted, which every one of its templates then shows
/// (admission adds `kueue.x-k8s.io/podset` to each, eviction takes it away). No webhook
/// suspends a job for an external framework, and the Kueue side's `suspend: true` comes a
/// moment after the job is created: until admission not a single pod is made.
pub fn held(job: &TFJob) -> bool {
    let queued = job
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(QUEUE_LABEL))
        .is_some_and(|q| !q.is_empty());
    queued
        && job.spec.tf_replica_specs.iter().any(|(_, spec)| {
            let labels = spec.template.metadata.as_ref().and_then(|m| m.labels.as_ref());
            !labels.is_some_and(|l| l.contains_key(PODSET_LABEL))
        })
}

/// The refusal of a new queue name on a job that is not suspended (Kueue's webhook:
/// `validateUpdateForQueueName`), given the queue of its Workload: (reason, message).
pub fn queue_refusal(job: &TFJob, workload_queue: &str) -> Option<(&'static str, String)> {
    let labels = job.metadata.labels.as_ref();
    let queue = labels.and_then(|l| l.get(QUEUE_LABEL)).map(String::as_str);
    let queue = queue.unwrap_or_default();
    (queue != workload_queue).then(|| {
        let message = format!(
            "metadata.labels[{QUEUE_LABEL}]: Invalid value: {queue:?}: field is immutable while the job is not suspended; it stays in LocalQueue {workload_queue:?}"
        );
        ("QueueNameImmutable", message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(labels: serde_json::Value, template_labels: serde_json::Value) -> TFJob {
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "a", "labels": labels},
            "spec": {"tfReplicaSpecs": {
                "Worker": {"template": {"metadata": {"labels": template_labels},
                                        "spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}
            }}
        }))
        .unwrap()
    }

    #[test]
    fn a_queued_job_is_held_until_its_templates_show_the_admission() {
        let queued = json!({"kueue.x-k8s.io/queue-name": "q"});
        assert!(held(&job(queued.clone(), json!({}))));
        assert!(!held(&job(queued, json!({"kueue.x-k8s.io/podset": "worker"}))));
        assert!(!held(&job(json!({}), json!({}))));
        assert!(!held(&job(json!({"kueue.x-k8s.io/queue-name": ""}), json!({}))));
    }
}
