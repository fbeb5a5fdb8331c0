//! The cached job read from JSON text and from a `Value`, valid or not.

use super::*;
use serde_json::json;

fn object(spec: Value) -> CachedJob {
    serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": spec,
        "status": {"conditions": [{"type": "Created", "status": "True"}]}
    }))
    .expect("a CachedJob never fails to deserialize")
}

#[test]
fn a_job_that_parses_is_typed() {
    let o = object(json!({"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}}));
    let job = o.0.as_ref().expect("parses");
    assert_eq!(job.metadata.uid.as_deref(), Some("u1"));
    assert_eq!(o.meta().resource_version.as_deref(), Some("7"));
}

#[test]
fn a_job_that_does_not_parse_keeps_its_metadata_status_and_the_field_in_error() {
    let o = object(json!({"tfReplicaSpecs": {"Worker": {"replicas": "two", "template": {}}}}));
    let bad = o.0.as_ref().expect_err("does not parse");
    assert_eq!(bad.metadata.name.as_deref(), Some("j"));
    assert_eq!(o.meta().uid.as_deref(), Some("u1"));
    assert_eq!(bad.status.as_ref().map(|s| s.conditions.len()), Some(1));
    assert!(
        bad.problem
            == "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be of type integer",
        "{}",
        bad.problem
    );
}

#[test]
fn an_older_form_stored_as_v1_points_at_convert() {
    let o = object(json!({"replicaSpecs": [{"tfReplicaType": "MASTER", "template": {}}]}));
    let bad = o.0.as_ref().expect_err("does not parse");
    assert!(
        bad.problem.starts_with(
            "spec.tfReplicaSpecs: Required value; this is a tf-operator v1alpha1 TFJob"
        ),
        "{}",
        bad.problem
    );
    assert!(
        bad.problem.contains("`tfjob-operator convert FILE`"),
        "{}",
        bad.problem
    );
}

#[test]
fn anything_at_all_deserializes() {
    for value in [
        json!(null),
        json!([1, 2]),
        json!({"metadata": 5}),
        json!("x"),
    ] {
        let o: CachedJob = serde_json::from_value(value.clone()).expect("never fails");
        assert!(o.0.is_err(), "{value}");
    }
}

/// What a cached job holds, comparable (`TFJob` itself has no `PartialEq`).
type Parts<'a> = Result<
    (
        &'a ObjectMeta,
        &'a crate::crd::TFJobSpec,
        Option<&'a TFJobStatus>,
    ),
    &'a Unreadable,
>;

fn parts(job: &CachedJob) -> Parts<'_> {
    job.0
        .as_ref()
        .map(|j| (&j.metadata, &j.spec, j.status.as_ref()))
}

/// The job read from its text and from its `Value`.
fn both_ways(value: &Value) -> (CachedJob, CachedJob) {
    let text = value.to_string();
    let from_text: CachedJob = serde_json::from_str(&text).expect("never fails");
    (from_text, CachedJob::from_value(value))
}

/// A job as `kubectl apply` leaves it, run for a while: every part the types read.
fn full_job() -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            "name": "mnist", "namespace": "ns", "uid": "u1", "resourceVersion": "42",
            "generation": 1, "creationTimestamp": "2026-11-28T10:00:00Z",
            "labels": {"team": "a"},
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"big\": true}",
                "tfjob-operator.dev/schedule-timeout-seconds": "30",
                "kueue.x-k8s.io/queue-name": "q",
                "other": "x"
            },
            "managedFields": [{"manager": "kubectl", "operation": "Update",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3},
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [
                    {"name": "tensorflow", "image": "tf:2", "ports": [
                        {"name": "tfjob-port", "containerPort": 2223}]}]}}},
                "worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": {
                    "metadata": {"labels": {"x": "y"}},
                    "spec": {"priorityClassName": "high", "containers": [
                        {"name": "tensorflow", "image": "tf:2",
                         "command": ["python", "-c", "print(\"\\u00e9\")"]}]}}}
            }
        },
        "status": {
            "conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated",
                "lastTransitionTime": "2026-11-28T10:00:01Z"}],
            "replicaStatuses": {"Worker": {"active": 2}},
            "startTime": "2026-11-28T10:00:01Z"
        }
    })
}

