//! Field sets of server-side apply: which leaf fields of an object a manager owns, in the
//! `FieldsV1` notation of `metadata.managedFields` (`f:<name>`, `k:{<key>}`, `v:<value>`, `.`). Pure.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::kubectl::strategic::{ListStrategy, list_strategy};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Step {
    /// A member of an object.
    Field(String),
    /// The item of a keyed list whose key fields equal this JSON object (canonical text).
    Key(String),
    /// The item of a set list equal to this JSON value (canonical text).
    Value(String),
}

pub(super) type FieldPath = Vec<Step>;
pub(super) type FieldSet = BTreeSet<FieldPath>;

/// Server-set metadata no manager owns.
const UNOWNED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// How to walk an object: its kind and whether built-in list strategies apply.
pub(super) struct Schema<'a> {
    pub kind: &'a str,
    pub builtin: bool,
}

/// The paths a manager owns by setting everything in `obj`: scalar leaves, atomic lists, empty
/// objects, and each item (plus its key fields) of keyed and set lists. `null` members are not
/// owned.
pub(super) fn fields_of(obj: &Value, schema: &Schema) -> FieldSet {
    let mut set = FieldSet::new();
    walk(obj, &mut Vec::new(), &mut Vec::new(), schema, &mut set);
    set
}

fn is_unowned(names: &[String], key: &str) -> bool {
    match names {
        [] => key == "apiVersion" || key == "kind",
        [m] if m == "metadata" => UNOWNED_METADATA.contains(&key),
        _ => false,
    }
}

fn walk(
    v: &Value,
    steps: &mut FieldPath,
    names: &mut Vec<String>,
    schema: &Schema,
    set: &mut FieldSet,
) {
    match v {
        Value::Object(map) if !map.is_empty() || steps.is_empty() => {
            for (k, child) in map {
                if child.is_null() || is_unowned(names, k) {
                    continue;
                }
                steps.push(Step::Field(k.clone()));
                names.push(k.clone());
                walk(child, steps, names, schema, set);
                names.pop();
                steps.pop();
            }
        }
        Value::Array(items) => walk_list(items, steps, names, schema, set),
        _ => {
            set.insert(steps.clone());
        }
    }
}

fn walk_list(
    items: &[Value],
    steps: &mut FieldPath,
    names: &mut Vec<String>,
    schema: &Schema,
    set: &mut FieldSet,
) {
    match list_strategy(schema.kind, names, schema.builtin) {
        ListStrategy::Set => {
            for item in items {
                let mut p = steps.clone();
                p.push(Step::Value(item.to_string()));
                set.insert(p);
            }
        }
        ListStrategy::MergeByKey(key) if items.iter().all(|i| i.get(key).is_some()) => {
            for item in items {
                let key_obj = key_of(item, key);
                steps.push(Step::Key(key_obj));
                set.insert(steps.clone());
                walk(item, steps, names, schema, set);
                steps.pop();
            }
        }
        _ => {
            set.insert(steps.clone());
        }
    }
}

fn key_of(item: &Value, key: &str) -> String {
    let mut m = Map::new();
    m.insert(
        key.to_string(),
        item.get(key).cloned().unwrap_or(Value::Null),
    );
    Value::Object(m).to_string()
}

#[derive(Default)]
struct Node {
    owned: bool,
    children: BTreeMap<String, Node>,
}

fn step_key(step: &Step) -> String {
    match step {
        Step::Field(f) => format!("f:{f}"),
        Step::Key(k) => format!("k:{k}"),
        Step::Value(v) => format!("v:{v}"),
    }
}

/// The `fieldsV1` object of a field set.
pub(super) fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Node::default();
    for path in set {
        let node = path
            .iter()
            .fold(&mut root, |n, s| n.children.entry(step_key(s)).or_default());
        node.owned = true;
    }
    node_json(&root)
}

fn node_json(node: &Node) -> Value {
    let mut m = Map::new();
    if node.owned && !node.children.is_empty() {
        m.insert(".".to_string(), Value::Object(Map::new()));
    }
    for (k, child) in &node.children {
        m.insert(k.clone(), node_json(child));
    }
    Value::Object(m)
}

/// Parses a `fieldsV1` object back into a field set (unknown notations are skipped).
pub(super) fn from_fields_v1(v: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    parse_node(v, &mut Vec::new(), &mut set);
    set
}

