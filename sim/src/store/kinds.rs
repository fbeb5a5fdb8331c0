//! Per-kind defaults the real API server applies at creation: pod and namespace phases, service
//! cluster IPs (none for headless services), node readiness, quota status (no I/O).
use serde_json::{Value, json};

use super::objects::Inner;
use super::resource::ResourceType;

pub(super) fn on_create(inner: &mut Inner, rt: &ResourceType, obj: &mut Value) {
    if !rt.group.is_empty() {
        return;
    }
    match rt.plural.as_str() {
        "pods" if obj.get("status").is_none() => {
            obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
        }
        "pods" => {}
        "services" => {
            assign_cluster_ip(inner, obj);
            if obj.get("status").is_none() {
                obj["status"] = json!({"loadBalancer": {}});
            }
        }
        "namespaces" => {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
        "resourcequotas" => super::admission::quota_status(obj),
        _ => {}
    }
}

/// Per-kind effects of an update.
pub(super) fn on_update(rt: &ResourceType, obj: &mut Value) {
    if rt.group.is_empty() && rt.plural == "resourcequotas" {
        super::admission::quota_status(obj);
    }
}

fn assign_cluster_ip(inner: &mut Inner, svc: &mut Value) {
    if !svc["spec"].is_object() {
        svc["spec"] = json!({});
    }
    let spec = &mut svc["spec"];
    if spec["type"].is_null() {
        spec["type"] = json!("ClusterIP");
    }
    match spec["clusterIP"].as_str() {
        Some("None") => spec["clusterIPs"] = json!(["None"]),
        Some(ip) if !ip.is_empty() => spec["clusterIPs"] = json!([ip]),
        _ => {
            let n = inner.next_cluster_ip;
            inner.next_cluster_ip += 1;
            let ip = crate::addresses::SERVICE_RANGE.nth(n);
            spec["clusterIP"] = json!(ip);
            spec["clusterIPs"] = json!([ip]);
        }
    }
    if spec["sessionAffinity"].is_null() {
        spec["sessionAffinity"] = json!("None");
    }
}

/// The grace period a pod deletion gets (`podStrategy.CheckGracefulDelete`): the request's,
/// else the pod's, else 30s (the defaulted `terminationGracePeriodSeconds`); 0 for pods that
/// never ran on a node or already finished; a negative period counts as 1s.
pub(super) fn pod_grace_seconds(pod: &Value, requested: Option<i64>) -> i64 {
    let phase = pod["status"]["phase"].as_str().unwrap_or("");
    if pod["spec"]["nodeName"].as_str().unwrap_or("").is_empty()
        || matches!(phase, "Succeeded" | "Failed")
    {
        return 0;
    }
    requested
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .map(|g| if g < 0 { 1 } else { g })
        .unwrap_or(30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_grace_period_rules() {
        let running = json!({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 5}, "status": {"phase": "Running"}});
        let unscheduled = json!({"spec": {}, "status": {"phase": "Pending"}});
        let done = json!({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}});
        let cases = [
            (&running, None, 5),
            (&running, Some(0), 0),
            (&running, Some(7), 7),
            (&running, Some(-3), 1),
            (&unscheduled, Some(7), 0),
            (&done, None, 0),
            (
                &json!({"spec": {"nodeName": "n"}, "status": {"phase": "Running"}}),
                None,
                30,
            ),
        ];
        for (pod, req, want) in cases {
            assert_eq!(pod_grace_seconds(pod, req), want, "{pod} {req:?}");
        }
    }
}
