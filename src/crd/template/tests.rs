use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use schemars::JsonSchema;
use serde_json::{Value, json};

use super::*;
use crate::crd::validation::parse_tfjob;
use crate::crd::{ReplicaSpec, ReplicaType};

/// A template with something in most corners: labels, annotations, two containers, ports,
/// env, resources, a quantity, an int-or-string, a scheduler and a priority class.
fn rich() -> Value {
    json!({
        "metadata": {"labels": {"b": "2", "a": "1"}, "annotations": {"x/y": "z"}},
        "spec": {
            "schedulerName": "volcano",
            "priorityClassName": "high",
            "restartPolicy": "OnFailure",
            "containers": [
                {"name": "sidecar", "image": "busybox", "ports": [{"name": "tfjob-port", "containerPort": 1}]},
                {
                    "name": "tensorflow",
                    "image": "tf:2",
                    "env": [{"name": "A", "value": "1"}],
                    "ports": [{"name": "metrics", "containerPort": 9090}, {"name": "tfjob-port", "containerPort": 3333}],
                    "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "500m"}},
                    "livenessProbe": {"httpGet": {"port": "http", "path": "/"}}
                }
            ]
        }
    })
}

fn typed(value: &Value) -> PodTemplateSpec {
    serde_json::from_value(value.clone()).unwrap()
}

#[test]
fn round_trip_keeps_the_template_as_the_decoded_form_wrote_it() {
    let template: Template = serde_json::from_value(rich()).unwrap();
    let decoded = typed(&rich());
    assert_eq!(template.json(), serde_json::to_string(&decoded).unwrap());
    assert_eq!(template.decode(), decoded);
    assert_eq!(template.to_value(), rich());
    // Written back: the same text, byte for byte, as the decoded template gave.
    assert_eq!(
        serde_json::to_string(&template).unwrap(),
        serde_json::to_string(&decoded).unwrap()
    );
    assert_eq!(serde_json::to_value(&template).unwrap(), rich());
    // And in YAML (render, convert), field order as the decoded template has it.
    assert_eq!(
        serde_saphyr::to_string(&template).unwrap(),
        serde_saphyr::to_string(&decoded).unwrap()
    );
    let again: Template = serde_json::from_str(template.json()).unwrap();
    assert_eq!(again, template);
}

#[test]
fn facts_are_read_once_with_the_template() {
    let template = Template::from(typed(&rich()));
    assert_eq!(
        template.tf_port(),
        3333,
        "the tensorflow container's, not the sidecar's"
    );
    assert_eq!(template.priority_class_name(), Some("high"));
    assert_eq!(template.scheduler_name(), Some("volcano"));
    assert!(template.sets_restart_policy());
    assert!(template.problems().is_empty(), "{:?}", template.problems());

    let empty = Template::default();
    assert_eq!(empty.json(), "{}");
    assert_eq!(empty.decode(), PodTemplateSpec::default());
    assert_eq!(empty.tf_port(), 2222);
    assert_eq!(
        (empty.priority_class_name(), empty.scheduler_name()),
        (None, None)
    );
    assert!(!empty.sets_restart_policy());
    assert_eq!(
        empty.problems(),
        [FieldError::new("spec.containers", "Required value")]
    );
}

#[test]
fn equal_templates_compare_equal_and_different_ones_do_not() {
    let a = Template::from(typed(&rich()));
    let b: Template = serde_json::from_value(rich()).unwrap();
    assert_eq!(a, b, "same template, built and read");
    let mut other = rich();
    other["spec"]["containers"][1]["image"] = json!("tf:3");
    assert_ne!(a, serde_json::from_value::<Template>(other).unwrap());
    // Map order as written does not matter: the text is the decoded form's.
    let reordered = json!({"spec": rich()["spec"], "metadata": {"annotations": {"x/y": "z"}, "labels": {"a": "1", "b": "2"}}});
    assert_eq!(a, serde_json::from_value::<Template>(reordered).unwrap());
}

