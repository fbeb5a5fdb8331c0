//! Structural defaulting, as the apiextensions-apiserver does it after pruning (pure, no I/O).
//!
//! A property with a `default` is set when absent, or when `null` and not `nullable`; defaults
//! are applied top-down, so a defaulted object gets its own nested defaults too. Afterwards
//! `null` values of non-nullable properties without a default are dropped, as the real server
//! drops them before validation. Root `metadata` is never defaulted.

use serde_json::Value;

use super::node::Node;

pub(crate) fn apply(root: &Node, value: &mut Value) {
    default_node(root, value, true);
    prune_nulls(root, value);
}

fn default_node(node: &Node, value: &mut Value, is_root: bool) {
    match value {
        Value::Object(obj) => {
            for (name, prop) in &node.properties {
                if is_root && name == "metadata" {
                    continue;
                }
                let Some(default) = &prop.default else {
                    continue;
                };
                let missing = match obj.get(name) {
                    None => true,
                    Some(Value::Null) => !prop.nullable,
                    Some(_) => false,
                };
                if missing {
                    obj.insert(name.clone(), default.clone());
                }
            }
            for (k, v) in obj.iter_mut() {
                if is_root && k == "metadata" {
                    continue;
                }
                if let Some(schema) = node.child(k) {
                    default_node(schema, v, false);
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = &node.items {
                list.iter_mut()
                    .for_each(|item| default_node(items, item, false));
            }
        }
        _ => {}
    }
}

fn prune_nulls(node: &Node, value: &mut Value) {
    match value {
        Value::Object(obj) => {
            obj.retain(|k, v| {
                let Some(schema) = node.child(k) else {
                    return true;
                };
                !(v.is_null() && !schema.nullable && schema.default.is_none())
            });
            for (k, v) in obj.iter_mut() {
                if let Some(schema) = node.child(k) {
                    prune_nulls(schema, v);
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = &node.items {
                list.iter_mut().for_each(|item| prune_nulls(items, item));
            }
        }
        _ => {}
    }
}
