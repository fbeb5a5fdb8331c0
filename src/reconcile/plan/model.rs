//! The decision core's vocabulary: what a pass observed (`Observed`), what it decided
//! (`Plan`), and the settings it depends on. The rules and the pass import these; this
//! module imports no rule. Pure data.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::Value;

use crate::child::{ChildPod, ChildService};
use crate::crd::TFJobStatus;
use crate::reconcile::build::gang::Gang;

/// Operator settings the pure core depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Appended to service addresses in TF_CONFIG (`<svc>.<ns>.svc.<domain>`), when set.
    pub cluster_domain: Option<String>,
    /// The gang scheduler PodGroups and pods are made for (`--gang-scheduler-name`), if any.
    pub gang: Option<Gang>,
}

/// What the controller observed for one job: the pods and services in the job's namespace
/// labelled `training.kubeflow.org/job-name=<job>` (owned by this job or not).
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub pods: Vec<ChildPod>,
    pub services: Vec<ChildService>,
    /// Pods the controller tried to create, whose create failed, and that have not existed
    /// since: their absence is not a deletion from outside (no restart is counted).
    pub never_created: std::collections::BTreeSet<String>,
    /// The last state of the job's pods that were deleted while a disruption ended them,
    /// and whose name no pod holds again.
    pub departed: Vec<ChildPod>,
    /// The job's PodGroup, when gang scheduling is on.
    pub group: GroupView,
    /// Why the API server refused the job's last creates, if it did.
    pub refused: Option<Refusal>,
    /// In the Kueue mode, the queue of the job's Workload (while it has one not finished).
    pub workload_queue: Option<String>,
}

/// A create the API server (or the operator, for a PodGroup it cannot make) refused, as the
/// job's `ReplicaFailure` condition tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `FailedCreatePod`, `FailedCreateService` or `FailedCreatePodGroup`.
    pub reason: String,
    /// e.g. `Error creating pod a-worker-1: pods "a-worker-1" is forbidden: exceeded quota: …`.
    pub message: String,
}

/// A child to delete, with delete preconditions: `uid`, so a newer object with the same name
/// is never deleted by mistake, and `resource_version`, so an object that changed since this
/// pass saw it (a pod that finished meanwhile, seen late) is left for the next pass to judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

impl From<&ChildPod> for Deletion {
    fn from(pod: &ChildPod) -> Self {
        Self {
            name: pod.name.clone(),
            uid: pod.uid.clone(),
            resource_version: pod.resource_version.clone(),
        }
    }
}

impl From<&ChildService> for Deletion {
    fn from(service: &ChildService) -> Self {
        Self {
            name: service.name.clone(),
            uid: service.uid.clone(),
            resource_version: service.resource_version.clone(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// An event about the job to record (its `involvedObject` is the TFJob).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventNote {
    pub type_: EventType,
    pub reason: String,
    pub message: String,
}

impl EventNote {
    pub fn normal(reason: &str, message: String) -> Self {
        Self {
            type_: EventType::Normal,
            reason: reason.to_string(),
            message,
        }
    }

    pub fn warning(reason: &str, message: String) -> Self {
        Self {
            type_: EventType::Warning,
            reason: reason.to_string(),
            message,
        }
    }
}

/// Everything one reconcile pass decided. Applying it is the controller's job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub create_pods: Vec<Pod>,
    pub create_services: Vec<Service>,
    pub delete_pods: Vec<Deletion>,
    pub delete_services: Vec<Deletion>,
    /// TTL expired: delete the TFJob itself (children follow by garbage collection).
    pub delete_job: bool,
    /// What to do about the job's PodGroup (gang scheduling).
    pub podgroup: GroupAction,
    /// The status the job should have; `None` means do not touch it (job not ours).
    pub status: Option<TFJobStatus>,
    pub events: Vec<EventNote>,
    /// Reconcile again at this moment at the latest (deadline, TTL).
    pub requeue_at: Option<Timestamp>,
}

/// What the pass does about the job's PodGroup.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum GroupAction {
    /// Nothing: gang scheduling is off, or the PodGroup is as it should be (or absent, as it
    /// should be).
    #[default]
    None,
    /// Create this PodGroup before any pod.
    Create(Value),
    /// Bring the PodGroup's spec in line (a JSON merge patch).
    Patch { name: String, patch: Value },
    /// The job is suspended or finished: its PodGroup goes, like its pods.
    Delete(Deletion),
    /// The PodGroup CRD is not installed: no PodGroup, so no pods either.
    CrdMissing { crd: String },
    /// The job's scheduling policy cannot make a PodGroup: no pods.
    Invalid(String),
    /// The cache cannot tell yet (listing, or the old PodGroup still going): no pods this
    /// pass; the cache's next event wakes the job.
    Wait,
}

impl GroupAction {
    /// Whether this pass may create pods: only once the job's PodGroup exists or is being
    /// created first (a pod of a missing group would be scheduled alone, or never).
    pub fn allows_pods(&self) -> bool {
        !matches!(
            self,
            GroupAction::CrdMissing { .. } | GroupAction::Invalid(_) | GroupAction::Wait
        )
    }
}

/// What the pass knows of the job's PodGroup, from the caches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupView {
    pub cache: CacheState,
    /// The PodGroup of the job's name in its namespace, if the cache has one.
    pub group: Option<ObservedGroup>,
    /// Values of the PriorityClasses the job's templates name (those that exist).
    pub priorities: BTreeMap<String, i32>,
}

/// Whether the PodGroup cache can be believed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheState {
    /// Gang scheduling is off: no cache.
    #[default]
    Off,
    /// Listing (first time, or again after its watch lost its place).
    Syncing,
    Ready,
    /// The API server does not know the PodGroup resource: its CRD is not installed.
    Missing,
}

/// A PodGroup as the cache has it, reduced to what the decision reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObservedGroup {
    pub name: String,
    pub uid: Option<String>,
    /// The uid of its controller, if a TFJob controls it.
    pub controller_uid: Option<String>,
    pub terminating: bool,
    pub spec: serde_json::Value,
    /// `status.phase` (`Pending`, `Scheduling`, `Inqueue`, `Running`, ...).
    pub phase: Option<String>,
    pub created: Option<jiff::Timestamp>,
}
