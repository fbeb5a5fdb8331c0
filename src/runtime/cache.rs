//! What the controller keeps of each pod and service it watches (held by `store`'s caches,
//! indexed by job). Pure: decoding only.
//!
//! A cached child is read straight from the watch's JSON into a small struct: its identity,
//! the three labels that place it (job, replica type, index), its controller reference, its
//! deletion mark and, for pods, the phase and the container states the planner reads. The
//! rest of the object (the pod spec, managed fields, images, timestamps) is skipped while
//! parsing and never held: a cached pod is a few hundred bytes, not the 2–5 KiB of a decoded
//! `Pod`. A pass asks the cache for its own job's children only, as full `Pod`/`Service`
//! values built from what was kept (docs/behaviour.md §14).

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, Pod,
    PodCondition, PodStatus, Service,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::Resource;
use serde::{Deserialize, Deserializer};

use crate::crd::labels::{
    LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, LABEL_RESTART_ATTEMPT,
};

/// The labels a cached child keeps: the ones that say whose it is, which replica, and (under
/// `restart-scope: Job`) which attempt.
const KEPT_LABELS: [&str; 4] = [
    LABEL_JOB_NAME,
    LABEL_REPLICA_TYPE,
    LABEL_REPLICA_INDEX,
    LABEL_RESTART_ATTEMPT,
];

/// A cached pod.
#[derive(Clone, Debug, Deserialize)]
pub struct CachedPod {
    #[serde(deserialize_with = "lean_meta")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub status: Option<PodState>,
}

/// A cached service: only its identity matters.
#[derive(Clone, Debug, Deserialize)]
pub struct CachedService {
    #[serde(deserialize_with = "lean_meta")]
    pub metadata: ObjectMeta,
}

/// What is kept of a pod's status.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    #[serde(default)]
    pub phase: Option<String>,
    /// Why the pod failed as a whole (`Evicted`, `NodeLost`, ...).
    #[serde(default)]
    pub reason: Option<String>,
    /// The scheduler's word when it cannot place the pod (`PodScheduled` False), and the
    /// disruption that ends it (`DisruptionTarget` True).
    #[serde(default, deserialize_with = "kept_conditions")]
    pub conditions: KeptConditions,
    #[serde(default)]
    pub container_statuses: Vec<ContainerBrief>,
}

/// What is kept of a container's status: restarts, why it waits, how it ended.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerBrief {
    pub name: String,
    #[serde(default)]
    pub restart_count: i32,
    #[serde(default)]
    pub state: StateBrief,
    #[serde(default)]
    pub last_state: StateBrief,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct StateBrief {
    #[serde(default)]
    pub waiting: Option<Reason>,
    #[serde(default)]
    pub terminated: Option<Exit>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Reason {
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Exit {
    pub exit_code: i32,
    /// `Error`, `OOMKilled`, `Completed`, ...
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub finished_at: Option<Time>,
}

/// The pod conditions kept: `PodScheduled` False, and `DisruptionTarget` True.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptConditions {
    pub unscheduled: Option<Reason>,
    pub disruption: Option<Reason>,
}

const KEPT_CONDITIONS: [(&str, &str); 2] =
    [("PodScheduled", "False"), ("DisruptionTarget", "True")];

impl KeptConditions {
    fn of<'a>(conditions: impl Iterator<Item = (&'a str, &'a str, Reason)>) -> Self {
        let mut kept = Self::default();
        for (type_, status, reason) in conditions {
            match (type_, status) {
                ("PodScheduled", "False") => kept.unscheduled = Some(reason),
                ("DisruptionTarget", "True") => kept.disruption = Some(reason),
                _ => {}
            }
        }
        kept
    }

    fn to_conditions(&self) -> Option<Vec<PodCondition>> {
        let kept = [&self.unscheduled, &self.disruption];
        let list: Vec<PodCondition> = KEPT_CONDITIONS
            .iter()
            .zip(kept)
            .filter_map(|((type_, status), reason)| {
                let reason = reason.as_ref()?;
                Some(PodCondition {
                    type_: type_.to_string(),
                    status: status.to_string(),
                    reason: reason.reason.clone(),
                    message: reason.message.clone(),
                    ..PodCondition::default()
                })
            })
            .collect();
        (!list.is_empty()).then_some(list)
    }
}

/// Of a pod's conditions, only `PodScheduled` False (the scheduler's reason and message when
/// the pod cannot be placed) and `DisruptionTarget` True (what ends it) are kept.
fn kept_conditions<'de, D: Deserializer<'de>>(deserializer: D) -> Result<KeptConditions, D::Error> {
    #[derive(Deserialize)]
    struct Wire {
        #[serde(rename = "type")]
        type_: String,
        status: String,
        #[serde(default)]
        reason: Option<String>,
        #[serde(default)]
        message: Option<String>,
    }
    let conditions = Option::<Vec<Wire>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(KeptConditions::of(conditions.iter().map(|c| {
        let reason = Reason {
            reason: c.reason.clone(),
            message: c.message.clone(),
        };
        (c.type_.as_str(), c.status.as_str(), reason)
    })))
}

