//! Validation (docs/behaviour.md §3): every problem at once, as Kubernetes-style field errors. Pure.
//!
//! Checks what the types cannot express. The CRD's schema and CEL rules refuse most of this
//! at admission already; the controller checks again because not every API server runs every
//! rule (and `render` has no API server at all).

use super::field_error::FieldError;
use super::labels::child_name;
use super::replica_type::ReplicaType;
use super::settings::JobSettings;
use super::spec::{
    DEFAULT_REPLICAS, MANAGED_BY_MULTIKUEUE, MANAGED_BY_TRAINING_OPERATOR, ReplicaSpec, TFJob,
};

/// Longest name of a pod or service (a DNS-1035 label).
const MAX_NAME_LEN: usize = 63;

/// Check every rule of docs/behaviour.md §3 that the types cannot express; all problems, in a
/// stable order: metadata (our annotations among them), replica-type keys, roles, then each
/// type in canonical order, then run policy. A valid job's settings of ours come back, read.
pub fn validate(job: &TFJob) -> Result<JobSettings, Vec<FieldError>> {
    let mut errors = Vec::new();
    validate_name(job, &mut errors);
    let settings = JobSettings::of(job.metadata.annotations.as_ref())
        .map_err(|bad| errors.extend(bad))
        .ok();
    replicas::validate_keys(job, &mut errors);
    replicas::validate_roles(job, &mut errors);
    for (t, spec) in job.spec.tf_replica_specs.iter() {
        replicas::validate_replica(t, spec, &mut errors);
    }
    validate_run_policy(job, &mut errors);
    match settings {
        Some(settings) if errors.is_empty() => Ok(settings),
        _ => Err(errors),
    }
}

/// Read a TFJob from JSON, naming the offending field when a value has the wrong type.
pub fn parse_tfjob(value: serde_json::Value) -> Result<TFJob, FieldError> {
    parse_tfjob_ref(&value)
}

/// [`parse_tfjob`] without taking the value (the controller keeps it to read what it can of a
/// job that does not parse).
pub fn parse_tfjob_ref(value: &serde_json::Value) -> Result<TFJob, FieldError> {
    check_type_meta(value)?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        // The schema check names the problem in Kubernetes' words when it finds it (it
        // always should); serde's own words are the fallback.
        super::check::check(value)
            .invalid
            .into_iter()
            .next()
            .unwrap_or_else(|| {
                let path = e.path().to_string();
                let path = if path == "." {
                    "<root>".to_string()
                } else {
                    path
                };
                FieldError::new(path, e.inner().to_string())
            })
    })
}

fn check_type_meta(value: &serde_json::Value) -> Result<(), FieldError> {
    for (field, want) in [("apiVersion", "kubeflow.org/v1"), ("kind", "TFJob")] {
        match value.get(field) {
            None => {}
            Some(serde_json::Value::String(s)) if s == want => {}
            Some(other) => {
                return Err(FieldError::new(
                    field,
                    format!("Unsupported value: {other}: supported values: \"{want}\""),
                ));
            }
        }
    }
    Ok(())
}

/// The replicas as written (1 when unset), negative values included: validation reports them.
fn replicas(spec: &ReplicaSpec) -> i32 {
    spec.replicas.unwrap_or(DEFAULT_REPLICAS)
}

fn replica_path(t: ReplicaType) -> String {
    format!("spec.tfReplicaSpecs[{t}]")
}

/// DNS-1035 label, as Kubernetes checks service names: `[a-z]([-a-z0-9]*[a-z0-9])?`.
fn is_dns1035_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let inner_ok = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    !s.is_empty()
        && s.len() <= MAX_NAME_LEN
        && inner_ok
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1] != b'-'
}

fn validate_name(job: &TFJob, errors: &mut Vec<FieldError>) {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    if name.is_empty() {
        errors.push(FieldError::new("metadata.name", "Required value"));
        return;
    }
    if !is_dns1035_label(name) {
        errors.push(FieldError::new(
            "metadata.name",
            format!(
                "Invalid value: \"{name}\": a DNS-1035 label must consist of lower case alphanumeric \
                 characters or '-', start with an alphabetic character, end with an alphanumeric \
                 character, and be at most 63 characters"
            ),
        ));
        return;
    }
    // The longest child name of the job decides; report it once.
    let longest = job
        .spec
        .tf_replica_specs
        .iter()
        .filter(|(_, s)| replicas(s) > 0)
        .map(|(t, s)| child_name(name, t, replicas(s) - 1))
        .max_by_key(|n| n.len());
    if let Some(child) = longest.filter(|c| c.len() > MAX_NAME_LEN) {
        errors.push(FieldError::new(
            "metadata.name",
            format!(
                "Invalid value: \"{name}\": the child name \"{child}\" would be {} characters, \
                 must be no more than 63",
                child.len()
            ),
        ));
    }
}

fn validate_run_policy(job: &TFJob, errors: &mut Vec<FieldError>) {
    let spec = &job.spec;
    // The early-v1 fields directly under `spec` are checked where they are written.
    check_limits(
        "spec",
        spec.backoff_limit,
        spec.ttl_seconds_after_finished,
        spec.active_deadline_seconds,
        errors,
    );
    let Some(rp) = spec.run_policy.as_ref() else {
        return;
    };
    let path = "spec.runPolicy";
    check_limits(
        path,
        rp.backoff_limit,
        rp.ttl_seconds_after_finished,
        rp.active_deadline_seconds,
        errors,
    );
    if let Some(by) = rp.managed_by.as_deref()
        && by != MANAGED_BY_TRAINING_OPERATOR
        && by != MANAGED_BY_MULTIKUEUE
    {
        errors.push(FieldError::new(
            format!("{path}.managedBy"),
            format!(
                "Unsupported value: \"{by}\": supported values: \"{MANAGED_BY_TRAINING_OPERATOR}\", \
                 \"{MANAGED_BY_MULTIKUEUE}\""
            ),
        ));
    }
}

/// `backoffLimit` and `ttlSecondsAfterFinished` ≥ 0, `activeDeadlineSeconds` ≥ 1, under `path`.
fn check_limits(
    path: &str,
    backoff_limit: Option<i32>,
    ttl: Option<i32>,
    deadline: Option<i64>,
    errors: &mut Vec<FieldError>,
) {
    let non_negative = [
        ("backoffLimit", backoff_limit.map(i64::from)),
        ("ttlSecondsAfterFinished", ttl.map(i64::from)),
    ];
    for (field, value) in non_negative {
        if let Some(n) = value.filter(|n| *n < 0) {
            errors.push(FieldError::new(
                format!("{path}.{field}"),
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
    }
    if let Some(n) = deadline.filter(|n| *n < 1) {
        errors.push(FieldError::new(
            format!("{path}.activeDeadlineSeconds"),
            format!("Invalid value: {n}: must be greater than or equal to 1"),
        ));
    }
}

pub mod containers;
mod replicas;
#[cfg(test)]
mod tests;