/// The error of a job whose template holds `bad` at `pointer`, read the way the controller
/// reads jobs, and the serde error of the same replica spec read with the template decoded
/// (as before templates were kept as text): path and message.
fn errors(pointer: &str, bad: Value) -> (String, (String, String), (String, String)) {
    #[derive(serde::Deserialize)]
    #[allow(dead_code)] // read only for its errors
    struct Decoded {
        template: PodTemplateSpec,
    }
    let mut replica = json!({"template": rich()});
    *replica.pointer_mut(pointer).unwrap() = bad;
    let job = json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"},
        "spec": {"tfReplicaSpecs": {"Worker": replica}}
    });
    let parsed = parse_tfjob(job).unwrap_err().to_string();
    let path_and_message = |e: serde_path_to_error::Error<serde_json::Error>| {
        (e.path().to_string(), e.inner().to_string())
    };
    let now = serde_path_to_error::deserialize::<_, ReplicaSpec>(&replica)
        .err()
        .map(path_and_message)
        .unwrap();
    let before = serde_path_to_error::deserialize::<_, Decoded>(&replica)
        .err()
        .map(path_and_message)
        .unwrap();
    (parsed, now, before)
}

#[test]
fn a_bad_value_in_a_template_is_named_as_before() {
    let (parsed, now, before) = errors("/template/spec/containers/1/image", json!(5));
    assert_eq!(
        parsed,
        "spec.tfReplicaSpecs[Worker].template.spec.containers[1].image: Invalid value: 5: must be of type string"
    );
    assert_eq!(now, before);
    assert_eq!(now.0, "template.spec.containers[1].image");

    let (parsed, now, before) = errors("/template/spec/containers/1/ports", json!("x"));
    assert_eq!(
        parsed,
        "spec.tfReplicaSpecs[Worker].template.spec.containers[1].ports: Invalid value: \"x\": must be of type array"
    );
    assert_eq!(now, before);
    assert_eq!(now.0, "template.spec.containers[1].ports");
}

#[test]
fn container_problems_are_validation_s_found_once() {
    let cases = [
        (json!({}), vec!["spec.containers: Required value"]),
        (
            json!({"spec": {"containers": [{"name": "main", "image": " "}]}}),
            vec![
                "spec.containers[0].image: Required value",
                "spec.containers: Required value: one container must be named \"tensorflow\"",
            ],
        ),
        (
            json!({"spec": {"containers": [{"name": "tensorflow", "image": "a"}, {"name": "tensorflow", "image": "b"}]}}),
            vec!["spec.containers[1].name: Duplicate value: \"tensorflow\""],
        ),
    ];
    for (template, want) in cases {
        let got: Vec<String> = serde_json::from_value::<Template>(template.clone())
            .unwrap()
            .problems()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, want, "{template}");
    }
    // Validation names them from the job, under the replica type.
    let spec = ReplicaSpec {
        template: PodTemplateSpec {
            spec: Some(PodSpec::default()),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    };
    let job = crate::crd::TFJob::new(
        "j",
        crate::crd::TFJobSpec {
            tf_replica_specs: [(ReplicaType::Worker, spec)].into_iter().collect(),
            ..Default::default()
        },
    );
    let errors: Vec<String> = crate::crd::validation::validate(&job)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        ["spec.tfReplicaSpecs[Worker].template.spec.containers: Required value"]
    );
}

#[test]
fn the_schema_is_the_pod_template_s() {
    let mut generator = schemars::SchemaGenerator::default();
    let ours = Template::json_schema(&mut generator);
    let theirs = PodTemplateSpec::json_schema(&mut generator);
    assert_eq!(ours, theirs);
    assert_eq!(Template::schema_id(), PodTemplateSpec::schema_id());
    assert_eq!(Template::schema_name(), PodTemplateSpec::schema_name());
}

#[test]
fn a_cached_template_is_small() {
    // What a cached job holds per replica type: the spec inline, the template's text and
    // facts behind one shared pointer (was ~4.6 KB decoded for the benchmark's template).
    assert!(std::mem::size_of::<ReplicaSpec>() <= 24);
    assert_eq!(std::mem::size_of::<Template>(), 8);
}
