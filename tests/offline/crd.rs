//! The committed CRD: up to date, structural, small enough for client-side `kubectl apply`,
//! with the names, columns and CEL rules of docs/behaviour.md §1 and §3.

use kube_cel::Validator;
use serde_json::{Value, json};
use tfjob_operator::crd::schema::{crd, crd_yaml};

const COMMITTED: &str = include_str!("../../crds/kubeflow.org_tfjobs.yaml");
/// `kubectl apply` stores the object in an annotation limited to 256 KiB.
const LAST_APPLIED_LIMIT: usize = 262_144;

fn crd_json() -> Value {
    serde_json::to_value(crd()).unwrap()
}

fn schema() -> Value {
    crd_json()
        .pointer("/spec/versions/0/schema/openAPIV3Schema")
        .unwrap()
        .clone()
}

#[test]
fn committed_crd_is_up_to_date() {
    assert!(
        COMMITTED == crd_yaml(),
        "crds/kubeflow.org_tfjobs.yaml is stale; regenerate it with\n    cargo run -- crd > crds/kubeflow.org_tfjobs.yaml"
    );
}

/// Every node of a structural schema states its type, unless it is explicitly
/// int-or-string or preserves unknown fields; no `$ref`, no definitions.
fn check_structural(node: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        problems.push(format!("{path}: not a schema object"));
        return;
    };
    let exempt = map.get("x-kubernetes-int-or-string") == Some(&json!(true))
        || map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    if !map.contains_key("type") && !exempt {
        problems.push(format!("{path}: no type"));
    }
    for banned in [
        "$ref",
        "definitions",
        "$defs",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
    ] {
        if map.contains_key(banned) {
            problems.push(format!("{path}: has {banned}"));
        }
    }
    if map.contains_key("properties") && map.contains_key("additionalProperties") {
        problems.push(format!("{path}: both properties and additionalProperties"));
    }
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            check_structural(child, &format!("{path}.{name}"), problems);
        }
    }
    if let Some(items) = map.get("items") {
        check_structural(items, &format!("{path}[]"), problems);
    }
    if let Some(extra) = map.get("additionalProperties").filter(|v| v.is_object()) {
        check_structural(extra, &format!("{path}{{}}"), problems);
    }
}

#[test]
fn schema_is_structural() {
    let mut problems = Vec::new();
    check_structural(&schema(), "openAPIV3Schema", &mut problems);
    assert!(
        problems.is_empty(),
        "not structural:\n{}",
        problems.join("\n")
    );
}

#[test]
fn structural_check_catches_untyped_nodes() {
    let mut problems = Vec::new();
    let bad = json!({"type": "object", "properties": {"a": {}, "b": {"x-kubernetes-int-or-string": true}}});
    check_structural(&bad, "s", &mut problems);
    assert_eq!(problems, vec!["s.a: no type"]);
}

#[test]
fn compact_json_fits_kubectl_apply_with_margin() {
    let size = serde_json::to_string(&crd_json()).unwrap().len();
    println!("CRD compact JSON: {size} bytes (limit {LAST_APPLIED_LIMIT})");
    assert!(
        size < LAST_APPLIED_LIMIT * 3 / 4,
        "{size} bytes leaves too little margin"
    );
}

#[test]
fn names_scope_versions_and_subresources() {
    let c = crd_json();
    assert_eq!(c["metadata"]["name"], "tfjobs.kubeflow.org");
    assert_eq!(c["spec"]["group"], "kubeflow.org");
    assert_eq!(c["spec"]["scope"], "Namespaced");
    let names = &c["spec"]["names"];
    assert_eq!(names["kind"], "TFJob");
    assert_eq!(names["plural"], "tfjobs");
    assert_eq!(names["singular"], "tfjob");
    assert_eq!(names["shortNames"], json!(["tfj"]));
    assert_eq!(names["categories"], json!(["kubeflow"]));
    let v = &c["spec"]["versions"][0];
    assert_eq!(
        (
            v["name"].as_str(),
            v["served"].as_bool(),
            v["storage"].as_bool()
        ),
        (Some("v1"), Some(true), Some(true))
    );
    assert_eq!(v["subresources"]["status"], json!({}));
}

#[test]
fn printer_columns_state_and_age_first() {
    let cols = crd_json()["spec"]["versions"][0]["additionalPrinterColumns"].clone();
    assert_eq!(
        cols[0],
        json!({"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"})
    );
    assert_eq!(
        cols[1],
        json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    );
}

