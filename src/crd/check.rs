//! A TFJob document checked against the CRD's own schema the way the API server decodes and
//! validates it (docs/behaviour.md §3): unknown fields in the strict decoder's words, values of
//! the wrong type, enum and minimum violations, missing required fields — every one at once,
//! the last four in the field-path style of `validation`. Pure.
//!
//! `render` reports all of them; the controller uses them to name what makes a stored job
//! unreadable. The schema is the generated CRD's, so the check can never disagree with what
//! `tfjob-operator crd` installs.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::field_error::FieldError;
use super::schema::crd;
use path::At;
pub(crate) use words::suggestion;
use words::{empty_of, flag, num, render, type_mismatch};

/// What the check found, and the document with every offending value taken out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checked {
    /// `unknown field "spec.tfReplicaSpecs.Worker.restartPolcy"`: word for word what the API
    /// server answers under `fieldValidation=Strict` (kubectl's default), with a suggestion
    /// when a declared field is spelled almost the same.
    pub unknown: Vec<String>,
    /// Wrong types, unsupported enum values, values below a minimum, missing required fields.
    pub invalid: Vec<FieldError>,
    /// The document without unknown fields and invalid values (a missing required field is
    /// filled with an empty value), so that the rest can still be read and validated.
    pub cleaned: Value,
}

/// The `metadata` fields of every Kubernetes object (ObjectMeta, as JSON names).
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The schema of the stored version (`v1`), as the CRD carries it.
static SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    serde_json::to_value(crd())
        .ok()
        .and_then(|c| {
            c.pointer("/spec/versions/0/schema/openAPIV3Schema")
                .cloned()
        })
        .unwrap_or(Value::Null)
});

/// Checks a whole TFJob document (`apiVersion`, `kind`, `metadata`, `spec`, `status`).
pub fn check(doc: &Value) -> Checked {
    let mut walk = Walk::default();
    let mut cleaned = doc.clone();
    if let Value::Object(root) = &mut cleaned {
        walk.root(&SCHEMA, root);
    }
    Checked {
        unknown: walk.unknown,
        invalid: walk.invalid,
        cleaned,
    }
}

#[derive(Default)]
struct Walk {
    unknown: Vec<String>,
    invalid: Vec<FieldError>,
}

/// Whether a value stays in the cleaned document.
#[derive(PartialEq)]
enum Keep {
    Yes,
    No,
}

impl Walk {
    fn root(&mut self, schema: &Value, root: &mut Map<String, Value>) {
        let keys: Vec<String> = root.keys().cloned().collect();
        for k in keys {
            let at = At::default().field(&k);
            match k.as_str() {
                "apiVersion" | "kind" => {}
                "metadata" => {
                    if let Some(Value::Object(meta)) = root.get_mut(&k) {
                        self.metadata(meta, &at);
                    }
                }
                _ => match schema.pointer(&format!("/properties/{k}")) {
                    Some(s) => self.child(s, root, &k, &at),
                    None => self.unknown_field(root, &k, &at, schema),
                },
            }
        }
    }

    /// `metadata` is ObjectMeta, which the CRD schema leaves to the API server.
    fn metadata(&mut self, meta: &mut Map<String, Value>, at: &At) {
        let unknown: Vec<String> = meta
            .keys()
            .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in unknown {
            let hint = suggestion(&k, OBJECT_META_FIELDS.iter().copied());
            self.unknown
                .push(format!("unknown field \"{}\"{hint}", at.field(&k).api));
            meta.remove(&k);
        }
    }

    /// Checks `map[key]` against `schema`, removing it when it cannot stay.
    fn child(&mut self, schema: &Value, map: &mut Map<String, Value>, key: &str, at: &At) {
        let keep = match map.get_mut(key) {
            Some(v) => self.node(schema, v, at),
            None => Keep::Yes,
        };
        if keep == Keep::No {
            map.remove(key);
        }
    }

    fn unknown_field(&mut self, map: &mut Map<String, Value>, key: &str, at: &At, parent: &Value) {
        let declared = parent
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect::<Vec<_>>())
            .unwrap_or_default();
        let hint = suggestion(key, declared.into_iter());
        self.unknown
            .push(format!("unknown field \"{}\"{hint}", at.api));
        map.remove(key);
    }

    fn node(&mut self, schema: &Value, value: &mut Value, at: &At) -> Keep {
        if value.is_null() {
            // The API server drops a null it cannot store, without complaint.
            return if flag(schema, "nullable") {
                Keep::Yes
            } else {
                Keep::No
            };
        }
        if let Some(want) = type_mismatch(schema, value) {
            self.invalid(at, value, &format!("must be of type {want}"));
            return Keep::No;
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.contains(value)
        {
            let list: Vec<String> = allowed.iter().map(render).collect();
            self.invalid.push(FieldError {
                path: at.ours.clone(),
                message: format!(
                    "Unsupported value: {}: supported values: {}",
                    render(value),
                    list.join(", ")
                ),
            });
            return Keep::No;
        }
        match value {
            Value::Number(n) => self.number(schema, n, at),
            Value::Object(map) => {
                self.object(schema, map, at);
                Keep::Yes
            }
            Value::Array(items) => {
                if let Some(item) = schema.get("items") {
                    let mut i = 0;
                    items.retain_mut(|v| {
                        let keep = self.node(item, v, &at.index(i)) == Keep::Yes;
                        i += 1;
                        keep
                    });
                }
                Keep::Yes
            }
            _ => Keep::Yes,
        }
    }

    fn number(&mut self, schema: &Value, n: &serde_json::Number, at: &At) -> Keep {
        let value = Value::Number(n.clone());
        if schema.get("format").and_then(Value::as_str) == Some("int32")
            && n.as_i64().is_none_or(|i| i32::try_from(i).is_err())
        {
            self.invalid(at, &value, "must be a 32-bit integer");
            return Keep::No;
        }
        if let (Some(min), Some(f)) = (schema.get("minimum").and_then(Value::as_f64), n.as_f64())
            && f < min
        {
            self.invalid(
                at,
                &value,
                &format!("must be greater than or equal to {}", render(&num(min))),
            );
            return Keep::No;
        }
        Keep::Yes
    }

    fn object(&mut self, schema: &Value, map: &mut Map<String, Value>, at: &At) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties").filter(|a| a.is_object());
        let open = flag(schema, "x-kubernetes-preserve-unknown-fields");
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for name in &required {
            if map.get(*name).is_none_or(Value::is_null) {
                self.invalid.push(FieldError {
                    path: at.field(name).ours,
                    message: "Required value".into(),
                });
            }
        }
        let keys: Vec<String> = map.keys().cloned().collect();
        for k in keys {
            if let Some(s) = properties.and_then(|p| p.get(&k)) {
                self.child(s, map, &k, &at.field(&k));
            } else if let Some(s) = additional {
                self.child(s, map, &k, &at.key(&k));
            } else if !open {
                self.unknown_field(map, &k, &at.field(&k), schema);
            }
        }
        // Missing, or taken out above for a bad value (reported already): an empty stand-in.
        for name in required {
            if map.get(name).is_none_or(Value::is_null) {
                let empty = properties
                    .and_then(|p| p.get(name))
                    .map_or(Value::Null, empty_of);
                map.insert(name.to_string(), empty);
            }
        }
    }

    fn invalid(&mut self, at: &At, value: &Value, detail: &str) {
        self.invalid.push(FieldError {
            path: at.ours.clone(),
            message: format!("Invalid value: {}: {detail}", render(value)),
        });
    }
}

mod path;
#[cfg(test)]
mod tests;
mod words;
