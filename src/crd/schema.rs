//! The CRD, generated from the types and refined (CEL rules, short template schema). Pure.
//!
//! kube-derive generates the schema; this module then
//! - drops every description inside the embedded pod templates and any long description
//!   copied from Kubernetes' own types, so plain `kubectl apply` stays far below the
//!   262,144-byte last-applied annotation limit;
//! - adds the admission checks the API server can run cheaply: CEL rules on the
//!   `tfReplicaSpecs` keys (bounded by `maxProperties` so the cost estimator accepts them),
//!   the `managedBy` values and their immutability;
//! - serves the versions Kubeflow's TFJob had before v1 (never stored) only to refuse them
//!   with a pointer at `tfjob-operator convert` (docs/behaviour.md §1).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::spec::{MANAGED_BY_MULTIKUEUE, MANAGED_BY_TRAINING_OPERATOR, TFJob};

/// At most 4 keys are valid (Chief/Master, PS, Worker, Evaluator); the slack lets a typo
/// reach the CEL rule that names the problem instead of a bare size error.
pub const MAX_REPLICA_TYPES: i64 = 8;
/// Descriptions longer than this come from Kubernetes' types, not ours: dropped.
const MAX_DESCRIPTION: usize = 200;

const CHIEF_KEYS: &str = "['chief', 'master']";

/// The TFJob CRD exactly as committed under `crds/`.
pub fn crd() -> CustomResourceDefinition {
    let raw = TFJob::crd();
    let Ok(mut value) = serde_json::to_value(&raw) else {
        return raw;
    };
    if let Some(schema) = value.pointer_mut("/spec/versions/0/schema/openAPIV3Schema") {
        refine(schema);
    }
    if let Some(Value::Array(versions)) = value.pointer_mut("/spec/versions") {
        versions.extend(RETIRED_VERSIONS.iter().map(|v| retired_version(v)));
    }
    // Refining only edits schema keywords, so reading it back cannot fail; the tests
    // check the refinements are there.
    serde_json::from_value(value).unwrap_or(raw)
}

/// `crd()` as YAML, as `tfjob-operator crd` prints it.
pub fn crd_yaml() -> String {
    serde_saphyr::to_string(&crd()).unwrap_or_else(|e| format!("# cannot serialise the CRD: {e}\n"))
}

/// The versions of Kubeflow's TFJob before `v1`, newest first.
pub const RETIRED_VERSIONS: [&str; 4] = ["v1beta2", "v1beta1", "v1alpha2", "v1alpha1"];

/// What the API server answers, as a 422 on `spec`, to a write through a retired version.
pub fn retired_version_message(version: &str) -> String {
    format!(
        "kubeflow.org/{version} TFJobs are no longer served: rewrite the manifest as \
         kubeflow.org/v1 with `tfjob-operator convert FILE`"
    )
}

/// A retired version: served (so `kubectl apply` of an old manifest reaches the API server
/// instead of failing with "no matches for kind"), deprecated (kubectl prints the warning),
/// never stored, and refusing every write with [`retired_version_message`]. Its schema is
/// tiny, so the CRD stays far below the last-applied annotation limit.
fn retired_version(version: &str) -> Value {
    json!({
        "name": version,
        "served": true,
        "storage": false,
        "deprecated": true,
        "deprecationWarning": format!(
            "kubeflow.org/{version} TFJob is retired; `tfjob-operator convert FILE` rewrites it as kubeflow.org/v1"
        ),
        "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-validations": [rule("false", &retired_version_message(version))],
            }},
        }},
    })
}

fn refine(schema: &mut Value) {
    strip_long_descriptions(schema);
    drop_null_enum_values(schema);
    if let Some(spec) = schema.pointer_mut("/properties/spec") {
        refine_spec(spec);
    }
    if let Some(template) = schema.pointer_mut(
        "/properties/spec/properties/tfReplicaSpecs/additionalProperties/properties/template",
    ) {
        strip_descriptions(template);
    }
}

fn refine_spec(spec: &mut Value) {
    add_rules(
        spec,
        vec![rule(
            &managed_by_unchanged(),
            "spec.runPolicy.managedBy is immutable",
        )],
    );
    if let Some(managed_by) = spec.pointer_mut("/properties/runPolicy/properties/managedBy") {
        managed_by["enum"] = json!([MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE]);
        managed_by["maxLength"] = json!(63);
    }
    if let Some(specs) = spec.pointer_mut("/properties/tfReplicaSpecs") {
        specs["minProperties"] = json!(1);
        specs["maxProperties"] = json!(MAX_REPLICA_TYPES);
        add_rules(specs, replica_type_rules());
    }
}

/// The rules on the `tfReplicaSpecs` map (docs/behaviour.md §3). Keys match case-insensitively, via
/// `lowerAscii()` from the CEL strings extension every Kubernetes version with CRD CEL has.
/// Two spellings of one type (`Worker` and `worker`) are left to the controller: an
/// O(n²) rule on unbounded key strings would strain the cost budget.
fn replica_type_rules() -> Vec<Value> {
    let is_chief = format!("k.lowerAscii() in {CHIEF_KEYS}");
    vec![
        rule(
            "self.all(k, k.lowerAscii() in ['chief', 'master', 'ps', 'worker', 'evaluator'])",
            "replica types must be Chief, Master, PS, Worker or Evaluator (any case)",
        ),
        rule(
            &format!("self.filter(k, {is_chief}).size() <= 1"),
            "set at most one of Chief and Master",
        ),
        rule(
            &format!(
                "self.all(k, !({is_chief}) || !has(self[k].replicas) || self[k].replicas == 1)"
            ),
            "a Chief or Master must have exactly 1 replica",
        ),
        rule(
            &format!(
                "self.exists(k, {is_chief}) || self.exists(k, k.lowerAscii() == 'worker' && \
                 (!has(self[k].replicas) || self[k].replicas >= 1))"
            ),
            "a Chief, a Master or a Worker with at least 1 replica must decide the job's success",
        ),
    ]
}

