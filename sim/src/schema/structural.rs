//! CRD-creation checks of an `openAPIV3Schema`: the apiextensions API rules and the structural
//! schema invariants the real apiextensions-apiserver enforces (pure, no I/O).
//!
//! Covered: `$ref`/`id`/`definitions`/`dependencies`/`patternProperties`/`additionalItems`
//! forbidden, `uniqueItems: true`, `additionalProperties: false`, `properties` together with
//! `additionalProperties`, `type` required on every node (except int-or-string and
//! preserve-unknown-fields), `items` required on arrays, `object` at the root, nothing but
//! `name`/`generateName` under root `metadata`, embedded-resource rules, the logical junctors
//! (`allOf`/`anyOf`/`oneOf`/`not`) carrying only value validations, valid `pattern`s and
//! compilable CEL rules. Not covered: structural completeness of junctor properties.

use serde_json::{Map, Value};

use super::cause::{Cause, child, forbidden, index, invalid, key, required};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// All reasons `schema` is not acceptable, sorted like the real server sorts them.
pub(crate) fn check(schema: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    match schema.as_object() {
        Some(s) => check_node(s, Level::Root, path, &mut errs),
        None => errs.push(required(
            &child(path, "type"),
            "must not be empty at the root",
        )),
    }
    errs.sort_by(|a, b| (&a.field, &a.message).cmp(&(&b.field, &b.message)));
    errs
}

