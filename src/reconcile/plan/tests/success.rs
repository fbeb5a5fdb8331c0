//! Which replica decides success, and what success does.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let done = format!("TFJob {NS}/j successfully completed.");
    let yes = |name: &str,
               specs: &[(ReplicaType, i32, RestartPolicy)],
               winners: &[(ReplicaType, i32)],
               deleted: &[(ReplicaType, i32)]| {
        let winners = winners.to_vec();
        let (j, pods) = running_job(specs, |j| {
            winners
                .iter()
                .map(|&(t, i)| pod(j, t, i).succeeded().build())
                .collect()
        });
        case(
            format!("success: {name}"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Succeeded, "TFJobSucceeded")),
                last_message: Some(done.clone()),
                events: Some(vec!["TFJobSucceeded"]),
                create_pods: Some(vec![]),
                delete_pods: Some(vec![]),
                cleanup_pods: Some(names("j", deleted)),
                delete_services: Some(vec![]),
                cleanup_services: Some(names("j", deleted)),
                completion_time: Some(Some(at(9))),
                ..Default::default()
            },
        )
    };
    let no = |name: &str,
              specs: &[(ReplicaType, i32, RestartPolicy)],
              winners: &[(ReplicaType, i32)]| {
        let winners = winners.to_vec();
        let (j, pods) = running_job(specs, |j| {
            winners
                .iter()
                .map(|&(t, i)| pod(j, t, i).succeeded().build())
                .collect()
        });
        case(
            format!("no success yet: {name}"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                events: Some(vec![]),
                completion_time: Some(None),
                ..Default::default()
            },
        )
    };
    let cw = [(Chief, 1, Never), (Ps, 1, Never), (Worker, 2, Never)];
    let mw = [(Master, 1, Never), (Worker, 1, Never)];
    let pw = [(Ps, 1, Never), (Worker, 2, Never), (Evaluator, 1, Never)];
    let mut all_workers = job("j", &pw);
    all_workers.spec.success_policy = Some(SuccessPolicy::AllWorkers);
    let aw = |winners: &[(ReplicaType, i32)], ok: bool| {
        let mut j = all_workers.clone();
        j.status = Some(running_status());
        let mut pods: Vec<ChildPod> = winners
            .iter()
            .map(|&(t, i)| pod(&j, t, i).succeeded().build())
            .collect();
        for (t, i) in [(Ps, 0), (Worker, 0), (Worker, 1), (Evaluator, 0)] {
            if !winners.contains(&(t, i)) {
                pods.push(pod(&j, t, i).running().build());
            }
        }
        let expect = if ok {
            Expect {
                conditions: Some(ended(Succeeded, "TFJobSucceeded")),
                ..Default::default()
            }
        } else {
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                ..Default::default()
            }
        };
        case(
            format!("AllWorkers {winners:?}: success={ok}"),
            j,
            pods,
            at(9),
            expect,
        )
    };
    // On success the active pods move to succeeded and are then cleaned up (Running policy).
    let (j, pods) = running_job(&cw, |j| vec![pod(j, Chief, 0).succeeded().build()]);
    let moved = case(
        "success: active counts move to succeeded",
        j,
        pods,
        at(9),
        Expect {
            counts: vec![
                (Chief, None, Some(1), None, None),
                (Ps, None, Some(1), None, None),
                (Worker, None, Some(2), None, None),
            ],
            ..Default::default()
        },
    );
    vec![
        yes(
            "chief succeeded",
            &cw,
            &[(Chief, 0)],
            &[(Ps, 0), (Worker, 0), (Worker, 1)],
        ),
        yes("master succeeded", &mw, &[(Master, 0)], &[(Worker, 0)]),
        yes(
            "no chief, worker 0 succeeded",
            &pw,
            &[(Worker, 0)],
            &[(Ps, 0), (Worker, 1), (Evaluator, 0)],
        ),
        no("chief running, worker 0 succeeded", &cw, &[(Worker, 0)]),
        no("no chief, worker 1 succeeded", &pw, &[(Worker, 1)]),
        no("PS succeeded", &pw, &[(Ps, 0)]),
        no("evaluator succeeded", &pw, &[(Evaluator, 0)]),
        aw(&[(Worker, 0)], false),
        aw(&[(Worker, 0), (Worker, 1)], true),
        moved,
    ]
}
