//! kube-apiserver's pod printer (`printPod`): NAME READY STATUS RESTARTS AGE, and the wide
//! columns IP NODE NOMINATED NODE READINESS GATES (priority 1). Pure.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::cells::{AGE_DESCRIPTION, age, column, name_column, name_of, str_at};

pub(super) fn pod_columns() -> Vec<Value> {
    vec![
        name_column(),
        column(
            "Ready",
            "string",
            "",
            "The aggregate readiness state of this pod for accepting traffic.",
            0,
        ),
        column(
            "Status",
            "string",
            "",
            "The aggregate status of the containers in this pod.",
            0,
        ),
        column(
            "Restarts",
            "string",
            "",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            0,
        ),
        column("Age", "string", "", AGE_DESCRIPTION, 0),
        column(
            "IP",
            "string",
            "",
            "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            1,
        ),
        column(
            "Node",
            "string",
            "",
            "NodeName indicates in which node this pod is scheduled.",
            1,
        ),
        column(
            "Nominated Node",
            "string",
            "",
            "nominatedNodeName is set only when this pod preempts other pods on the node.",
            1,
        ),
        column(
            "Readiness Gates",
            "string",
            "",
            "If specified, all readiness gates will be evaluated for pod readiness.",
            1,
        ),
    ]
}

/// Row conditions kubectl uses to recognise finished pods.
pub(super) fn pod_row_conditions(pod: &Value) -> Option<Value> {
    match str_at(pod, "/status/phase") {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    }
}

fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn condition_true(pod: &Value, type_: &str) -> bool {
    list(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == type_ && str_at(c, "/status") == "True")
}

/// What the container statuses add up to.
#[derive(Default)]
struct Summary {
    ready: usize,
    reason: String,
    restarts: i64,
    last_restart: Option<Timestamp>,
}

impl Summary {
    fn count_restarts(&mut self, status: &Value) {
        self.restarts += status
            .get("restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let finished = str_at(status, "/lastState/terminated/finishedAt")
            .parse::<Timestamp>()
            .ok();
        self.last_restart = self.last_restart.max(finished);
    }
}

fn terminated_reason(terminated: &Value, prefix: &str) -> String {
    let reason = str_at(terminated, "/reason");
    let signal = terminated
        .get("signal")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let exit = terminated
        .get("exitCode")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    match (reason, signal) {
        ("", 0) => format!("{prefix}ExitCode:{exit}"),
        ("", s) => format!("{prefix}Signal:{s}"),
        (r, _) => format!("{prefix}{r}"),
    }
}

fn is_sidecar(pod: &Value, name: &str) -> bool {
    list(pod, "/spec/initContainers")
        .iter()
        .any(|c| str_at(c, "/name") == name && str_at(c, "/restartPolicy") == "Always")
}

/// Walks init container statuses; returns whether the pod is still initializing.
fn summarize_init(pod: &Value, s: &mut Summary, sidecars: &mut Summary) -> bool {
    let total = list(pod, "/spec/initContainers").len();
    for (i, st) in list(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        s.count_restarts(st);
        let sidecar = is_sidecar(pod, str_at(st, "/name"));
        if sidecar {
            sidecars.count_restarts(st);
        }
        let state = st.get("state").cloned().unwrap_or(Value::Null);
        let terminated = state.get("terminated");
        let waiting_reason = str_at(&state, "/waiting/reason");
        if terminated.is_some_and(|t| t.get("exitCode").and_then(Value::as_i64) == Some(0)) {
            continue;
        }
        if sidecar && st.get("started") == Some(&Value::Bool(true)) {
            if st.get("ready") == Some(&Value::Bool(true)) {
                s.ready += 1;
            }
            continue;
        }
        s.reason = match terminated {
            Some(t) => terminated_reason(t, "Init:"),
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                format!("Init:{waiting_reason}")
            }
            None => format!("Init:{i}/{total}"),
        };
        return true;
    }
    false
}

