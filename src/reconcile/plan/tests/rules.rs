//! Failure rules (`tfjob-operator.dev/failure-rules`, docs/behaviour.md §6.8): the first rule
//! that matches a failure decides what it does; no match is the restart policy's way.

use super::*;
use crate::crd::settings::FAILURE_RULES;

scenario_group!(cases);

const RESTARTING: (ConditionType, bool, &str) = (Restarting, true, "TFJobRestarting");

/// The PS fails the job; a worker's 137 restarts it; `RestartUncharged` for 138.
const RULES: &str = "\
  - {replicaTypes: [PS], action: FailJob}
  - {replicaTypes: [Worker], exitCodes: [137], action: RestartReplica}
  # a user-requested retry costs nothing
  - {exitCodes: [138], action: RestartUncharged}
  - {containerReasons: [OOMKilled], action: RestartJob}
";

/// PS + two workers under `policy`, with the rules, the given pods replacing running ones.
fn ruled(
    policy: RestartPolicy,
    special: impl FnOnce(&TFJob) -> Vec<ChildPod>,
) -> (TFJob, Vec<ChildPod>) {
    let (j, pods) = running_job(&[(Ps, 1, policy), (Worker, 2, policy)], special);
    (annotated(j, &[(FAILURE_RULES, RULES)]), pods)
}

fn cases() -> Vec<Case> {
    let (j, pods) = ruled(OnFailure, |j| {
        vec![
            pod(j, Ps, 0).failed(Some(1)).build(),
            pod(j, Worker, 1).failed(Some(137)).build(),
        ]
    });
    let ps_fails = case(
        "the PS's failure fails the job at once, naming the rule, though a worker would restart",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some(
                "TFJob ns/j has failed because PS replica(s) failed: pod j-ps-0 exited with \
                 code 1 (tfjob-operator.dev/failure-rules[0]: FailJob)"
                    .into(),
            ),
            events: Some(vec!["ExitedWithCode", "TFJobFailed"]),
            delete_pods: Some(vec![]),
            restarts: vec![(Worker, None)],
            ..Default::default()
        },
    );
    let (j, pods) = ruled(Never, |j| vec![pod(j, Worker, 1).failed(Some(137)).build()]);
    let worker_137 = case(
        "a worker's 137 restarts it, though its restartPolicy is Never; charged",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            delete_pods: Some(names("j", &[(Worker, 1)])),
            restarts: vec![(Worker, Some(1))],
            ..Default::default()
        },
    );
    let (j, pods) = ruled(ExitCode, |j| {
        vec![pod(j, Worker, 0).failed(Some(138)).build()]
    });
    let uncharged = case(
        "138 restarts the replica without charging it",
        with_policy(j, |r| r.backoff_limit = Some(0)),
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            events: Some(vec![
                "ExitedWithCode",
                "RestartNotCharged",
                "TFJobRestarting",
            ]),
            delete_pods: Some(names("j", &[(Worker, 0)])),
            restarts: vec![(Worker, None)],
            extra: Some(|p: &Plan| {
                let s = p.status.as_ref().unwrap();
                assert_eq!(s.replica_statuses[&Worker].uncharged_restarts, Some(1));
                assert!(s.replica_statuses[&Worker].disrupted_pods.is_empty());
            }),
            ..Default::default()
        },
    );
    let (j, pods) = ruled(ExitCode, |j| {
        vec![
            pod(j, Worker, 1)
                .failed(Some(143))
                .exit_reason("OOMKilled")
                .build(),
        ]
    });
    let whole = case(
        "OOMKilled restarts the whole job, though its restart scope is Replica",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            last_message: Some(
                "job j is restarting because Worker replica(s) failed: every pod restarts as \
                 attempt 1; pod j-worker-1 exited with code 143 (OOMKilled) \
                 (tfjob-operator.dev/failure-rules[3]: RestartJob)"
                    .into(),
            ),
            delete_pods: Some(names("j", &[(Ps, 0), (Worker, 0), (Worker, 1)])),
            restart_attempt: Some(Some(1)),
            restarts: vec![(Worker, Some(1))],
            ..Default::default()
        },
    );
    let (j, pods) = ruled(ExitCode, |j| {
        vec![pod(j, Worker, 0).failed(Some(2)).build()]
    });
    let no_match = case(
        "no rule matches: the restart policy decides (exit 2 is permanent under ExitCode)",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some("job \"j\" is failing because \"Worker\" replica(s) failed.".into()),
            ..Default::default()
        },
    );
    let (j, mut pods) = ruled(ExitCode, |_| vec![]);
    let services = services_for(&j, &pods);
    pods.retain(|p| p.name != "j-ps-0");
    let ps_deleted = Case {
        services,
        ..case(
            "a PS pod deleted from outside matches the PS rule too",
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Failed, "TFJobFailed")),
                last_message: Some(
                    "TFJob ns/j has failed because PS replica(s) failed: pod j-ps-0 was deleted \
                     (tfjob-operator.dev/failure-rules[0]: FailJob)"
                        .into(),
                ),
                ..Default::default()
            },
        )
    };
    let fresh = annotated(
        job("j", &[(Ps, 1, OnFailure), (Worker, 1, Always)]),
        &[(FAILURE_RULES, RULES)],
    );
    let pods_never = case(
        "with rules the kubelet never restarts in place: every pod is created with Never",
        fresh,
        vec![],
        at(0),
        Expect {
            create_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
            extra: Some(|p: &Plan| {
                for pod in &p.create_pods {
                    let spec = pod.spec.as_ref().unwrap();
                    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
                    let labels = pod.metadata.labels.as_ref().unwrap();
                    assert!(!labels.contains_key("tfjob-operator.dev/restart-attempt"));
                }
            }),
            ..Default::default()
        },
    );
    vec![
        ps_fails, worker_137, uncharged, whole, no_match, ps_deleted, pods_never,
    ]
}
