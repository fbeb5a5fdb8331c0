//! `restartPolicy: ExitCode`: retryable and permanent exit codes.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let specs = [(Ps, 1, Never), (Worker, 2, ExitCode)];
    let mut cases = Vec::new();
    for code in [0, 1, 2, 126, 127, 128, 139] {
        let (j, pods) = running_job(&specs, |j| {
            vec![pod(j, Worker, 1).failed(Some(code)).build()]
        });
        cases.push(case(
            format!("ExitCode {code}: permanent"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Failed, "TFJobFailed")),
                last_message: Some(
                    "job \"j\" is failing because \"Worker\" replica(s) failed.".into(),
                ),
                events: Some(vec!["ExitedWithCode", "TFJobFailed"]),
                event_messages: vec![format!("Pod: {NS}.j-worker-1 exited with code {code}")],
                delete_pods: Some(vec![]),
                cleanup_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
                ..Default::default()
            },
        ));
    }
    for code in [Some(130), Some(137), Some(138), Some(143), Some(255), None] {
        let (j, pods) = running_job(&specs, |j| vec![pod(j, Worker, 1).failed(code).build()]);
        let events = if code.is_some() {
            vec!["ExitedWithCode", "TFJobRestarting"]
        } else {
            vec!["TFJobRestarting"]
        };
        cases.push(case(
            format!("ExitCode {code:?}: retried"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                last_message: Some("job j is restarting because Worker replica(s) failed.".into()),
                events: Some(events),
                create_pods: Some(vec![]),
                delete_pods: Some(names("j", &[(Worker, 1)])),
                delete_services: Some(vec![]),
                counts: vec![(Worker, Some(1), None, None, Some(1))],
                ..Default::default()
            },
        ));
    }
    for policy in [OnFailure, Always] {
        let (j, pods) = running_job(&[(Worker, 2, policy)], |j| {
            vec![pod(j, Worker, 0).failed(Some(1)).restarts(2).build()]
        });
        cases.push(case(
            format!("{policy:?}: failed pod restarted: its 2 kubelet restarts, plus 1"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                delete_pods: Some(names("j", &[(Worker, 0)])),
                counts: vec![(Worker, Some(1), None, None, Some(3))],
                pod_restarts: vec![(Worker, vec![("uid-j-worker-0", 2)])],
                ..Default::default()
            },
        ));
    }
    let (j, pods) = running_job(&[(Worker, 1, OnFailure)], |j| {
        vec![pod(j, Worker, 0).succeeded().restarts(2).build()]
    });
    cases.push(case(
        "the concluding pass counts the last kubelet restarts and drops podRestarts",
        with_pod_restarts(j, Worker, 1, &[("uid-j-worker-0", 1)]),
        pods,
        at(9),
        Expect {
            conditions: Some(ended(Succeeded, "TFJobSucceeded")),
            restarts: vec![(Worker, Some(2))],
            pod_restarts: vec![(Worker, vec![])],
            ..Default::default()
        },
    ));
    cases
}
