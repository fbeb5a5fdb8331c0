//! OpenAPI value validation of a custom object, with kube-openapi's checks and messages as the
//! apiextensions-apiserver reports them (pure, no I/O).
//!
//! A type mismatch stops the checks of that node (as kube-openapi does); `null` passes only
//! where `nullable` (non-nullable nulls inside objects were already dropped by defaulting).

use serde_json::{Value, json};

use super::cause::{
    Cause, child, duplicate, go_float, index, invalid, not_supported, quote, required, too_long,
    too_many, type_invalid,
};
use super::format;
use super::node::{Additional, Node};

/// `"<path> in body <rest>"`, the kube-openapi error text.
fn body(path: &str, rest: &str) -> String {
    if path.is_empty() {
        rest.to_string()
    } else {
        format!("{path} in body {rest}")
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Number(n) if is_integral(n) => "integer",
        Value::Number(_) => "number",
    }
}

fn is_integral(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn type_matches(node: &Node, v: &Value) -> bool {
    let actual = json_type(v);
    if node.int_or_string {
        return actual == "integer" || actual == "string";
    }
    match node.type_.as_str() {
        "" => true,
        "number" => actual == "integer" || actual == "number",
        t => t == actual,
    }
}

/// Appends every violation of `node` by `value` at `path` to `errs`.
pub(crate) fn validate(node: &Node, value: &Value, path: &str, errs: &mut Vec<Cause>) {
    if value.is_null() && (node.nullable || (node.type_.is_empty() && !node.int_or_string)) {
        return;
    }
    if !type_matches(node, value) {
        let actual = json_type(value);
        let want = if node.int_or_string {
            "integer,string"
        } else {
            node.type_.as_str()
        };
        let detail = body(path, &format!("must be of type {want}: {}", quote(actual)));
        errs.push(type_invalid(path, &json!(actual), &detail));
        return;
    }
    if let Some(allowed) = &node.enum_values
        && !allowed.contains(value)
    {
        errs.push(not_supported(path, value, allowed));
    }
    match value {
        Value::String(s) => validate_string(node, s, value, path, errs),
        Value::Number(n) => validate_number(node, n.as_f64().unwrap_or(0.0), value, path, errs),
        Value::Array(list) => validate_array(node, list, path, errs),
        Value::Object(obj) => validate_object(node, obj, path, errs),
        _ => {}
    }
    validate_junctors(node, value, path, errs);
}

fn validate_string(node: &Node, s: &str, value: &Value, path: &str, errs: &mut Vec<Cause>) {
    let len = s.chars().count() as u64;
    if let Some(min) = node.min_length
        && len < min
    {
        errs.push(invalid(
            path,
            value,
            &body(path, &format!("should be at least {min} chars long")),
        ));
    }
    if let Some(max) = node.max_length
        && len > max
    {
        errs.push(too_long(path, max));
    }
    if let Some((pattern, re)) = &node.pattern
        && !re.is_match(s)
    {
        errs.push(invalid(
            path,
            value,
            &body(path, &format!("should match '{pattern}'")),
        ));
    }
    if let Some(f) = &node.format
        && !format::is_valid(f, s)
    {
        let detail = body(path, &format!("must be of type {f}: {}", quote(s)));
        errs.push(type_invalid(path, value, &detail));
    }
}

fn validate_number(node: &Node, f: f64, value: &Value, path: &str, errs: &mut Vec<Cause>) {
    if let Some(min) = node.minimum {
        let (bad, words) = if node.exclusive_minimum {
            (f <= min, "greater than")
        } else {
            (f < min, "greater than or equal to")
        };
        if bad {
            errs.push(invalid(
                path,
                value,
                &body(path, &format!("should be {words} {}", go_float(min))),
            ));
        }
    }
    if let Some(max) = node.maximum {
        let (bad, words) = if node.exclusive_maximum {
            (f >= max, "less than")
        } else {
            (f > max, "less than or equal to")
        };
        if bad {
            errs.push(invalid(
                path,
                value,
                &body(path, &format!("should be {words} {}", go_float(max))),
            ));
        }
    }
    if let Some(m) = node.multiple_of
        && m > 0.0
        && (f / m).fract() != 0.0
    {
        errs.push(invalid(
            path,
            value,
            &body(path, &format!("should be a multiple of {}", go_float(m))),
        ));
    }
}

fn validate_array(node: &Node, list: &[Value], path: &str, errs: &mut Vec<Cause>) {
    if let Some(min) = node.min_items
        && (list.len() as u64) < min
    {
        let detail = body(path, &format!("should have at least {min} items"));
        errs.push(invalid(path, &json!(list.len()), &detail));
    }
    if let Some(max) = node.max_items
        && list.len() as u64 > max
    {
        errs.push(too_many(path, list.len(), max));
    }
    if let Some(items) = &node.items {
        for (i, item) in list.iter().enumerate() {
            validate(items, item, &index(path, i), errs);
        }
    }
    validate_list_type(node, list, path, errs);
}

/// `x-kubernetes-list-type`: `set` items and `map` keys must be unique.
fn validate_list_type(node: &Node, list: &[Value], path: &str, errs: &mut Vec<Cause>) {
    let identity = |item: &Value| -> Value {
        match node.list_type.as_deref() {
            Some("map") => {
                let keys = node
                    .list_map_keys
                    .iter()
                    .filter_map(|k| Some((k.clone(), item.get(k)?.clone())));
                Value::Object(keys.collect())
            }
            _ => item.clone(),
        }
    };
    if !matches!(node.list_type.as_deref(), Some("set" | "map")) {
        return;
    }
    let mut seen: Vec<Value> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let id = identity(item);
        if seen.contains(&id) {
            errs.push(duplicate(&index(path, i), &id));
        } else {
            seen.push(id);
        }
    }
}