/// The metadata fields a cached child keeps; serde skips every other one unparsed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    owner_references: Vec<OwnerReference>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
}

fn lean_meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let wire = WireMeta::deserialize(deserializer)?;
    Ok(ObjectMeta {
        name: wire.name,
        namespace: wire.namespace,
        uid: wire.uid,
        resource_version: wire.resource_version,
        labels: Some(kept_labels(wire.labels)),
        owner_references: Some(controller_only(wire.owner_references)),
        creation_timestamp: wire.creation_timestamp,
        deletion_timestamp: wire.deletion_timestamp,
        ..ObjectMeta::default()
    })
}

fn kept_labels(mut labels: BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels.retain(|k, _| KEPT_LABELS.contains(&k.as_str()));
    labels
}

fn controller_only(mut owners: Vec<OwnerReference>) -> Vec<OwnerReference> {
    owners.retain(|o| o.controller == Some(true));
    owners.shrink_to_fit();
    owners
}

impl CachedPod {
    /// What the cache keeps of `pod` (used for the pods this controller just created).
    pub fn of(pod: &Pod) -> Self {
        let meta = &pod.metadata;
        let status = pod.status.as_ref().map(|s| PodState {
            phase: s.phase.clone(),
            reason: s.reason.clone(),
            conditions: KeptConditions::of(s.conditions.iter().flatten().map(|c| {
                let reason = Reason {
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                };
                (c.type_.as_str(), c.status.as_str(), reason)
            })),
            container_statuses: s
                .container_statuses
                .iter()
                .flatten()
                .map(ContainerBrief::of)
                .collect(),
        });
        Self {
            metadata: kept_meta(meta),
            status,
        }
    }

    /// The pod as the decision core reads it.
    pub fn to_pod(&self) -> Pod {
        Pod {
            metadata: self.metadata.clone(),
            spec: None,
            status: self.status.as_ref().map(|s| PodStatus {
                phase: s.phase.clone(),
                reason: s.reason.clone(),
                conditions: s.conditions.to_conditions(),
                container_statuses: Some(
                    s.container_statuses
                        .iter()
                        .map(ContainerBrief::to_status)
                        .collect(),
                ),
                ..PodStatus::default()
            }),
        }
    }
}

impl CachedService {
    /// What the cache keeps of `service` (used for the services this controller just created).
    pub fn of(service: &Service) -> Self {
        Self {
            metadata: kept_meta(&service.metadata),
        }
    }

    pub fn to_service(&self) -> Service {
        Service {
            metadata: self.metadata.clone(),
            ..Service::default()
        }
    }
}

fn kept_meta(meta: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        labels: Some(kept_labels(meta.labels.clone().unwrap_or_default())),
        owner_references: Some(controller_only(
            meta.owner_references.clone().unwrap_or_default(),
        )),
        creation_timestamp: meta.creation_timestamp.clone(),
        deletion_timestamp: meta.deletion_timestamp.clone(),
        ..ObjectMeta::default()
    }
}

impl ContainerBrief {
    fn of(c: &ContainerStatus) -> Self {
        let brief = |s: Option<&ContainerState>| StateBrief {
            waiting: s.and_then(|s| s.waiting.as_ref()).map(|w| Reason {
                reason: w.reason.clone(),
                message: w.message.clone(),
            }),
            terminated: s.and_then(|s| s.terminated.as_ref()).map(|t| Exit {
                exit_code: t.exit_code,
                reason: t.reason.clone(),
                finished_at: t.finished_at.clone(),
            }),
        };
        Self {
            name: c.name.clone(),
            restart_count: c.restart_count,
            state: brief(c.state.as_ref()),
            last_state: brief(c.last_state.as_ref()),
        }
    }

    fn to_status(&self) -> ContainerStatus {
        let state = |s: &StateBrief| ContainerState {
            waiting: s.waiting.as_ref().map(|w| ContainerStateWaiting {
                reason: w.reason.clone(),
                message: w.message.clone(),
            }),
            terminated: s.terminated.as_ref().map(|t| ContainerStateTerminated {
                exit_code: t.exit_code,
                reason: t.reason.clone(),
                finished_at: t.finished_at.clone(),
                ..Default::default()
            }),
            running: None,
        };
        ContainerStatus {
            name: self.name.clone(),
            restart_count: self.restart_count,
            state: Some(state(&self.state)),
            last_state: Some(state(&self.last_state)),
            ..Default::default()
        }
    }
}

/// The kind a cached type stands for, for the `Resource` impls kube's watcher needs.
pub trait ChildKind {
    const KIND: &'static str;
    const PLURAL: &'static str;
}

impl ChildKind for CachedPod {
    const KIND: &'static str = "Pod";
    const PLURAL: &'static str = "pods";
}

impl ChildKind for CachedService {
    const KIND: &'static str = "Service";
    const PLURAL: &'static str = "services";
}

