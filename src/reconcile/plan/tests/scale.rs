//! Children of a running job: missing ones created, surplus ones (after a scale-down) deleted, foreign ones left alone.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let two = || {
        with_status(
            job("j", &[(Ps, 1, Never), (Worker, 2, Never)]),
            running_status(),
        )
    };
    let j = two();
    let ps_w0 = vec![
        pod(&j, Ps, 0).running().build(),
        pod(&j, Worker, 0).running().build(),
    ];
    let mut vanished = case(
        "pod deleted from outside: recreated, one restart",
        j.clone(),
        ps_w0.clone(),
        at(5),
        Expect {
            conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
            last_message: Some("job j is restarting because Worker replica(s) failed.".into()),
            events: Some(vec!["TFJobRestarting"]),
            create_pods: Some(names("j", &[(Worker, 1)])),
            create_services: Some(vec![]),
            delete_pods: Some(vec![]),
            counts: vec![
                (Worker, Some(1), None, None, Some(1)),
                (Ps, Some(1), None, None, None),
            ],
            ..Default::default()
        },
    );
    vanished.services.push(service(&j, Worker, 1));
    let mut done = running_status();
    done.replica_statuses
        .entry(Worker)
        .or_default()
        .completed_indexes = Some("1".into());
    let finished_work = with_status(job("j", &[(Ps, 1, Never), (Worker, 2, Never)]), done);
    let mut gone = case(
        "a succeeded replica whose pod is gone: not run again, no restart",
        finished_work.clone(),
        vec![
            pod(&finished_work, Ps, 0).running().build(),
            pod(&finished_work, Worker, 0).running().build(),
        ],
        at(5),
        Expect {
            conditions: Some(vec![CREATED, RUNNING]),
            events: Some(vec![]),
            create_pods: Some(vec![]),
            create_services: Some(vec![]),
            counts: vec![(Worker, Some(1), Some(1), None, None)],
            completed: vec![(Worker, Some("1"))],
            ..Default::default()
        },
    );
    gone.services.push(service(&finished_work, Worker, 1));
    let restarting = with_status(
        job("j", &[(Ps, 1, Never), (Worker, 2, Never)]),
        status(&[CREATED, (Restarting, true, "TFJobRestarting")], true),
    );
    let mut not_counted = case(
        "vanished during Restarting: recreated, not counted",
        restarting.clone(),
        ps_w0.clone(),
        at(5),
        Expect {
            conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
            events: Some(vec![]),
            create_pods: Some(names("j", &[(Worker, 1)])),
            counts: vec![(Worker, Some(1), None, None, None)],
            ..Default::default()
        },
    );
    not_counted.services.push(service(&restarting, Worker, 1));
    let mut terminating = ps_w0.clone();
    terminating.push(pod(&j, Worker, 1).failed(Some(137)).terminating().build());
    let scaled = with_status(job("j", &[(Worker, 1, Never)]), running_status());
    let scale_pods = vec![
        pod(&scaled, Worker, 0).running().build(),
        pod(&scaled, Worker, 1).running().build(),
    ];
    let mut foreign = ps_w0.clone();
    foreign.push(
        pod(&j, Worker, 1)
            .failed(Some(1))
            .owner_uid(Some("other"))
            .build(),
    );
    let mut unowned = case(
        "foreign pod with a child's name: not taken, not counted, warned",
        j.clone(),
        foreign,
        at(5),
        Expect {
            conditions: Some(vec![CREATED, RUNNING]),
            events: Some(vec![REASON_NOT_OWNED]),
            event_messages: vec![format!(
                "Pod {NS}/j-worker-1 carries the labels of TFJob j but is not owned by it; it is left alone"
            )],
            create_pods: Some(vec![]),
            create_services: Some(names("j", &[(Worker, 1)])),
            counts: vec![(Worker, Some(1), None, None, None)],
            ..Default::default()
        },
    );
    unowned.services.retain(|s| s.name != "j-worker-1");
    vec![
        case(
            "missing pod and service on a started job: created, no restart",
            j.clone(),
            ps_w0.clone(),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                events: Some(vec![]),
                create_pods: Some(names("j", &[(Worker, 1)])),
                create_services: Some(names("j", &[(Worker, 1)])),
                counts: vec![(Worker, Some(1), None, None, None)],
                ..Default::default()
            },
        ),
        vanished,
        gone,
        not_counted,
        case(
            "terminating pod: not recreated, not active, not failed",
            j.clone(),
            terminating,
            at(5),
            Expect {
                create_pods: Some(vec![]),
                delete_pods: Some(vec![]),
                events: Some(vec![]),
                counts: vec![(Worker, Some(1), None, None, None)],
                ..Default::default()
            },
        ),
        case(
            "scale down: surplus deleted, never a failure",
            scaled,
            scale_pods,
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                delete_pods: Some(names("j", &[(Worker, 1)])),
                delete_services: Some(names("j", &[(Worker, 1)])),
                counts: vec![(Worker, Some(1), None, None, None)],
                events: Some(vec![]),
                ..Default::default()
            },
        ),
        unowned,
    ]
}
