//! What `kubectl get -o yaml` adds to a manifest and a new object must not carry: the status
//! and the metadata the API server writes. Pure.

use serde_json::Value;

use super::notes::Notes;

/// Metadata written by the API server (and `clusterName`, gone from Kubernetes since 1.25).
const SERVER_METADATA: [&str; 8] = [
    "clusterName",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
];

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Removes `status`, the server's metadata (`uid` too) and kubectl's record of the last apply
/// (it describes the old form), noting each.
pub fn strip_server_fields(doc: &mut Value, notes: &mut Notes) {
    let Some(obj) = doc.as_object_mut() else {
        return;
    };
    if obj.remove("status").is_some() {
        notes.dropped("status: written by the controller, never by a manifest");
    }
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else {
        return;
    };
    let mut gone: Vec<&str> = SERVER_METADATA
        .into_iter()
        .filter(|f| meta.remove(*f).is_some())
        .collect();
    if meta.remove("uid").is_some() {
        gone.push("uid");
    }
    if !gone.is_empty() {
        let fields: Vec<String> = gone.iter().map(|f| format!("metadata.{f}")).collect();
        notes.dropped(format!(
            "{}: written by the API server (kubectl get -o yaml output)",
            fields.join(", ")
        ));
    }
    if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
        if annotations.remove(LAST_APPLIED).is_some() {
            notes.dropped(format!(
                "metadata.annotations[{LAST_APPLIED}]: kubectl's record of the old form; kubectl apply writes a new one"
            ));
        }
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn get_output_becomes_a_manifest() {
        let mut doc = json!({
            "metadata": {"name": "m", "namespace": "kubeflow", "uid": "u", "resourceVersion": "1",
                "selfLink": "/x", "generation": 1, "creationTimestamp": "t", "clusterName": "",
                "annotations": {LAST_APPLIED: "{}"}, "labels": {"a": "b"}},
            "spec": {}, "status": {"phase": "Done"}
        });
        let mut notes = Notes::default();
        strip_server_fields(&mut doc, &mut notes);
        assert_eq!(
            doc,
            json!({"metadata": {"name": "m", "namespace": "kubeflow", "labels": {"a": "b"}}, "spec": {}})
        );
        assert_eq!(notes.0.len(), 3);
        let mut clean = json!({"metadata": {"name": "m"}, "spec": {}});
        let before = clean.clone();
        let mut none = Notes::default();
        strip_server_fields(&mut clean, &mut none);
        assert_eq!((clean, none), (before, Notes::default()));
    }
}