fn parse_node(v: &Value, steps: &mut FieldPath, set: &mut FieldSet) {
    let Some(map) = v.as_object() else { return };
    if (map.is_empty() || map.contains_key(".")) && !steps.is_empty() {
        set.insert(steps.clone());
    }
    for (k, child) in map {
        let step = if let Some(f) = k.strip_prefix("f:") {
            Step::Field(f.to_string())
        } else if let Some(key) = k.strip_prefix("k:") {
            Step::Key(canonical(key))
        } else if let Some(val) = k.strip_prefix("v:") {
            Step::Value(canonical(val))
        } else {
            continue;
        };
        steps.push(step);
        parse_node(child, steps, set);
        steps.pop();
    }
}

fn canonical(json_text: &str) -> String {
    serde_json::from_str::<Value>(json_text)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| json_text.to_string())
}

fn item_matches(item: &Value, step: &Step) -> bool {
    match step {
        Step::Key(k) => serde_json::from_str::<Value>(k)
            .ok()
            .and_then(|kv| kv.as_object().cloned())
            .is_some_and(|kv| kv.iter().all(|(f, want)| item.get(f) == Some(want))),
        Step::Value(v) => serde_json::from_str::<Value>(v).is_ok_and(|want| *item == want),
        Step::Field(_) => false,
    }
}

fn child<'a>(v: &'a Value, step: &Step) -> Option<&'a Value> {
    match (v, step) {
        (Value::Object(m), Step::Field(f)) => m.get(f),
        (Value::Array(items), s) => items.iter().find(|i| item_matches(i, s)),
        _ => None,
    }
}

/// The value at `path` in `obj`, if present.
pub(super) fn get_at<'a>(obj: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(obj, child)
}

/// Removes the member or list item at `path` from `obj` (no-op when absent).
pub(super) fn remove_at(obj: &mut Value, path: &[Step]) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for step in parent_path {
        let next = match (cur, step) {
            (Value::Object(m), Step::Field(f)) => m.get_mut(f),
            (Value::Array(items), s) => items.iter_mut().find(|i| item_matches(i, s)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match (cur, last) {
        (Value::Object(m), Step::Field(f)) => {
            m.remove(f);
        }
        (Value::Array(items), s) => items.retain(|i| !item_matches(i, s)),
        _ => {}
    }
}

/// A path as the real server prints it in conflict messages: `.spec.containers[name="main"].image`.
pub(super) fn path_string(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Field(f) => format!(".{f}"),
            Step::Key(k) => {
                let inner = serde_json::from_str::<Value>(k)
                    .ok()
                    .and_then(|v| v.as_object().cloned());
                let parts: Vec<String> = inner
                    .map(|m| m.iter().map(|(f, v)| format!("{f}={v}")).collect())
                    .unwrap_or_default();
                format!("[{}]", parts.join(","))
            }
            Step::Value(v) => format!("[={v}]"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD: Schema = Schema {
        kind: "Pod",
        builtin: true,
    };

    #[test]
    fn fields_v1_notation_round_trips() {
        let obj = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["f"]},
            "spec": {"containers": [{"name": "main", "image": "i"}], "tolerations": [{"key": "t"}],
                     "nodeSelector": {}, "gone": null}
        });
        let set = fields_of(&obj, &POD);
        let v1 = to_fields_v1(&set);
        assert_eq!(
            v1,
            json!({
                "f:metadata": {"f:finalizers": {"v:\"f\"": {}}, "f:labels": {"f:a": {}}},
                "f:spec": {
                    "f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:image": {}, "f:name": {}}},
                    "f:nodeSelector": {},
                    "f:tolerations": {}
                }
            })
        );
        assert_eq!(from_fields_v1(&v1), set);
    }

    #[test]
    fn get_remove_and_print_paths() {
        let mut obj = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]},
                             "metadata": {"finalizers": ["f", "g"]}});
        let image = vec![
            Step::Field("spec".into()),
            Step::Field("containers".into()),
            Step::Key("{\"name\":\"a\"}".into()),
            Step::Field("image".into()),
        ];
        assert_eq!(get_at(&obj, &image), Some(&json!("x")));
        assert_eq!(path_string(&image), ".spec.containers[name=\"a\"].image");
        remove_at(&mut obj, &image[..3]);
        assert_eq!(obj["spec"]["containers"], json!([{"name": "b"}]));
        let g = vec![
            Step::Field("metadata".into()),
            Step::Field("finalizers".into()),
            Step::Value("\"g\"".into()),
        ];
        remove_at(&mut obj, &g);
        assert_eq!(obj["metadata"]["finalizers"], json!(["f"]));
        assert_eq!(get_at(&obj, &image), None);
    }
}
