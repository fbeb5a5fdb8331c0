//! The TFJob spec types (`kubeflow.org/v1`), JSON names exactly Kubeflow's. Pure data, no I/O.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::replica_type::ReplicaType;
use super::status::TFJobStatus;
use super::template::Template;

/// A TensorFlow training job: a set of replicas (Chief/Master, PS, Worker, Evaluator).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    doc = "TFJob runs a TensorFlow training job (Kubeflow's kubeflow.org/v1 API).",
    group = "kubeflow.org",
    version = "v1",
    kind = "TFJob",
    plural = "tfjobs",
    singular = "tfjob",
    shortname = "tfj",
    category = "kubeflow",
    namespaced,
    status = "TFJobStatus",
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".status.conditions[-1:].type"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","priority":1,"jsonPath":".status.conditions[-1:].reason"}"#,
    printcolumn = r#"{"name":"Started","type":"date","priority":1,"jsonPath":".status.startTime"}"#,
    printcolumn = r#"{"name":"Completed","type":"date","priority":1,"jsonPath":".status.completionTime"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TFJobSpec {
    /// Replica type (Chief, Master, PS, Worker, Evaluator; any case) to its replica spec.
    pub tf_replica_specs: ReplicaSpecs,

    /// Policies of the job as a whole: cleanup, TTL, deadline, backoff, suspend.
    // `{}` by default (the API server fills it in): Kubeflow's Python SDK (get_job, list_jobs)
    // refuses a TFJob without runPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub run_policy: Option<RunPolicy>,

    /// "" (the chief, or worker 0, decides) or "AllWorkers".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_policy: Option<SuccessPolicy>,

    /// Sparse TF_CONFIG; Worker failures do not fail the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dynamic_worker: Option<bool>,

    /// Deprecated (early v1): use runPolicy.cleanPodPolicy; honoured when that is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pod_policy: Option<CleanPodPolicy>,

    /// Deprecated (early v1): use runPolicy.ttlSecondsAfterFinished; honoured when that is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: Option<i32>,

    /// Deprecated (early v1): use runPolicy.activeDeadlineSeconds; honoured when that is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub active_deadline_seconds: Option<i64>,

    /// Deprecated (early v1): use runPolicy.backoffLimit; honoured when that is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub backoff_limit: Option<i32>,
}

/// `tfReplicaSpecs`: keys are canonicalised on read, whatever their case.
///
/// Keys that name no replica type, or that name a type already present under another
/// spelling, are not dropped silently: they are kept in `rejected_keys` for validation
/// to report, so a bad key never makes the whole object unreadable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplicaSpecs {
    /// Boxed: a B-tree node holds room for 11 values; a node of 11 pointers is smaller than
    /// one of 11 `ReplicaSpec`s for the 1 to 4 specs a job has (a spec was ~2 KiB while its
    /// template was kept decoded, a ~20 KiB node per cached job).
    pub specs: BTreeMap<ReplicaType, Box<ReplicaSpec>>,
    /// Keys as written that could not be placed (unknown type or duplicate type).
    pub rejected_keys: Vec<String>,
}

impl ReplicaSpecs {
    pub fn get(&self, t: ReplicaType) -> Option<&ReplicaSpec> {
        self.specs.get(&t).map(|s| &**s)
    }

    pub fn iter(&self) -> impl Iterator<Item = (ReplicaType, &ReplicaSpec)> {
        self.specs.iter().map(|(t, s)| (*t, &**s))
    }
}

impl FromIterator<(ReplicaType, ReplicaSpec)> for ReplicaSpecs {
    fn from_iter<I: IntoIterator<Item = (ReplicaType, ReplicaSpec)>>(iter: I) -> Self {
        Self {
            specs: iter.into_iter().map(|(t, s)| (t, Box::new(s))).collect(),
            rejected_keys: Vec::new(),
        }
    }
}

impl Serialize for ReplicaSpecs {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.specs.iter().map(|(t, s)| (t.as_str(), s)))
    }
}

impl<'de> Deserialize<'de> for ReplicaSpecs {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Keys are visited in sorted order, so which of two spellings of one type wins
        // is deterministic; validation refuses the job either way.
        let raw = BTreeMap::<String, ReplicaSpec>::deserialize(deserializer)?;
        let mut out = ReplicaSpecs::default();
        for (key, spec) in raw {
            match ReplicaType::parse(&key) {
                Some(t) if !out.specs.contains_key(&t) => {
                    out.specs.insert(t, Box::new(spec));
                }
                _ => out.rejected_keys.push(key),
            }
        }
        Ok(out)
    }
}

impl JsonSchema for ReplicaSpecs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ReplicaSpecs".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <BTreeMap<String, ReplicaSpec>>::json_schema(generator)
    }

    fn inline_schema() -> bool {
        true
    }
}

/// One replica type: how many pods, from which template, restarted how.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSpec {
    /// Number of pods of this type (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,

    /// The pod each replica runs; it must have a container named `tensorflow`.
    #[serde(default)]
    pub template: Template,

    /// Always, OnFailure, Never (default) or ExitCode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<RestartPolicy>,
}

/// Replicas of a type whose spec does not say.
pub const DEFAULT_REPLICAS: i32 = 1;

impl ReplicaSpec {
    /// How many pods of this type the job runs: `replicas`, 1 when unset, never negative
    /// (validation refuses a negative value; this keeps every count safe regardless).
    pub fn count(&self) -> i32 {
        self.replicas.unwrap_or(DEFAULT_REPLICAS).max(0)
    }
}

/// When a replica's pod is restarted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum RestartPolicy {
    Always,
    OnFailure,
    #[default]
    Never,
    /// Restart on retryable exit codes of the `tensorflow` container (130, 137, 138, 143...).
    ExitCode,
}

/// Job-level policies.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPolicy {
    /// Pods deleted when the job finishes: All, Running (default) or None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pod_policy: Option<CleanPodPolicy>,

    /// Delete the TFJob this many seconds after it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: Option<i32>,

    /// Fail the job when it runs longer than this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub active_deadline_seconds: Option<i64>,

    /// Restarts allowed before the job fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub backoff_limit: Option<i32>,

    /// Gang-scheduling settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<SchedulingPolicy>,

    /// Suspend the job: delete its pods until resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub suspend: Option<bool>,

    /// The controller of this job: kubeflow.org/training-operator (default) or kueue.x-k8s.io/multikueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

/// Which pods go when the job finishes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CleanPodPolicy {
    All,
    #[default]
    Running,
    None,
}

/// Gang scheduling (PodGroup) settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicy {
    /// Pods that must be schedulable together (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<i32>,
    /// Scheduler queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Resources the whole group needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// PriorityClass of the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<String>,
    /// How long the group may wait to be scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

/// Who decides success when there is no chief.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SuccessPolicy {
    /// Worker 0 decides.
    #[default]
    #[serde(rename = "")]
    Default,
    /// Every worker must succeed.
    AllWorkers,
}

/// `managedBy` value under which this operator acts.
pub const MANAGED_BY_TRAINING_OPERATOR: &str = "kubeflow.org/training-operator";
/// `managedBy` value under which MultiKueue runs the job elsewhere: we leave it alone.
pub const MANAGED_BY_MULTIKUEUE: &str = "kueue.x-k8s.io/multikueue";
