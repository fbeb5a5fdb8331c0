//! Kueue's Workload (`kueue.x-k8s.io/v1beta2`) as the Kueue mode reads and writes it: the
//! fields Kueue's job reconciler uses, the names Kueue gives, and its labels, annotations,
//! finalizer and condition vocabulary (Kueue v0.19.2: `apis/kueue/v1beta2`,
//! `pkg/controller/constants`, `pkg/constants`). Pure data.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::Resource;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const GROUP: &str = "kueue.x-k8s.io";
pub const VERSION: &str = "v1beta2";
pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// On the job: the LocalQueue it is queued in; without it Kueue leaves the job alone.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// On the job: the WorkloadPriorityClass that gives the Workload its priority.
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// On the job: the Workload's `maximumExecutionTimeSeconds`.
pub const MAX_EXEC_TIME_LABEL: &str = "kueue.x-k8s.io/max-exec-time-seconds";
/// On the Workload: the uid of the job it was made for.
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// On admitted pod templates: the PodSet (lower-case replica type).
pub const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";
pub const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
pub const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
/// On admitted pod templates: the Workload's name (read by Kueue's topology ungater).
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";
/// Job annotations with this prefix are copied to the Workload (ProvisioningRequest settings).
pub const PROVREQ_PREFIX: &str = "provreq.kueue.x-k8s.io/";
/// Job annotation copied to the Workload: admission waits for the named controllers.
pub const ADMISSION_GATED_BY_ANNOTATION: &str = "kueue.x-k8s.io/admission-gated-by";
/// Held by every Workload while its job may still use the quota.
pub const FINALIZER: &str = "kueue.x-k8s.io/resource-in-use";
/// The scheduling gate of pods placed by topology-aware scheduling.
pub const TOPOLOGY_GATE: &str = "kueue.x-k8s.io/topology";
pub const REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-required-topology";
pub const PREFERRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-preferred-topology";
pub const UNCONSTRAINED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-unconstrained-topology";
pub const SLICE_REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-slice-required-topology";
pub const SLICE_SIZE: &str = "kueue.x-k8s.io/podset-slice-size";
pub const PODSET_GROUP_NAME: &str = "kueue.x-k8s.io/podset-group-name";

// Workload condition types and the reasons the job's side writes.
pub const QUOTA_RESERVED: &str = "QuotaReserved";
pub const ADMITTED: &str = "Admitted";
pub const EVICTED: &str = "Evicted";
pub const REQUEUED: &str = "Requeued";
pub const FINISHED: &str = "Finished";
pub const PODS_READY: &str = "PodsReady";
pub const EVICTED_BY_PREEMPTION: &str = "Preempted";
pub const EVICTED_DUE_TO_NODE_FAILURES: &str = "NodeFailures";
pub const FINISHED_SUCCEEDED: &str = "Succeeded";
pub const FINISHED_FAILED: &str = "Failed";
pub const FINISHED_FAILED_TO_START: &str = "FailedToStart";
pub const FINISHED_OWNER_NOT_FOUND: &str = "OwnerNotFound";
/// `QuotaReserved` False once the job's side released the quota (Kueue's fallback reason
/// while its gate UnadmittedWorkloadsObservability is off, as by default).
pub const PENDING: &str = "Pending";
pub const NO_RESERVATION: &str = "NoReservation";
pub const WAIT_FOR_START: &str = "WaitForStart";
pub const WAIT_FOR_RECOVERY: &str = "WaitForRecovery";
pub const STARTED: &str = "Started";
pub const RECOVERED: &str = "Recovered";

/// A Workload, with the parts the job's side reads.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Workload {
    #[serde(
        default,
        rename = "apiVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WorkloadSpec,
    #[serde(default)]
    pub status: WorkloadStatus,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    #[serde(default)]
    pub pod_sets: Vec<PodSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_ref: Option<PriorityClassRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_execution_time_seconds: Option<i32>,
}

