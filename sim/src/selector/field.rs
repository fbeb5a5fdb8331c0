//! Field selectors (`fieldSelector`): `k=v`, `k==v`, `k!=v` over the fields each kind supports (pure).

use serde_json::Value;

/// One `field=value` / `field!=value` term of a field selector.
#[derive(Clone, Debug, PartialEq)]
struct FieldTerm {
    field: String,
    value: String,
    negated: bool,
}

/// A parsed `fieldSelector` for one kind; terms are AND-ed.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldSelector {
    kind: String,
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `k=v`, `k==v`, `k!=v` terms joined by `,` (values may escape `\,` `\=` `\\`) and
    /// checks each field is selectable for `kind`. Err = message for a 400 BadRequest.
    pub fn parse(s: &str, kind: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in split_unescaped(s, ',') {
            if part.trim().is_empty() {
                continue;
            }
            let term = parse_field_term(&part)
                .ok_or_else(|| format!("invalid selector: '{s}'; can't understand '{part}'"))?;
            if !field_supported(kind, &term.field) {
                return Err(format!("field label not supported: {}", term.field));
            }
            terms.push(term);
        }
        Ok(Self {
            kind: kind.to_string(),
            terms,
        })
    }

    /// Whether `obj` satisfies every term. A missing field reads as the empty string, as the
    /// real server's field sets do (`spec.nodeName=` selects unscheduled pods).
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|t| {
            let actual = field_value(&self.kind, obj, &t.field);
            (actual == t.value) != t.negated
        })
    }
}

/// Splits on `sep` not preceded by a backslash; escapes are kept for the term parser.
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in s.chars() {
        if !escaped && c == sep {
            parts.push(String::new());
            continue;
        }
        escaped = !escaped && c == '\\';
        if let Some(last) = parts.last_mut() {
            last.push(c);
        }
    }
    parts
}

fn parse_field_term(part: &str) -> Option<FieldTerm> {
    let (field, value, negated) = if let Some((f, v)) = split_operator(part, "!=") {
        (f, v, true)
    } else if let Some((f, v)) = split_operator(part, "==") {
        (f, v, false)
    } else {
        let (f, v) = split_operator(part, "=")?;
        (f, v, false)
    };
    let value = unescape_field_value(&value)?;
    Some(FieldTerm {
        field: field.trim().to_string(),
        value,
        negated,
    })
}

/// Finds the first unescaped `op` in `part`.
fn split_operator(part: &str, op: &str) -> Option<(String, String)> {
    let mut escaped = false;
    for (i, c) in part.char_indices() {
        if !escaped && part[i..].starts_with(op) {
            return Some((part[..i].to_string(), part[i + op.len()..].to_string()));
        }
        escaped = !escaped && c == '\\';
    }
    None
}

fn unescape_field_value(v: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

fn field_supported(kind: &str, field: &str) -> bool {
    let per_kind: &[&str] = match kind {
        "Pod" => POD_FIELDS,
        "Event" => EVENT_FIELDS,
        "Namespace" => &["status.phase"],
        _ => &[],
    };
    matches!(field, "metadata.name" | "metadata.namespace") || per_kind.contains(&field)
}

/// The string the real server's field set holds for `field` of `obj`.
fn field_value(kind: &str, obj: &Value, field: &str) -> String {
    let path = match (kind, field) {
        ("Event", "source") => "source.component",
        ("Event", "reportingComponent") => "reportingComponent",
        _ => field,
    };
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p1", "namespace": "ns"},
            "spec": {"restartPolicy": "Never"},
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn field_selector_matching_table() {
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("metadata.name=p1", true),
            ("metadata.name==p1", true),
            ("metadata.name!=p1", false),
            ("metadata.namespace=ns,status.phase=Running", true),
            ("status.phase!=Succeeded,status.phase!=Failed", true),
            ("status.phase=Pending", false),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
            ("spec.restartPolicy=Never", true),
        ];
        for (sel, want) in cases {
            let parsed = FieldSelector::parse(sel, "Pod").unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(&pod()), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn field_selector_for_events_reads_involved_object_and_source() {
        let ev = json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "TFJob", "name": "job", "uid": "u1"},
            "source": {"component": "tfjob-operator"},
            "type": "Normal", "reason": "Created"
        });
        let cases: &[(&str, bool)] = &[
            ("involvedObject.kind=TFJob,involvedObject.name=job", true),
            ("involvedObject.uid=u2", false),
            ("source=tfjob-operator", true),
            ("type=Warning", false),
            ("reason=Created", true),
            ("involvedObject.namespace=", true),
        ];
        for (sel, want) in cases {
            let parsed =
                FieldSelector::parse(sel, "Event").unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(&ev), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn field_selector_values_may_be_escaped() {
        let obj = json!({"metadata": {"name": "a,b=c"}});
        let sel = FieldSelector::parse(r"metadata.name=a\,b\=c", "ConfigMap").expect("parses");
        assert!(sel.matches(&obj));
    }

    #[test]
    fn unsupported_or_malformed_field_selectors_are_rejected() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "spec.nodeName=x",
                "TFJob",
                "field label not supported: spec.nodeName",
            ),
            (
                "status.phase=Running",
                "Service",
                "field label not supported: status.phase",
            ),
            (
                "involvedObject.kind=Pod",
                "Pod",
                "field label not supported: involvedObject.kind",
            ),
            (
                "metadata.name",
                "Pod",
                "invalid selector: 'metadata.name'; can't understand",
            ),
            (r"metadata.name=a\x", "Pod", "can't understand"),
        ];
        for (sel, kind, want) in cases {
            let err = FieldSelector::parse(sel, kind).expect_err(sel);
            assert!(err.contains(want), "{sel:?} on {kind}: got {err:?}");
        }
    }
}
