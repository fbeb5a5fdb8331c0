//! events.k8s.io/v1 Events are stored as core/v1 Events (like the real server) so that events
//! recorded by kube-rs show up in `kubectl describe`; this maps the fields both ways (pure).
use serde_json::{Map, Value, json};

/// (events.k8s.io/v1 field, core/v1 field); all other fields have the same name in both.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

fn rename(obj: &Value, api_version: &str, to_core: bool) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let renamed = RENAMED
            .iter()
            .find(|(v1, core)| if to_core { v1 == k } else { core == k })
            .map(|(v1, core)| if to_core { *core } else { *v1 });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    out.insert("apiVersion".into(), json!(api_version));
    out.insert("kind".into(), json!("Event"));
    Value::Object(out)
}

/// An events.k8s.io/v1 Event as the core/v1 Event that is stored.
pub fn to_core(event: &Value) -> Value {
    rename(event, "v1", true)
}

/// A stored core/v1 Event as events.k8s.io/v1.
pub fn from_core(event: &Value) -> Value {
    rename(event, "events.k8s.io/v1", false)
}

/// A field selector written against events.k8s.io/v1 names, in core/v1 names.
pub fn field_selector_to_core(selector: &str) -> String {
    let mut s = selector.to_string();
    for (v1, core) in RENAMED {
        s = s
            .replace(&format!("{v1}."), &format!("{core}."))
            .replace(&format!("{v1}="), &format!("{core}="));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_fields_both_ways() {
        let v1 = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "TFJob", "name": "j"}, "note": "hello", "reason": "Created",
            "reportingController": "tfjob-operator", "eventTime": "2024-01-01T00:00:00.000000Z",
            "series": {"count": 2}, "deprecatedCount": 3, "type": "Normal",
        });
        let core = to_core(&v1);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "j");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "tfjob-operator");
        assert_eq!(core["count"], 3);
        assert_eq!(core["series"]["count"], 2);
        assert!(core.get("regarding").is_none());
        assert_eq!(from_core(&core), v1);
        assert_eq!(
            field_selector_to_core("regarding.name=j,type=Normal"),
            "involvedObject.name=j,type=Normal"
        );
    }
}
