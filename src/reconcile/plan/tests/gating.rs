//! Which jobs a pass acts on at all: MultiKueue, deletion, validation.

use super::*;

scenario_group!(cases);

/// managedBy, deletion and validation.
fn cases() -> Vec<Case> {
    let failing = |j: &TFJob| vec![pod(j, Worker, 0).failed(Some(1)).build()];
    let kueue = with_policy(job("j", &[(Worker, 1, Never)]), |r| {
        r.managed_by = Some(crate::crd::MANAGED_BY_MULTIKUEUE.into())
    });
    let ours = with_policy(job("j", &[(Worker, 1, Never)]), |r| {
        r.managed_by = Some(crate::crd::MANAGED_BY_TRAINING_OPERATOR.into())
    });
    let mut deleted = job("j", &[(Worker, 1, Never)]);
    deleted.metadata.deletion_timestamp = Some(Time(at(0)));
    let mut no_image = job("j", &[(Worker, 1, Never)]);
    let spec = no_image
        .spec
        .tf_replica_specs
        .specs
        .get_mut(&Worker)
        .unwrap();
    let mut template = spec.template.decode();
    template.spec.as_mut().unwrap().containers[0].image = None;
    spec.template = template.into();
    let mut bad_key = job("j", &[(Worker, 1, Never)]);
    bad_key
        .spec
        .tf_replica_specs
        .rejected_keys
        .push("Launcher".into());
    let invalid = |name: &str, j: TFJob, needle: &str| {
        let message = validation_message(&j);
        assert!(message.contains(needle), "{name}: {message}");
        case(
            name,
            j,
            vec![],
            at(5),
            Expect {
                conditions: Some(vec![(Failed, true, "TFJobFailedValidation")]),
                last_message: Some(message),
                events: Some(vec!["TFJobFailedValidation"]),
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                completion_time: Some(Some(at(5))),
                ..Default::default()
            },
        )
    };
    vec![
        case(
            "managedBy multikueue: left alone",
            kueue.clone(),
            failing(&kueue),
            at(1),
            Expect {
                no_status: true,
                ..Default::default()
            },
        ),
        case(
            "managedBy training-operator: ours",
            ours.clone(),
            vec![],
            at(1),
            Expect {
                conditions: Some(vec![CREATED]),
                create_pods: Some(names("j", &[(Worker, 0)])),
                ..Default::default()
            },
        ),
        case(
            "being deleted: left to GC",
            deleted.clone(),
            failing(&deleted),
            at(1),
            Expect {
                no_status: true,
                ..Default::default()
            },
        ),
        invalid(
            "validation: missing image",
            no_image,
            "spec.tfReplicaSpecs[Worker]",
        ),
        invalid("validation: unknown replica type key", bad_key, "Launcher"),
        invalid(
            "validation: an annotation of ours with a bad value",
            annotated(
                job("j", &[(Worker, 1, Never)]),
                &[("tfjob-operator.dev/restart-scope", "job")],
            ),
            "metadata.annotations[tfjob-operator.dev/restart-scope]: Unsupported value: \"job\"",
        ),
    ]
}

/// The message the plan must carry for an invalid job: every error, "; "-joined.
fn validation_message(j: &TFJob) -> String {
    match crate::crd::validation::validate(j) {
        Err(errors) => errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
        Ok(_) => j
            .spec
            .tf_replica_specs
            .rejected_keys
            .iter()
            .map(|k| format!("spec.tfReplicaSpecs[{k}]: Unsupported value: {k:?}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}
