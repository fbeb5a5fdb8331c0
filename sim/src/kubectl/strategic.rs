//! Strategic merge patch for built-in kinds: lists the Kubernetes types declare
//! `patchStrategy: merge` are merged by their `patchMergeKey`, the rest replaced; the directives
//! `$patch` (replace/delete/merge), `$retainKeys` and `$deleteFromPrimitiveList/<f>` are honoured
//! and `$setElementOrder/<f>` is accepted but only stripped (the merged order is: existing items
//! first, new ones appended). Pure.

use serde_json::{Map, Value};

use crate::patch::PatchError;

/// How a list field is merged, from the `patchStrategy`/`patchMergeKey` tags of the Go types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ListStrategy {
    /// No strategy: the patch's list replaces the object's.
    Atomic,
    /// A list of objects merged item by item on this key.
    MergeByKey(&'static str),
    /// A list of scalars merged as a set (`metadata.finalizers`).
    Set,
}

const CONTAINER_LISTS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];

/// The merge strategy of the list at `path` (field names from the root, list items skipped)
/// in an object of `kind`. `builtin` = false keeps only the ObjectMeta rules (custom resources).
pub(super) fn list_strategy(kind: &str, path: &[String], builtin: bool) -> ListStrategy {
    let names: Vec<&str> = path.iter().map(String::as_str).collect();
    match names.as_slice() {
        ["metadata", "finalizers"] => return ListStrategy::Set,
        ["metadata", "ownerReferences"] => return ListStrategy::MergeByKey("uid"),
        _ if !builtin => return ListStrategy::Atomic,
        ["spec", "ports"] if kind == "Service" => return ListStrategy::MergeByKey("port"),
        ["status", "conditions"] => return ListStrategy::MergeByKey("type"),
        ["status", "podIPs" | "hostIPs"] => return ListStrategy::MergeByKey("ip"),
        _ => {}
    }
    let (last, parent) = match names.as_slice() {
        [.., parent, last] => (*last, Some(*parent)),
        [last] => (*last, None),
        [] => return ListStrategy::Atomic,
    };
    let in_container = parent.is_some_and(|p| CONTAINER_LISTS.contains(&p));
    match last {
        "ports" if in_container => ListStrategy::MergeByKey("containerPort"),
        "env" if in_container => ListStrategy::MergeByKey("name"),
        "volumeMounts" if in_container => ListStrategy::MergeByKey("mountPath"),
        "volumeDevices" if in_container => ListStrategy::MergeByKey("devicePath"),
        l if CONTAINER_LISTS.contains(&l) && !in_container => ListStrategy::MergeByKey("name"),
        "volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates" if !in_container => {
            ListStrategy::MergeByKey("name")
        }
        "hostAliases" => ListStrategy::MergeByKey("ip"),
        "topologySpreadConstraints" => ListStrategy::MergeByKey("topologyKey"),
        _ => ListStrategy::Atomic,
    }
}

/// Applies a strategic merge `patch` to `target` (an object of built-in `kind`).
pub(crate) fn strategic_merge(
    target: &mut Value,
    patch: &Value,
    kind: &str,
) -> Result<(), PatchError> {
    let Value::Object(patch_map) = patch else {
        return Err(PatchError::BadRequest(
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
                .to_string(),
        ));
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(original) = target else {
        return Ok(());
    };
    let mut merged = original.clone();
    let ctx = Ctx { kind };
    if merge_map(&mut merged, patch_map, &ctx, &mut Vec::new())? == Outcome::Delete {
        merged.clear();
    }
    *original = merged;
    Ok(())
}

struct Ctx<'a> {
    kind: &'a str,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Keep,
    Delete,
}

fn directive(map: &Map<String, Value>) -> Result<Option<&str>, PatchError> {
    match map.get("$patch") {
        None => Ok(None),
        Some(Value::String(s)) if matches!(s.as_str(), "replace" | "delete" | "merge") => {
            Ok(Some(s))
        }
        Some(other) => Err(PatchError::BadRequest(format!(
            "Unknown patch type: {other} in map: {}",
            Value::Object(map.clone())
        ))),
    }
}

