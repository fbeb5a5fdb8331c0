//! Child names, labels and selectors (contract §4). Pure.

use crate::crd::ReplicaType;

pub const LABEL_OPERATOR_NAME: &str = "training.kubeflow.org/operator-name";
pub const LABEL_JOB_NAME: &str = "training.kubeflow.org/job-name";
pub const LABEL_REPLICA_TYPE: &str = "training.kubeflow.org/replica-type";
pub const LABEL_REPLICA_INDEX: &str = "training.kubeflow.org/replica-index";
pub const LABEL_JOB_ROLE: &str = "training.kubeflow.org/job-role";
pub const OPERATOR_NAME: &str = "tfjob-controller";

/// `<job>-<t>-<i>`, the name of both the pod and the service of a replica.
pub fn child_name(job: &str, t: ReplicaType, index: i32) -> String {
    format!("{job}-{}-{index}", t.lower())
}
