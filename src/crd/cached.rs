//! A TFJob as the controller watches it: typed when it parses, else what can still be read
//! of it (metadata, status) and the problem, with the field named. Pure.
//!
//! Parsing happens once, when the watch delivers the object, so one object with a value of
//! the wrong type (stored under an older, looser CRD) can neither fail the list and watch of
//! every other TFJob nor be re-parsed on every pass.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::form::older_form_hint;
use super::settings::PREFIX;
use super::validation::parse_tfjob_ref;
use super::{TFJob, TFJobStatus};

/// Prefixes of the annotations a cached job keeps.
const KEPT_ANNOTATIONS: [&str; 3] = [PREFIX, "kueue.x-k8s.io/", "provreq.kueue.x-k8s.io/"];

/// A watched TFJob: `Ok` when it parses.
#[derive(Clone, Debug)]
pub struct CachedJob(pub Result<TFJob, Unreadable>);

/// What is left of a TFJob that does not parse.
#[derive(Clone, Debug, PartialEq)]
pub struct Unreadable {
    pub metadata: ObjectMeta,
    /// The status, when that part still parses (a failed job keeps its conditions).
    pub status: Option<TFJobStatus>,
    /// The first problem, naming the field (`spec.tfReplicaSpecs[Worker].replicas: ...`).
    pub problem: String,
}

impl CachedJob {
    /// Reads a TFJob from JSON; never fails, whatever the object holds.
    pub fn from_value(value: &Value) -> Self {
        match parse_tfjob_ref(value) {
            Ok(mut job) => {
                // Only our own annotations are read (`settings`), and Kueue's (the Kueue mode
                // copies some to the Workload); the others are the bulk of a job applied with
                // kubectl (its last-applied annotation repeats the whole manifest), and managed
                // fields describe every field again.
                if let Some(annotations) = &mut job.metadata.annotations {
                    annotations.retain(|k, _| KEPT_ANNOTATIONS.iter().any(|p| k.starts_with(p)));
                }
                if job
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.is_empty())
                {
                    job.metadata.annotations = None;
                }
                job.metadata.managed_fields = None;
                Self(Ok(job))
            }
            Err(problem) => Self(Err(Unreadable {
                metadata: value
                    .get("metadata")
                    .and_then(|m| ObjectMeta::deserialize(m).ok())
                    .unwrap_or_default(),
                status: value
                    .get("status")
                    .and_then(|s| TFJobStatus::deserialize(s).ok()),
                // Stored under an older, schemaless CRD, an older form reads as v1: say so.
                problem: match older_form_hint(value) {
                    Some(hint) => format!("{problem}; {hint}"),
                    None => problem.to_string(),
                },
            })),
        }
    }
}

impl<'de> Deserialize<'de> for CachedJob {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::from_value(&Value::deserialize(deserializer)?))
    }
}

impl Resource for CachedJob {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        TFJob::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        TFJob::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        TFJob::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        TFJob::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        match &self.0 {
            Ok(job) => &job.metadata,
            Err(bad) => &bad.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match &mut self.0 {
            Ok(job) => &mut job.metadata,
            Err(bad) => &mut bad.metadata,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(spec: Value) -> CachedJob {
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
            "spec": spec,
            "status": {"conditions": [{"type": "Created", "status": "True"}]}
        }))
        .expect("a CachedJob never fails to deserialize")
    }

    #[test]
    fn a_job_that_parses_is_typed() {
        let o = object(json!({"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}}));
        let job = o.0.as_ref().expect("parses");
        assert_eq!(job.metadata.uid.as_deref(), Some("u1"));
        assert_eq!(o.meta().resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn a_job_that_does_not_parse_keeps_its_metadata_status_and_the_field_in_error() {
        let o = object(json!({"tfReplicaSpecs": {"Worker": {"replicas": "two", "template": {}}}}));
        let bad = o.0.as_ref().expect_err("does not parse");
        assert_eq!(bad.metadata.name.as_deref(), Some("j"));
        assert_eq!(o.meta().uid.as_deref(), Some("u1"));
        assert_eq!(bad.status.as_ref().map(|s| s.conditions.len()), Some(1));
        assert!(
            bad.problem
                == "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be of type integer",
            "{}",
            bad.problem
        );
    }

    #[test]
    fn an_older_form_stored_as_v1_points_at_convert() {
        let o = object(json!({"replicaSpecs": [{"tfReplicaType": "MASTER", "template": {}}]}));
        let bad = o.0.as_ref().expect_err("does not parse");
        assert!(
            bad.problem.starts_with(
                "spec.tfReplicaSpecs: Required value; this is a tf-operator v1alpha1 TFJob"
            ),
            "{}",
            bad.problem
        );
        assert!(
            bad.problem.contains("`tfjob-operator convert FILE`"),
            "{}",
            bad.problem
        );
    }

    #[test]
    fn anything_at_all_deserializes() {
        for value in [
            json!(null),
            json!([1, 2]),
            json!({"metadata": 5}),
            json!("x"),
        ] {
            let o: CachedJob = serde_json::from_value(value.clone()).expect("never fails");
            assert!(o.0.is_err(), "{value}");
        }
    }
}
