//! `backoffLimit` over the durable restart counts.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let limited =
        |limit: i32, recorded: i32, policy: RestartPolicy, special: fn(&TFJob) -> Vec<ChildPod>| {
            let (j, pods) = running_job(&[(Ps, 1, Never), (Worker, 2, policy)], special);
            let j = with_policy(j, |r| {
                r.backoff_limit = Some(limit);
                r.clean_pod_policy = Some(CleanPodPolicy::Running);
            });
            let j = if recorded > 0 {
                with_restarts(j, Worker, recorded)
            } else {
                j
            };
            (j, pods)
        };
    let backoff = "Job j has failed because it has reached the specified backoff limit".to_string();
    let fail = |name: &str,
                (j, pods): (TFJob, Vec<ChildPod>),
                deleted: &[(ReplicaType, i32)],
                restarts: Option<i32>| {
        case(
            format!("backoff: {name}"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Failed, "TFJobFailed")),
                last_message: Some(backoff.clone()),
                events: Some(vec!["TFJobFailed"]),
                create_pods: Some(vec![]),
                // The concluding pass deletes nothing; the next one cleans up by policy.
                delete_pods: Some(vec![]),
                cleanup_pods: Some(names("j", deleted)),
                delete_services: Some(vec![]),
                cleanup_services: Some(names("j", deleted)),
                restarts: vec![(Worker, restarts)],
                completion_time: Some(Some(at(9))),
                ..Default::default()
            },
        )
    };
    let w1_137 = |j: &TFJob| vec![pod(j, Worker, 1).failed(Some(137)).build()];
    let both_137 = |j: &TFJob| {
        vec![
            pod(j, Worker, 0).failed(Some(137)).build(),
            pod(j, Worker, 1).failed(Some(137)).build(),
        ]
    };
    let w0_rc1 = |j: &TFJob| {
        vec![
            pod(j, Worker, 0).running().restarts(1).build(),
            pod(j, Worker, 1).failed(Some(137)).build(),
        ]
    };
    let w0_rc3 = |j: &TFJob| vec![pod(j, Worker, 0).running().restarts(3).build()];
    vec![
        fail(
            "limit 2, two restarts recorded, a third failure",
            limited(2, 2, ExitCode, w1_137),
            &[(Ps, 0), (Worker, 0)],
            Some(2),
        ),
        case(
            "backoff: limit 2, one restart recorded, one more allowed",
            limited(2, 1, ExitCode, w1_137).0,
            limited(2, 1, ExitCode, w1_137).1,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                delete_pods: Some(names("j", &[(Worker, 1)])),
                counts: vec![(Worker, Some(1), None, None, Some(2))],
                ..Default::default()
            },
        ),
        fail(
            "recreated pod's kubelet restarts count too",
            limited(2, 1, OnFailure, w0_rc1),
            &[(Ps, 0), (Worker, 0)],
            Some(2),
        ),
        fail(
            "kubelet restarted beyond the limit",
            limited(2, 0, OnFailure, w0_rc3),
            &[(Ps, 0), (Worker, 0), (Worker, 1)],
            Some(3),
        ),
        fail(
            "limit 1, two failures in one pass: nothing restarted",
            limited(1, 0, ExitCode, both_137),
            &[(Ps, 0)],
            None,
        ),
        fail(
            "limit 0: the first failure",
            limited(0, 0, ExitCode, w1_137),
            &[(Ps, 0), (Worker, 0)],
            None,
        ),
    ]
}
