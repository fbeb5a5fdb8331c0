//! Table-driven tests of the CRD schema pipeline: structural check, pruning, defaulting,
//! validation messages, CEL rules, and a large schema with a full PodTemplateSpec.

use serde_json::{Value, json};

use super::{Cause, CompiledSchema};

fn compile(schema: Value) -> CompiledSchema {
    match CompiledSchema::compile(&schema) {
        Ok(c) => c,
        Err(e) => panic!("schema should compile: {e:?}"),
    }
}

/// A root schema with `spec` as given.
fn with_spec(spec: Value) -> CompiledSchema {
    compile(json!({"type": "object", "properties": {"spec": spec}}))
}

fn admit(c: &CompiledSchema, mut obj: Value, old: Option<&Value>) -> Result<Value, Vec<Cause>> {
    c.admit(&mut obj, old).map(|()| obj)
}

fn messages(r: Result<Value, Vec<Cause>>) -> Vec<(String, String, String)> {
    match r {
        Ok(v) => panic!("expected rejection, admitted {v}"),
        Err(causes) => causes
            .into_iter()
            .map(|c| (c.field, c.message, c.reason))
            .collect(),
    }
}

fn one(field: &str, message: &str, reason: &str) -> Vec<(String, String, String)> {
    vec![(field.into(), message.into(), reason.into())]
}

#[test]
fn structural_check_rejects_with_real_paths_and_messages() {
    let p = "spec.versions[0].schema.openAPIV3Schema";
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type",
            "Required value: must not be empty for specified object fields",
        ),
        (
            json!({"properties": {}}),
            "spec.versions[0].schema.openAPIV3Schema.type",
            "Required value: must not be empty at the root",
        ),
        (
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[l].items.type",
            "Required value: must not be empty for specified array items",
        ),
        (
            json!({"type": "object", "properties": {"l": {"type": "array"}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[l].items",
            "Required value: must be specified",
        ),
        (
            json!({"type": "string"}),
            "spec.versions[0].schema.openAPIV3Schema.type",
            "Invalid value: \"string\": must be object at the root",
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": false}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[m].additionalProperties",
            "Forbidden: additionalProperties cannot be set to false",
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[m].additionalProperties",
            "Forbidden: additionalProperties and properties are mutual exclusive",
        ),
        (
            json!({"type": "object", "properties": {"l": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[l].uniqueItems",
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ),
        (
            json!({"type": "object", "properties": {"r": {"$ref": "#/x", "type": "object"}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[r].$ref",
            "Forbidden: $ref is not supported",
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[metadata]",
            "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
        ),
        (
            json!({"type": "object", "properties": {"x": {"type": "string", "anyOf": [{"type": "string"}, {"type": "boolean"}]}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[x].anyOf[0].type",
            "Forbidden: must be empty to be structural",
        ),
        (
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[x].pattern",
            "Invalid value: \"(\": must be a valid regular expression",
        ),
        (
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a >"}]}),
            "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule",
            "Invalid value: \"self.a >\": compilation failed",
        ),
    ];
    for (schema, field, message) in cases {
        let errs = CompiledSchema::compile(&schema).err().unwrap_or_default();
        assert!(
            errs.iter()
                .any(|c| c.field == field && c.message.starts_with(message)),
            "{schema}: want {field}: {message}; got {errs:?}"
        );
        assert!(errs.iter().all(|c| c.field.starts_with(p)));
    }
}

#[test]
fn structural_check_accepts_the_allowed_exceptions() {
    let ok = [
        json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
        json!({"type": "object", "properties": {"any": {"x-kubernetes-preserve-unknown-fields": true}}}),
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
        json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}}}),
        json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
    ];
    for schema in ok {
        assert!(CompiledSchema::compile(&schema).is_ok(), "{schema}");
    }
    let at = CompiledSchema::compile_at(
        &json!({"type": "string"}),
        "spec.versions[1].schema.openAPIV3Schema",
    );
    assert_eq!(
        at.err().map(|e| e[0].field.clone()).as_deref(),
        Some("spec.versions[1].schema.openAPIV3Schema.type")
    );
}

#[test]
fn pruning_drops_unknown_fields_and_keeps_what_the_server_keeps() {
    let c = compile(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"typed": {"type": "object", "properties": {"k": {"type": "string"}}}}},
            "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "integer"}}}},
            "l": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}}
        }}
    }}));
    let obj = json!({
        "apiVersion": "x/v1", "kind": "K",
        "metadata": {"name": "n", "labels": {"a": "b"}, "bogus": 1},
        "spec": {"a": "x", "b": "gone", "free": {"anything": {"deep": 1}, "typed": {"k": "v", "gone": 1}},
                 "m": {"k1": {"v": 1, "gone": 2}}, "l": [{"n": "a", "gone": 3}]},
        "status": {"phase": "gone"}
    });
    let mut got = obj.clone();
    let warnings = c.admit_with_warnings(&mut got, None).unwrap_or_default();
    assert_eq!(
        got,
        json!({
            "apiVersion": "x/v1", "kind": "K",
            "metadata": {"name": "n", "labels": {"a": "b"}},
            "spec": {"a": "x", "free": {"anything": {"deep": 1}, "typed": {"k": "v"}},
                     "m": {"k1": {"v": 1}}, "l": [{"n": "a"}]}
        })
    );
    assert!(
        warnings.contains(&"unknown field \"status\"".to_string()),
        "{warnings:?}"
    );
    assert!(
        warnings.contains(&"unknown field \"spec.l[0].gone\"".to_string()),
        "{warnings:?}"
    );
    assert!(
        warnings.contains(&"unknown field \"metadata.bogus\"".to_string()),
        "{warnings:?}"
    );
}

