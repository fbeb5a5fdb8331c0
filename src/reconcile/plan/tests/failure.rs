//! Which failures fail the job, by restart policy.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let fails = |specs: &[(ReplicaType, i32, RestartPolicy)],
                 losers: &[(ReplicaType, i32)],
                 t: ReplicaType,
                 n: i32| {
        let losers = losers.to_vec();
        let (j, pods) = running_job(specs, |j| {
            losers
                .iter()
                .map(|&(t, i)| pod(j, t, i).failed(Some(1)).build())
                .collect()
        });
        let mut events = vec!["ExitedWithCode"; losers.len()];
        events.push("TFJobFailed");
        case(
            format!("{n} {t} failing (Never): job fails"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Failed, "TFJobFailed")),
                last_message: Some(format!(
                    "TFJob {NS}/j has failed because {n} {t} replica(s) failed."
                )),
                events: Some(events),
                event_messages: losers
                    .iter()
                    .map(|&(t, i)| {
                        format!("Pod: {NS}.{} exited with code 1", names("j", &[(t, i)])[0])
                    })
                    .collect(),
                create_pods: Some(vec![]),
                completion_time: Some(Some(at(9))),
                ..Default::default()
            },
        )
    };
    let cw = [
        (Chief, 1, Never),
        (Ps, 1, Never),
        (Worker, 2, Never),
        (Evaluator, 1, Never),
    ];
    let mw = [(Master, 1, Never), (Worker, 1, Never)];
    let mut dynamic = job("j", &[(Ps, 1, Never), (Worker, 2, Never)]);
    dynamic.spec.enable_dynamic_worker = Some(true);
    dynamic.status = Some(running_status());
    let dyn_pods = vec![
        pod(&dynamic, Ps, 0).running().build(),
        pod(&dynamic, Worker, 0).running().build(),
        pod(&dynamic, Worker, 1).failed(Some(1)).build(),
    ];
    let (mut r, r_pods) = running_job(&[(Ps, 1, Never), (Worker, 2, ExitCode)], |j| {
        vec![pod(j, Ps, 0).failed(Some(1)).build()]
    });
    r.status = Some(status(
        &[CREATED, (Restarting, true, "TFJobRestarting")],
        true,
    ));
    vec![
        fails(&cw, &[(Chief, 0)], Chief, 1),
        fails(&mw, &[(Master, 0)], Master, 1),
        fails(&cw, &[(Ps, 0)], Ps, 1),
        fails(&cw, &[(Worker, 1)], Worker, 1),
        fails(&cw, &[(Evaluator, 0)], Evaluator, 1),
        fails(&cw, &[(Worker, 0), (Worker, 1)], Worker, 2),
        // (type, index) order: the PS decides the message, both pods are named.
        fails(&cw, &[(Ps, 0), (Worker, 1)], Ps, 1),
        case(
            "enableDynamicWorker: a failed worker does not fail the job",
            dynamic,
            dyn_pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                events: Some(vec![]),
                create_pods: Some(vec![]),
                delete_pods: Some(vec![]),
                counts: vec![(Worker, Some(1), None, Some(1), None)],
                ..Default::default()
            },
        ),
        case(
            "Restarting never blocks a permanent failure",
            r,
            r_pods,
            at(9),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Restarting, false, "TFJobFailed"),
                    (Failed, true, "TFJobFailed"),
                ]),
                ..Default::default()
            },
        ),
    ]
}
