//! Events the scheduler and kubelet would record about pods, so `kubectl describe pod` shows
//! them (no I/O besides store writes).
use serde_json::{Value, json};

use crate::store::{Store, WriteOptions, meta};

/// Record a core/v1 Event about `pod` from `component` (e.g. `default-scheduler`, `kubelet`).
pub fn record(
    store: &Store,
    pod: &Value,
    type_: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    let Some(events) = store.lookup("", "v1", "events") else {
        return;
    };
    let now = meta::now_string();
    let ns = meta::namespace(pod);
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{}.{:016x}", meta::name(pod), meta::random_u64()), "namespace": ns},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": meta::name(pod),
            "uid": meta::uid(pod), "resourceVersion": meta::resource_version(pod)},
        "reason": reason, "message": message, "type": type_,
        "source": {"component": component}, "reportingComponent": component, "reportingInstance": "",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    });
    let _ = store.create(&events, ns, event, &WriteOptions::default());
}
