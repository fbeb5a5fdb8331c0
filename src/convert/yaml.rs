//! YAML for converted manifests, keys in the order people write them (`apiVersion`, `kind`,
//! `metadata`, `spec`; `name` first, `tfReplicaSpecs` before `runPolicy`...), the rest
//! alphabetical. Pure.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// Keys that come first, in this order, wherever they appear.
const FIRST: [&str; 16] = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "spec",
    "tfReplicaSpecs",
    "replicas",
    "restartPolicy",
    "template",
    "runPolicy",
    "containers",
    "image",
];

struct Ordered<'a>(&'a Value);

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by_key(|k| {
                    let rank = FIRST.iter().position(|f| f == k).unwrap_or(FIRST.len());
                    (rank, k.as_str())
                });
                let mut out = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    out.serialize_entry(k, &Ordered(&map[k.as_str()]))?;
                }
                out.end()
            }
            Value::Array(items) => s.collect_seq(items.iter().map(Ordered)),
            other => other.serialize(s),
        }
    }
}

/// One document as YAML.
pub fn to_yaml(doc: &Value) -> Result<String, String> {
    serde_saphyr::to_string(&Ordered(doc)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn people_order_first_then_alphabetical() {
        let doc = json!({"spec": {"runPolicy": {}, "tfReplicaSpecs": {"Worker": {"template": {}, "replicas": 1}}},
            "metadata": {"namespace": "n", "name": "x"}, "kind": "TFJob", "apiVersion": "kubeflow.org/v1", "b": 1, "a": 2});
        let y = to_yaml(&doc).unwrap();
        let keys: Vec<&str> = y
            .lines()
            .map(|l| l.trim_start().split(':').next().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "apiVersion",
                "kind",
                "metadata",
                "name",
                "namespace",
                "spec",
                "tfReplicaSpecs",
                "Worker",
                "replicas",
                "template",
                "runPolicy",
                "a",
                "b"
            ]
        );
        let back: Value = serde_saphyr::from_str(&y).unwrap();
        assert_eq!(back, doc);
    }
}