/// A transition rule on `spec`: the effective managedBy (absent = the training operator)
/// never changes, including being added or removed after creation.
fn managed_by_unchanged() -> String {
    let effective = |v: &str| {
        format!(
            "(has({v}.runPolicy) && has({v}.runPolicy.managedBy) ? {v}.runPolicy.managedBy : \
             '{MANAGED_BY_TRAINING_OPERATOR}')"
        )
    };
    format!("{} == {}", effective("self"), effective("oldSelf"))
}

fn rule(rule: &str, message: &str) -> Value {
    json!({ "rule": rule, "message": message })
}

fn add_rules(node: &mut Value, rules: Vec<Value>) {
    node["x-kubernetes-validations"] = Value::Array(rules);
}

/// Apply `f` to `node` and every schema nested in it.
fn walk(node: &mut Value, f: &mut impl FnMut(&mut serde_json::Map<String, Value>)) {
    let Value::Object(map) = node else { return };
    f(map);
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        props.values_mut().for_each(|p| walk(p, f));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            walk(child, f);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(|c| walk(c, f));
        }
    }
}

fn strip_descriptions(node: &mut Value) {
    walk(node, &mut |m| {
        m.remove("description");
    });
}

fn strip_long_descriptions(node: &mut Value) {
    walk(node, &mut |m| {
        if m.get("description")
            .and_then(Value::as_str)
            .is_some_and(|d| d.len() > MAX_DESCRIPTION)
        {
            m.remove("description");
        }
    });
}

/// schemars lists `null` among an optional enum's values; `nullable: true` already says it.
fn drop_null_enum_values(node: &mut Value) {
    walk(node, &mut |m| {
        if let Some(Value::Array(values)) = m.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        let crd = serde_json::to_value(crd()).unwrap();
        crd.pointer("/spec/versions/0/schema/openAPIV3Schema")
            .unwrap()
            .clone()
    }

    #[test]
    fn template_has_no_descriptions_and_none_are_long() {
        let mut s = schema();
        let mut template = s
            .pointer("/properties/spec/properties/tfReplicaSpecs/additionalProperties/properties/template")
            .unwrap()
            .clone();
        let mut count = 0;
        walk(&mut template, &mut |m| {
            count += usize::from(m.contains_key("description"))
        });
        assert_eq!(count, 0);
        walk(&mut s, &mut |m| {
            let d = m
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            assert!(d.len() <= MAX_DESCRIPTION, "{d}");
        });
    }

    #[test]
    fn refinements_present() {
        let s = schema();
        let specs = s
            .pointer("/properties/spec/properties/tfReplicaSpecs")
            .unwrap();
        assert_eq!(specs["maxProperties"], json!(8));
        assert_eq!(specs["minProperties"], json!(1));
        assert_eq!(
            specs["x-kubernetes-validations"].as_array().unwrap().len(),
            4
        );
        let spec = s.pointer("/properties/spec").unwrap();
        assert!(
            spec["x-kubernetes-validations"][0]["rule"]
                .as_str()
                .unwrap()
                .contains("oldSelf")
        );
        let managed_by = s
            .pointer("/properties/spec/properties/runPolicy/properties/managedBy")
            .unwrap();
        assert_eq!(
            managed_by["enum"],
            json!([MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE])
        );
        let clean = s
            .pointer("/properties/spec/properties/runPolicy/properties/cleanPodPolicy")
            .unwrap();
        assert_eq!(clean["enum"], json!(["All", "Running", "None"]));
    }

    #[test]
    fn retired_versions_are_served_never_stored_and_refused() {
        let crd = crd();
        let versions = &crd.spec.versions;
        let names: Vec<&str> = versions.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["v1", "v1beta2", "v1beta1", "v1alpha2", "v1alpha1"]);
        assert!(versions[0].storage && versions[0].served);
        assert_eq!(versions[0].deprecated, None);
        for v in &versions[1..] {
            assert!(v.served && !v.storage, "{}", v.name);
            assert_eq!(v.deprecated, Some(true));
            assert!(
                v.deprecation_warning
                    .as_deref()
                    .is_some_and(|w| w.contains("tfjob-operator convert")),
                "{}",
                v.name
            );
            let schema = serde_json::to_value(&v.schema).unwrap();
            let rules =
                &schema["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"];
            assert_eq!(rules[0]["rule"], "false");
            assert_eq!(rules[0]["message"], retired_version_message(&v.name));
        }
    }

    #[test]
    fn yaml_is_deterministic() {
        assert_eq!(crd_yaml(), crd_yaml());
        assert!(crd_yaml().starts_with("apiVersion: apiextensions.k8s.io/v1\n"));
    }
}
