//! Restarts the kubelet made in place, counted once per pod.

use super::*;

scenario_group!(cases);

/// Kubelet restarts (OnFailure/Always) counted in `restarts` per pod uid (docs/behaviour.md §6.4).
fn cases() -> Vec<Case> {
    let specs = [(Worker, 2, OnFailure)];
    let w0 = "uid-j-worker-0";
    let steady = |rc: i32| Expect {
        conditions: Some(vec![CREATED, RUNNING]),
        events: Some(vec![]),
        create_pods: Some(vec![]),
        delete_pods: Some(vec![]),
        counts: vec![(Worker, Some(2), None, None, Some(rc))],
        pod_restarts: vec![(Worker, vec![(w0, rc)])],
        ..Default::default()
    };
    let w0_running =
        |rc: i32| move |j: &TFJob| vec![pod(j, Worker, 0).running().restarts(rc).build()];
    let (fresh, fresh_pods) = running_job(&specs, w0_running(2));
    let (seen, seen_pods) = running_job(&specs, w0_running(2));
    let (rising, rising_pods) = running_job(&specs, w0_running(3));
    let (gone, gone_pods) = running_job(&specs, |_| vec![]);
    let (failing, failing_pods) = running_job(&specs, |j| {
        vec![pod(j, Worker, 0).failed(Some(1)).restarts(2).build()]
    });
    let (leaving, leaving_pods) = running_job(&specs, |j| {
        vec![
            pod(j, Worker, 1)
                .running()
                .restarts(3)
                .terminating()
                .build(),
        ]
    });
    let restarting = |c: Option<i32>| Expect {
        conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
        delete_pods: Some(names("j", &[(Worker, 0)])),
        counts: vec![(Worker, Some(1), None, None, c)],
        pod_restarts: vec![(Worker, vec![(w0, 2)])],
        ..Default::default()
    };
    vec![
        case(
            "kubelet restarted a live pod twice: 2 restarts, recorded for its uid",
            fresh,
            fresh_pods,
            at(9),
            steady(2),
        ),
        case(
            "kubelet restarts already counted: nothing added",
            with_pod_restarts(seen, Worker, 2, &[(w0, 2)]),
            seen_pods,
            at(9),
            steady(2),
        ),
        case(
            "restartCount from 1 to 3: adds 2",
            with_pod_restarts(rising, Worker, 1, &[(w0, 1)]),
            rising_pods,
            at(9),
            steady(3),
        ),
        case(
            "counted pod gone (replaced by a new uid): entry dropped, restarts kept",
            with_pod_restarts(gone, Worker, 2, &[("uid-of-a-gone-pod", 2)]),
            gone_pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                counts: vec![(Worker, Some(2), None, None, Some(2))],
                pod_restarts: vec![(Worker, vec![])],
                ..Default::default()
            },
        ),
        case(
            "failed pod whose 2 kubelet restarts were counted earlier: deleted, 3 in all",
            with_pod_restarts(failing, Worker, 2, &[(w0, 2)]),
            failing_pods,
            at(9),
            restarting(Some(3)),
        ),
        case(
            "terminating pod: its new kubelet restarts not counted, its entry kept",
            with_pod_restarts(leaving, Worker, 1, &[("uid-j-worker-1", 1)]),
            leaving_pods,
            at(9),
            Expect {
                counts: vec![(Worker, Some(1), None, None, Some(1))],
                pod_restarts: vec![(Worker, vec![("uid-j-worker-1", 1)])],
                ..Default::default()
            },
        ),
    ]
}
