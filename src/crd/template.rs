//! A replica's pod template as the job carries it: compact JSON, decoded only where pods are
//! built, beside the few facts every pass reads, taken once when the template is read. Pure.
//!
//! Every cached TFJob holds its templates for as long as it exists, and most passes create
//! nothing: decoded, a small template is ~4.6 KB of `PodTemplateSpec` (a wide `PodSpec` and
//! its allocations); as text it is a few hundred bytes (issue 30). The text is what
//! serialising the decoded template gives, so nothing a user wrote is lost or reordered, and
//! it is shared (`Arc`) by every clone of the job (the watch cache's, a pass's view).

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::field_error::FieldError;
use super::tensorflow::tf_port;
use super::validation::containers::container_problems;

/// A pod template kept as its compact JSON. Equal templates have equal text.
#[derive(Clone)]
pub struct Template(Arc<Inner>);

struct Inner {
    json: Box<str>,
    facts: Facts,
}

/// What passes read of a template without decoding it.
struct Facts {
    /// The `tfjob-port` of the `tensorflow` container, else 2222 (TF_CONFIG addresses).
    tf_port: i32,
    /// `spec.priorityClassName` (gang scheduling, Kueue).
    priority_class_name: Option<Box<str>>,
    /// `spec.schedulerName` (gang scheduling).
    scheduler_name: Option<Box<str>>,
    /// `spec.restartPolicy` is set (and overridden by the replica's).
    sets_restart_policy: bool,
    /// Validation's findings on the containers, paths from the template (`spec.containers`).
    problems: Box<[FieldError]>,
}

impl Template {
    /// The template as compact JSON, as written back.
    pub fn json(&self) -> &str {
        &self.0.json
    }

    /// The template, decoded: for the passes that build pods.
    pub fn decode(&self) -> PodTemplateSpec {
        // The text is what serialising a `PodTemplateSpec` gave, so it reads back; were it
        // ever not to, the empty template is refused by validation, not run.
        serde_json::from_str(&self.0.json).unwrap_or_default()
    }

    /// The template as a JSON value, without going through `PodTemplateSpec`.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0.json).unwrap_or_default()
    }

    /// The port TF_CONFIG gives this replica type: its `tensorflow` container's `tfjob-port`,
    /// else 2222.
    pub fn tf_port(&self) -> i32 {
        self.0.facts.tf_port
    }

    /// `spec.priorityClassName`, when set.
    pub fn priority_class_name(&self) -> Option<&str> {
        self.0.facts.priority_class_name.as_deref()
    }

    /// `spec.schedulerName`, when set.
    pub fn scheduler_name(&self) -> Option<&str> {
        self.0.facts.scheduler_name.as_deref()
    }

    /// Whether the template sets its own pod `restartPolicy`.
    pub fn sets_restart_policy(&self) -> bool {
        self.0.facts.sets_restart_policy
    }

    /// Problems validation finds in the template's containers, paths from the template.
    pub fn problems(&self) -> &[FieldError] {
        &self.0.facts.problems
    }

    fn encode(template: &PodTemplateSpec) -> serde_json::Result<Self> {
        let spec = template.spec.as_ref();
        let facts = Facts {
            tf_port: tf_port(spec),
            priority_class_name: spec
                .and_then(|s| s.priority_class_name.as_deref().map(Into::into)),
            scheduler_name: spec.and_then(|s| s.scheduler_name.as_deref().map(Into::into)),
            sets_restart_policy: spec.is_some_and(|s| s.restart_policy.is_some()),
            problems: container_problems(spec).into(),
        };
        Ok(Self(Arc::new(Inner {
            json: serde_json::to_string(template)?.into(),
            facts,
        })))
    }
}

impl From<&PodTemplateSpec> for Template {
    fn from(template: &PodTemplateSpec) -> Self {
        // Serialising a `PodTemplateSpec` to JSON cannot fail (its maps have string keys).
        Self::encode(template).unwrap_or_else(|_| Self::from(&PodTemplateSpec::default()))
    }
}

impl From<PodTemplateSpec> for Template {
    fn from(template: PodTemplateSpec) -> Self {
        Self::from(&template)
    }
}

impl Default for Template {
    /// `{}`, as an absent template reads.
    fn default() -> Self {
        Self::from(&PodTemplateSpec::default())
    }
}

impl PartialEq for Template {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.json == other.0.json
    }
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Template").field(&self.json()).finish()
    }
}

impl<'de> Deserialize<'de> for Template {
    /// Through `PodTemplateSpec`, so a value of the wrong type fails exactly as it did when the
    /// template was kept decoded (same field path, same message).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let template = PodTemplateSpec::deserialize(deserializer)?;
        Self::encode(&template).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Template {
    /// As the decoded template serialises: the same fields in the same order for every
    /// serialiser (JSON to the API server, YAML). Nothing serialises a job on a pass.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let template: PodTemplateSpec =
            serde_json::from_str(&self.0.json).map_err(serde::ser::Error::custom)?;
        template.serialize(serializer)
    }
}

impl schemars::JsonSchema for Template {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        PodTemplateSpec::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        PodTemplateSpec::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        PodTemplateSpec::json_schema(generator)
    }

    fn inline_schema() -> bool {
        PodTemplateSpec::inline_schema()
    }
}

#[cfg(test)]
mod tests;
