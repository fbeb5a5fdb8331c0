//! Sorting what was observed for a job: which pods and services it owns, keyed by replica
//! type and index, with each pod's phase, `tensorflow` exit code and restart count; and
//! which objects carry its labels without being its own (never adopted, deleted or
//! counted). Pure.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::crd::defaults::TF_CONTAINER;
use crate::crd::labels::{LABEL_RESTART_ATTEMPT, replica_of};
use crate::crd::parse_indexes;
use crate::crd::{ReplicaType, TFJob};
use crate::reconcile::plan::model::{Deletion, EventNote, Observed};

/// A replica: its type and index.
pub type Key = (ReplicaType, i32);

/// A pod's phase as the decision core needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    /// No or an unrecognised phase (e.g. node unreachable).
    Unknown,
}

impl Phase {
    /// Succeeded or Failed: the pod will not run again.
    pub fn is_finished(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }
}

/// One pod owned by the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildPod {
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub phase: Phase,
    /// Has a deletionTimestamp: going away, neither active nor failed, not recreated yet.
    pub terminating: bool,
    /// Exit code of the `tensorflow` container (current state, else last state).
    pub exit_code: Option<i32>,
    /// Sum of the containers' kubelet restarts of this pod incarnation.
    pub restart_count: i32,
    /// Why the pod cannot start, if a person is needed: a container waiting for such a
    /// reason (`ImagePullBackOff`, ...), or no node fits it (`Unschedulable`).
    pub stuck: Option<Stuck>,
    /// The attempt it belongs to (`restart-scope: Job`): its restart-attempt label, 0 without.
    pub attempt: i32,
    pub created: Option<Timestamp>,
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

/// Why a pod cannot start, in Kubernetes' words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// The waiting container; none when the pod is not scheduled.
    pub container: Option<String>,
    /// `ImagePullBackOff`, `CreateContainerConfigError`, `Unschedulable`, ...
    pub reason: String,
    /// The kubelet's or the scheduler's message.
    pub message: Option<String>,
}

impl Stuck {
    /// `container tensorflow is waiting: ImagePullBackOff: Back-off pulling image "x"`, or
    /// `Unschedulable: 0/1 nodes are available: ...`.
    pub fn words(&self) -> String {
        let message = self
            .message
            .as_deref()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        match &self.container {
            Some(c) => format!("container {c} is waiting: {}{message}", self.reason),
            None => format!("{}{message}", self.reason),
        }
    }
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
}

impl ChildPod {
    /// Delete precondition on uid: never deletes a newer pod of the same name.
    pub fn deletion(&self) -> Deletion {
        Deletion {
            name: self.name.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
        }
    }
}

/// The job's own pods and services, plus the names of look-alikes it does not own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replicas {
    pub pods: BTreeMap<Key, ChildPod>,
    /// The job's services by replica.
    pub services: BTreeMap<Key, ChildService>,
    pub foreign_pods: BTreeSet<String>,
    pub foreign_services: BTreeSet<String>,
    /// Pods whose creation failed and that never existed since (see `Observed::never_created`).
    pub never_created: BTreeSet<String>,
    /// Replicas that succeeded: as stored (`completedIndexes`), and those whose pod succeeded
    /// now. Never run again.
    pub completed: BTreeSet<Key>,
    /// Pods of earlier attempts of a `restart-scope: Job` job: never counted, only deleted.
    pub earlier_attempts: Vec<ChildPod>,
    /// Pods deleted while a disruption ended them, by name: the disruption (`Observed::departed`).
    pub departed: BTreeMap<String, String>,
}

/// One service owned by the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildService {
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub terminating: bool,
}

impl ChildService {
    pub fn deletion(&self) -> Deletion {
        Deletion {
            name: self.name.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
        }
    }
}

impl Replicas {
    /// The pod of a replica unless it is going away.
    pub fn live_pod(&self, key: Key) -> Option<&ChildPod> {
        self.pods.get(&key).filter(|p| !p.terminating)
    }

    /// The service of a replica unless it is going away.
    pub fn live_service(&self, key: Key) -> Option<&ChildService> {
        self.services.get(&key).filter(|s| !s.terminating)
    }

