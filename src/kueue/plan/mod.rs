//! The Kueue mode's decisions (docs/kueue.md, "The operator as Kueue's external framework"):
//! the job's half of Kueue's generic job reconciler, for TFJobs, as Kueue v0.19.2 writes it
//! (`pkg/controller/jobframework/reconciler.go`, `pkg/controller/jobs/kubeflow/kubeflowjob`).
//! Pure: a job and its Workloads in, the acts out.
//!
//! `workload` holds Kueue's types and names, `job` what Kueue reads of a TFJob, `matching`
//! whether a Workload still describes its job, `build` the Workload made for a job, `admission` what admission adds to
//! and eviction takes from the templates, `conditions` the Workload conditions written, `decide`
//! the order of it all. `queue_refusal` is what the TFJob controller itself shows.

pub mod admission;
pub mod build;
pub mod conditions;
pub mod decide;
pub mod job;
pub mod matching;
pub mod workload;

use crate::crd::TFJob;
use workload::QUEUE_LABEL;

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

    fn job(labels: serde_json::Value) -> TFJob {
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "a", "labels": labels},
            "spec": {"tfReplicaSpecs": {
                "Worker": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}
            }}
        }))
        .unwrap()
    }

    #[test]
    fn a_new_queue_name_is_refused_with_kubernetes_words() {
        let moved = job(json!({"kueue.x-k8s.io/queue-name": "b"}));
        let (reason, message) = queue_refusal(&moved, "a").unwrap();
        assert_eq!(reason, "QueueNameImmutable");
        assert_eq!(
            message,
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\": field is immutable while the job is not suspended; it stays in LocalQueue \"a\""
        );
        assert_eq!(queue_refusal(&moved, "b"), None);
        assert!(
            queue_refusal(&job(json!({})), "a").is_some(),
            "the label removed"
        );
    }
}
