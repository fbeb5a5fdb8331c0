//! The job one pass works on: its identity read once from the watched object, its spec
//! typed (or the problem that kept it from parsing), and the decision for it. Pure.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;

use super::model::{Observed, Plan, Settings};
use super::{plan, unreadable};
use crate::crd::object::{JobObject, Unreadable};
use crate::crd::{TFJob, TFJobStatus};
use crate::error::Error;

/// A watched TFJob, decoded for one pass.
#[derive(Debug)]
pub struct Job<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    /// The resourceVersion this pass saw; the status write is conditional on it.
    pub resource_version: &'a str,
    /// Being deleted: left to garbage collection.
    pub deleting: bool,
    pub spec: Result<&'a TFJob, &'a Unreadable>,
    object: &'a JobObject,
}

impl<'a> Job<'a> {
    /// Reads what every step needs; an object without name, namespace, uid or
    /// resourceVersion was never stored by an API server and cannot be acted on.
    pub fn decode(object: &'a JobObject) -> Result<Self, Error> {
        let meta = object.meta();
        let field = |v: &'a Option<String>, name| v.as_deref().ok_or(Error::MissingMetadata(name));
        Ok(Self {
            name: field(&meta.name, "metadata.name")?,
            namespace: field(&meta.namespace, "metadata.namespace")?,
            uid: field(&meta.uid, "metadata.uid")?,
            resource_version: field(&meta.resource_version, "metadata.resourceVersion")?,
            deleting: meta.deletion_timestamp.is_some(),
            spec: object.0.as_ref(),
            object,
        })
    }

    /// The status as stored.
    pub fn status(&self) -> Option<&'a TFJobStatus> {
        match self.spec {
            Ok(job) => job.status.as_ref(),
            Err(bad) => bad.status.as_ref(),
        }
    }

    /// The job as the `regarding` object of its events.
    pub fn reference(&self) -> ObjectReference {
        self.object.object_ref(&())
    }

    /// The decision of this pass (pure): the rules for a job that parses, a validation
    /// failure for one that does not.
    pub fn plan(&self, observed: &Observed, now: Timestamp, settings: &Settings) -> Plan {
        match self.spec {
            Ok(job) => plan::plan(job, observed, now, settings),
            Err(bad) => unreadable::plan(bad, self.name, now),
        }
    }
}