    /// One Warning per foreign object, every pass: the controller deduplicates events, and
    /// the conflict lasts until a human resolves it.
    pub fn foreign_events(&self, namespace: &str, job: &str) -> Vec<EventNote> {
        let pods = self.foreign_pods.iter().map(|n| ("Pod", n));
        let services = self.foreign_services.iter().map(|n| ("Service", n));
        pods.chain(services)
            .map(|(kind, name)| {
                EventNote::warning(
                    REASON_NOT_OWNED,
                    format!(
                        "{kind} {namespace}/{name} carries the labels of TFJob {job} but is not \
                         owned by it; it is left alone"
                    ),
                )
            })
            .collect()
    }

    /// A Warning per live pod whose container waits for a reason that needs a person, with
    /// that reason (`ImagePullBackOff`, ...) as the event's reason.
    pub fn stuck_events(&self, namespace: &str) -> Vec<EventNote> {
        self.pods
            .values()
            .filter(|p| !p.terminating)
            .filter_map(|p| {
                let stuck = p.stuck.as_ref()?;
                let container = stuck.container.as_ref()?;
                let message = format!(
                    "Pod: {namespace}.{} container {container} is waiting: {}",
                    p.name, stuck.reason
                );
                Some(EventNote::warning(&stuck.reason, message))
            })
            .collect()
    }
}

/// Event reason for an object with the job's labels that the job does not own.
pub const REASON_NOT_OWNED: &str = "ChildNotOwned";

/// Sorts the observed objects. When two owned objects claim the same replica (only by
/// outside tampering), the one with the smallest name wins so the result is stable. With
/// `attempt` (`restart-scope: Job`), pods of earlier attempts are set apart.
pub fn sort(job: &TFJob, observed: &Observed, attempt: Option<i32>) -> Replicas {
    let uid = job.metadata.uid.as_deref();
    let mut children = Replicas {
        never_created: observed.never_created.clone(),
        completed: stored_completions(job),
        departed: observed
            .departed
            .iter()
            .filter(|p| owned_by(&p.metadata, uid))
            .filter_map(|p| Some((p.metadata.name.clone()?, disruption(p.status.as_ref())?)))
            .collect(),
        ..Replicas::default()
    };
    for pod in &observed.pods {
        let meta = &pod.metadata;
        let name = meta.name.clone().unwrap_or_default();
        if !owned_by(meta, uid) {
            children.foreign_pods.insert(name);
            continue;
        }
        let Some(key) = meta.labels.as_ref().and_then(replica_of) else {
            continue;
        };
        let child = child_pod(pod, name);
        if attempt.is_some_and(|current| child.attempt < current) {
            children.earlier_attempts.push(child);
            continue;
        }
        if child.phase == Phase::Succeeded {
            children.completed.insert(key);
        }
        let keep = children
            .pods
            .get(&key)
            .is_none_or(|old| child.name < old.name);
        if keep {
            children.pods.insert(key, child);
        }
    }
    for svc in &observed.services {
        let meta = &svc.metadata;
        let name = meta.name.clone().unwrap_or_default();
        if !owned_by(meta, uid) {
            children.foreign_services.insert(name);
            continue;
        }
        let Some(key) = meta.labels.as_ref().and_then(replica_of) else {
            continue;
        };
        let child = ChildService {
            name,
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            terminating: meta.deletion_timestamp.is_some(),
        };
        if children
            .services
            .get(&key)
            .is_none_or(|old| child.name < old.name)
        {
            children.services.insert(key, child);
        }
    }
    children
}

/// The replicas the stored status says succeeded.
fn stored_completions(job: &TFJob) -> BTreeSet<Key> {
    let statuses = job.status.iter().flat_map(|s| &s.replica_statuses);
    statuses
        .flat_map(|(t, s)| {
            let text = s.completed_indexes.as_deref().unwrap_or_default();
            parse_indexes(text).into_iter().map(move |i| (*t, i))
        })
        .collect()
}

/// Owned = a controller owner reference carrying the job's uid. A job without uid (never
/// stored by an API server) owns nothing.
fn owned_by(meta: &ObjectMeta, job_uid: Option<&str>) -> bool {
    let Some(job_uid) = job_uid else { return false };
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == job_uid)
}

