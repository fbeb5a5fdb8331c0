//! A finished job: cleanup by policy and the TTL.

use super::*;

scenario_group!(cases);

/// A job that succeeded at `at(0)`, with frozen counts and the given run policy.
fn succeeded_job(f: impl FnOnce(&mut RunPolicy)) -> TFJob {
    let j = with_policy(job("j", &[(Ps, 1, Never), (Worker, 2, Never)]), f);
    let mut s = status(
        &[
            CREATED,
            (Running, false, "TFJobSucceeded"),
            (Succeeded, true, "TFJobSucceeded"),
        ],
        true,
    );
    s.completion_time = Some(Time(at(0)));
    s.replica_statuses = IntoIterator::into_iter([
        (
            Ps,
            ReplicaStatus {
                succeeded: Some(1),
                selector: Some(sel("j", Ps)),
                ..Default::default()
            },
        ),
        (
            Worker,
            ReplicaStatus {
                succeeded: Some(2),
                restarts: Some(4),
                selector: Some(sel("j", Worker)),
                ..Default::default()
            },
        ),
    ])
    .map(|(t, status)| (t, Box::new(status)))
    .collect();
    with_status(j, s)
}

fn cases() -> Vec<Case> {
    let mixed = |j: &TFJob| {
        vec![
            pod(j, Ps, 0).running().build(),
            pod(j, Worker, 0).succeeded().build(),
            pod(j, Worker, 1).failed(Some(1)).build(),
        ]
    };
    let policy = |p: CleanPodPolicy, deleted: &[(ReplicaType, i32)]| {
        let j = succeeded_job(|r| r.clean_pod_policy = Some(p));
        let pods = mixed(&j);
        case(
            format!("finished, cleanPodPolicy {p:?}"),
            j.clone(),
            pods,
            at(5),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Running, false, "TFJobSucceeded"),
                    (Succeeded, true, "TFJobSucceeded"),
                ]),
                events: Some(vec![]),
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                delete_pods: Some(names("j", deleted)),
                delete_services: Some(names("j", deleted)),
                // Frozen: not recounted from the pods seen now.
                counts: vec![
                    (Ps, None, Some(1), None, None),
                    (Worker, None, Some(2), None, Some(4)),
                ],
                ..Default::default()
            },
        )
    };
    let ttl = |suspended: bool| {
        succeeded_job(|r| {
            r.ttl_seconds_after_finished = Some(60);
            r.suspend = Some(suspended);
        })
    };
    let mut deadline_failed = with_policy(job("j", &[(Worker, 2, Never)]), |r| {
        r.clean_pod_policy = Some(CleanPodPolicy::None)
    });
    let mut s = status(&[CREATED, (Failed, true, "TFJobFailed")], true);
    s.conditions[1].message =
        Some("Job j has failed because it was active longer than specified deadline".into());
    deadline_failed.status = Some(s);
    let leftover = vec![
        pod(&deadline_failed, Worker, 0).running().build(),
        pod(&deadline_failed, Worker, 1).failed(Some(1)).build(),
    ];
    vec![
        policy(CleanPodPolicy::All, &[(Ps, 0), (Worker, 0), (Worker, 1)]),
        policy(CleanPodPolicy::Running, &[(Ps, 0)]),
        policy(CleanPodPolicy::None, &[]),
        {
            // A pass cut short between deleting the PS pod and its service (operator killed,
            // or the service delete failed): the service still goes.
            let j = succeeded_job(|_| {});
            let pods = vec![
                pod(&j, Worker, 0).succeeded().build(),
                pod(&j, Worker, 1).succeeded().build(),
            ];
            let services = vec![
                service(&j, Ps, 0),
                service(&j, Worker, 0),
                service(&j, Worker, 1),
            ];
            Case {
                services,
                ..case(
                    "finished, policy Running: a service whose pod is gone is deleted",
                    j,
                    pods,
                    at(5),
                    Expect {
                        delete_pods: Some(vec![]),
                        delete_services: Some(names("j", &[(Ps, 0)])),
                        ..Default::default()
                    },
                )
            }
        },
        case(
            "finished: nothing recreated",
            succeeded_job(|_| {}),
            vec![],
            at(5),
            Expect {
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                events: Some(vec![]),
                ..Default::default()
            },
        ),
        case(
            "TTL ahead: requeue at completion + ttl",
            ttl(false),
            vec![],
            at(10),
            Expect {
                requeue_at: Some(Some(at(60))),
                ..Default::default()
            },
        ),
        case(
            "TTL due: delete the job",
            ttl(false),
            vec![],
            at(60),
            Expect {
                delete_job: true,
                events: Some(vec!["SuccessfulDeleteJob"]),
                event_messages: vec![format!(
                    "Deleted TFJob {NS}/j: ttlSecondsAfterFinished expired"
                )],
                ..Default::default()
            },
        ),
        case(
            "TTL never runs while suspended",
            ttl(true),
            vec![],
            at(600),
            Expect {
                requeue_at: Some(None),
                events: Some(vec![]),
                ..Default::default()
            },
        ),
        case(
            "failed on deadline, policy None: every pod and service stays, to be debugged",
            deadline_failed,
            leftover,
            at(5),
            Expect {
                delete_pods: Some(vec![]),
                delete_services: Some(vec![]),
                ..Default::default()
            },
        ),
    ]
}
