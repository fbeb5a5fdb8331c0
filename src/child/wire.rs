//! Decoding a child straight from the API server's JSON: serde reads the fields the rules
//! need into short-lived borrowed views and skips every other one unparsed (the pod spec,
//! managed fields, annotations, other labels, images, IPs). Pure.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::de::{self, IgnoredAny, Visitor};
use serde::{Deserialize, Deserializer};

use super::facts::{self, ConditionView, ContainerView, EndView};
use super::identity::{TFJOB_API, TFJOB_KIND};
use super::intern::intern;
use super::{ChildPod, ChildService, Owner};
use crate::crd::ReplicaType;

/// A JSON string, borrowed from the input when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

fn text<'a>(t: &'a Option<Text<'_>>) -> Option<&'a str> {
    t.as_ref().map(|t| &*t.0)
}

fn owned(t: Option<Text<'_>>) -> Option<String> {
    t.map(|t| t.0.into_owned())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaWire<'a> {
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    namespace: Option<Text<'a>>,
    #[serde(borrow)]
    uid: Option<Text<'a>>,
    #[serde(borrow)]
    resource_version: Option<Text<'a>>,
    #[serde(default, borrow)]
    labels: Option<LabelsWire<'a>>,
    #[serde(default, borrow)]
    owner_references: Option<Vec<OwnerWire<'a>>>,
    #[serde(default)]
    creation_timestamp: Option<Time>,
    #[serde(default)]
    deletion_timestamp: Option<IgnoredAny>,
}

/// The labels read; serde skips the others. (The names are `crd::labels`' constants; a test
/// checks the decode against `From<&Pod>`, which reads them through the constants.)
#[derive(Deserialize)]
struct LabelsWire<'a> {
    #[serde(rename = "training.kubeflow.org/job-name", borrow)]
    job: Option<Text<'a>>,
    #[serde(rename = "training.kubeflow.org/replica-type", borrow)]
    replica_type: Option<Text<'a>>,
    #[serde(rename = "training.kubeflow.org/replica-index", borrow)]
    replica_index: Option<Text<'a>>,
    #[serde(rename = "tfjob-operator.dev/restart-attempt", borrow)]
    restart_attempt: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerWire<'a> {
    #[serde(borrow)]
    api_version: Text<'a>,
    #[serde(borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    uid: Text<'a>,
    #[serde(default)]
    controller: Option<bool>,
}

/// What a pod and a service share: their metadata, read.
pub(super) struct Meta {
    pub name: String,
    pub namespace: std::sync::Arc<str>,
    pub job: std::sync::Arc<str>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub replica: Option<super::Key>,
    pub attempt: i32,
    pub owner: Option<Owner>,
    pub terminating: bool,
    pub created: Option<jiff::Timestamp>,
}

/// The replica a child's labels place it at: both labels present and valid.
pub(super) fn replica(replica_type: Option<&str>, index: Option<&str>) -> Option<super::Key> {
    let t = ReplicaType::parse(replica_type?)?;
    let index = index?.parse::<i32>().ok().filter(|i| *i >= 0)?;
    Some((t, index))
}

/// The restart-attempt label's value; 0 without or unreadable.
pub(super) fn attempt(label: Option<&str>) -> i32 {
    label.and_then(|a| a.parse().ok()).unwrap_or(0)
}

pub(super) fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> Owner {
    Owner {
        uid: uid.to_string(),
        name: name.to_string(),
        tfjob: kind == TFJOB_KIND && api_version == TFJOB_API,
    }
}

impl MetaWire<'_> {
    fn read(self) -> Meta {
        let labels = self.labels.as_ref();
        let (job, replica_type, index, restart_attempt) = match labels {
            Some(l) => (
                text(&l.job),
                text(&l.replica_type),
                text(&l.replica_index),
                text(&l.restart_attempt),
            ),
            None => (None, None, None, None),
        };
        let owner = self
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        Meta {
            replica: replica(replica_type, index),
            attempt: attempt(restart_attempt),
            job: intern(job.unwrap_or_default()),
            owner: owner.map(owner_of),
            name: owned(self.name).unwrap_or_default(),
            namespace: intern(text(&self.namespace).unwrap_or_default()),
            uid: owned(self.uid),
            resource_version: owned(self.resource_version),
            terminating: self.deletion_timestamp.is_some(),
            created: self.creation_timestamp.map(|t| t.0),
        }
    }
}