fn validate_object(
    node: &Node,
    obj: &serde_json::Map<String, Value>,
    path: &str,
    errs: &mut Vec<Cause>,
) {
    for name in &node.required {
        if !obj.contains_key(name) {
            errs.push(required(&child(path, name), ""));
        }
    }
    if let Some(min) = node.min_properties
        && (obj.len() as u64) < min
    {
        let detail = body(path, &format!("should have at least {min} properties"));
        errs.push(invalid(path, &json!(min), &detail));
    }
    if let Some(max) = node.max_properties
        && obj.len() as u64 > max
    {
        errs.push(too_many(path, obj.len(), max));
    }
    for (k, v) in obj {
        let schema = node.properties.get(k).or(match &node.additional {
            Additional::Schema(s) => Some(s.as_ref()),
            _ => None,
        });
        if let Some(schema) = schema {
            validate(schema, v, &child(path, k), errs);
        }
    }
}

fn passes(node: &Node, value: &Value, path: &str) -> bool {
    let mut scratch = Vec::new();
    validate(node, value, path, &mut scratch);
    scratch.is_empty()
}

fn validate_junctors(node: &Node, value: &Value, path: &str, errs: &mut Vec<Cause>) {
    for branch in &node.all_of {
        validate(branch, value, path, errs);
    }
    if !node.any_of.is_empty() && !node.any_of.iter().any(|b| passes(b, value, path)) {
        errs.push(invalid(
            path,
            value,
            &body(path, "must validate at least one schema (anyOf)"),
        ));
    }
    if !node.one_of.is_empty()
        && node
            .one_of
            .iter()
            .filter(|b| passes(b, value, path))
            .count()
            != 1
    {
        errs.push(invalid(
            path,
            value,
            &body(path, "must validate one and only one schema (oneOf)"),
        ));
    }
    if let Some(not) = &node.not
        && passes(not, value, path)
    {
        errs.push(invalid(
            path,
            value,
            &body(path, "must not validate the schema (not)"),
        ));
    }
}
