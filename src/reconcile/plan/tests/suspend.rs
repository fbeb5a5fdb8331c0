//! Suspend and resume.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let (j, pods) = running_job(&[(Ps, 1, Never), (Worker, 1, Never)], |_| vec![]);
    let all = names("j", &[(Ps, 0), (Worker, 0)]);
    let suspending = with_policy(j.clone(), |r| r.suspend = Some(true));
    let mut restarting = suspending.clone();
    restarting.status = Some(status(
        &[CREATED, (Restarting, true, "TFJobRestarting")],
        true,
    ));
    let mut resumed = with_policy(j.clone(), |r| r.suspend = Some(false));
    resumed.status = Some(status(
        &[
            CREATED,
            (Running, false, "TFJobSuspended"),
            (Suspended, true, "TFJobSuspended"),
        ],
        true,
    ));
    vec![
        case(
            "suspend: every child deleted, Running off, Suspended on",
            suspending,
            pods.clone(),
            at(7),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Running, false, "TFJobSuspended"),
                    (Suspended, true, "TFJobSuspended"),
                ]),
                last_message: Some("TFJob j is suspended.".into()),
                events: Some(vec!["TFJobSuspended"]),
                create_pods: Some(vec![]),
                delete_pods: Some(all.clone()),
                delete_services: Some(all.clone()),
                counts: vec![
                    (Ps, None, None, None, None),
                    (Worker, None, None, None, None),
                ],
                start_time: Some(Some(at(0))),
                ..Default::default()
            },
        ),
        case(
            "suspend while Restarting: Restarting off",
            restarting,
            pods,
            at(7),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Restarting, false, "TFJobSuspended"),
                    (Suspended, true, "TFJobSuspended"),
                ]),
                ..Default::default()
            },
        ),
        case(
            "resume: Suspended off, clock restarts, children recreated",
            resumed,
            vec![],
            at(20),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Running, false, "TFJobSuspended"),
                    (Suspended, false, "TFJobResumed"),
                ]),
                last_message: Some("TFJob j is resumed.".into()),
                events: Some(vec!["TFJobResumed"]),
                create_pods: Some(all.clone()),
                create_services: Some(all),
                start_time: Some(Some(at(20))),
                ..Default::default()
            },
        ),
    ]
}
