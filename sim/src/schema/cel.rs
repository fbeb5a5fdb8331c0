//! `x-kubernetes-validations` (CEL) evaluation over a custom object, delegating each node's
//! rules to kube-cel (pure, no I/O).
//!
//! Each schema node's rules run with `self` = the value at that node. Transition rules
//! (`oldSelf`) run only when an old value correlates with the node: through object properties,
//! map (`additionalProperties`) keys and `x-kubernetes-list-type: map` items by key — never
//! through other lists, as in the real server. Failures become causes like the real server's
//! `fieldErrorForReason`: `Invalid value: "object": <message>` (the value is the schema type),
//! or `Forbidden`/`Required`/`Duplicate` per the rule's `reason`.

use serde_json::Value;

use super::cause::{Cause, child, duplicate, forbidden, index, invalid, required};
use super::node::Node;

pub(crate) fn evaluate(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errs: &mut Vec<Cause>,
) {
    if value.is_null() {
        return;
    }
    if let Some(compiled) = &node.cel
        && let Err(failures) = kube_cel::validate_compiled(compiled, value, old)
    {
        errs.extend(failures.iter().map(|f| to_cause(node, path, f)));
    }
    for branch in node.all_of.iter().chain(&node.any_of).chain(&node.one_of) {
        evaluate(branch, value, old, path, errs);
    }
    match value {
        Value::Object(obj) => {
            for (k, v) in obj {
                if let Some(schema) = node.child(k) {
                    let old_v = old.and_then(|o| o.get(k));
                    evaluate(schema, v, old_v, &child(path, k), errs);
                }
            }
        }
        Value::Array(list) => {
            let Some(items) = &node.items else { return };
            for (i, item) in list.iter().enumerate() {
                let old_item = old.and_then(|o| correlated_item(node, item, o));
                evaluate(items, item, old_item, &index(path, i), errs);
            }
        }
        _ => {}
    }
}

/// The old list item with the same map keys, for `x-kubernetes-list-type: map` lists only.
fn correlated_item<'a>(node: &Node, item: &Value, old_list: &'a Value) -> Option<&'a Value> {
    if node.list_type.as_deref() != Some("map") || node.list_map_keys.is_empty() {
        return None;
    }
    let same_keys = |o: &&Value| node.list_map_keys.iter().all(|k| o.get(k) == item.get(k));
    old_list.as_array()?.iter().find(same_keys)
}

fn to_cause(node: &Node, path: &str, failure: &kube_cel::ValidationError) -> Cause {
    let at = match failure.field_path.as_str() {
        "" => path.to_string(),
        fp if path.is_empty() => fp.trim_start_matches('.').to_string(),
        fp if fp.starts_with('.') => format!("{path}{fp}"),
        fp => child(path, fp),
    };
    let detail = failure.message.trim();
    let type_name = Value::String(node.type_.clone());
    let is_rule_failure = failure.kind == kube_cel::ErrorKind::ValidationFailure;
    match failure.reason.as_deref().filter(|_| is_rule_failure) {
        Some("FieldValueForbidden") => forbidden(&at, detail),
        Some("FieldValueRequired") => required(&at, detail),
        Some("FieldValueDuplicate") => duplicate(&at, &type_name),
        _ => invalid(&at, &type_name, detail),
    }
}