fn check_node(s: &Map<String, Value>, lvl: Level, path: &str, errs: &mut Vec<Cause>) {
    check_api_rules(s, path, errs);
    let ty = s.get("type").and_then(Value::as_str).unwrap_or_default();
    let flag = |k: &str| s.get(k).and_then(Value::as_bool) == Some(true);
    let (int_or_string, preserve, embedded) = (
        flag("x-kubernetes-int-or-string"),
        flag("x-kubernetes-preserve-unknown-fields"),
        flag("x-kubernetes-embedded-resource"),
    );
    if ty == "array" && !s.contains_key("items") {
        errs.push(required(&child(path, "items"), "must be specified"));
    }
    if let Some(items) = s.get("items").and_then(Value::as_object) {
        check_node(items, Level::Item, &child(path, "items"), errs);
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if let Some(prop) = prop.as_object() {
                check_node(
                    prop,
                    Level::Field,
                    &key(&child(path, "properties"), name),
                    errs,
                );
            }
        }
    }
    if let Some(add) = s.get("additionalProperties") {
        if lvl == Level::Root {
            errs.push(forbidden(
                &child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(add) = add.as_object() {
            check_node(
                add,
                Level::Field,
                &child(path, "additionalProperties"),
                errs,
            );
        }
        if embedded {
            let p = child(path, "additionalProperties");
            errs.push(forbidden(
                &p,
                "must not be used if x-kubernetes-embedded-resource is set",
            ));
        }
    }
    if int_or_string && preserve {
        let p = child(path, "x-kubernetes-preserve-unknown-fields");
        errs.push(invalid(
            &p,
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    check_type(ty, lvl, path, (int_or_string, preserve, embedded), errs);
    check_junctors(s, path, errs);
    if lvl == Level::Root || embedded {
        check_resource_fields(s, lvl, path, errs);
    }
    if embedded
        && !preserve
        && s.get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        let detail = "must not be empty if x-kubernetes-embedded-resource is true without \
                      x-kubernetes-preserve-unknown-fields";
        errs.push(required(&child(path, "properties"), detail));
    }
    check_rules(s, path, errs);
}

fn check_type(ty: &str, lvl: Level, path: &str, flags: (bool, bool, bool), errs: &mut Vec<Cause>) {
    let (int_or_string, preserve, embedded) = flags;
    let p = child(path, "type");
    if embedded && ty != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if ty.is_empty() {
            required(&p, detail)
        } else {
            invalid(&p, &ty.into(), detail)
        });
    } else if ty.is_empty() && !int_or_string && !preserve {
        errs.push(required(
            &p,
            match lvl {
                Level::Root => "must not be empty at the root",
                Level::Item => "must not be empty for specified array items",
                Level::Field => "must not be empty for specified object fields",
            },
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(invalid(&p, &ty.into(), "must be object at the root"));
    }
}

/// The apiextensions API validation (independent of structurality).
fn check_api_rules(s: &Map<String, Value>, path: &str, errs: &mut Vec<Cause>) {
    let unsupported = [
        ("$ref", "$ref is not supported"),
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
    ];
    for (k, detail) in unsupported {
        if s.contains_key(k) {
            errs.push(forbidden(&child(path, k), detail));
        }
    }
    if s.get("type").and_then(Value::as_str) == Some("null") {
        errs.push(forbidden(
            &child(path, "type"),
            "type cannot be set to null",
        ));
    }
    if s.get("items").is_some_and(Value::is_array) {
        errs.push(forbidden(
            &child(path, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if s.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        let detail =
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic";
        errs.push(forbidden(&child(path, "uniqueItems"), detail));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(false)) => {
            let p = child(path, "additionalProperties");
            errs.push(forbidden(&p, "additionalProperties cannot be set to false"));
        }
        Some(_)
            if s.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty()) =>
        {
            let p = child(path, "additionalProperties");
            errs.push(forbidden(
                &p,
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        _ => {}
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(p)
    {
        let detail = format!("must be a valid regular expression, but isn't: {e}");
        errs.push(invalid(&child(path, "pattern"), &p.into(), &detail));
    }
}

/// `apiVersion`/`kind`/`metadata` of a resource (root or embedded) and the root metadata limit.
fn check_resource_fields(s: &Map<String, Value>, lvl: Level, path: &str, errs: &mut Vec<Cause>) {
    let Some(props) = s.get("properties").and_then(Value::as_object) else {
        return;
    };
    let type_of = |name: &str| {
        props
            .get(name)
            .map(|p| p.get("type").and_then(Value::as_str).unwrap_or(""))
    };
    let props_path = child(path, "properties");
    for (name, want) in [
        ("kind", "string"),
        ("apiVersion", "string"),
        ("metadata", "object"),
    ] {
        if let Some(ty) = type_of(name)
            && ty != want
        {
            errs.push(invalid(
                &child(&key(&props_path, name), "type"),
                &ty.into(),
                &format!("must be {want}"),
            ));
        }
    }
    let Some(meta) = props.get("metadata").and_then(Value::as_object) else {
        return;
    };
    if lvl != Level::Root {
        return;
    }
    let only_names = meta.iter().all(|(k, v)| match k.as_str() {
        "type" | "description" => true,
        "properties" => v
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    });
    if !only_names {
        let detail = "must not specify anything other than name and generateName, but metadata is \
                      implicitly specified";
        errs.push(forbidden(&key(&props_path, "metadata"), detail));
    }
}

fn is_int_or_string_pair(list: &Value) -> bool {
    list == &serde_json::json!([{"type": "integer"}, {"type": "string"}])
}

fn check_junctors(s: &Map<String, Value>, path: &str, errs: &mut Vec<Cause>) {
    let skip_any_of = s.get("anyOf").is_some_and(is_int_or_string_pair);
    let skip_first_all_of = s
        .get("allOf")
        .and_then(|a| a.get(0))
        .and_then(|first| first.get("anyOf"))
        .is_some_and(is_int_or_string_pair);
    for junctor in ["allOf", "anyOf", "oneOf"] {
        let Some(list) = s.get(junctor).and_then(Value::as_array) else {
            continue;
        };
        if junctor == "anyOf" && skip_any_of {
            continue;
        }
        for (i, branch) in list.iter().enumerate() {
            let skip = junctor == "allOf" && i == 0 && skip_first_all_of;
            check_nested(branch, skip, &index(&child(path, junctor), i), errs);
        }
    }
    if let Some(not) = s.get("not") {
        check_nested(not, false, &child(path, "not"), errs);
    }
}

/// A schema under a logical junctor may only carry value validations.
fn check_nested(v: &Value, skip_any_of: bool, path: &str, errs: &mut Vec<Cause>) {
    let Some(s) = v.as_object() else { return };
    let rules: [(&str, &str); 11] = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
    ];
    for (k, detail) in rules {
        let set = match s.get(k) {
            None | Some(Value::Bool(false)) | Some(Value::Null) => false,
            Some(Value::String(x)) => !x.is_empty(),
            Some(Value::Array(x)) => !x.is_empty(),
            Some(_) => true,
        };
        if set {
            errs.push(forbidden(&child(path, k), detail));
        }
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        if props.contains_key("metadata") {
            let p = key(&child(path, "properties"), "metadata");
            errs.push(forbidden(&p, "must not be specified in a nested context"));
        }
        for (name, prop) in props {
            check_nested(prop, false, &key(&child(path, "properties"), name), errs);
        }
    }
    if let Some(items) = s.get("items") {
        check_nested(items, false, &child(path, "items"), errs);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if junctor == "anyOf" && skip_any_of {
            continue;
        }
        if let Some(list) = s.get(junctor).and_then(Value::as_array) {
            for (i, branch) in list.iter().enumerate() {
                check_nested(branch, false, &index(&child(path, junctor), i), errs);
            }
        }
    }
    if let Some(not) = s.get("not") {
        check_nested(not, false, &child(path, "not"), errs);
    }
}

/// Every `x-kubernetes-validations` rule and messageExpression must compile.
fn check_rules(s: &Map<String, Value>, path: &str, errs: &mut Vec<Cause>) {
    let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    let base = child(path, "x-kubernetes-validations");
    for (i, rule) in rules.iter().enumerate() {
        let at = index(&base, i);
        let Some(expr) = rule.get("rule").and_then(Value::as_str) else {
            errs.push(required(&child(&at, "rule"), ""));
            continue;
        };
        if let Err(e) = kube_cel::cel::Program::compile(expr) {
            let detail = format!("compilation failed: {e}");
            errs.push(invalid(&child(&at, "rule"), &expr.into(), &detail));
        }
        if let Some(msg) = rule.get("messageExpression").and_then(Value::as_str)
            && let Err(e) = kube_cel::cel::Program::compile(msg)
        {
            let detail = format!("messageExpression compilation failed: {e}");
            errs.push(invalid(
                &child(&at, "messageExpression"),
                &msg.into(),
                &detail,
            ));
        }
    }
}