#[test]
fn defaulting_fills_absent_and_null_fields_recursively() {
    let c = with_spec(json!({"type": "object", "properties": {
        "policy": {"type": "string", "default": "Never"},
        "nullable": {"type": "string", "nullable": true, "default": "d"},
        "plain": {"type": "string"},
        "run": {"type": "object", "default": {}, "properties": {"clean": {"type": "string", "default": "None"}}},
        "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"r": {"type": "integer", "default": 1}}}}
    }}));
    let cases = [
        (
            json!({}),
            json!({"policy": "Never", "nullable": "d", "run": {"clean": "None"}}),
        ),
        (
            json!({"policy": null, "nullable": null, "plain": null}),
            json!({"policy": "Never", "nullable": null, "run": {"clean": "None"}}),
        ),
        (
            json!({"policy": "Always", "run": {"clean": "All"}, "m": {"w": {}}}),
            json!({"policy": "Always", "nullable": "d", "run": {"clean": "All"}, "m": {"w": {"r": 1}}}),
        ),
    ];
    for (spec, want) in cases {
        let got = admit(&c, json!({"spec": spec}), None).map(|o| o["spec"].clone());
        assert_eq!(got.ok(), Some(want.clone()), "want {want}");
    }
}

#[test]
fn validation_messages_match_the_real_server() {
    type Case = (Value, Value, &'static str, &'static str, &'static str);
    let cases: Vec<Case> = vec![
        (
            json!({"type": "integer", "minimum": 0}),
            json!(-1),
            "spec.v",
            "Invalid value: -1: spec.v in body should be greater than or equal to 0",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true}),
            json!(0),
            "spec.v",
            "Invalid value: 0: spec.v in body should be greater than 0",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "number", "maximum": 1.5}),
            json!(2),
            "spec.v",
            "Invalid value: 2: spec.v in body should be less than or equal to 1.5",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(10),
            "spec.v",
            "Invalid value: 10: spec.v in body should be less than 10",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "integer", "multipleOf": 2}),
            json!(3),
            "spec.v",
            "Invalid value: 3: spec.v in body should be a multiple of 2",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "integer"}),
            json!("1"),
            "spec.v",
            "Invalid value: \"string\": spec.v in body must be of type integer: \"string\"",
            "FieldValueTypeInvalid",
        ),
        (
            json!({"type": "integer"}),
            json!(1.5),
            "spec.v",
            "Invalid value: \"number\": spec.v in body must be of type integer: \"number\"",
            "FieldValueTypeInvalid",
        ),
        (
            json!({"type": "object"}),
            json!([]),
            "spec.v",
            "Invalid value: \"array\": spec.v in body must be of type object: \"array\"",
            "FieldValueTypeInvalid",
        ),
        (
            json!({"x-kubernetes-int-or-string": true}),
            json!(true),
            "spec.v",
            "Invalid value: \"boolean\": spec.v in body must be of type integer,string: \"boolean\"",
            "FieldValueTypeInvalid",
        ),
        (
            json!({"type": "string", "enum": ["Always", "Never"]}),
            json!("Sometimes"),
            "spec.v",
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\"",
            "FieldValueNotSupported",
        ),
        (
            json!({"type": "string", "minLength": 1}),
            json!(""),
            "spec.v",
            "Invalid value: \"\": spec.v in body should be at least 1 chars long",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "string", "maxLength": 3}),
            json!("abcd"),
            "spec.v",
            "Too long: may not be more than 3 bytes",
            "FieldValueTooLong",
        ),
        (
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("ABC"),
            "spec.v",
            "Invalid value: \"ABC\": spec.v in body should match '^[a-z]+$'",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            json!("soon"),
            "spec.v",
            "Invalid value: \"soon\": spec.v in body must be of type date-time: \"soon\"",
            "FieldValueTypeInvalid",
        ),
        (
            json!({"type": "array", "minItems": 1, "items": {"type": "string"}}),
            json!([]),
            "spec.v",
            "Invalid value: 0: spec.v in body should have at least 1 items",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "array", "maxItems": 1, "items": {"type": "string"}}),
            json!(["a", "b"]),
            "spec.v",
            "Too many: 2: must have at most 1 item",
            "FieldValueTooMany",
        ),
        (
            json!({"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}}),
            json!({}),
            "spec.v",
            "Invalid value: 1: spec.v in body should have at least 1 properties",
            "FieldValueInvalid",
        ),
        (
            json!({"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}),
            json!({"a": "1", "b": "2"}),
            "spec.v",
            "Too many: 2: must have at most 1 item",
            "FieldValueTooMany",
        ),
        (
            json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}),
            json!({}),
            "spec.v.name",
            "Required value",
            "FieldValueRequired",
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}),
            json!(["a", "a"]),
            "spec.v[1]",
            "Duplicate value: \"a\"",
            "FieldValueDuplicate",
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
            json!([{"name": "a"}, {"name": "a"}]),
            "spec.v[1]",
            "Duplicate value: {\"name\":\"a\"}",
            "FieldValueDuplicate",
        ),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            json!(["a", null]),
            "spec.v[1]",
            "Invalid value: \"null\": spec.v[1] in body must be of type string: \"null\"",
            "FieldValueTypeInvalid",
        ),
    ];
    for (schema, value, field, message, reason) in cases {
        let c = with_spec(json!({"type": "object", "properties": {"v": schema}}));
        let got = messages(admit(&c, json!({"spec": {"v": value}}), None));
        assert_eq!(got[0], one(field, message, reason)[0], "{schema}");
    }
}

