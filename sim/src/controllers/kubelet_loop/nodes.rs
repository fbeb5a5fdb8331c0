//! Simulated nodes: the Node objects the sim starts with, their IPs, and node loss (no I/O
//! besides store writes).
use serde_json::{Value, json};

use super::control::Control;
use jiff::Timestamp;

use crate::controllers::disruption;
use crate::store::{ApiError, DeleteOptions, Store, Sub, WriteOptions, meta};

/// `198.19.0.<10+i>` for node i: in the benchmarking range 198.18.0.0/15 (RFC 2544) the
/// project's test traffic may use; the sim sends nothing there.
pub fn node_ip(nodes: &[String], node: &str) -> String {
    let i = nodes.iter().position(|n| n == node).unwrap_or(0);
    format!("198.19.0.{}", 10 + i)
}

/// The labels of a simulated node, as a kubelet sets them (plus `type: tfjob-sim`).
pub fn node_labels(name: &str) -> std::collections::BTreeMap<String, String> {
    [
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("type", "tfjob-sim"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A node object as the sim creates it (Ready).
pub fn node_object(name: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": node_labels(name)},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "tfjob-sim node"}],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "1000", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "1000", "nvidia.com/gpu": "8"},
        },
    })
}

/// Node loss, as when its Node object is deleted: the node turns NotReady (Unknown) and no
/// new pod lands there; pod GC then does what its `gcOrphaned` does for each pod bound to it
/// (pkg/controller/podgc): an unfinished pod is marked Failed with the `DisruptionTarget`
/// condition `DeletionByPodGC`, then every pod is deleted with grace 0 (the kubelet is gone;
/// nobody else would end them). Here at once, without the controller's 40 s quarantine.
pub fn lose_node(store: &Store, ctl: &Control, node: &str) {
    ctl.mark_lost(node);
    let internal = WriteOptions {
        internal: true,
        sub: Sub::Status,
        ..Default::default()
    };
    if let Some(nodes) = store.lookup("", "v1", "nodes") {
        let _ = store.write(&nodes, "", node, &internal, |cur| {
            let mut n = cur.cloned().ok_or_else(|| ApiError::not_found("", "nodes", node))?;
            n["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status."}]);
            Ok(n)
        });
    }
    let Some(pods) = store.lookup("", "v1", "pods") else {
        return;
    };
    let (on_node, _) = store.list(&pods, None, |p| p["spec"]["nodeName"] == node);
    for pod in on_node {
        let (ns, name) = (meta::namespace(&pod), meta::name(&pod));
        let finished = matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        );
        if !finished {
            let _ = store.write(&pods, ns, name, &internal, |cur| {
                let mut p = cur
                    .cloned()
                    .ok_or_else(|| ApiError::not_found("", "pods", name))?;
                p["status"]["phase"] = json!("Failed");
                disruption::mark(&mut p["status"], disruption::POD_GC, Timestamp::now());
                Ok(p)
            });
        }
        let opts = DeleteOptions {
            grace_seconds: Some(0),
            precondition_uid: Some(meta::uid(&pod).to_string()),
            ..Default::default()
        };
        let _ = store.delete(&pods, ns, name, &opts);
    }
}
