//! Server-side apply (`application/apply-patch+yaml`, `kubectl apply --server-side`) with its
//! `metadata.managedFields` bookkeeping and field-ownership conflicts (pure, no I/O).
//!
//! Approximations of the real field manager (structured-merge-diff), documented for the README:
//! - list semantics come from the strategic-merge tags of built-in kinds (keyed lists merge by a
//!   single key, e.g. container ports by `containerPort` only, not `containerPort`+`protocol`);
//!   for custom resources only ObjectMeta lists are keyed, other lists are atomic (the CRD's
//!   `x-kubernetes-list-type` is not consulted);
//! - a manager is identified by name only: an `Update` entry of the same name never conflicts
//!   with its own `Apply`;
//! - fields a manager stops applying are removed unless another manager still owns them or
//!   something below them; emptied parent objects are left in place;
//! - `null` in an applied object deletes the field and is not owned;
//! - entries carry no `subresource` (status applies are recorded like main-resource ones).

use serde_json::{Value, json};

mod fields;
mod managed;

use super::strategic::{ListStrategy, list_strategy};
use crate::patch::PatchError;
use crate::store::ApiError;
use fields::{FieldPath, FieldSet, Schema, fields_of, get_at, path_string, remove_at};
use managed::{Entry, read_entries, upsert_entry, write_entries};

/// An apply patch's body: YAML (JSON included); 400 BadRequest if it does not parse.
pub(crate) fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    let s = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    serde_saphyr::from_str::<Value>(s)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

fn validate_applied(applied: &Value, manager: &str) -> Result<(), PatchError> {
    if manager.is_empty() {
        return Err(PatchError::FieldManagerRequired);
    }
    if !applied.is_object() {
        return Err(PatchError::BadRequest(
            "error decoding YAML: the applied configuration must be an object".into(),
        ));
    }
    for field in ["apiVersion", "kind"] {
        if applied
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(PatchError::BadRequest(format!(
                "{field} must be set in an apply patch"
            )));
        }
    }
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(PatchError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    Ok(())
}

/// Server-side apply of `applied` (a full object intent) by `manager` onto `existing` (None =
/// create). Returns the merged object with `metadata.managedFields` updated. `is_builtin`
/// selects strategic list merging (by key) vs. atomic lists; `force` takes over fields other
/// managers own instead of answering 409.
pub(crate) fn server_side_apply(
    existing: Option<&Value>,
    applied: &Value,
    manager: &str,
    is_builtin: bool,
    kind: &str,
    force: bool,
    now: &str,
) -> Result<Value, PatchError> {
    validate_applied(applied, manager)?;
    let schema = Schema {
        kind,
        builtin: is_builtin,
    };
    let applied_set = fields_of(applied, &schema);
    let mut result = existing.cloned().unwrap_or_else(|| json!({}));
    let mut entries = read_entries(&result);
    let conflicts = find_conflicts(&result, applied, &applied_set, &entries, manager);
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts, &entries));
    }
    for (path, owner) in &conflicts {
        if let Some(e) = entries.get_mut(*owner) {
            e.fields.remove(path);
        }
    }
    remove_dropped_fields(&mut result, &applied_set, &entries, manager);
    merge_applied(&mut result, applied, &schema, &mut Vec::new());
    let api_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    upsert_entry(
        &mut entries,
        manager,
        "Apply",
        api_version,
        now,
        applied_set,
    );
    write_entries(&mut result, &entries);
    Ok(result)
}

/// Leaf fields the apply changes that another manager owns: (path, index of the owner entry).
fn find_conflicts(
    current: &Value,
    applied: &Value,
    applied_set: &FieldSet,
    entries: &[Entry],
    manager: &str,
) -> Vec<(FieldPath, usize)> {
    let mut out = Vec::new();
    for path in applied_set {
        let (Some(old), Some(new)) = (get_at(current, path), get_at(applied, path)) else {
            continue;
        };
        if old == new || new.is_object() {
            continue;
        }
        for (i, e) in entries.iter().enumerate() {
            if e.manager != manager && e.fields.contains(path) {
                out.push((path.clone(), i));
            }
        }
    }
    out.sort_by_key(|(_, owner)| *owner);
    out
}

