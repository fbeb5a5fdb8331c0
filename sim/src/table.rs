// PLACEHOLDER: replaced by the owner's version on merge
//! `meta.k8s.io/v1` Table responses for kubectl (placeholder: NAME/AGE; pure).
use serde_json::{Value, json};

#[derive(Clone, Debug)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub priority: i32,
    pub format: Option<String>,
    pub description: Option<String>,
}

pub fn table(
    _kind: &str,
    objects: &[Value],
    _columns: Option<&[PrinterColumn]>,
    include_object: &str,
    list_meta: Value,
    _now: jiff::Timestamp,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let object = match include_object {
                "None" => Value::Null,
                "Object" => o.clone(),
                _ => json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}),
            };
            json!({"cells": [o["metadata"]["name"], "0s"], "object": object})
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "", "priority": 0}
        ],
        "rows": rows
    })
}

pub fn jsonpath(obj: &Value, path: &str) -> Vec<Value> {
    let mut cur = obj;
    for seg in path.trim_start_matches('.').split('.') {
        cur = match cur.get(seg) {
            Some(v) => v,
            None => return Vec::new(),
        };
    }
    vec![cur.clone()]
}