fn child_pod(pod: &Pod, name: String) -> ChildPod {
    let status = pod.status.as_ref();
    let phase = match status.and_then(|s| s.phase.as_deref()) {
        Some("Pending") => Phase::Pending,
        Some("Running") => Phase::Running,
        Some("Succeeded") => Phase::Succeeded,
        Some("Failed") => Phase::Failed,
        _ => Phase::Unknown,
    };
    let containers: &[ContainerStatus] = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[]);
    let meta = &pod.metadata;
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| {
            c.iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        })
        .filter(|c| c.reason.as_deref() == Some("Unschedulable"))
        .map(|c| Stuck {
            container: None,
            reason: "Unschedulable".into(),
            message: c.message.clone(),
        });
    ChildPod {
        name,
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        phase,
        terminating: meta.deletion_timestamp.is_some(),
        exit_code: tensorflow_exit_code(containers),
        restart_count: containers.iter().map(|c| c.restart_count.max(0)).sum(),
        stuck: stuck_container(containers).or(unscheduled),
        attempt: meta
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_RESTART_ATTEMPT)?.parse().ok())
            .unwrap_or(0),
        created: meta.creation_timestamp.as_ref().map(|t| t.0),
        reason: status
            .and_then(|s| s.reason.clone())
            .or_else(|| tensorflow_terminated(containers).and_then(|t| t.reason.clone())),
        exit_reason: tensorflow_terminated(containers).and_then(|t| t.reason.clone()),
        disruption: disruption(status),
        finished: tensorflow_current_end(containers),
    }
}

/// Pod reasons that name a disruption, from kubelets and node controllers that predate the
/// `DisruptionTarget` condition (or set it beside them).
const DISRUPTION_REASONS: [&str; 3] = ["Evicted", "NodeLost", "Preempting"];

/// The disruption that ends a pod, in Kubernetes' words (see `ChildPod::disruption`).
fn disruption(status: Option<&k8s_openapi::api::core::v1::PodStatus>) -> Option<String> {
    let status = status?;
    let condition = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True");
    match condition {
        Some(c) => Some(
            c.reason
                .clone()
                .unwrap_or_else(|| "DisruptionTarget".into()),
        ),
        None => status
            .reason
            .clone()
            .filter(|r| DISRUPTION_REASONS.contains(&r.as_str())),
    }
}

/// When the `tensorflow` container's current state ended, if it did.
fn tensorflow_current_end(containers: &[ContainerStatus]) -> Option<Timestamp> {
    let tf = containers.iter().find(|c| c.name == TF_CONTAINER)?;
    let terminated = tf.state.as_ref()?.terminated.as_ref()?;
    terminated.finished_at.as_ref().map(|t| t.0)
}

/// Waiting reasons that do not go away by themselves: the image, the config or the program
/// is wrong. (`ContainerCreating` and `PodInitializing` are ordinary waits.)
const STUCK_REASONS: [&str; 6] = [
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
];

fn stuck_container(containers: &[ContainerStatus]) -> Option<Stuck> {
    containers.iter().find_map(|c| {
        let waiting = c.state.as_ref()?.waiting.as_ref()?;
        let reason = waiting.reason.as_deref()?;
        STUCK_REASONS.contains(&reason).then(|| Stuck {
            container: Some(c.name.clone()),
            reason: reason.to_string(),
            message: waiting.message.clone(),
        })
    })
}

/// The `tensorflow` container's exit code: its current terminated state, else the last
/// one. None when it never terminated (evicted, node lost, still running).
fn tensorflow_exit_code(containers: &[ContainerStatus]) -> Option<i32> {
    tensorflow_terminated(containers).map(|t| t.exit_code)
}

