//! The decision core's vocabulary: what a pass observed, what it decided (`Plan`), and the
//! settings it depends on. Rules and the controller import these; this module imports no rule.
//! Pure data.

use k8s_openapi::api::core::v1::{Pod, Service};

use crate::crd::TFJobStatus;
use jiff::Timestamp;

/// Operator settings the pure core depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Appended to service addresses in TF_CONFIG (`<svc>.<ns>.svc.<domain>`), when set.
    pub cluster_domain: Option<String>,
    /// The gang scheduler PodGroups and pods are made for (`--gang-scheduler-name`), if any.
    pub gang: Option<super::gang::Gang>,
}

/// What the controller observed for one job: the pods and services in the job's namespace
/// labelled `training.kubeflow.org/job-name=<job>` (owned by this job or not).
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub pods: Vec<Pod>,
    pub services: Vec<Service>,
    /// Pods the controller tried to create, whose create failed, and that have not existed
    /// since: their absence is not a deletion from outside (no restart is counted).
    pub never_created: std::collections::BTreeSet<String>,
    /// The job's PodGroup, when gang scheduling is on.
    pub group: super::gang::GroupView,
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
    pub podgroup: super::gang::podgroup::GroupAction,
    /// The status the job should have; `None` means do not touch it (job not ours).
    pub status: Option<TFJobStatus>,
    pub events: Vec<EventNote>,
    /// Reconcile again at this moment at the latest (deadline, TTL).
    pub requeue_at: Option<Timestamp>,
}