/// The 409 the real server answers, e.g. `Apply failed with 1 conflict: conflict with "m" using
/// v1: .spec.replicas`; one cause per field.
fn conflict_error(conflicts: &[(FieldPath, usize)], entries: &[Entry]) -> PatchError {
    let owner_text = |i: usize| {
        let e = &entries[i];
        format!("\"{}\" using {}", e.manager, e.api_version)
    };
    let causes: Vec<(String, String)> = conflicts
        .iter()
        .map(|(p, i)| (path_string(p), format!("conflict with {}", owner_text(*i))))
        .collect();
    let n = conflicts.len();
    let message = if let [(field, msg)] = causes.as_slice() {
        format!("Apply failed with 1 conflict: {msg}: {field}")
    } else {
        let mut groups: Vec<String> = Vec::new();
        let mut last_owner = None;
        for (path, owner) in conflicts {
            if last_owner != Some(*owner) {
                groups.push(format!("conflicts with {}:", owner_text(*owner)));
                last_owner = Some(*owner);
            }
            groups.push(format!("- {}", path_string(path)));
        }
        format!("Apply failed with {n} conflicts: {}", groups.join("\n"))
    };
    PatchError::Conflict {
        message,
        conflicts: causes,
    }
}

/// Removes what `manager` applied before but not now, unless another manager owns the field or
/// something below it.
fn remove_dropped_fields(
    obj: &mut Value,
    applied_set: &FieldSet,
    entries: &[Entry],
    manager: &str,
) {
    let Some(previous) = entries.iter().find(|e| e.is(manager, "Apply")) else {
        return;
    };
    for path in previous.fields.difference(applied_set) {
        let kept_by_others = entries
            .iter()
            .filter(|e| e.manager != manager)
            .any(|e| e.fields.iter().any(|p| p.starts_with(path)));
        let reapplied_below = applied_set.iter().any(|p| p.starts_with(path));
        if !kept_by_others && !reapplied_below {
            remove_at(obj, path);
        }
    }
}

/// Merges the applied intent into `target`: objects recursively, keyed lists item by item, set
/// lists as a union, other lists and scalars replaced; `null` deletes.
fn merge_applied(target: &mut Value, applied: &Value, schema: &Schema, names: &mut Vec<String>) {
    match (target, applied) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, v) in a {
                if names.len() == 1 && names[0] == "metadata" && k == "managedFields" {
                    continue;
                }
                if v.is_null() {
                    t.remove(k);
                    continue;
                }
                names.push(k.clone());
                let slot = t.entry(k.clone()).or_insert_with(|| match v {
                    Value::Object(_) => json!({}),
                    Value::Array(_) => json!([]),
                    _ => Value::Null,
                });
                merge_applied(slot, v, schema, names);
                names.pop();
            }
        }
        (Value::Array(t), Value::Array(a)) => merge_applied_list(t, a, schema, names),
        (t, a) => *t = without_nulls(a),
    }
}

fn merge_applied_list(
    target: &mut Vec<Value>,
    applied: &[Value],
    schema: &Schema,
    names: &mut Vec<String>,
) {
    match list_strategy(schema.kind, names, schema.builtin) {
        ListStrategy::Set => {
            for item in applied {
                if !target.contains(item) {
                    target.push(item.clone());
                }
            }
        }
        ListStrategy::MergeByKey(key) if applied.iter().all(|i| i.get(key).is_some()) => {
            for item in applied {
                match target.iter_mut().find(|t| t.get(key) == item.get(key)) {
                    Some(existing) => merge_applied(existing, item, schema, names),
                    None => target.push(without_nulls(item)),
                }
            }
        }
        _ => *target = applied.iter().map(without_nulls).collect(),
    }
}

fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2024-01-01T00:00:00Z";

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data})
    }

    fn apply(
        existing: Option<&Value>,
        applied: &Value,
        manager: &str,
        force: bool,
    ) -> Result<Value, PatchError> {
        server_side_apply(existing, applied, manager, true, "ConfigMap", force, NOW)
    }

    fn managers(obj: &Value) -> Vec<(String, String)> {
        read_entries(obj)
            .into_iter()
            .map(|e| (e.manager, e.operation))
            .collect()
    }

    #[test]
    fn create_records_the_manager() {
        let obj = apply(None, &cm(json!({"a": "1"})), "m1", false).expect("create");
        assert_eq!(obj["data"], json!({"a": "1"}));
        assert_eq!(
            obj["metadata"]["managedFields"],
            json!([{
                "manager": "m1", "operation": "Apply", "apiVersion": "v1", "time": NOW,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}
            }])
        );
    }

    #[test]
    fn reapply_removes_fields_the_manager_dropped_but_keeps_others() {
        let obj = apply(None, &cm(json!({"a": "1", "b": "2"})), "m1", false).expect("create");
        let obj = apply(Some(&obj), &cm(json!({"c": "3"})), "m2", false).expect("m2 adds c");
        let obj = apply(Some(&obj), &cm(json!({"a": "1"})), "m1", false).expect("m1 drops b");
        assert_eq!(obj["data"], json!({"a": "1", "c": "3"}));
        assert_eq!(
            managers(&obj),
            vec![("m1".into(), "Apply".into()), ("m2".into(), "Apply".into())]
        );
    }

    #[test]
    fn shared_fields_with_equal_values_do_not_conflict_and_survive_one_owner_leaving() {
        let obj = apply(None, &cm(json!({"a": "1"})), "m1", false).expect("create");
        let obj = apply(Some(&obj), &cm(json!({"a": "1"})), "m2", false).expect("same value");
        let obj = apply(Some(&obj), &cm(json!({})), "m1", false).expect("m1 leaves");
        assert_eq!(obj["data"], json!({"a": "1"}), "still owned by m2");
    }

    #[test]
    fn conflicts_answer_409_unless_forced() {
        let obj = apply(None, &cm(json!({"a": "1"})), "m1", false).expect("create");
        let err = apply(Some(&obj), &cm(json!({"a": "2"})), "m2", false).expect_err("conflict");
        assert_eq!(err.http_code(), 409);
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"m1\" using v1: .data.a"
        );
        let PatchError::Conflict { conflicts, .. } = err else {
            panic!("not a conflict: {err:?}");
        };
        assert_eq!(
            conflicts,
            [(
                ".data.a".to_string(),
                "conflict with \"m1\" using v1".to_string()
            )]
        );
        let forced = apply(Some(&obj), &cm(json!({"a": "2"})), "m2", true).expect("force");
        assert_eq!(forced["data"]["a"], json!("2"));
        assert_eq!(
            managers(&forced),
            vec![("m2".into(), "Apply".into())],
            "m1 lost its only field"
        );
    }

    #[test]
    fn an_update_takes_ownership_so_the_next_apply_conflicts() {
        let obj = apply(None, &cm(json!({"a": "1"})), "m1", false).expect("create");
        // What the real server records for an edit by another client (operation Update).
        let mut edited = obj.clone();
        edited["data"]["a"] = json!("edited");
        edited["metadata"]["managedFields"] = json!([{
            "manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "time": NOW,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}
        }]);
        assert_eq!(
            managers(&edited),
            vec![("kubectl-edit".into(), "Update".into())]
        );
        let err = apply(Some(&edited), &cm(json!({"a": "1"})), "m1", false).expect_err("conflict");
        assert!(
            err.to_string()
                .contains("conflict with \"kubectl-edit\" using v1: .data.a"),
            "{err}"
        );
    }

    #[test]
    fn keyed_lists_merge_per_item_for_builtins_and_are_atomic_for_custom_resources() {
        let pod = |containers: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}});
        let obj = server_side_apply(
            None,
            &pod(json!([{"name": "a", "image": "1"}])),
            "m1",
            true,
            "Pod",
            false,
            NOW,
        )
        .expect("create");
        let obj = server_side_apply(
            Some(&obj),
            &pod(json!([{"name": "b", "image": "2"}])),
            "m2",
            true,
            "Pod",
            false,
            NOW,
        )
        .expect("m2");
        assert_eq!(
            obj["spec"]["containers"],
            json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}])
        );
        let obj = server_side_apply(Some(&obj), &pod(json!([])), "m1", true, "Pod", false, NOW)
            .expect("m1 drops a");
        assert_eq!(
            obj["spec"]["containers"],
            json!([{"name": "b", "image": "2"}])
        );

        let cr = |items: Value| json!({"apiVersion": "x/v1", "kind": "T", "metadata": {"name": "t"}, "spec": {"items": items, "keep": 1}});
        let obj = server_side_apply(None, &cr(json!([1, 2])), "m1", false, "T", false, NOW)
            .expect("create");
        let obj = server_side_apply(Some(&obj), &cr(json!([3])), "m1", false, "T", false, NOW)
            .expect("replace");
        assert_eq!(obj["spec"], json!({"items": [3], "keep": 1}));
    }

    #[test]
    fn invalid_apply_requests() {
        let cases = [
            (cm(json!({})), "", 422),
            (json!({"kind": "ConfigMap"}), "m", 400),
            (json!({"apiVersion": "v1"}), "m", 400),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"managedFields": []}}),
                "m",
                400,
            ),
            (json!([1]), "m", 400),
        ];
        for (applied, manager, code) in cases {
            let err = apply(None, &applied, manager, false).expect_err("invalid");
            assert_eq!(err.http_code(), code, "{applied} by {manager:?}: {err}");
        }
    }
}
