// PLACEHOLDER: replaced by the owner's version on merge
//! Patches: JSON merge, JSON patch, strategic merge, server-side apply (placeholder; pure).
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("invalid patch: {0}")]
    Invalid(String),
}

impl PatchError {
    pub fn http_code(&self) -> u16 {
        422
    }
}

pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let mut patch = patch.clone();
    if let Some(ops) = patch.as_array_mut() {
        // `test` on a missing path compares against null (kube-runtime's finalizer helper).
        ops.retain(|op| {
            let missing = op["path"].as_str().is_some_and(|p| target.pointer(p).is_none());
            !(op["op"] == "test" && missing && op["value"].is_null())
        });
    }
    let p: json_patch::Patch =
        serde_json::from_value(patch).map_err(|e| PatchError::Invalid(e.to_string()))?;
    json_patch::patch(target, &p).map_err(|e| PatchError::Invalid(e.to_string()))
}

pub fn strategic_merge(target: &mut Value, patch: &Value, _kind: &str) -> Result<(), PatchError> {
    merge_patch(target, patch);
    Ok(())
}

pub fn server_side_apply(
    existing: Option<&Value>,
    applied: &Value,
    manager: &str,
    _is_builtin: bool,
    _kind: &str,
    _force: bool,
    now: &str,
) -> Result<Value, PatchError> {
    let mut out = existing.cloned().unwrap_or_else(|| json!({}));
    merge_patch(&mut out, applied);
    out["metadata"]["managedFields"] = json!([{
        "manager": manager, "operation": "Apply", "apiVersion": applied["apiVersion"],
        "time": now, "fieldsType": "FieldsV1", "fieldsV1": {}
    }]);
    Ok(out)
}
