use serde_json::json;

use super::words::distance;
use super::*;
use crate::crd::ReplicaType;

fn job(spec: Value) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"}, "spec": spec})
}

fn worker(extra: Value) -> Value {
    let mut w = json!({"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}});
    if let (Value::Object(w), Value::Object(extra)) = (&mut w, extra) {
        w.extend(extra);
    }
    w
}

fn problems(c: &Checked) -> Vec<String> {
    c.unknown
        .iter()
        .cloned()
        .chain(c.invalid.iter().map(ToString::to_string))
        .collect()
}

#[test]
fn a_valid_document_passes_unchanged() {
    let doc = job(json!({
        "tfReplicaSpecs": {"worker": worker(json!({"restartPolicy": "OnFailure"}))},
        "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3, "suspend": false},
        "cleanPodPolicy": "All",
    }));
    let c = check(&doc);
    assert_eq!(problems(&c), Vec::<String>::new());
    assert_eq!(c.cleaned, doc);
}

#[test]
fn a_misspelled_field_is_named_with_the_api_servers_words_and_a_suggestion() {
    let c = check(&job(
        json!({"tfReplicaSpecs": {"Worker": worker(json!({"restartPolcy": "OnFailure"}))}}),
    ));
    assert_eq!(
        c.unknown,
        [
            "unknown field \"spec.tfReplicaSpecs.Worker.restartPolcy\" (did you mean \"restartPolicy\"?)"
        ]
    );
    assert!(c.invalid.is_empty());
    assert!(
        c.cleaned["spec"]["tfReplicaSpecs"]["Worker"]
            .get("restartPolcy")
            .is_none()
    );
}

#[test]
fn every_problem_is_found_at_once() {
    // (document, problems in order: unknown fields, then the others in document order)
    let cases = [
        (
            job(json!({
                "tfReplicaSpecs": {"worker": worker(json!({"replicas": "two", "restartPolicy": "OnFailre"}))},
                "runPolicy": {"backoffLimit": -1, "suspend": "yes"},
                "cleanPodPolcy": "All",
            })),
            vec![
                "unknown field \"spec.cleanPodPolcy\" (did you mean \"cleanPodPolicy\"?)",
                "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                "spec.runPolicy.suspend: Invalid value: \"yes\": must be of type boolean",
                "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be of type integer",
                "spec.tfReplicaSpecs[Worker].restartPolicy: Unsupported value: \"OnFailre\": supported values: \"Always\", \"OnFailure\", \"Never\", \"ExitCode\"",
            ],
        ),
        (
            json!({
                "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": "j", "clusterName": ""},
                "spec": {"tfReplicaSpecs": {"PS": worker(json!({"replicas": 3000000000u64}))}},
                "status": {"replicaStatuses": {"Worker": {"running": 1}}},
                "extra": true,
            }),
            vec![
                "unknown field \"extra\"",
                "unknown field \"metadata.clusterName\"",
                "unknown field \"status.replicaStatuses.Worker.running\"",
                "spec.tfReplicaSpecs[PS].replicas: Invalid value: 3000000000: must be a 32-bit integer",
            ],
        ),
        (
            job(
                json!({"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
                    {"name": "tensorflow", "image": "i", "ports": [{"containerPort": "2222", "nmae": "p"}]},
                    "not a container",
                ]}}}}}),
            ),
            vec![
                "unknown field \"spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports[0].nmae\" (did you mean \"name\"?)",
                "spec.tfReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerPort: Invalid value: \"2222\": must be of type integer",
                "spec.tfReplicaSpecs[Worker].template.spec.containers[1]: Invalid value: \"not a container\": must be of type object",
            ],
        ),
        (
            job(json!({"replicaSpecs": [{"tfReplicaType": "MASTER"}]})),
            vec![
                "unknown field \"spec.replicaSpecs\" (did you mean \"tfReplicaSpecs\"?)",
                "spec.tfReplicaSpecs: Required value",
            ],
        ),
    ];
    for (doc, want) in cases {
        let c = check(&doc);
        let mut got = c.unknown.clone();
        let mut invalid: Vec<String> = c.invalid.iter().map(ToString::to_string).collect();
        invalid.sort();
        got.extend(invalid);
        assert_eq!(got, want, "{doc}");
        assert!(
            check(&c.cleaned).unknown.is_empty(),
            "cleaned of unknown fields"
        );
    }
}

#[test]
fn the_cleaned_document_can_still_be_read() {
    let c = check(&job(json!({
        "tfReplicaSpecs": {"Worker": worker(json!({"replicas": "two", "template": {"spec": null}}))},
    })));
    assert_eq!(c.invalid.len(), 1);
    let job = crate::crd::validation::parse_tfjob(c.cleaned).expect("readable");
    assert!(job.spec.tf_replica_specs.get(ReplicaType::Worker).is_some());
    let missing = check(&json!({"metadata": {"name": "j"}, "spec": {}}));
    assert_eq!(
        missing.invalid[0].to_string(),
        "spec.tfReplicaSpecs: Required value"
    );
    assert!(crate::crd::validation::parse_tfjob(missing.cleaned).is_ok());
}

#[test]
fn nulls_are_dropped_silently_like_the_api_server_does() {
    let doc = job(
        json!({"tfReplicaSpecs": {"Worker": worker(json!({"restartPolicy": null}))}, "runPolicy": null}),
    );
    let c = check(&doc);
    assert_eq!(problems(&c), Vec::<String>::new());
}

#[test]
fn suggestions_only_for_near_names() {
    let names = ["restartPolicy", "replicas", "template"];
    assert_eq!(
        suggestion("restartpolicy", names.into_iter()),
        " (did you mean \"restartPolicy\"?)"
    );
    assert_eq!(
        suggestion("replica", names.into_iter()),
        " (did you mean \"replicas\"?)"
    );
    assert_eq!(suggestion("tfPort", names.into_iter()), "");
    assert_eq!(distance("kitten", "sitting"), 3);
}