#[test]
fn valid_values_pass_including_nullable_int_or_string_and_integral_floats() {
    let c = with_spec(json!({"type": "object", "properties": {
        "n": {"type": "string", "nullable": true},
        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "i": {"type": "integer", "minimum": 0},
        "f": {"type": "number"},
        "t": {"type": "string", "format": "date-time"}
    }}));
    for spec in [
        json!({"n": null, "port": 8080, "i": 2.0, "f": 1, "t": "2024-01-01T00:00:00Z"}),
        json!({"port": "http", "i": 0, "f": 0.5}),
    ] {
        assert!(
            admit(&c, json!({"spec": spec.clone()}), None).is_ok(),
            "{spec}"
        );
    }
}

#[test]
fn map_values_get_kubernetes_style_paths() {
    let c = with_spec(
        json!({"type": "object", "properties": {"tfReplicaSpecs": {"type": "object",
        "additionalProperties": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0},
            "restartPolicy": {"type": "string", "enum": ["Always", "OnFailure", "Never", "ExitCode"]}}}}}}),
    );
    let got = messages(admit(
        &c,
        json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": -1}}}}),
        None,
    ));
    assert_eq!(
        got,
        one(
            "spec.tfReplicaSpecs.Worker.replicas",
            "Invalid value: -1: spec.tfReplicaSpecs.Worker.replicas in body should be greater than or equal to 0",
            "FieldValueInvalid",
        )
    );
}

fn cel_schema() -> CompiledSchema {
    with_spec(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.min >= 0", "messageExpression": "'min is ' + string(self.min)"},
            {"rule": "self.max < 100", "fieldPath": ".max", "reason": "FieldValueForbidden", "message": "too big"},
            {"rule": "self.max != 42"},
            {"rule": "self.min == oldSelf.min", "message": "min is immutable"}
        ],
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}}}))
}

