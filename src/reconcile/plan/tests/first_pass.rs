//! A job's first pass: Created, startTime, every child created.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let dist = job("j", &[(Ps, 2, Never), (Worker, 2, Never)]);
    let all = names("j", &[(Ps, 0), (Ps, 1), (Worker, 0), (Worker, 1)]);
    let mut own_policy = job("j", &[(Worker, 1, OnFailure)]);
    let spec = own_policy
        .spec
        .tf_replica_specs
        .specs
        .get_mut(&Worker)
        .unwrap();
    let mut template = spec.template.decode();
    template.spec.as_mut().unwrap().restart_policy = Some("Always".into());
    spec.template = template.into();
    let suspended = with_policy(job("j", &[(Worker, 1, Never)]), |r| r.suspend = Some(true));
    vec![
        case(
            "first pass: Created, startTime, every child",
            dist,
            vec![],
            at(3),
            Expect {
                conditions: Some(vec![CREATED]),
                last_message: Some("TFJob j is created.".into()),
                events: Some(vec!["TFJobCreated"]),
                create_pods: Some(all.clone()),
                create_services: Some(all),
                start_time: Some(Some(at(3))),
                counts: vec![
                    (Ps, None, None, None, None),
                    (Worker, None, None, None, None),
                ],
                ..Default::default()
            },
        ),
        case(
            "template restartPolicy overridden: one warning",
            own_policy,
            vec![],
            at(0),
            Expect {
                events: Some(vec!["TFJobCreated", "SetPodTemplateRestartPolicy"]),
                ..Default::default()
            },
        ),
        case(
            "created suspended: no children, no startTime",
            suspended,
            vec![],
            at(0),
            Expect {
                conditions: Some(vec![CREATED, (Suspended, true, "TFJobSuspended")]),
                last_message: Some("TFJob j is suspended.".into()),
                events: Some(vec!["TFJobCreated", "TFJobSuspended"]),
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                start_time: Some(None),
                ..Default::default()
            },
        ),
    ]
}
