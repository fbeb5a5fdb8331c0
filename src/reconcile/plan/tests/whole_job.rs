//! `tfjob-operator.dev/restart-scope: Job` (docs/behaviour.md §6.7): a fault restarts every
//! pod, as the next attempt, once the old ones are gone and the backoff delay is over.

use super::*;
use crate::crd::settings::{MAX_JOB_RESTARTS, RESTART_ON, RESTART_SCOPE};

scenario_group!(cases);

const WHOLE: (&str, &str) = (RESTART_SCOPE, "Job");
const RESTARTING: (ConditionType, bool, &str) = (Restarting, true, "TFJobRestarting");

fn whole_job(
    specs: &[(ReplicaType, i32, RestartPolicy)],
    extra: &[(&str, &str)],
    pods: impl FnOnce(&TFJob) -> Vec<ChildPod>,
) -> (TFJob, Vec<ChildPod>) {
    let (j, pods) = running_job(specs, |j| pods(&annotated(j.clone(), &[WHOLE])));
    let mut pairs = vec![WHOLE];
    pairs.extend_from_slice(extra);
    (annotated(j, &pairs), pods)
}

/// A job restarted `attempt` times, the last at `at(decided)`, with every service and the
/// given pods.
fn restarted(
    specs: &[(ReplicaType, i32, RestartPolicy)],
    attempt: i32,
    decided: i64,
    pods: impl FnOnce(&TFJob) -> Vec<ChildPod>,
) -> (TFJob, Vec<ChildPod>, Vec<ChildService>) {
    let mut s = status(&[CREATED, RESTARTING], true);
    s.restart_attempt = Some(attempt);
    s.restart_time = Some(Time(at(decided)));
    s.replica_statuses.entry(Worker).or_default().restarts = Some(attempt);
    let j = annotated(with_status(job("j", specs), s), &[WHOLE]);
    let pods = pods(&j);
    let services = JobView::new(&j, at(0), &Settings::default(), Default::default())
        .keys()
        .into_iter()
        .map(|(t, i)| service(&j, t, i))
        .collect();
    (j, pods, services)
}

fn all_services(c: Case, services: Vec<ChildService>) -> Case {
    Case { services, ..c }
}

const PW: [(ReplicaType, i32, RestartPolicy); 2] = [(Ps, 1, ExitCode), (Worker, 2, ExitCode)];

