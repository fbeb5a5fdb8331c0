//! Pruning of fields a structural schema does not declare (pure, no I/O).
//!
//! Like the apiextensions-apiserver: unknown object fields are dropped unless the node (or an
//! ancestor without a schema for the field) has `x-kubernetes-preserve-unknown-fields: true`;
//! `additionalProperties` schemas prune map values; at the root and at embedded resources
//! `apiVersion` and `kind` are kept and `metadata` is reduced to the ObjectMeta fields.
//! Each dropped field is reported as the warning the real server sends: `unknown field "a.b"`.

use serde_json::{Map, Value};

use super::cause::{child, index};
use super::node::{Additional, Node};

/// The fields of `metav1.ObjectMeta`; anything else under a resource's metadata is dropped.
pub(crate) const OBJECT_META_FIELDS: [&str; 15] = [
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

/// Prunes `value` (a whole custom object) in place; returns the dropped field paths as warnings.
pub(crate) fn prune(root: &Node, value: &mut Value) -> Vec<String> {
    let mut dropped = Vec::new();
    prune_node(root, value, "", true, &mut dropped);
    dropped
        .into_iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect()
}

fn prune_node(node: &Node, value: &mut Value, path: &str, resource: bool, out: &mut Vec<String>) {
    match value {
        Value::Object(obj) => prune_object(node, obj, path, resource || node.embedded, out),
        Value::Array(list) => {
            if let Some(items) = &node.items {
                for (i, item) in list.iter_mut().enumerate() {
                    prune_node(items, item, &index(path, i), false, out);
                }
            }
        }
        _ => {}
    }
}

fn prune_object(
    node: &Node,
    obj: &mut Map<String, Value>,
    path: &str,
    resource: bool,
    out: &mut Vec<String>,
) {
    let keys: Vec<String> = obj.keys().cloned().collect();
    for k in keys {
        let at = child(path, &k);
        if resource && (k == "apiVersion" || k == "kind") {
            continue;
        }
        if resource && k == "metadata" {
            if let Some(Value::Object(meta)) = obj.get_mut(&k) {
                prune_metadata(meta, &at, out);
            }
            continue;
        }
        let schema = node.properties.get(&k).or(match &node.additional {
            Additional::Schema(s) => Some(s.as_ref()),
            _ => None,
        });
        match schema {
            Some(s) => {
                if let Some(v) = obj.get_mut(&k) {
                    prune_node(s, v, &at, false, out);
                }
            }
            None if node.preserve_unknown || matches!(node.additional, Additional::Any) => {}
            None => {
                obj.remove(&k);
                out.push(at);
            }
        }
    }
}

fn prune_metadata(meta: &mut Map<String, Value>, path: &str, out: &mut Vec<String>) {
    let unknown: Vec<String> = meta
        .keys()
        .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in unknown {
        meta.remove(&k);
        out.push(child(path, &k));
    }
}