/// Walks container statuses (last to first, as the real printer does).
fn summarize_containers(pod: &Value, s: &mut Summary) {
    let mut has_running = false;
    for st in list(pod, "/status/containerStatuses").iter().rev() {
        s.count_restarts(st);
        let state = st.get("state").cloned().unwrap_or(Value::Null);
        let waiting_reason = str_at(&state, "/waiting/reason");
        if !waiting_reason.is_empty() {
            s.reason = waiting_reason.to_string();
        } else if let Some(t) = state.get("terminated") {
            s.reason = terminated_reason(t, "");
        } else if st.get("ready") == Some(&Value::Bool(true)) && state.get("running").is_some() {
            has_running = true;
            s.ready += 1;
        }
    }
    if s.reason == "Completed" && has_running {
        s.reason = if condition_true(pod, "Ready") {
            "Running"
        } else {
            "NotReady"
        }
        .to_string();
    }
}

fn pod_status(pod: &Value) -> Summary {
    let phase = str_at(pod, "/status/phase");
    let mut s = Summary {
        reason: phase.to_string(),
        ..Summary::default()
    };
    let status_reason = str_at(pod, "/status/reason");
    if !status_reason.is_empty() {
        s.reason = status_reason.to_string();
    }
    let gated = list(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == "PodScheduled" && str_at(c, "/reason") == "SchedulingGated");
    if gated {
        s.reason = "SchedulingGated".to_string();
    }
    let mut sidecars = Summary::default();
    let initializing = summarize_init(pod, &mut s, &mut sidecars);
    if !initializing || condition_true(pod, "Initialized") {
        s.restarts = sidecars.restarts;
        s.last_restart = sidecars.last_restart;
        summarize_containers(pod, &mut s);
    }
    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null());
    if deleting && status_reason == "NodeLost" {
        s.reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        s.reason = "Terminating".to_string();
    }
    s
}

fn or_none(s: &str) -> Value {
    json!(if s.is_empty() { "<none>" } else { s })
}

fn readiness_gates(pod: &Value) -> Value {
    let gates = list(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return json!("<none>");
    }
    let ok = gates
        .iter()
        .filter(|g| condition_true(pod, str_at(g, "/conditionType")))
        .count();
    json!(format!("{ok}/{}", gates.len()))
}