fn cases() -> Vec<Case> {
    let restart_message = |words: &str| {
        format!(
            "job j is restarting because Worker replica(s) failed: every pod restarts as attempt 1; {words}"
        )
    };
    let all = || names("j", &[(Ps, 0), (Worker, 0), (Worker, 1)]);
    let (j, pods) = whole_job(&PW, &[], |j| {
        vec![
            pod(j, Worker, 1)
                .failed(Some(137))
                .exit_reason("OOMKilled")
                .build(),
        ]
    });
    let oom = case(
        "137 under ExitCode: every pod goes, services stay, attempt 1 at once",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            last_message: Some(restart_message(
                "pod j-worker-1 exited with code 137 (OOMKilled)",
            )),
            events: Some(vec!["ExitedWithCode", "TFJobRestarting"]),
            create_pods: Some(vec![]),
            delete_pods: Some(all()),
            delete_services: Some(vec![]),
            restarts: vec![(Worker, Some(1))],
            restart_attempt: Some(Some(1)),
            requeue_at: Some(None),
            counts: vec![(Worker, None, None, None, Some(1))],
            ..Default::default()
        },
    );
    let (j, pods) = whole_job(&PW, &[], |j| {
        vec![pod(j, Worker, 1).failed(Some(1)).build()]
    });
    let permanent = case(
        "exit 1 under ExitCode alone: the job fails",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some("job \"j\" is failing because \"Worker\" replica(s) failed.".into()),
            delete_pods: Some(vec![]),
            cleanup_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
            restart_attempt: Some(None),
            ..Default::default()
        },
    );
    let (j, pods) = whole_job(&PW, &[], |j| {
        vec![
            pod(j, Worker, 0).failed(Some(1)).build(),
            pod(j, Worker, 1).failed(Some(137)).build(),
        ]
    });
    let peer = case(
        "a peer's exit 1 seen with the 137 belongs to the same restart",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            last_message: Some(restart_message("pod j-worker-1 exited with code 137")),
            delete_pods: Some(all()),
            restarts: vec![(Worker, Some(1))],
            restart_attempt: Some(Some(1)),
            ..Default::default()
        },
    );
    let (j, pods) = whole_job(&PW, &[(RESTART_ON, "Any")], |j| {
        vec![pod(j, Worker, 1).failed(Some(1)).build()]
    });
    let any = case(
        "restart-on Any: exit 1 restarts the job too",
        j,
        pods,
        at(9),
        Expect {
            last_message: Some(restart_message("pod j-worker-1 exited with code 1")),
            restart_attempt: Some(Some(1)),
            ..Default::default()
        },
    );
    let never = [(Ps, 1, Never), (Worker, 2, Never)];
    let (j, pods) = whole_job(&never, &[], |j| {
        vec![pod(j, Worker, 1).failed(None).reason("Evicted").build()]
    });
    let evicted = case(
        "an evicted pod restarts the job, even under Never, and is not charged",
        j,
        pods,
        at(9),
        Expect {
            last_message: Some(restart_message(
                "pod j-worker-1 failed (Evicted): a disruption, not charged",
            )),
            restart_attempt: Some(Some(1)),
            restarts: vec![(Worker, None)],
            extra: Some(|p: &Plan| {
                let s = p.status.as_ref().unwrap();
                assert_eq!(s.replica_statuses[&Worker].uncharged_restarts, Some(1));
            }),
            ..Default::default()
        },
    );
    let (j, mut pods) = whole_job(&PW, &[], |_| vec![]);
    pods.retain(|p| p.name != "j-worker-1");
    let services = JobView::new(&j, at(0), &Settings::default(), Default::default())
        .keys()
        .into_iter()
        .map(|(t, i)| service(&j, t, i))
        .collect();
    let deleted = all_services(
        case(
            "a pod deleted from outside restarts the job",
            j,
            pods,
            at(9),
            Expect {
                last_message: Some(restart_message("pod j-worker-1 was deleted")),
                delete_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
                restart_attempt: Some(Some(1)),
                ..Default::default()
            },
        ),
        services,
    );
    let (j, pods, services) = restarted(&PW, 1, 5, |j| {
        vec![
            pod(j, Ps, 0).running().build(),
            pod(j, Worker, 0).failed(Some(1)).build(),
            pod(j, Worker, 1).running().terminating().build(),
        ]
    });
    let old_pods = all_services(
        case(
            "pods of the earlier attempt go first, their exits count for nothing, nothing is created",
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RESTARTING]),
                events: Some(vec![]),
                create_pods: Some(vec![]),
                delete_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
                restart_attempt: Some(Some(1)),
                counts: vec![
                    (Worker, None, None, None, Some(1)),
                    (Ps, None, None, None, None),
                ],
                ..Default::default()
            },
        ),
        services,
    );
    let (j, pods, services) = restarted(&PW, 2, 5, |_| vec![]);
    let backoff = all_services(
        case(
            "the second restart waits 10 s once the old pods are gone",
            j,
            pods,
            at(9),
            Expect {
                create_pods: Some(vec![]),
                requeue_at: Some(Some(at(15))),
                ..Default::default()
            },
        ),
        services,
    );
    let (j, pods, services) = restarted(&PW, 2, 5, |_| vec![]);
    let next = all_services(
        case(
            "then every pod is created as attempt 2, never restarted by the kubelet",
            j,
            pods,
            at(15),
            Expect {
                conditions: Some(vec![CREATED, RESTARTING]),
                create_pods: Some(all()),
                create_services: Some(vec![]),
                extra: Some(|p: &Plan| {
                    for pod in &p.create_pods {
                        let labels = pod.metadata.labels.as_ref().unwrap();
                        assert_eq!(labels["tfjob-operator.dev/restart-attempt"], "2");
                        let spec = pod.spec.as_ref().unwrap();
                        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
                    }
                }),
                ..Default::default()
            },
        ),
        services,
    );
    let (j, pods, services) = restarted(&PW, 1, 0, |j| {
        vec![
            pod(j, Ps, 0).running().attempt(1).build(),
            pod(j, Worker, 0).running().attempt(1).build(),
            pod(j, Worker, 1).failed(Some(137)).attempt(1).build(),
        ]
    });
    let used_up = all_services(
        case(
            "max-job-restarts used up: the job fails, naming the setting and the fault",
            annotated(j, &[(MAX_JOB_RESTARTS, "1")]),
            pods,
            at(9),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Restarting, false, "TFJobFailed"),
                    (Failed, true, "TFJobFailed"),
                ]),
                last_message: Some(
                    "Job j has failed because it has reached the specified backoff limit \
                     (tfjob-operator.dev/max-job-restarts: 1 whole-job restarts); the last \
                     fault: pod j-worker-1 exited with code 137"
                        .into(),
                ),
                delete_pods: Some(vec![]),
                cleanup_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
                restart_attempt: Some(Some(1)),
                ..Default::default()
            },
        ),
        services,
    );
    let (j, pods) = whole_job(&PW, &[], |j| {
        vec![pod(j, Worker, 1).failed(Some(143)).build()]
    });
    let limit_zero = case(
        "backoffLimit 0 without max-job-restarts: the first fault fails the job",
        with_policy(j, |r| r.backoff_limit = Some(0)),
        pods,
        at(9),
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some(
                "Job j has failed because it has reached the specified backoff limit \
                 (spec.runPolicy.backoffLimit: 0 whole-job restarts); the last fault: pod \
                 j-worker-1 exited with code 143"
                    .into(),
            ),
            ..Default::default()
        },
    );
    let cw = [(Chief, 1, ExitCode), (Worker, 2, ExitCode)];
    let (j, pods) = whole_job(&cw, &[], |j| {
        vec![
            pod(j, Worker, 0).succeeded().build(),
            pod(j, Worker, 1).failed(Some(137)).build(),
        ]
    });
    let finished_work = case(
        "a succeeded worker is neither deleted by a restart nor run again",
        j,
        pods,
        at(9),
        Expect {
            delete_pods: Some(names("j", &[(Chief, 0), (Worker, 1)])),
            completed: vec![(Worker, Some("0"))],
            counts: vec![(Worker, None, Some(1), None, Some(1))],
            ..Default::default()
        },
    );
    vec![
        oom,
        permanent,
        peer,
        any,
        evicted,
        deleted,
        old_pods,
        backoff,
        next,
        used_up,
        limit_zero,
        finished_work,
    ]
}