fn merge_map(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    ctx: &Ctx,
    path: &mut Vec<String>,
) -> Result<Outcome, PatchError> {
    match directive(patch)? {
        Some("delete") => return Ok(Outcome::Delete),
        Some("replace") => {
            original.clear();
            let rest: Map<String, Value> = patch
                .iter()
                .filter(|(k, _)| *k != "$patch")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            return merge_map(original, &rest, ctx, path);
        }
        _ => {}
    }
    if let Some(retain) = patch.get("$retainKeys") {
        retain_keys(original, retain)?;
    }
    for (key, value) in patch {
        if key.starts_with("$setElementOrder/") || key == "$patch" || key == "$retainKeys" {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            delete_from_primitive_list(original, field, value)?;
            continue;
        }
        path.push(key.clone());
        let result = merge_field(original, key, value, ctx, path);
        path.pop();
        result?;
    }
    Ok(Outcome::Keep)
}

fn retain_keys(original: &mut Map<String, Value>, retain: &Value) -> Result<(), PatchError> {
    let Value::Array(keys) = retain else {
        return Err(PatchError::BadRequest(
            "invalid patch: $retainKeys must be a list".into(),
        ));
    };
    original.retain(|k, _| keys.iter().any(|r| r.as_str() == Some(k)));
    Ok(())
}

fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    values: &Value,
) -> Result<(), PatchError> {
    let Value::Array(remove) = values else {
        return Err(PatchError::BadRequest(
            "invalid patch: $deleteFromPrimitiveList must be a list".into(),
        ));
    };
    if let Some(Value::Array(items)) = original.get_mut(field) {
        items.retain(|item| !remove.contains(item));
    }
    Ok(())
}

fn merge_field(
    original: &mut Map<String, Value>,
    key: &str,
    value: &Value,
    ctx: &Ctx,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    if value.is_null() {
        original.remove(key);
        return Ok(());
    }
    let slot = original
        .entry(key.to_string())
        .or_insert_with(|| empty_like(value));
    match (slot, value) {
        (Value::Object(orig), Value::Object(p)) => {
            if merge_map(orig, p, ctx, path)? == Outcome::Delete {
                original.remove(key);
            }
        }
        (Value::Array(orig), Value::Array(p)) => {
            let strategy = list_strategy(ctx.kind, path, true);
            merge_list(orig, p, strategy, ctx, path)?;
        }
        (slot, _) => *slot = strip_directives(value, ctx, path)?,
    }
    Ok(())
}

/// A fresh container to merge a patch value into, so nested directives are processed.
fn empty_like(v: &Value) -> Value {
    match v {
        Value::Object(_) => Value::Object(Map::new()),
        Value::Array(_) => Value::Array(Vec::new()),
        _ => Value::Null,
    }
}

fn strip_directives(v: &Value, ctx: &Ctx, path: &mut Vec<String>) -> Result<Value, PatchError> {
    let mut fresh = empty_like(v);
    match (&mut fresh, v) {
        (Value::Object(m), Value::Object(p)) => {
            merge_map(m, p, ctx, path)?;
        }
        (Value::Array(l), Value::Array(p)) => {
            let strategy = list_strategy(ctx.kind, path, true);
            merge_list(l, p, strategy, ctx, path)?;
        }
        _ => fresh = v.clone(),
    }
    Ok(fresh)
}

fn is_replace_marker(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.len() == 1 && m.get("$patch").and_then(Value::as_str) == Some("replace"))
}