pub(super) fn pod_cells(pod: &Value, now: Timestamp) -> Vec<Value> {
    let s = pod_status(pod);
    let sidecar_count = list(pod, "/spec/initContainers")
        .iter()
        .filter(|c| str_at(c, "/restartPolicy") == "Always")
        .count();
    let total = list(pod, "/spec/containers").len() + sidecar_count;
    let restarts = match s.last_restart {
        Some(t) if s.restarts != 0 => format!("{} ({} ago)", s.restarts, age(&t.to_string(), now)),
        _ => s.restarts.to_string(),
    };
    let ip = list(pod, "/status/podIPs")
        .first()
        .map_or("", |p| str_at(p, "/ip"));
    let ip = if ip.is_empty() {
        str_at(pod, "/status/podIP")
    } else {
        ip
    };
    vec![
        name_of(pod),
        json!(format!("{}/{total}", s.ready)),
        json!(s.reason),
        json!(restarts),
        json!(age(str_at(pod, "/metadata/creationTimestamp"), now)),
        or_none(ip),
        or_none(str_at(pod, "/spec/nodeName")),
        or_none(str_at(pod, "/status/nominatedNodeName")),
        readiness_gates(pod),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2024-01-10T00:00:00Z"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn pod(phase: &str, statuses: Value) -> Value {
        json!({
            "metadata": {"name": "p", "creationTimestamp": "2024-01-09T23:59:55Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "node-1"},
            "status": {"phase": phase, "podIPs": [{"ip": "10.0.0.5"}], "containerStatuses": statuses}
        })
    }

    fn running(ready: bool, restarts: i64) -> Value {
        json!({"ready": ready, "restartCount": restarts, "state": {"running": {}}})
    }

    fn terminated(reason: &str, code: i64) -> Value {
        json!({"ready": false, "restartCount": 0, "state": {"terminated": {"reason": reason, "exitCode": code}}})
    }

    fn waiting(reason: &str) -> Value {
        json!({"ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason}}})
    }

    #[test]
    fn ready_status_and_restarts() {
        let with_last = json!({"ready": true, "restartCount": 2, "state": {"running": {}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-01-09T23:59:30Z"}}});
        let mut deleting = pod("Running", json!([running(true, 0), running(true, 0)]));
        deleting["metadata"]["deletionTimestamp"] = json!("2024-01-10T00:00:00Z");
        let mut evicted = pod("Failed", json!([]));
        evicted["status"]["reason"] = json!("Evicted");
        let mut done_deleting = pod(
            "Succeeded",
            json!([terminated("Completed", 0), terminated("Completed", 0)]),
        );
        done_deleting["metadata"]["deletionTimestamp"] = json!("2024-01-10T00:00:00Z");
        let cases = [
            (pod("Pending", json!([])), "0/2", "Pending", "0"),
            (
                pod("Running", json!([running(true, 0), running(false, 1)])),
                "1/2",
                "Running",
                "1",
            ),
            (
                pod("Running", json!([running(true, 0), with_last])),
                "2/2",
                "Running",
                "2 (30s ago)",
            ),
            (
                pod(
                    "Succeeded",
                    json!([terminated("Completed", 0), terminated("Completed", 0)]),
                ),
                "0/2",
                "Completed",
                "0",
            ),
            (
                pod(
                    "Failed",
                    json!([terminated("Completed", 0), terminated("Error", 1)]),
                ),
                "0/2",
                "Completed",
                "0",
            ),
            (
                pod(
                    "Failed",
                    json!([terminated("Error", 1), terminated("OOMKilled", 137)]),
                ),
                "0/2",
                "Error",
                "0",
            ),
            (
                pod("Failed", json!([terminated("", 3), terminated("", 3)])),
                "0/2",
                "ExitCode:3",
                "0",
            ),
            (
                pod(
                    "Pending",
                    json!([waiting("ImagePullBackOff"), waiting("ContainerCreating")]),
                ),
                "0/2",
                "ImagePullBackOff",
                "0",
            ),
            (
                pod(
                    "Running",
                    json!([running(true, 0), waiting("CrashLoopBackOff")]),
                ),
                "1/2",
                "CrashLoopBackOff",
                "0",
            ),
            (
                pod(
                    "Running",
                    json!([terminated("Completed", 0), running(true, 0)]),
                ),
                "1/2",
                "NotReady",
                "0",
            ),
            (deleting, "2/2", "Terminating", "0"),
            (done_deleting, "0/2", "Completed", "0"),
            (evicted, "0/2", "Evicted", "0"),
        ];
        for (p, ready, status, restarts) in cases {
            let cells = pod_cells(&p, now());
            assert_eq!(
                cells[..4],
                [json!("p"), json!(ready), json!(status), json!(restarts)],
                "{p}"
            );
            assert_eq!(cells[4], json!("5s"));
        }
    }

    #[test]
    fn wide_columns_and_init_containers() {
        let p = pod("Running", json!([running(true, 0), running(true, 0)]));
        let cells = pod_cells(&p, now());
        assert_eq!(
            cells[5..],
            [
                json!("10.0.0.5"),
                json!("node-1"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        assert_eq!(pod_columns().len(), cells.len());

        let mut init = pod(
            "Pending",
            json!([waiting("PodInitializing"), waiting("PodInitializing")]),
        );
        init["spec"]["initContainers"] = json!([{"name": "i1"}, {"name": "i2"}]);
        init["status"]["initContainerStatuses"] = json!([
            {"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
            {"name": "i2", "restartCount": 0, "state": {"running": {}}}
        ]);
        assert_eq!(pod_cells(&init, now())[2], json!("Init:1/2"));
        init["status"]["initContainerStatuses"][1]["state"] =
            json!({"terminated": {"exitCode": 2, "reason": "Error"}});
        assert_eq!(pod_cells(&init, now())[2], json!("Init:Error"));
    }

    #[test]
    fn finished_pods_carry_row_conditions() {
        assert_eq!(
            pod_row_conditions(&pod("Succeeded", json!([])))
                .and_then(|c| c[0]["reason"].as_str().map(str::to_string)),
            Some("Succeeded".to_string())
        );
        assert_eq!(pod_row_conditions(&pod("Running", json!([]))), None);
    }
}
