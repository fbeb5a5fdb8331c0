//! The TFJob status types: conditions, per-replica counts, times. Pure data, no I/O.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::replica_type::ReplicaType;

/// `replicaStatuses`, by type. The values are boxed: a B-tree node holds room for 11, and a
/// `ReplicaStatus` is ~140 bytes inline, so every cached job carried a ~1.6 KiB node for 1 to
/// 4 types.
pub type ReplicaStatuses = BTreeMap<ReplicaType, Box<ReplicaStatus>>;

/// What the operator observed and decided about a TFJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TFJobStatus {
    /// Conditions, the most recently changed last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<JobCondition>,

    /// Pod counts and restarts per replica type.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replica_statuses: ReplicaStatuses,

    /// When the job was (last) started or resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the job succeeded or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Kept for compatibility; not written on ordinary reconciles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<Time>,

    /// Whole-job restarts so far (`tfjob-operator.dev/restart-scope: Job`): the attempt the
    /// job's pods belong to (their label `tfjob-operator.dev/restart-attempt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_attempt: Option<i32>,

    /// When the latest whole-job restart was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_time: Option<Time>,
}

/// One observation about the job (Kubeflow's JobCondition).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    #[serde(rename = "type")]
    pub type_: ConditionType,
    pub status: ConditionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition was last set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the status last flipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// Condition types, Kubeflow's spelling.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
pub enum ConditionType {
    Created,
    Running,
    Restarting,
    Succeeded,
    Failed,
    Suspended,
    /// Children cannot be created: the API server refuses them (quota, RBAC, admission,
    /// invalid template). Present only while that lasts (docs/behaviour.md §13).
    ReplicaFailure,
    /// A replica's pod cannot start: its image cannot be pulled, its config is wrong, or no
    /// node fits it. Names the pod, container and reason; present only while that lasts.
    Stuck,
    /// A change the operator refuses to act on (in the Kueue mode, a new queue name on a job
    /// that is not suspended); present only while the change stands.
    ChangeRefused,
}

/// `True`, `False` or `Unknown`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// Counts of one replica type's pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaStatus {
    /// Running pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<i32>,
    /// Pods that succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<i32>,
    /// Pods that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<i32>,
    /// Restarts of this type's replicas counted against the restart budget, kept across pod
    /// deletion and operator restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarts: Option<i32>,
    /// Kubelet restarts already counted in `restarts`, per live pod uid (bookkeeping).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_restarts: BTreeMap<String, i32>,
    /// Restarts not counted against the restart budget: disruptions (eviction, preemption,
    /// node loss) and failures a failure rule restarts uncharged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncharged_restarts: Option<i32>,
    /// Disrupted pods whose restart is counted already, by uid, while they are still seen
    /// going away (bookkeeping).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disrupted_pods: Vec<String>,
    /// Label selector of this type's pods, as a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Indexes whose pod succeeded, as `0,2-4` (batch/v1 Job's `completedIndexes`): never
    /// run again, even if their pod is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_indexes: Option<String>,
}

// Condition reasons, Kubeflow's spelling.
pub const REASON_CREATED: &str = "TFJobCreated";
pub const REASON_RUNNING: &str = "TFJobRunning";
pub const REASON_RESTARTING: &str = "TFJobRestarting";
pub const REASON_SUCCEEDED: &str = "TFJobSucceeded";
pub const REASON_FAILED: &str = "TFJobFailed";
pub const REASON_FAILED_VALIDATION: &str = "TFJobFailedValidation";
pub const REASON_SUSPENDED: &str = "TFJobSuspended";
pub const REASON_RESUMED: &str = "TFJobResumed";

/// `0,2-4` (batch/v1 Job's `completedIndexes` form): the indexes, ascending, runs of
/// consecutive ones as `first-last`.
pub fn format_indexes(indexes: impl IntoIterator<Item = i32>) -> String {
    let mut sorted: Vec<i32> = indexes.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => sorted[i].to_string(),
            _ => format!("{}-{}", sorted[i], sorted[j]),
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The indexes of a `completedIndexes` string; parts that are not `n` or `a-b` with
/// `0 <= a <= b` are skipped (the operator writes the field; a hand-edited one is read as far
/// as it makes sense).
pub fn parse_indexes(text: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<i32>(), b.trim().parse::<i32>())
            && 0 <= a
            && a <= b
            && b - a < 1_000_000
        {
            out.extend(a..=b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_read_and_write_like_batch_jobs() {
        assert_eq!(format_indexes([4, 0, 2, 3, 7]), "0,2-4,7");
        assert_eq!(format_indexes([]), "");
        assert_eq!(parse_indexes("0,2-4,7"), [0, 2, 3, 4, 7]);
        assert_eq!(parse_indexes(" 1 , x, 5-3, 6-6"), [1, 6]);
        assert_eq!(format_indexes(parse_indexes("0,2-4,7")), "0,2-4,7");
    }
}
