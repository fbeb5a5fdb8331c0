//! The typed form of a structural `openAPIV3Schema` node, built once per CRD version (pure).
//!
//! Parsing assumes the schema already passed the structural check; anything malformed that
//! slipped through is ignored rather than reported (the check is where errors are reported).

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

/// What `additionalProperties` allows for keys not in `properties`.
#[derive(Debug)]
pub(crate) enum Additional {
    /// Not specified: unknown keys are pruned (unless preserve-unknown-fields).
    Unspecified,
    /// `additionalProperties: true`: any value, kept as-is.
    Any,
    /// `additionalProperties: {schema}`: a map whose values follow the schema.
    Schema(Box<Node>),
}

#[derive(Debug)]
pub(crate) struct Node {
    pub type_: String,
    pub nullable: bool,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub properties: BTreeMap<String, Node>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enum_values: Option<Vec<Value>>,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub pattern: Option<(String, Regex)>,
    pub format: Option<String>,
    pub default: Option<Value>,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    /// The node's `x-kubernetes-validations`, compiled by kube-cel over a copy of this node's
    /// subtree whose descendants' rules are stripped (each node evaluates only its own rules).
    pub cel: Option<kube_cel::CompiledSchema>,
}

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn uint(s: &Value, key: &str) -> Option<u64> {
    s.get(key).and_then(Value::as_u64)
}

fn nodes(s: &Value, key: &str) -> Vec<Node> {
    s.get(key)
        .and_then(Value::as_array)
        .map(|list| list.iter().map(Node::parse).collect())
        .unwrap_or_default()
}

impl Node {
    pub(crate) fn parse(s: &Value) -> Node {
        let properties = s
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.clone(), Node::parse(v))).collect())
            .unwrap_or_default();
        let additional = match s.get("additionalProperties") {
            Some(Value::Bool(true)) => Additional::Any,
            Some(v @ Value::Object(_)) => Additional::Schema(Box::new(Node::parse(v))),
            _ => Additional::Unspecified,
        };
        let pattern = s
            .get("pattern")
            .and_then(Value::as_str)
            .and_then(|p| Regex::new(p).ok().map(|re| (p.to_string(), re)));
        Node {
            type_: s
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            nullable: flag(s, "nullable"),
            int_or_string: flag(s, "x-kubernetes-int-or-string"),
            preserve_unknown: flag(s, "x-kubernetes-preserve-unknown-fields"),
            embedded: flag(s, "x-kubernetes-embedded-resource"),
            properties,
            additional,
            items: s
                .get("items")
                .filter(|i| i.is_object())
                .map(|i| Box::new(Node::parse(i))),
            required: string_list(s, "required"),
            enum_values: s.get("enum").and_then(Value::as_array).cloned(),
            minimum: s.get("minimum").and_then(Value::as_f64),
            exclusive_minimum: flag(s, "exclusiveMinimum"),
            maximum: s.get("maximum").and_then(Value::as_f64),
            exclusive_maximum: flag(s, "exclusiveMaximum"),
            multiple_of: s.get("multipleOf").and_then(Value::as_f64),
            min_length: uint(s, "minLength"),
            max_length: uint(s, "maxLength"),
            min_items: uint(s, "minItems"),
            max_items: uint(s, "maxItems"),
            min_properties: uint(s, "minProperties"),
            max_properties: uint(s, "maxProperties"),
            pattern,
            format: s.get("format").and_then(Value::as_str).map(str::to_string),
            default: s.get("default").cloned(),
            list_type: s
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            list_map_keys: string_list(s, "x-kubernetes-list-map-keys"),
            all_of: nodes(s, "allOf"),
            any_of: nodes(s, "anyOf"),
            one_of: nodes(s, "oneOf"),
            not: s
                .get("not")
                .filter(|n| n.is_object())
                .map(|n| Box::new(Node::parse(n))),
            cel: compile_own_rules(s),
        }
    }

    /// The schema of a key of an object value: its property, else the map value schema.
    pub(crate) fn child(&self, key: &str) -> Option<&Node> {
        self.properties.get(key).or(match &self.additional {
            Additional::Schema(node) => Some(node),
            _ => None,
        })
    }
}

fn string_list(s: &Value, key: &str) -> Vec<String> {
    s.get(key)
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn compile_own_rules(s: &Value) -> Option<kube_cel::CompiledSchema> {
    let rules = s.get("x-kubernetes-validations")?.as_array()?;
    if rules.is_empty() {
        return None;
    }
    let mut own = s.clone();
    strip_descendant_rules(&mut own, true);
    Some(kube_cel::compile_schema(&own))
}

/// Removes `x-kubernetes-validations` below `s` (and on `s` itself unless `keep_self`).
fn strip_descendant_rules(s: &mut Value, keep_self: bool) {
    let Some(obj) = s.as_object_mut() else { return };
    if !keep_self {
        obj.remove("x-kubernetes-validations");
    }
    for (key, child) in obj.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Some(props) = child.as_object_mut() {
                    props
                        .values_mut()
                        .for_each(|p| strip_descendant_rules(p, false));
                }
            }
            "items" | "additionalProperties" | "not" => strip_descendant_rules(child, false),
            "allOf" | "anyOf" | "oneOf" => {
                if let Some(list) = child.as_array_mut() {
                    list.iter_mut()
                        .for_each(|b| strip_descendant_rules(b, false));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_keywords_and_children() {
        let node = Node::parse(&json!({
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "integer", "minimum": 0, "default": 1}},
            "x-kubernetes-validations": [{"rule": "self.a >= 0"}]
        }));
        assert_eq!(node.type_, "object");
        assert_eq!(node.required, vec!["a".to_string()]);
        let a = node.child("a").map(|a| (a.minimum, a.default.clone()));
        assert_eq!(a, Some((Some(0.0), Some(json!(1)))));
        assert!(node.cel.is_some());
        assert!(node.child("b").is_none());
    }

    #[test]
    fn strips_only_descendant_rules() {
        let mut s = json!({
            "x-kubernetes-validations": [{"rule": "true"}],
            "properties": {"a": {"x-kubernetes-validations": [{"rule": "false"}]}},
            "items": {"x-kubernetes-validations": [{"rule": "false"}]}
        });
        strip_descendant_rules(&mut s, true);
        assert!(s.get("x-kubernetes-validations").is_some());
        assert!(
            s["properties"]["a"]
                .get("x-kubernetes-validations")
                .is_none()
        );
        assert!(s["items"].get("x-kubernetes-validations").is_none());
    }
}