#[test]
fn cel_rules_report_like_the_real_server() {
    let c = cel_schema();
    let cases = [
        (
            json!({"min": 5, "max": 1}),
            "spec",
            "Invalid value: \"object\": min must not exceed max",
            "FieldValueInvalid",
        ),
        (
            json!({"min": -1, "max": 1}),
            "spec",
            "Invalid value: \"object\": min is -1",
            "FieldValueInvalid",
        ),
        (
            json!({"min": 1, "max": 200}),
            "spec.max",
            "Forbidden: too big",
            "FieldValueForbidden",
        ),
        (
            json!({"min": 1, "max": 42}),
            "spec",
            "Invalid value: \"object\": failed rule: self.max != 42",
            "FieldValueInvalid",
        ),
    ];
    for (spec, field, message, reason) in cases {
        let got = messages(admit(&c, json!({"spec": spec.clone()}), None));
        assert_eq!(got, one(field, message, reason), "{spec}");
    }
    assert!(admit(&c, json!({"spec": {"min": 1, "max": 2}}), None).is_ok());
}

#[test]
fn transition_rules_run_only_on_update() {
    let c = cel_schema();
    let old = json!({"spec": {"min": 1, "max": 2}});
    assert!(
        admit(&c, json!({"spec": {"min": 2, "max": 3}}), None).is_ok(),
        "create skips oldSelf rules"
    );
    let got = messages(admit(&c, json!({"spec": {"min": 2, "max": 3}}), Some(&old)));
    assert_eq!(
        got,
        one(
            "spec",
            "Invalid value: \"object\": min is immutable",
            "FieldValueInvalid"
        )
    );
    assert!(admit(&c, json!({"spec": {"min": 1, "max": 3}}), Some(&old)).is_ok());
}

#[test]
fn cel_is_skipped_after_type_errors() {
    let c = cel_schema();
    let got = messages(admit(&c, json!({"spec": {"min": "x", "max": 42}}), None));
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].0, "<nil>");
    assert!(got[1].1.contains("some validation rules were not checked"));
}

#[test]
fn compiled_schema_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledSchema>();
}

mod pod_template {
    //! A realistic CRD: kube's derive over a spec holding a full k8s-openapi PodTemplateSpec.
    use super::*;
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use kube::CustomResourceExt;

    #[derive(
        kube::CustomResource,
        serde::Serialize,
        serde::Deserialize,
        Clone,
        Debug,
        schemars::JsonSchema,
    )]
    #[kube(
        group = "example.dev",
        version = "v1",
        kind = "Trainer",
        namespaced,
        status = "TrainerStatus"
    )]
    pub struct TrainerSpec {
        #[schemars(range(min = 0))]
        pub replicas: Option<i32>,
        pub template: PodTemplateSpec,
    }

    #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, schemars::JsonSchema)]
    pub struct TrainerStatus {
        pub phase: Option<String>,
    }

    #[test]
    fn compiles_and_admits_a_pod_template() {
        let crd = serde_json::to_value(Trainer::crd()).unwrap_or_default();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let c = compile(schema.clone());
        let obj = json!({
            "apiVersion": "example.dev/v1", "kind": "Trainer", "metadata": {"name": "t"},
            "spec": {"replicas": 2, "template": {
                "metadata": {"labels": {"app": "tf"}},
                "spec": {"restartPolicy": "OnFailure", "containers": [{
                    "name": "tensorflow", "image": "tf:2", "command": ["python", "train.py"],
                    "ports": [{"containerPort": 2222, "name": "tfjob-port"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    "env": [{"name": "A", "value": "1"}],
                    "readinessProbe": {"httpGet": {"port": "http", "path": "/"}},
                    "notAField": true
                }]}}},
            "status": {"phase": "Running", "undeclared": 1}
        });
        let got = admit(&c, obj, None).unwrap_or_default();
        let container = &got["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            container["readinessProbe"]["httpGet"]["port"],
            json!("http")
        );
        assert_eq!(container["resources"]["limits"]["memory"], json!("1Gi"));
        assert!(
            container.get("notAField").is_none(),
            "unknown container field pruned"
        );
        assert_eq!(got["status"], json!({"phase": "Running"}));
        assert_eq!(
            got["spec"]["template"]["metadata"]["labels"]["app"],
            json!("tf")
        );

        let bad = json!({"spec": {"replicas": -1, "template": {"spec": {"containers": [{"image": "x"}]}}}});
        let causes = messages(admit(&c, bad, None));
        let fields: Vec<&str> = causes.iter().map(|c| c.0.as_str()).collect();
        assert!(fields.contains(&"spec.replicas"), "{causes:?}");
        assert!(
            fields.contains(&"spec.template.spec.containers[0].name"),
            "{causes:?}"
        );
    }
}