#[test]
fn a_valid_job_reads_from_its_text_as_from_its_value() {
    let value = full_job();
    assert!(
        parse_valid_text(&value.to_string()).is_some(),
        "typed straight from the text"
    );
    let (from_text, from_value) = both_ways(&value);
    let job = from_text.0.as_ref().expect("parses");
    assert_eq!(parts(&from_text), parts(&from_value));
    assert_eq!(job.metadata.managed_fields, None);
    let kept: Vec<_> = job
        .metadata
        .annotations
        .iter()
        .flatten()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        kept,
        [
            "kueue.x-k8s.io/queue-name",
            "tfjob-operator.dev/schedule-timeout-seconds"
        ]
    );
}

#[test]
fn an_invalid_job_read_from_its_text_names_the_same_field() {
    let mut wrong_type = full_job();
    wrong_type["spec"]["tfReplicaSpecs"]["worker"]["replicas"] = json!("two");
    let mut wrong_version = full_job();
    wrong_version["apiVersion"] = json!("kubeflow.org/v1beta2");
    let mut wrong_kind = full_job();
    wrong_kind["kind"] = json!(7);
    let mut wrong_status = full_job();
    wrong_status["status"]["conditions"] = json!("none");
    let older = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "old"},
        "spec": {"replicaSpecs": [{"tfReplicaType": "MASTER", "template": {}}]}});
    let cases = [
        ("a value of the wrong type", wrong_type),
        ("another apiVersion", wrong_version),
        ("a kind that is no string", wrong_kind),
        ("a status of the wrong type", wrong_status),
        ("an older form", older),
        ("no object", json!(null)),
        ("a list", json!([1, 2])),
        ("metadata of the wrong type", json!({"metadata": 5})),
    ];
    for (case, value) in cases {
        let (from_text, from_value) = both_ways(&value);
        assert!(from_text.0.is_err(), "{case}");
        assert_eq!(parts(&from_text), parts(&from_value), "{case}");
    }
}

#[test]
fn an_unreadable_job_read_from_its_text_keeps_its_metadata_and_status() {
    let mut value = full_job();
    value["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"] = json!({});
    let (from_text, _) = both_ways(&value);
    let bad = from_text.0.expect_err("does not parse");
    assert_eq!(bad.metadata.uid.as_deref(), Some("u1"));
    assert_eq!(bad.metadata.resource_version.as_deref(), Some("42"));
    let status = bad.status.expect("the status still reads");
    assert_eq!(status.conditions[0].reason.as_deref(), Some("TFJobCreated"));
    assert!(
        bad.problem
            .starts_with("spec.tfReplicaSpecs[PS].template.spec.containers: "),
        "{}",
        bad.problem
    );
}

#[test]
fn a_type_written_with_escapes_reads_as_through_a_value() {
    let text = full_job()
        .to_string()
        .replace(r#""kubeflow.org/v1""#, r#""kubeflow.org\/v1""#);
    assert!(text.contains(r"kubeflow.org\/v1"));
    assert!(parse_valid_text(&text).is_none(), "left to the Value way");
    let from_text: CachedJob = serde_json::from_str(&text).expect("never fails");
    assert_eq!(
        parts(&from_text),
        parts(&CachedJob::from_value(&full_job()))
    );
}

/// The API server writes a watch event's `type` before its `object` (the object is then
/// read straight from the line), and a list's items each as they come.
#[test]
fn a_job_reads_from_a_watch_line_and_from_a_list() {
    let line = format!(r#"{{"type":"MODIFIED","object":{}}}"#, full_job());
    let event: kube::core::WatchEvent<CachedJob> = serde_json::from_str(&line).expect("decodes");
    let kube::core::WatchEvent::Modified(job) = event else {
        panic!("a MODIFIED event");
    };
    assert_eq!(parts(&job), parts(&CachedJob::from_value(&full_job())));
    let list = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJobList",
        "metadata": {"resourceVersion": "50"}, "items": [full_job(), {"spec": 1}]});
    let list: kube::core::ObjectList<CachedJob> =
        serde_json::from_str(&list.to_string()).expect("decodes");
    assert!(list.items[0].0.is_ok() && list.items[1].0.is_err());
}
