//! Validation of `tfReplicaSpecs` (docs/behaviour.md §3): keys, roles, replicas, containers. Pure.

use super::{replica_path, replicas};
use crate::crd::field_error::FieldError;
use crate::crd::{ReplicaSpec, ReplicaType, TFJob};

pub(super) fn validate_keys(job: &TFJob, errors: &mut Vec<FieldError>) {
    let specs = &job.spec.tf_replica_specs;
    if specs.specs.is_empty() && specs.rejected_keys.is_empty() {
        errors.push(FieldError::new("spec.tfReplicaSpecs", "Required value"));
    }
    for key in &specs.rejected_keys {
        let path = format!("spec.tfReplicaSpecs[{key}]");
        let message = match ReplicaType::parse(key) {
            Some(t) => {
                format!("Duplicate value: \"{key}\": names the same replica type as \"{t}\"")
            }
            None => format!(
                "Unsupported value: \"{key}\": supported values: \"Chief\", \"Master\", \"PS\", \
                 \"Worker\", \"Evaluator\" (any case)"
            ),
        };
        errors.push(FieldError::new(path, message));
    }
}

/// One chief at most, and a replica that decides success (docs/behaviour.md §7.3).
pub(super) fn validate_roles(job: &TFJob, errors: &mut Vec<FieldError>) {
    let specs = &job.spec.tf_replica_specs;
    let chiefs: Vec<_> = specs.iter().filter(|(t, _)| t.is_chief()).collect();
    if chiefs.len() > 1 {
        errors.push(FieldError::new(
            "spec.tfReplicaSpecs",
            "Forbidden: Chief and Master are one role; set only one of them",
        ));
    }
    if let Some((t, spec)) = chiefs.first() {
        match replicas(spec) {
            n if n > 1 => errors.push(FieldError::new(
                format!("{}.replicas", replica_path(*t)),
                format!("Invalid value: {n}: must be less than or equal to 1"),
            )),
            0 => errors.push(FieldError::new(
                format!("{}.replicas", replica_path(*t)),
                format!("Invalid value: 0: the {t} decides the job's success and needs 1 replica"),
            )),
            _ => {}
        }
        return;
    }
    match specs.get(ReplicaType::Worker) {
        None => errors.push(FieldError::new(
            "spec.tfReplicaSpecs",
            "Required value: a Chief, Master or Worker replica must decide the job's success",
        )),
        Some(w) if replicas(w) == 0 => errors.push(FieldError::new(
            format!("{}.replicas", replica_path(ReplicaType::Worker)),
            "Invalid value: 0: without a Chief or Master, Worker decides the job's success and \
             needs at least 1 replica",
        )),
        Some(_) => {}
    }
}

pub(super) fn validate_replica(t: ReplicaType, spec: &ReplicaSpec, errors: &mut Vec<FieldError>) {
    let path = replica_path(t);
    if let Some(n) = spec.replicas.filter(|n| *n < 0) {
        errors.push(FieldError::new(
            format!("{path}.replicas"),
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        ));
    }
    // Found once, when the template was read (validation runs on every pass).
    errors.extend(spec.template.problems().iter().map(|e| FieldError {
        path: format!("{path}.template.{}", e.path),
        message: e.message.clone(),
    }));
}
