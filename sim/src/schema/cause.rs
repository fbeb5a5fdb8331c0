//! Field errors shaped like apimachinery's `field.Error` (pure, no I/O).
//!
//! The API server turns each field error into a `StatusCause` whose `message` is the error body
//! (`Invalid value: -1: spec.x in body should be ...`) and whose `reason` is the error type.
//! Values are rendered the way Go's `ErrorBody` renders them: numbers and booleans bare, strings
//! quoted, everything else as compact JSON.

use serde_json::Value;

/// A field-level error of a 422 `Invalid` answer, as a `StatusCause` carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// The field path, e.g. `spec.tfReplicaSpecs.Worker.replicas`.
    pub field: String,
    /// The error body, e.g. `Invalid value: -1: ... should be greater than or equal to 0`.
    pub message: String,
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`, ...
    pub reason: String,
}

/// A field path under construction, rendered like `field.Path` (`a.b[0]`, `a[key]`).
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// Renders a bad value like `field.Error.ErrorBody` does.
pub(crate) fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !(n.is_i64() || n.is_u64()) => go_float(f),
            _ => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// Go's `%q` for the strings that occur here (JSON escaping is a close match).
pub(crate) fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Go's `%v` for a float64, i.e. strconv's `'g'` with the shortest precision: shortest
/// round-trip digits, exponent form (`1e+06`) when the exponent is < -4 or >= 6.
pub(crate) fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{f:e}"); // e.g. "1.5e6", "-2e-7"
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

fn with_detail(head: String, detail: &str) -> String {
    if detail.is_empty() {
        head
    } else {
        format!("{head}: {detail}")
    }
}

fn cause(field: &str, message: String, reason: &str) -> Cause {
    Cause {
        field: field.to_string(),
        message,
        reason: reason.to_string(),
    }
}

pub(crate) fn required(field: &str, detail: &str) -> Cause {
    cause(
        field,
        with_detail("Required value".into(), detail),
        "FieldValueRequired",
    )
}

pub(crate) fn forbidden(field: &str, detail: &str) -> Cause {
    cause(
        field,
        with_detail("Forbidden".into(), detail),
        "FieldValueForbidden",
    )
}

pub(crate) fn invalid(field: &str, value: &Value, detail: &str) -> Cause {
    let head = format!("Invalid value: {}", render_value(value));
    cause(field, with_detail(head, detail), "FieldValueInvalid")
}

pub(crate) fn type_invalid(field: &str, value: &Value, detail: &str) -> Cause {
    let head = format!("Invalid value: {}", render_value(value));
    cause(field, with_detail(head, detail), "FieldValueTypeInvalid")
}

pub(crate) fn not_supported(field: &str, value: &Value, allowed: &[Value]) -> Cause {
    let quoted: Vec<String> = allowed
        .iter()
        .map(|v| match v {
            Value::String(s) => quote(s),
            other => quote(&other.to_string()),
        })
        .collect();
    let detail = if quoted.is_empty() {
        String::new()
    } else {
        format!("supported values: {}", quoted.join(", "))
    };
    let head = format!("Unsupported value: {}", render_value(value));
    cause(field, with_detail(head, &detail), "FieldValueNotSupported")
}

pub(crate) fn too_long(field: &str, max: u64) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    cause(
        field,
        format!("Too long: may not be more than {max} {unit}"),
        "FieldValueTooLong",
    )
}

pub(crate) fn too_many(field: &str, actual: usize, max: u64) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    cause(
        field,
        format!("Too many: {actual}: must have at most {max} {unit}"),
        "FieldValueTooMany",
    )
}

pub(crate) fn duplicate(field: &str, value: &Value) -> Cause {
    cause(
        field,
        format!("Duplicate value: {}", render_value(value)),
        "FieldValueDuplicate",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_render_like_go_error_body() {
        let cases = [
            (json!(-1), "-1"),
            (json!(1.5), "1.5"),
            (json!(2.0), "2"),
            (json!(1e22), "1e+22"),
            (json!(1234567.5), "1.2345675e+06"),
            (json!(123456.5), "123456.5"),
            (json!(0.00001), "1e-05"),
            (json!("x"), "\"x\""),
            (json!(true), "true"),
            (json!(null), "null"),
            (json!({"a": 1}), "{\"a\":1}"),
        ];
        for (value, want) in cases {
            assert_eq!(render_value(&value), want, "{value}");
        }
    }

    #[test]
    fn messages_match_apimachinery() {
        assert_eq!(required("spec.x", "").message, "Required value");
        assert_eq!(forbidden("a", "no").message, "Forbidden: no");
        assert_eq!(
            not_supported("p", &json!("Sometimes"), &[json!("Always"), json!("Never")]).message,
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\""
        );
        assert_eq!(
            too_long("p", 5).message,
            "Too long: may not be more than 5 bytes"
        );
        assert_eq!(
            too_many("p", 4, 3).message,
            "Too many: 4: must have at most 3 items"
        );
        assert_eq!(
            duplicate("p[1]", &json!("a")).message,
            "Duplicate value: \"a\""
        );
        assert_eq!(key(&child("spec", "properties"), "x"), "spec.properties[x]");
        assert_eq!(index("spec.list", 2), "spec.list[2]");
    }
}