macro_rules! core_v1_resource {
    ($t:ty) => {
        impl Resource for $t {
            type DynamicType = ();
            type Scope = kube::core::NamespaceResourceScope;

            fn kind(_: &()) -> Cow<'_, str> {
                <$t as ChildKind>::KIND.into()
            }
            fn group(_: &()) -> Cow<'_, str> {
                "".into()
            }
            fn version(_: &()) -> Cow<'_, str> {
                "v1".into()
            }
            fn plural(_: &()) -> Cow<'_, str> {
                <$t as ChildKind>::PLURAL.into()
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

core_v1_resource!(CachedPod);
core_v1_resource!(CachedService);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_json(name: &str, job: &str) -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "resourceVersion": "7", "creationTimestamp": "2026-11-25T10:00:00Z",
                "labels": {
                    "training.kubeflow.org/job-name": job,
                    "training.kubeflow.org/replica-type": "worker",
                    "training.kubeflow.org/replica-index": "0",
                    "training.kubeflow.org/operator-name": "tfjob-controller",
                    "tfjob-operator.dev/restart-attempt": "2",
                    "team": "a"
                },
                "annotations": {"big": "x".repeat(1000)},
                "ownerReferences": [
                    {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": job,
                     "uid": "job-uid", "controller": true},
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "cm"}
                ],
                "managedFields": [{"manager": "kubectl", "operation": "Update"}]
            },
            "spec": {"containers": [{"name": "tensorflow", "image": "tf",
                                     "env": [{"name": "TF_CONFIG", "value": "{}"}]}]},
            "status": {
                "phase": "Failed", "podIP": "10.0.0.1", "message": "m", "reason": "Evicted",
                "conditions": [
                    {"type": "Ready", "status": "False", "reason": "PodFailed"},
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/1 nodes are available"},
                    {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                     "message": "Eviction API: evicting"}
                ],
                "containerStatuses": [{
                    "name": "tensorflow", "image": "tf", "imageID": "sha", "ready": false,
                    "restartCount": 2,
                    "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                              "finishedAt": "2026-01-01T00:00:09Z"}},
                    "lastState": {"waiting": {"reason": "CrashLoopBackOff"}}
                }]
            }
        })
    }

    #[test]
    fn a_cached_pod_keeps_what_the_planner_reads_and_nothing_else() {
        let cached: CachedPod = serde_json::from_value(pod_json("j-worker-0", "j")).unwrap();
        let pod = cached.to_pod();
        let meta = &pod.metadata;
        assert_eq!(meta.name.as_deref(), Some("j-worker-0"));
        assert_eq!(meta.uid.as_deref(), Some("uid-j-worker-0"));
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        let labels: Vec<&str> = meta
            .labels
            .iter()
            .flatten()
            .map(|(k, _)| k.as_str())
            .collect();
        let mut kept = KEPT_LABELS.to_vec();
        kept.sort();
        assert_eq!(labels, kept, "user and operator-name labels are dropped");
        let owners = meta.owner_references.as_deref().unwrap();
        assert_eq!(owners.len(), 1, "only the controller reference");
        assert_eq!(owners[0].uid, "job-uid");
        assert!(meta.annotations.is_none() && meta.managed_fields.is_none());
        assert!(pod.spec.is_none());
        let status = pod.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        assert!(status.message.is_none() && status.pod_ip.is_none());
        let c = &status.container_statuses.unwrap()[0];
        assert_eq!((c.name.as_str(), c.restart_count), ("tensorflow", 2));
        let exit = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code);
        assert_eq!(exit, Some(137));
        let reason = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref()?.reason.as_deref());
        assert_eq!(reason, Some("OOMKilled"));
        let finished = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref()?.finished_at.clone());
        assert_eq!(
            finished.map(|t| t.0.to_string()).as_deref(),
            Some("2026-01-01T00:00:09Z")
        );
        assert_eq!(status.reason.as_deref(), Some("Evicted"));
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let kept: Vec<_> = conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.reason.as_deref(), c.message.as_deref()))
            .collect();
        assert_eq!(
            kept,
            [
                (
                    "PodScheduled",
                    Some("Unschedulable"),
                    Some("0/1 nodes are available")
                ),
                (
                    "DisruptionTarget",
                    Some("EvictionByEvictionAPI"),
                    Some("Eviction API: evicting")
                ),
            ],
            "only PodScheduled=False and DisruptionTarget=True are kept"
        );
        assert!(meta.creation_timestamp.is_some());
        let waiting = c.last_state.as_ref().and_then(|s| s.waiting.as_ref());
        assert_eq!(
            waiting.and_then(|w| w.reason.as_deref()),
            Some("CrashLoopBackOff")
        );
    }

    #[test]
    fn a_pod_we_created_is_kept_as_the_watch_would_keep_it() {
        let full: Pod = serde_json::from_value(pod_json("j-worker-0", "j")).unwrap();
        let from_watch: CachedPod = serde_json::from_value(pod_json("j-worker-0", "j")).unwrap();
        assert_eq!(CachedPod::of(&full).to_pod(), from_watch.to_pod());
    }
}