fn merge_list(
    original: &mut Vec<Value>,
    patch: &[Value],
    strategy: ListStrategy,
    ctx: &Ctx,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    let replace = strategy == ListStrategy::Atomic || patch.iter().any(is_replace_marker);
    if replace {
        original.clear();
    }
    let items = patch.iter().filter(|v| !is_replace_marker(v));
    for item in items {
        match (strategy, item) {
            (ListStrategy::MergeByKey(key), Value::Object(p)) if !replace => {
                merge_keyed_item(original, p, key, ctx, path)?;
            }
            (ListStrategy::Set, _) | (ListStrategy::MergeByKey(_), _)
                if original.contains(item) => {}
            _ => original.push(strip_directives(item, ctx, path)?),
        }
    }
    Ok(())
}

fn merge_keyed_item(
    original: &mut Vec<Value>,
    patch_item: &Map<String, Value>,
    key: &str,
    ctx: &Ctx,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    let Some(key_value) = patch_item.get(key) else {
        return Err(PatchError::Invalid(format!(
            "map: {} does not contain declared merge key: {key}",
            Value::Object(patch_item.clone())
        )));
    };
    let position = original.iter().position(|o| o.get(key) == Some(key_value));
    if directive(patch_item)? == Some("delete") {
        if let Some(i) = position {
            original.remove(i);
        }
        return Ok(());
    }
    match position.map(|i| &mut original[i]) {
        Some(Value::Object(existing)) => {
            merge_map(existing, patch_item, ctx, path)?;
        }
        _ => {
            let mut fresh = Map::new();
            merge_map(&mut fresh, patch_item, ctx, path)?;
            original.push(Value::Object(fresh));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x"],
                          "ownerReferences": [{"uid": "u1", "name": "o1"}]},
            "spec": {
                "containers": [
                    {"name": "main", "image": "img:1",
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                     "ports": [{"containerPort": 80, "name": "http"}],
                     "volumeMounts": [{"name": "v", "mountPath": "/data"}]},
                    {"name": "side", "image": "s:1"}
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "tolerations": [{"key": "t1"}]
            },
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}
        })
    }

    /// Applies `patch` to `pod()` and reads back `pointer`.
    fn patched(patch: Value, pointer: &str) -> Value {
        let mut p = pod();
        strategic_merge(&mut p, &patch, "Pod").unwrap_or_else(|e| panic!("{patch}: {e}"));
        p.pointer(pointer).cloned().unwrap_or(Value::Null)
    }

    #[test]
    fn lists_merge_by_their_kubernetes_keys() {
        let cases = [
            // containers by name: only `main` changes, `side` stays
            (
                json!({"spec":{"containers":[{"name":"main","image":"img:2"}]}}),
                "/spec/containers/0/image",
                json!("img:2"),
            ),
            (
                json!({"spec":{"containers":[{"name":"main","image":"img:2"}]}}),
                "/spec/containers/1/image",
                json!("s:1"),
            ),
            (
                json!({"spec":{"containers":[{"name":"new","image":"n"}]}}),
                "/spec/containers/2/name",
                json!("new"),
            ),
            // env by name, inside a container
            (
                json!({"spec":{"containers":[{"name":"main","env":[{"name":"B","value":"9"},{"name":"C","value":"3"}]}]}}),
                "/spec/containers/0/env",
                json!([{"name":"A","value":"1"},{"name":"B","value":"9"},{"name":"C","value":"3"}]),
            ),
            // container ports by containerPort
            (
                json!({"spec":{"containers":[{"name":"main","ports":[{"containerPort":80,"protocol":"TCP"}]}]}}),
                "/spec/containers/0/ports",
                json!([{"containerPort":80,"name":"http","protocol":"TCP"}]),
            ),
            // volumeMounts by mountPath
            (
                json!({"spec":{"containers":[{"name":"main","volumeMounts":[{"name":"w","mountPath":"/data"}]}]}}),
                "/spec/containers/0/volumeMounts",
                json!([{"name":"w","mountPath":"/data"}]),
            ),
            // volumes by name
            (
                json!({"spec":{"volumes":[{"name":"w","emptyDir":{}}]}}),
                "/spec/volumes/1/name",
                json!("w"),
            ),
            // tolerations have no strategy: replaced
            (
                json!({"spec":{"tolerations":[{"key":"t2"}]}}),
                "/spec/tolerations",
                json!([{"key":"t2"}]),
            ),
            // conditions by type
            (
                json!({"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}]}}),
                "/status/conditions",
                json!([{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}]),
            ),
            // ownerReferences by uid, finalizers as a set
            (
                json!({"metadata":{"ownerReferences":[{"uid":"u2","name":"o2"}]}}),
                "/metadata/ownerReferences/1/uid",
                json!("u2"),
            ),
            (
                json!({"metadata":{"finalizers":["x","y"]}}),
                "/metadata/finalizers",
                json!(["x", "y"]),
            ),
            // maps merge, null deletes
            (
                json!({"metadata":{"labels":{"b":"2","a":null}}}),
                "/metadata/labels",
                json!({"b":"2"}),
            ),
        ];
        for (patch, pointer, want) in cases {
            assert_eq!(
                patched(patch.clone(), pointer),
                want,
                "{patch} at {pointer}"
            );
        }
    }

    #[test]
    fn patch_directives() {
        let cases = [
            (
                json!({"spec":{"containers":[{"name":"side","$patch":"delete"}]}}),
                "/spec/containers",
                json!([pod()["spec"]["containers"][0].clone()]),
            ),
            (
                json!({"spec":{"containers":[{"$patch":"replace"},{"name":"only","image":"o"}]}}),
                "/spec/containers",
                json!([{"name":"only","image":"o"}]),
            ),
            (
                json!({"metadata":{"labels":{"$patch":"replace","z":"1"}}}),
                "/metadata/labels",
                json!({"z":"1"}),
            ),
            (
                json!({"metadata":{"labels":{"$patch":"delete"}}}),
                "/metadata/labels",
                Value::Null,
            ),
            (
                json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}}),
                "/metadata/finalizers",
                json!([]),
            ),
            (
                json!({"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"main"}],"containers":[{"name":"main","image":"i3"}]}}),
                "/spec/containers/0/image",
                json!("i3"),
            ),
            (
                json!({"spec":{"volumes":[{"name":"v","$retainKeys":["name","hostPath"],"hostPath":{"path":"/h"}}]}}),
                "/spec/volumes/0",
                json!({"name":"v","hostPath":{"path":"/h"}}),
            ),
            // a new list item carrying directives is stored without them
            (
                json!({"spec":{"containers":[{"name":"n","$patch":"merge","env":[{"$patch":"replace"},{"name":"E"}]}]}}),
                "/spec/containers/2",
                json!({"name":"n","env":[{"name":"E"}]}),
            ),
        ];
        for (patch, pointer, want) in cases {
            assert_eq!(
                patched(patch.clone(), pointer),
                want,
                "{patch} at {pointer}"
            );
        }
    }

    #[test]
    fn service_ports_merge_by_port() {
        let mut svc =
            json!({"spec": {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]}});
        let patch = json!({"spec": {"ports": [{"port": 81, "name": "bb"}]}});
        strategic_merge(&mut svc, &patch, "Service").expect("patch");
        assert_eq!(
            svc["spec"]["ports"],
            json!([{"port": 80, "name": "a"}, {"port": 81, "name": "bb"}])
        );
    }

    #[test]
    fn errors() {
        let mut p = pod();
        let err = strategic_merge(
            &mut p,
            &json!({"spec":{"containers":[{"image":"x"}]}}),
            "Pod",
        )
        .expect_err("missing merge key");
        assert!(
            err.to_string()
                .contains("does not contain declared merge key: name"),
            "{err}"
        );
        assert_eq!(p, pod(), "unchanged on error");
        let err = strategic_merge(&mut p, &json!([1]), "Pod").expect_err("array patch");
        assert_eq!(err.http_code(), 400);
        let err = strategic_merge(&mut p, &json!({"metadata":{"$patch":"bogus"}}), "Pod")
            .expect_err("bad directive");
        assert_eq!(err.http_code(), 400);
    }
}
