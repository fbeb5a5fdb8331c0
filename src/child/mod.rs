//! A child pod or service as the controller keeps and plans on it: one flat struct per kind,
//! decoded straight from the watch's JSON (`wire`) or made from a k8s object the controller
//! just created (`from_object`), holding only what the rules read. No `ObjectMeta`, no label
//! map, no container list: the facts are drawn once, when the object arrives (`facts`).
//! Pure.

pub mod facts;
pub mod from_object;
pub mod identity;
pub mod intern;
pub mod wire;

use std::sync::Arc;

use jiff::Timestamp;

use crate::crd::ReplicaType;

pub use facts::{Phase, Stuck};
pub use identity::Identity;

/// A replica: its type and index.
pub type Key = (ReplicaType, i32);

/// The controller reference of a child: the object that owns it, if it is a controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: String,
    pub name: String,
    /// Whether the controller is a TFJob (`kubeflow.org/v1`): only those wake a job.
    pub tfjob: bool,
}

/// One pod carrying a job's labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildPod {
    pub name: String,
    /// Interned (`intern`): every child of a namespace shares one.
    pub namespace: Arc<str>,
    /// Its job-name label, empty without; interned.
    pub job: Arc<str>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    /// Its replica-type and replica-index labels, when both are there and valid.
    pub replica: Option<Key>,
    /// The attempt it belongs to (`restart-scope: Job`): its restart-attempt label, 0 without.
    pub attempt: i32,
    pub owner: Option<Owner>,
    /// Has a deletionTimestamp: going away, neither active nor failed, not recreated yet.
    pub terminating: bool,
    pub created: Option<Timestamp>,
    pub phase: Phase,
    /// Exit code of the `tensorflow` container (current state, else last state).
    pub exit_code: Option<i32>,
    /// Sum of the containers' kubelet restarts of this pod incarnation.
    pub restart_count: i32,
    /// Why the pod cannot start, if a person is needed: a container waiting for such a
    /// reason (`ImagePullBackOff`, ...), or no node fits it (`Unschedulable`).
    pub stuck: Option<Stuck>,
    /// Why it failed, in Kubernetes' words: the pod's reason (`Evicted`, ...), else the
    /// `tensorflow` container's (`OOMKilled`, `Error`).
    pub reason: Option<String>,
    /// The `tensorflow` container's own terminated reason (`OOMKilled`, `Error`).
    pub exit_reason: Option<String>,
    /// Why a disruption ends it, if one does: the reason of its `DisruptionTarget` condition
    /// (`EvictionByEvictionAPI`, `PreemptionByScheduler`, `DeletionByTaintManager`,
    /// `DeletionByPodGC`, `TerminationByKubelet`), else the pod's reason when it tells one
    /// (`Evicted`, `NodeLost`, `Preempting`).
    pub disruption: Option<String>,
    /// When the `tensorflow` container's current run ended.
    pub finished: Option<Timestamp>,
}

/// One service carrying a job's labels: only its identity matters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildService {
    pub name: String,
    pub namespace: Arc<str>,
    pub job: Arc<str>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub replica: Option<Key>,
    pub owner: Option<Owner>,
    pub terminating: bool,
}

impl ChildPod {
    /// What failed it, for conditions and events: `exited with code 137 (OOMKilled)`,
    /// `failed (Evicted)`.
    pub fn failure_words(&self) -> String {
        let reason = self
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        match self.exit_code {
            Some(code) => format!("exited with code {code}{reason}"),
            None => format!("failed{reason}"),
        }
    }

    /// Whether the controller reference carries `job_uid`.
    pub fn owned_by(&self, job_uid: Option<&str>) -> bool {
        owned_by(self.owner.as_ref(), job_uid)
    }
}

impl ChildService {
    /// Whether the controller reference carries `job_uid`.
    pub fn owned_by(&self, job_uid: Option<&str>) -> bool {
        owned_by(self.owner.as_ref(), job_uid)
    }
}

/// Owned = a controller reference carrying the job's uid. A job without uid (never stored by
/// an API server) owns nothing.
fn owned_by(owner: Option<&Owner>, job_uid: Option<&str>) -> bool {
    matches!((owner, job_uid), (Some(o), Some(uid)) if o.uid == uid)
}

#[cfg(test)]
mod tests;
