//! Sorting what was observed for a job: which pods and services it owns, keyed by replica
//! type and index, with each pod's phase, `tensorflow` exit code and restart count; and
//! which objects carry its labels without being its own (never adopted, deleted or
//! counted). Pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::crd::TFJob;
use crate::crd::parse_indexes;
use crate::reconcile::plan::model::{EventNote, Observed};

pub use crate::child::{ChildPod, ChildService, Key, Phase};

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
            .filter(|p| p.owned_by(uid))
            .filter_map(|p| Some((p.name.clone(), p.disruption.clone()?)))
            .collect(),
        ..Replicas::default()
    };
    for pod in &observed.pods {
        if !pod.owned_by(uid) {
            children.foreign_pods.insert(pod.name.clone());
            continue;
        }
        let Some(key) = pod.replica else { continue };
        if attempt.is_some_and(|current| pod.attempt < current) {
            children.earlier_attempts.push(pod.clone());
            continue;
        }
        if pod.phase == Phase::Succeeded {
            children.completed.insert(key);
        }
        keep_first_name(&mut children.pods, key, pod, |p| &p.name);
    }
    for svc in &observed.services {
        if !svc.owned_by(uid) {
            children.foreign_services.insert(svc.name.clone());
            continue;
        }
        if let Some(key) = svc.replica {
            keep_first_name(&mut children.services, key, svc, |s| &s.name);
        }
    }
    children
}

/// Files `child` under `key` unless a child of a smaller name holds it.
fn keep_first_name<C: Clone>(
    map: &mut BTreeMap<Key, C>,
    key: Key,
    child: &C,
    name: impl Fn(&C) -> &str,
) {
    if map.get(&key).is_none_or(|old| name(child) < name(old)) {
        map.insert(key, child.clone());
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::ReplicaType;
    use crate::reconcile::plan::tests::support::{job, pod, service};
    use ReplicaType::*;

    #[test]
    fn pods_are_classified() {
        let j = job("j", &[(Worker, 2, crate::crd::RestartPolicy::Never)]);
        struct Case {
            name: &'static str,
            pod: ChildPod,
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
            let mut p = pod(&j, Worker, 0).build_pod();
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
            ChildPod::from(&p)
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
                s.owner = None;
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