/// One replica type of the job: `count` pods of `template`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSet {
    pub name: String,
    pub count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
    /// The pod template, as JSON (compared and restored field by field).
    #[serde(default)]
    pub template: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_request: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct PriorityClassRef {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

impl PriorityClassRef {
    /// A Kueue WorkloadPriorityClass.
    pub fn workload(name: &str) -> Self {
        Self {
            group: GROUP.into(),
            kind: "WorkloadPriorityClass".into(),
            name: name.into(),
        }
    }

    /// A Kubernetes (pod) PriorityClass.
    pub fn pod(name: &str) -> Self {
        Self {
            group: "scheduling.k8s.io".into(),
            kind: "PriorityClass".into(),
            name: name.into(),
        }
    }

    pub fn is_workload_class(&self) -> bool {
        self.group == GROUP && self.kind == "WorkloadPriorityClass"
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    #[serde(default)]
    pub admission_checks: Vec<AdmissionCheckState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulated_past_execution_time_seconds: Option<i32>,
}

/// Where the Workload was admitted: its ClusterQueue and a flavor per resource per PodSet.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    #[serde(default)]
    pub cluster_queue: String,
    #[serde(default)]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAssignment {
    pub name: String,
    /// ResourceFlavor per resource name.
    #[serde(default)]
    pub flavors: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_assignment: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// What an admission check asks to add to a PodSet's pods.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdate {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
}

/// A ResourceFlavor's part that reaches the pods.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlavorSpec {
    #[serde(default)]
    pub node_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
}

impl Workload {
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }

    pub fn is_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(|c| c.status == "True")
    }

    pub fn admitted(&self) -> bool {
        self.is_true(ADMITTED)
    }

    pub fn quota_reserved(&self) -> bool {
        self.is_true(QUOTA_RESERVED)
    }

    pub fn finished(&self) -> bool {
        self.is_true(FINISHED)
    }

    pub fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    pub fn has_finalizer(&self) -> bool {
        self.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER)
    }

    /// The uid and name of its controlling TFJob, if a TFJob controls it.
    pub fn controller(&self) -> Option<(&str, &str)> {
        let owner = self.metadata.owner_references.iter().flatten().find(|o| {
            o.controller == Some(true) && o.kind == "TFJob" && o.api_version == "kubeflow.org/v1"
        })?;
        Some((owner.uid.as_str(), owner.name.as_str()))
    }
}

impl Resource for Workload {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Workload".into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        GROUP.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        VERSION.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        "workloads".into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The longest Workload name (Kueue's gate ShortWorkloadNames, which would make it 63, is off
/// by default).
const MAX_NAME: usize = 253;
const HASH_LENGTH: usize = 5;

/// The name Kueue gives the Workload of TFJob `job` with `uid` (`GetWorkloadNameForOwnerWithGVK`):
/// the same name, so a Workload made by Kueue's built-in integration is found and adopted.
pub fn workload_name(job: &str, uid: &str) -> String {
    owner_workload_name("TFJob", "kubeflow.org", job, uid)
}

/// `<kind in lower case>-<name>` cut to fit, a dash, and 5 hex digits of the SHA-1 of kind,
/// group, name and uid, one per line.
fn owner_workload_name(kind: &str, group: &str, name: &str, uid: &str) -> String {
    let prefix = format!("{}-{name}", kind.to_lowercase());
    let prefix = cut(&prefix, MAX_NAME - 1 - HASH_LENGTH);
    let input = format!("{kind}\n{group}\n{name}\n{uid}");
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, input.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{}", &hex[..HASH_LENGTH])
}

/// The first `n` bytes of `s` (names are ASCII; a cut inside a character backs off).
fn cut(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kueue v0.19.2's own expectations (`workload_names_test.go`, a batch/v1 Job, gate
    /// ShortWorkloadNames off).
    #[test]
    fn the_workload_name_is_kueues() {
        assert_eq!(
            owner_workload_name("Job", "batch", "name", "uid"),
            "job-name-ef3a1"
        );
        let long = "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-dept";
        let name = owner_workload_name("Job", "batch", long, "uid");
        assert_eq!(
            name,
            "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-architect-validation-checked-approved-by-l-218b8"
        );
        assert_eq!(name.len(), MAX_NAME);
        assert!(workload_name("adm", "u").starts_with("tfjob-adm-"));
    }
}