#[test]
fn enums_and_minimums() {
    let s = schema();
    let at = |p: &str| s.pointer(p).unwrap().clone();
    let replica = "/properties/spec/properties/tfReplicaSpecs/additionalProperties/properties";
    assert_eq!(
        at(&format!("{replica}/restartPolicy/enum")),
        json!(["Always", "OnFailure", "Never", "ExitCode"])
    );
    assert_eq!(at(&format!("{replica}/replicas/minimum")), json!(0.0));
    let run = "/properties/spec/properties/runPolicy/properties";
    assert_eq!(
        at(&format!("{run}/cleanPodPolicy/enum")),
        json!(["All", "Running", "None"])
    );
    assert_eq!(at(&format!("{run}/backoffLimit/minimum")), json!(0.0));
    assert_eq!(at(&format!("{run}/suspend/default")), json!(false));
    assert_eq!(
        at("/properties/spec/properties/successPolicy/enum"),
        json!(["", "AllWorkers"])
    );
    assert_eq!(at("/properties/spec/required"), json!(["tfReplicaSpecs"]));
}

fn replica(replicas: i64) -> Value {
    json!({"replicas": replicas, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}})
}

fn object(specs: Value, run_policy: Option<Value>) -> Value {
    let mut spec = json!({"tfReplicaSpecs": specs});
    if let Some(rp) = run_policy {
        spec["runPolicy"] = rp;
    }
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"}, "spec": spec})
}

fn cel_messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
    match Validator::new().validate(&schema(), obj, old) {
        Ok(()) => vec![],
        Err(errors) => errors.into_vec().into_iter().map(|e| e.message).collect(),
    }
}

#[test]
fn cel_rules_on_replica_types() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "ps and workers",
            json!({"PS": replica(1), "Worker": replica(2)}),
            vec![],
        ),
        (
            "any case",
            json!({"ps": replica(1), "WORKER": replica(2), "Evaluator": replica(1)}),
            vec![],
        ),
        ("master alone", json!({"MASTER": replica(1)}), vec![]),
        (
            "chief and no workers",
            json!({"Chief": replica(1), "Worker": replica(0)}),
            vec![],
        ),
        (
            "unknown type",
            json!({"Worker": replica(1), "Launcher": replica(1)}),
            vec!["replica types must be Chief, Master, PS, Worker or Evaluator (any case)"],
        ),
        (
            "chief and master",
            json!({"Chief": replica(1), "master": replica(1)}),
            vec!["set at most one of Chief and Master"],
        ),
        (
            "two chiefs",
            json!({"Chief": replica(2)}),
            vec!["a Chief or Master must have exactly 1 replica"],
        ),
        (
            "zero chiefs",
            json!({"Chief": replica(0), "Worker": replica(1)}),
            vec!["a Chief or Master must have exactly 1 replica"],
        ),
        (
            "nobody decides",
            json!({"PS": replica(1), "Worker": replica(0)}),
            vec![
                "a Chief, a Master or a Worker with at least 1 replica must decide the job's success",
            ],
        ),
    ];
    for (name, specs, want) in cases {
        assert_eq!(cel_messages(&object(specs, None), None), want, "{name}");
    }
}

#[test]
#[allow(clippy::type_complexity)] // a table of cases
fn cel_managed_by_is_immutable() {
    let specs = || json!({"Worker": replica(1)});
    let kueue = Some(json!({"managedBy": "kueue.x-k8s.io/multikueue"}));
    let ours = Some(json!({"managedBy": "kubeflow.org/training-operator"}));
    let immutable = vec!["spec.runPolicy.managedBy is immutable"];
    let cases: Vec<(&str, Option<Value>, Option<Value>, Vec<&str>)> = vec![
        ("unchanged", kueue.clone(), kueue.clone(), vec![]),
        ("absent stays absent", None, None, vec![]),
        ("absent to the default value", None, ours.clone(), vec![]),
        ("changed", ours.clone(), kueue.clone(), immutable.clone()),
        ("added", None, kueue.clone(), immutable.clone()),
        ("removed", kueue.clone(), Some(json!({})), immutable.clone()),
    ];
    for (name, old, new, want) in cases {
        let old = object(specs(), old);
        assert_eq!(
            cel_messages(&object(specs(), new), Some(&old)),
            want,
            "{name}"
        );
    }
}
