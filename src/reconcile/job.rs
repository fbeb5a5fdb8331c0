//! What every step of a pass needs to know of its job, read once from the cached object: its
//! identity, the resourceVersion the pass saw, the stored status, and the job as the
//! `regarding` object of its events.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;

use crate::crd::TFJobStatus;
use crate::crd::cached::CachedJob;
use crate::error::Error;

/// The metadata of the job a pass works on.
#[derive(Debug)]
pub struct JobMeta<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    /// The resourceVersion this pass saw; the status write is conditional on it.
    pub resource_version: &'a str,
    /// Being deleted: left to garbage collection.
    pub deleting: bool,
    /// The status as stored.
    pub status: Option<&'a TFJobStatus>,
    /// `metadata.creationTimestamp` (what the time to `Running` is measured from).
    pub created: Option<jiff::Timestamp>,
    pub reference: ObjectReference,
}

impl<'a> JobMeta<'a> {
    /// Reads what every step needs; an object without name, namespace, uid or
    /// resourceVersion cannot be acted on.
    pub fn of(object: &'a CachedJob) -> Result<Self, Error> {
        let meta = object.meta();
        let field = |v: &'a Option<String>, name| v.as_deref().ok_or(Error::MissingMetadata(name));
        let status = match &object.0 {
            Ok(job) => job.status.as_ref(),
            Err(bad) => bad.status.as_ref(),
        };
        Ok(Self {
            name: field(&meta.name, "metadata.name")?,
            namespace: field(&meta.namespace, "metadata.namespace")?,
            uid: field(&meta.uid, "metadata.uid")?,
            resource_version: field(&meta.resource_version, "metadata.resourceVersion")?,
            deleting: meta.deletion_timestamp.is_some(),
            status,
            created: meta.creation_timestamp.as_ref().map(|t| t.0),
            reference: object.object_ref(&()),
        })
    }
}
