//! Validation (contract §3): every problem at once, as Kubernetes-style field errors. Pure.

use std::fmt;

use super::spec::TFJob;

/// One problem, e.g. `spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Field path, e.g. `spec.tfReplicaSpecs[Worker].replicas`.
    pub path: String,
    /// Kubernetes-style detail, e.g. `Required value` or `Invalid value: -1: must be >= 0`.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Check every rule of contract §3 that the types cannot express; all problems, in a
/// stable order.
pub fn validate(job: &TFJob) -> Result<(), Vec<FieldError>> {
    let _ = job;
    todo!()
}

/// Read a TFJob from JSON, naming the offending field when a value has the wrong type.
pub fn parse_tfjob(value: serde_json::Value) -> Result<TFJob, FieldError> {
    let _ = value;
    todo!()
}
