//! `metadata.managedFields` entries of server-side apply: reading and writing them (pure).

use serde_json::{Map, Value, json};

use super::fields::{FieldSet, from_fields_v1, to_fields_v1};

/// One `metadata.managedFields` entry.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) manager: String,
    pub(super) operation: String,
    pub(super) api_version: String,
    pub(super) time: String,
    pub(super) subresource: Option<String>,
    pub(super) fields: FieldSet,
}

impl Entry {
    fn from_json(v: &Value) -> Option<Self> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Self {
            manager: s("manager")?,
            operation: s("operation").unwrap_or_else(|| "Update".to_string()),
            api_version: s("apiVersion").unwrap_or_default(),
            time: s("time").unwrap_or_default(),
            subresource: s("subresource"),
            fields: v.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
        })
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
            "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(&self.fields)
        });
        if let (Some(sub), Some(m)) = (&self.subresource, v.as_object_mut()) {
            m.insert("subresource".to_string(), json!(sub));
        }
        v
    }

    pub(super) fn is(&self, manager: &str, operation: &str) -> bool {
        self.manager == manager && self.operation == operation
    }
}

pub(super) fn read_entries(obj: &Value) -> Vec<Entry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Entry::from_json).collect())
        .unwrap_or_default()
}

pub(super) fn write_entries(obj: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(Entry::to_json)
        .collect();
    if let Some(meta) = metadata_mut(obj) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".to_string(), Value::Array(list));
        }
    }
}

fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let m = obj.as_object_mut()?;
    m.entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

pub(super) fn upsert_entry(
    entries: &mut Vec<Entry>,
    manager: &str,
    operation: &str,
    api_version: &str,
    now: &str,
    fields: FieldSet,
) {
    let entry = Entry {
        manager: manager.to_string(),
        operation: operation.to_string(),
        api_version: api_version.to_string(),
        time: now.to_string(),
        subresource: None,
        fields,
    };
    match entries.iter_mut().find(|e| e.is(manager, operation)) {
        Some(e) => *e = entry,
        None => entries.push(entry),
    }
}
