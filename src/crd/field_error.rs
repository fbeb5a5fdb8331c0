//! One problem with a TFJob, named by its field path in Kubernetes' words
//! (`spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1: must be >= 0`). Pure.

use std::fmt;

/// One problem, e.g. `spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Field path, e.g. `spec.tfReplicaSpecs[Worker].replicas`.
    pub path: String,
    /// Kubernetes-style detail, e.g. `Required value` or `Invalid value: -1: must be >= 0`.
    pub message: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