fn tensorflow_terminated(containers: &[ContainerStatus]) -> Option<&ContainerStateTerminated> {
    let tf = containers.iter().find(|c| c.name == TF_CONTAINER)?;
    let current = tf.state.as_ref().and_then(|s| s.terminated.as_ref());
    let last = tf.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    current.or(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::plan::tests::support::{job, pod, service};
    use ReplicaType::*;

    #[test]
    fn pods_are_classified() {
        let j = job("j", &[(Worker, 2, crate::crd::RestartPolicy::Never)]);
        struct Case {
            name: &'static str,
            pod: Pod,
            phase: Phase,
            terminating: bool,
            exit: Option<i32>,
            restarts: i32,
        }
        let cases = [
            Case {
                name: "running with kubelet restarts",
                pod: pod(&j, Worker, 0).running().restarts(3).build(),
                phase: Phase::Running,
                terminating: false,
                exit: None,
                restarts: 3,
            },
            Case {
                name: "failed with code",
                pod: pod(&j, Worker, 0).failed(Some(137)).build(),
                phase: Phase::Failed,
                terminating: false,
                exit: Some(137),
                restarts: 0,
            },
            Case {
                name: "failed, code only in lastState",
                pod: pod(&j, Worker, 0).failed(None).last_exit(2).build(),
                phase: Phase::Failed,
                terminating: false,
                exit: Some(2),
                restarts: 0,
            },
            Case {
                name: "evicted: never terminated",
                pod: pod(&j, Worker, 0).failed(None).build(),
                phase: Phase::Failed,
                terminating: false,
                exit: None,
                restarts: 0,
            },
            Case {
                name: "terminating",
                pod: pod(&j, Worker, 0).running().terminating().build(),
                phase: Phase::Running,
                terminating: true,
                exit: None,
                restarts: 0,
            },
            Case {
                name: "no phase",
                pod: pod(&j, Worker, 0).build(),
                phase: Phase::Unknown,
                terminating: false,
                exit: None,
                restarts: 0,
            },
        ];
        for case in cases {
            let children = sort(
                &j,
                &Observed {
                    pods: vec![case.pod],
                    services: vec![],
                    ..Observed::default()
                },
                None,
            );
            let got = children.pods.get(&(Worker, 0)).expect(case.name);
            assert_eq!(got.phase, case.phase, "{}", case.name);
            assert_eq!(got.terminating, case.terminating, "{}", case.name);
            assert_eq!(got.exit_code, case.exit, "{}", case.name);
            assert_eq!(got.restart_count, case.restarts, "{}", case.name);
        }
    }

    #[test]
    fn pods_stuck_waiting_are_reported_with_their_reason() {
        use k8s_openapi::api::core::v1::{ContainerState, ContainerStateWaiting, ContainerStatus};
        let j = job("j", &[(Worker, 2, crate::crd::RestartPolicy::Never)]);
        let waiting = |reason: &str| {
            let mut p = pod(&j, Worker, 0).build();
            let status = p.status.get_or_insert_with(Default::default);
            status.phase = Some("Pending".into());
            status.container_statuses = Some(vec![ContainerStatus {
                name: "tensorflow".into(),
                state: Some(ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some(reason.into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]);
            p
        };
        let cases = [
            ("ImagePullBackOff", 1),
            ("CrashLoopBackOff", 1),
            ("ContainerCreating", 0),
        ];
        for (reason, want) in cases {
            let observed = Observed {
                pods: vec![waiting(reason)],
                ..Observed::default()
            };
            let events = sort(&j, &observed, None).stuck_events("ns");
            assert_eq!(events.len(), want, "{reason}");
            if let Some(e) = events.first() {
                assert_eq!(e.reason, reason);
                assert_eq!(
                    e.message,
                    format!("Pod: ns.j-worker-0 container tensorflow is waiting: {reason}")
                );
            }
        }
    }

    #[test]
    fn foreign_objects_are_set_aside_and_reported() {
        let j = job("j", &[(Worker, 2, crate::crd::RestartPolicy::Never)]);
        let observed = Observed {
            pods: vec![
                pod(&j, Worker, 0).running().build(),
                pod(&j, Worker, 1)
                    .running()
                    .owner_uid(Some("other"))
                    .build(),
            ],
            services: vec![service(&j, Worker, 0), {
                let mut s = service(&j, Worker, 1);
                s.metadata.owner_references = None;
                s
            }],
            ..Observed::default()
        };
        let children = sort(&j, &observed, None);
        assert_eq!(children.pods.keys().collect::<Vec<_>>(), vec![&(Worker, 0)]);
        assert_eq!(
            children.services.keys().collect::<Vec<_>>(),
            vec![&(Worker, 0)]
        );
        let events = children.foreign_events("ns", "j");
        let messages: Vec<_> = events.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "Pod ns/j-worker-1 carries the labels of TFJob j but is not owned by it; it is \
                 left alone",
                "Service ns/j-worker-1 carries the labels of TFJob j but is not owned by it; it \
                 is left alone",
            ]
        );
    }
}
