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
use serde_json::value::RawValue;

use super::field_error::FieldError;
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
    /// Reads a TFJob from its JSON text; never fails, whatever the text holds.
    ///
    /// Straight from the text to the typed job when it parses (the watch's common case: one
    /// decode, no intermediate `Value` tree); anything else goes the [`CachedJob::from_value`]
    /// way, which names the field in error, so both ways give the same result.
    pub fn from_json(text: &str) -> Self {
        if let Some(job) = parse_valid_text(text) {
            return Self(Ok(kept(job)));
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value) => Self::from_value(&value),
            Err(e) => Self(Err(Unreadable {
                metadata: ObjectMeta::default(),
                status: None,
                problem: FieldError::new("<root>", e.to_string()).to_string(),
            })),
        }
    }

    /// Reads a TFJob from JSON; never fails, whatever the object holds.
    pub fn from_value(value: &Value) -> Self {
        match parse_tfjob_ref(value) {
            Ok(job) => Self(Ok(kept(job))),
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

/// The job with only what the controller reads of its metadata: our own annotations
/// (`settings`) and Kueue's (the Kueue mode copies some to the Workload). The others are the
/// bulk of a job applied with kubectl (its last-applied annotation repeats the whole
/// manifest), and managed fields describe every field again.
fn kept(mut job: TFJob) -> TFJob {
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
    job
}

/// The job typed straight from `text`, when its `apiVersion` and `kind` are ours (or absent)
/// exactly as written and every field has its type; None sends it the `Value` way, whose
/// checks say what is wrong.
fn parse_valid_text(text: &str) -> Option<TFJob> {
    /// `apiVersion` and `kind` as written (the rest is skipped, not built).
    #[derive(Deserialize)]
    struct TypeMeta<'a> {
        #[serde(rename = "apiVersion", borrow)]
        api_version: Option<&'a RawValue>,
        #[serde(borrow)]
        kind: Option<&'a RawValue>,
    }
    let types: TypeMeta<'_> = serde_json::from_str(text).ok()?;
    let is = |raw: Option<&RawValue>, want: &str| raw.is_none_or(|r| r.get() == want);
    let ours = is(types.api_version, r#""kubeflow.org/v1""#) && is(types.kind, r#""TFJob""#);
    ours.then(|| serde_json::from_str(text).ok()).flatten()
}

impl<'de> Deserialize<'de> for CachedJob {
    /// From the JSON text as the watch delivers it (any deserializer of serde_json's, a
    /// `Value` included, gives it). A watch event must name its `type` before its `object`,
    /// as the API server writes it: an object before its type is buffered by serde, and a
    /// buffered object is no longer text (that event would fail to decode).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::from_json(
            Box::<RawValue>::deserialize(deserializer)?.get(),
        ))
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
mod tests;
