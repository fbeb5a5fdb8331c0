//! Running and Restarting, and the replica counts of a running job.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let fresh = |specs: &[(ReplicaType, i32, RestartPolicy)]| {
        with_status(job("j", specs), status(&[CREATED], true))
    };
    let chief = fresh(&[(Chief, 1, Never), (Worker, 2, Never)]);
    let master = fresh(&[(Master, 1, Never), (Worker, 1, Never)]);
    let workers = fresh(&[(Ps, 1, Never), (Worker, 2, Never)]);
    let running_msg = format!("TFJob {NS}/j is running.");
    let all_children = |j: &TFJob, pods: Vec<ChildPod>| {
        let c = replicas::sort(
            j,
            &Observed {
                pods: pods.clone(),
                services: vec![],
                ..Observed::default()
            },
            None,
        );
        let view_keys: Vec<_> =
            JobView::new(j, at(0), &Settings::default(), Default::default()).keys();
        let mut pods = pods;
        for (t, i) in view_keys {
            if !c.pods.contains_key(&(t, i)) {
                pods.push(pod(j, t, i).pending().build());
            }
        }
        pods
    };
    let restarting = with_status(
        job("j", &[(Chief, 1, Never), (Worker, 1, OnFailure)]),
        status(&[CREATED, (Restarting, true, "TFJobRestarting")], true),
    );
    vec![
        case(
            "chief running: Running",
            chief.clone(),
            all_children(&chief, vec![pod(&chief, Chief, 0).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                last_message: Some(running_msg.clone()),
                counts: vec![(Chief, Some(1), None, None, None)],
                ..Default::default()
            },
        ),
        case(
            "master running: Running",
            master.clone(),
            all_children(&master, vec![pod(&master, Master, 0).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                ..Default::default()
            },
        ),
        case(
            "chief pending, worker running: not Running",
            chief.clone(),
            all_children(&chief, vec![pod(&chief, Worker, 1).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED]),
                ..Default::default()
            },
        ),
        case(
            "no chief, worker 1 running: Running",
            workers.clone(),
            all_children(&workers, vec![pod(&workers, Worker, 1).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                last_message: Some(running_msg),
                ..Default::default()
            },
        ),
        case(
            "no chief, only PS running: not Running",
            workers.clone(),
            all_children(&workers, vec![pod(&workers, Ps, 0).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED]),
                ..Default::default()
            },
        ),
        case(
            "Restarting, all pods back, chief running: Running replaces Restarting",
            restarting.clone(),
            all_children(
                &restarting,
                vec![pod(&restarting, Chief, 0).running().build()],
            ),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                ..Default::default()
            },
        ),
        case(
            "Restarting, a pod still going away: stays Restarting",
            restarting.clone(),
            vec![
                pod(&restarting, Chief, 0).running().build(),
                pod(&restarting, Worker, 0)
                    .failed(Some(1))
                    .terminating()
                    .build(),
            ],
            at(5),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                create_pods: Some(vec![]),
                ..Default::default()
            },
        ),
    ]
}