fn owner_of(o: &OwnerWire<'_>) -> Owner {
    owner(&o.api_version.0, &o.kind.0, &o.name.0, &o.uid.0)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusWire<'a> {
    #[serde(borrow)]
    phase: Option<Text<'a>>,
    #[serde(borrow)]
    reason: Option<Text<'a>>,
    #[serde(default, borrow)]
    conditions: Option<Vec<ConditionWire<'a>>>,
    #[serde(default, borrow)]
    container_statuses: Option<Vec<ContainerWire<'a>>>,
}

#[derive(Deserialize)]
struct ConditionWire<'a> {
    #[serde(rename = "type", borrow)]
    type_: Text<'a>,
    #[serde(borrow)]
    status: Text<'a>,
    #[serde(default, borrow)]
    reason: Option<Text<'a>>,
    #[serde(default, borrow)]
    message: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerWire<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(default)]
    restart_count: i32,
    #[serde(default, borrow)]
    state: Option<StateWire<'a>>,
    #[serde(default, borrow)]
    last_state: Option<StateWire<'a>>,
}

#[derive(Deserialize)]
struct StateWire<'a> {
    #[serde(default, borrow)]
    waiting: Option<WaitingWire<'a>>,
    #[serde(default, borrow)]
    terminated: Option<EndWire<'a>>,
}

#[derive(Deserialize)]
struct WaitingWire<'a> {
    #[serde(default, borrow)]
    reason: Option<Text<'a>>,
    #[serde(default, borrow)]
    message: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EndWire<'a> {
    exit_code: i32,
    #[serde(default, borrow)]
    reason: Option<Text<'a>>,
    #[serde(default)]
    finished_at: Option<Time>,
}

fn end<'a>(state: &'a Option<StateWire<'_>>) -> Option<EndView<'a>> {
    let t = state.as_ref()?.terminated.as_ref()?;
    Some(EndView {
        exit_code: t.exit_code,
        reason: text(&t.reason),
        finished: t.finished_at.as_ref().map(|t| t.0),
    })
}

impl StatusWire<'_> {
    fn facts(&self) -> facts::StatusFacts {
        let conditions = self.conditions.iter().flatten().map(|c| ConditionView {
            type_: &c.type_.0,
            status: &c.status.0,
            reason: text(&c.reason),
            message: text(&c.message),
        });
        let containers = self.container_statuses.iter().flatten().map(|c| {
            let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
            ContainerView {
                name: &c.name.0,
                restart_count: c.restart_count,
                waiting: waiting.map(|w| (text(&w.reason), text(&w.message))),
                terminated: end(&c.state),
                last_terminated: end(&c.last_state),
            }
        });
        facts::status_facts(
            text(&self.phase),
            text(&self.reason),
            conditions,
            containers,
        )
    }
}

#[derive(Deserialize)]
struct PodWire<'a> {
    #[serde(borrow)]
    metadata: MetaWire<'a>,
    #[serde(default, borrow)]
    status: Option<StatusWire<'a>>,
}

#[derive(Deserialize)]
struct ServiceWire<'a> {
    #[serde(borrow)]
    metadata: MetaWire<'a>,
}

impl<'de> Deserialize<'de> for ChildPod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = PodWire::deserialize(deserializer)?;
        let facts = wire.status.as_ref().map(StatusWire::facts);
        Ok(ChildPod::of(
            wire.metadata.read(),
            facts.unwrap_or_default(),
        ))
    }
}

impl<'de> Deserialize<'de> for ChildService {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = ServiceWire::deserialize(deserializer)?;
        Ok(ChildService::of(wire.metadata.read()))
    }
}

impl ChildPod {
    pub(super) fn of(m: Meta, f: facts::StatusFacts) -> Self {
        ChildPod {
            name: m.name,
            namespace: m.namespace,
            job: m.job,
            uid: m.uid,
            resource_version: m.resource_version,
            replica: m.replica,
            attempt: m.attempt,
            owner: m.owner,
            terminating: m.terminating,
            created: m.created,
            phase: f.phase,
            exit_code: f.exit_code,
            restart_count: f.restart_count,
            stuck: f.stuck,
            reason: f.reason,
            exit_reason: f.exit_reason,
            disruption: f.disruption,
            finished: f.finished,
        }
    }
}

impl ChildService {
    pub(super) fn of(m: Meta) -> Self {
        ChildService {
            name: m.name,
            namespace: m.namespace,
            job: m.job,
            uid: m.uid,
            resource_version: m.resource_version,
            replica: m.replica,
            owner: m.owner,
            terminating: m.terminating,
        }
    }
}
