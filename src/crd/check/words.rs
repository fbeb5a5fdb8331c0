//! What the schema check asks of a schema node and a value, and how it words them:
//! Kubernetes' rendering of values, type names, and the "did you mean" for unknown fields. Pure.

use serde_json::{Map, Value};

pub(super) fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// The schema type a value fails to have, if it fails.
pub(super) fn type_mismatch(schema: &Value, value: &Value) -> Option<String> {
    let actual = match value {
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Null => return None,
    };
    if flag(schema, "x-kubernetes-int-or-string") {
        return (!matches!(actual, "integer" | "string")).then(|| "integer or string".into());
    }
    match schema.get("type").and_then(Value::as_str) {
        None => None,
        Some("number") if actual == "integer" => None,
        Some(want) if want == actual => None,
        Some(want) => Some(want.to_string()),
    }
}

/// The value a missing required field gets in the cleaned document.
pub(super) fn empty_of(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => Value::Object(Map::new()),
        Some("array") => Value::Array(Vec::new()),
        Some("string") => Value::String(String::new()),
        Some("integer" | "number") => Value::from(0),
        Some("boolean") => Value::Bool(false),
        _ => Value::Null,
    }
}

pub(super) fn num(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        Value::from(f as i64)
    } else {
        Value::from(f)
    }
}

/// A value as Kubernetes field errors show it: strings quoted, the rest as compact JSON.
pub(super) fn render(v: &Value) -> String {
    v.to_string()
}

/// ` (did you mean "x"?)` when one declared name is within two edits of `key`, or differs only
/// in case.
pub(crate) fn suggestion<'a>(key: &str, declared: impl Iterator<Item = &'a str>) -> String {
    declared
        .map(|d| {
            (
                distance(&key.to_ascii_lowercase(), &d.to_ascii_lowercase()),
                d,
            )
        })
        .filter(|(n, _)| *n <= 2)
        .min()
        .map(|(_, d)| format!(" (did you mean \"{d}\"?)"))
        .unwrap_or_default()
}

/// Levenshtein distance over bytes (field names are ASCII).
pub(super) fn distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
