//! Simulated nodes: the Node objects the sim starts with, their IPs, and node loss (no I/O
//! besides store writes).
use serde_json::{Value, json};

use super::control::Control;
use crate::store::{ApiError, Store, Sub, WriteOptions, meta};

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

/// Node loss: the node turns NotReady (Unknown) and every unfinished pod on it is marked Failed
/// with reason NodeLost (the kubelet is gone, so nothing else changes them).
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
        if matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        ) {
            continue;
        }
        let msg = format!(
            "Node {node} which was running pod {} is unresponsive",
            meta::name(&pod)
        );
        let _ = store.write(
            &pods,
            meta::namespace(&pod),
            meta::name(&pod),
            &internal,
            |cur| {
                let mut p = cur
                    .cloned()
                    .ok_or_else(|| ApiError::not_found("", "pods", meta::name(&pod)))?;
                p["status"]["phase"] = json!("Failed");
                p["status"]["reason"] = json!("NodeLost");
                p["status"]["message"] = json!(msg);
                Ok(p)
            },
        );
    }
}
