//! Table-driven tests of the pod state machine: every scripted transition, driven over time.

use jiff::Timestamp;
use serde_json::{Value, json};

use std::time::Duration;

use super::{CrashBackoff, Script, Step, step};

const T0: i64 = 1_700_000_000;

fn at(seconds: f64) -> Timestamp {
    let nanos = i128::from(T0) * 1_000_000_000 + (seconds * 1e9).round() as i128;
    Timestamp::from_nanosecond(nanos).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn pod(policy: &str, containers: &[&str], annotations: Value) -> Value {
    let containers: Vec<Value> = containers
        .iter()
        .map(|n| json!({"name": n, "image": format!("{n}:1")}))
        .collect();
    json!({
        "metadata": {"name": "job-worker-0", "namespace": "ns", "uid": "u-1", "annotations": annotations},
        "spec": {"restartPolicy": policy, "nodeName": "node-a", "containers": containers}
    })
}

/// The back-off the tests drive with: 0.1 s doubling up to 1 s (forgotten after a 2 s run).
fn short_backoff() -> CrashBackoff {
    CrashBackoff::new(Duration::from_millis(100), Duration::from_secs(1))
}

/// Steps `pod` at each time (seconds after T0), applying status changes; returns the last step.
fn drive(pod: &mut Value, times: &[f64]) -> Step {
    drive_with(pod, &mut short_backoff(), times)
}

fn drive_with(pod: &mut Value, backoff: &mut CrashBackoff, times: &[f64]) -> Step {
    let script = Script::from_pod(pod).unwrap_or_default();
    let mut last = Step {
        status: None,
        next_at: None,
    };
    for t in times {
        last = step(pod, &script, backoff, "node-a", "10.244.0.5", at(*t));
        if let Some(s) = &last.status {
            pod["status"] = s.clone();
        }
    }
    last
}

fn container<'a>(pod: &'a Value, name: &str) -> &'a Value {
    let list = pod["status"]["containerStatuses"].as_array();
    list.and_then(|l| l.iter().find(|c| c["name"] == name))
        .unwrap_or(&Value::Null)
}

fn condition(pod: &Value, type_: &str) -> Value {
    let list = pod["status"]["conditions"].as_array();
    list.and_then(|l| l.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn restart_policy_never_ends_by_exit_codes() {
    // (annotations, containers, phase, per-container (exitCode, reason))
    type Case<'a> = (Value, Vec<&'a str>, &'a str, Vec<(i64, &'a str)>);
    let cases: Vec<Case> = vec![
        (
            json!({}),
            vec!["tensorflow"],
            "Succeeded",
            vec![(0, "Completed")],
        ),
        (
            json!({"sim.tfjob.dev/exit-code": "1"}),
            vec!["tensorflow"],
            "Failed",
            vec![(1, "Error")],
        ),
        (
            json!({"sim.tfjob.dev/oom": "true"}),
            vec!["tensorflow"],
            "Failed",
            vec![(137, "OOMKilled")],
        ),
        (
            json!({"sim.tfjob.dev/exit-code": "2", "sim.tfjob.dev/exit-code.sidecar": "0"}),
            vec!["tensorflow", "sidecar"],
            "Failed",
            vec![(2, "Error"), (0, "Completed")],
        ),
        (
            json!({"sim.tfjob.dev/fail-times": "1"}),
            vec!["tensorflow"],
            "Failed",
            vec![(1, "Error")],
        ),
    ];
    for (annotations, names, phase, exits) in cases {
        let mut p = pod("Never", &names, annotations.clone());
        let last = drive(&mut p, &[0.0, 1.0]);
        assert_eq!(p["status"]["phase"], phase, "{annotations}");
        assert_eq!(last.next_at, None);
        for (name, (code, reason)) in names.iter().zip(exits) {
            let term = &container(&p, name)["state"]["terminated"];
            assert_eq!(
                (term["exitCode"].as_i64(), term["reason"].as_str()),
                (Some(code), Some(reason)),
                "{name}"
            );
            assert_eq!(container(&p, name)["ready"], false);
        }
        assert_eq!(condition(&p, "Ready")["reason"], "PodCompleted");
        assert_eq!(
            drive(&mut p, &[5.0]),
            Step {
                status: None,
                next_at: None
            },
            "final pods stay"
        );
    }
}

#[test]
fn scheduled_then_running_with_the_kubelets_status_shape() {
    let mut p = pod(
        "Never",
        &["tensorflow"],
        json!({"sim.tfjob.dev/start-seconds": "2", "sim.tfjob.dev/run-seconds": "3"}),
    );
    let first = drive(&mut p, &[0.0]);
    assert_eq!(first.next_at, Some(at(2.0)));
    let s = &p["status"];
    assert_eq!(s["phase"], "Pending");
    assert_eq!(
        container(&p, "tensorflow")["state"]["waiting"]["reason"],
        "ContainerCreating"
    );
    assert_eq!(
        (s["podIP"].clone(), s["podIPs"].clone()),
        (json!("10.244.0.5"), json!([{"ip": "10.244.0.5"}]))
    );
    assert!(
        s["hostIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("172.18.0."))
    );
    assert_eq!(s["startTime"], json!(at(0.0).to_string()));
    assert_eq!(s["qosClass"], "BestEffort");
    assert_eq!(condition(&p, "PodScheduled")["status"], "True");
    assert_eq!(condition(&p, "Ready")["reason"], "ContainersNotReady");
    assert_eq!(
        condition(&p, "Ready")["message"],
        "containers with unready status: [tensorflow]"
    );

    assert_eq!(
        drive(&mut p, &[1.0]),
        Step {
            status: None,
            next_at: Some(at(2.0))
        },
        "nothing due yet"
    );

    let running = drive(&mut p, &[2.0]);
    assert_eq!(running.next_at, Some(at(5.0)));
    let cs = container(&p, "tensorflow");
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(
        (
            cs["ready"].clone(),
            cs["started"].clone(),
            cs["restartCount"].clone()
        ),
        (json!(true), json!(true), json!(0))
    );
    assert_eq!(
        cs["state"]["running"]["startedAt"],
        json!(at(2.0).to_string())
    );
    assert!(
        cs["containerID"]
            .as_str()
            .is_some_and(|id| id.starts_with("containerd://"))
    );
    assert!(
        cs["imageID"]
            .as_str()
            .is_some_and(|id| id.starts_with("docker.io/library/tensorflow@sha256:"))
    );
    for type_ in ["Initialized", "Ready", "ContainersReady", "PodScheduled"] {
        assert_eq!(condition(&p, type_)["status"], "True", "{type_}");
    }
    assert_eq!(
        condition(&p, "Ready")["lastTransitionTime"],
        json!(at(2.0).to_string())
    );
    assert_eq!(
        condition(&p, "PodScheduled")["lastTransitionTime"],
        json!(at(0.0).to_string())
    );

    drive(&mut p, &[5.0]);
    let term = &container(&p, "tensorflow")["state"]["terminated"];
    assert_eq!(
        (term["startedAt"].clone(), term["finishedAt"].clone()),
        (json!(at(2.0).to_string()), json!(at(5.0).to_string()))
    );
    assert_eq!(
        term["containerID"],
        container(&p, "tensorflow")["containerID"]
    );
}

#[test]
fn on_failure_restarts_at_once_then_after_a_doubling_back_off_then_succeeds() {
    let mut p = pod(
        "OnFailure",
        &["tensorflow"],
        json!({"sim.tfjob.dev/fail-times": "3", "sim.tfjob.dev/exit-code": "3"}),
    );
    let mut backoff = short_backoff();
    let crash = |wait: &str| {
        format!("back-off {wait} restarting failed container=tensorflow pod=job-worker-0_ns(u-1)")
    };
    // (time, phase, state, restartCount, lastState exit code, waiting message, next look)
    // Each exit is a status of its own (`terminated`); the restart decision is the next look.
    type Row<'a> = (
        f64,
        &'a str,
        &'a str,
        u64,
        Option<i64>,
        Option<String>,
        Option<f64>,
    );
    let timeline: Vec<Row> = vec![
        (0.0, "Running", "running", 0, None, None, Some(1.0)),
        (1.0, "Running", "terminated", 0, None, None, Some(1.0)),
        (1.0, "Running", "running", 1, Some(3), None, Some(2.0)),
        (2.0, "Running", "terminated", 1, Some(3), None, Some(2.0)),
        (
            2.0,
            "Running",
            "waiting",
            1,
            Some(3),
            Some(crash("100ms")),
            Some(2.1),
        ),
        (2.1, "Running", "running", 2, Some(3), None, Some(3.1)),
        (3.1, "Running", "terminated", 2, Some(3), None, Some(3.1)),
        (
            3.1,
            "Running",
            "waiting",
            2,
            Some(3),
            Some(crash("200ms")),
            Some(3.3),
        ),
        (
            3.2,
            "Running",
            "waiting",
            2,
            Some(3),
            Some(crash("200ms")),
            Some(3.3),
        ),
        (3.3, "Running", "running", 3, Some(3), None, Some(4.3)),
        (4.3, "Succeeded", "terminated", 3, Some(3), None, None),
    ];
    for (t, phase, state, restarts, last_code, message, next) in timeline {
        let step = drive_with(&mut p, &mut backoff, &[t]);
        let cs = container(&p, "tensorflow");
        assert_eq!(p["status"]["phase"], phase, "t={t}");
        assert!(cs["state"].get(state).is_some(), "t={t}: {}", cs["state"]);
        assert_eq!(cs["restartCount"].as_u64(), Some(restarts), "t={t}");
        assert_eq!(
            cs["lastState"]["terminated"]["exitCode"].as_i64(),
            last_code,
            "t={t}"
        );
        assert_eq!(
            cs["state"]["waiting"]["message"].as_str(),
            message.as_deref(),
            "t={t}"
        );
        assert_eq!(step.next_at, next.map(at), "t={t}");
        if state == "waiting" {
            assert_eq!(cs["state"]["waiting"]["reason"], "CrashLoopBackOff");
        }
    }
    assert_eq!(
        container(&p, "tensorflow")["state"]["terminated"]["exitCode"],
        0
    );
}

#[test]
fn the_back_off_is_capped_and_kept_per_pod() {
    let mut p = pod(
        "Always",
        &["tensorflow"],
        json!({"sim.tfjob.dev/run-seconds": "0"}),
    );
    let mut backoff = short_backoff();
    let mut waits = Vec::new();
    let mut t = 0.0;
    for _ in 0..20 {
        let step = drive_with(&mut p, &mut backoff, &[t]);
        let cs = container(&p, "tensorflow");
        if let Some(m) = cs["state"]["waiting"]["message"].as_str() {
            waits.push(m.split(' ').nth(1).unwrap_or("").to_string());
        }
        t = step
            .next_at
            .map(|n| (n.as_millisecond() - at(0.0).as_millisecond()) as f64 / 1000.0)
            .unwrap_or(t);
    }
    assert_eq!(waits[..6], ["100ms", "200ms", "400ms", "800ms", "1s", "1s"]);
    // Another pod (another uid) starts with its own, empty back-off.
    let mut other = pod(
        "Always",
        &["tensorflow"],
        json!({"sim.tfjob.dev/run-seconds": "0"}),
    );
    other["metadata"]["uid"] = json!("u-2");
    drive_with(&mut other, &mut backoff, &[0.0, 0.0, 0.0]);
    assert_eq!(container(&other, "tensorflow")["restartCount"], 1);
}

#[test]
fn on_failure_with_a_finished_sidecar_keeps_running() {
    let mut p = pod(
        "OnFailure",
        &["tensorflow", "sidecar"],
        json!({"sim.tfjob.dev/exit-code": "1", "sim.tfjob.dev/exit-code.sidecar": "0"}),
    );
    let mut backoff = short_backoff();
    drive_with(&mut p, &mut backoff, &[0.0, 1.0]);
    assert_eq!(
        p["status"]["phase"], "Running",
        "a failed container restarts"
    );
    assert_eq!(
        container(&p, "tensorflow")["state"]["terminated"]["reason"],
        "Error"
    );
    drive_with(&mut p, &mut backoff, &[1.0, 2.0, 2.0]);
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(
        container(&p, "sidecar")["state"]["terminated"]["reason"],
        "Completed"
    );
    assert_eq!(
        container(&p, "tensorflow")["state"]["waiting"]["reason"],
        "CrashLoopBackOff"
    );
    assert_eq!(condition(&p, "Ready")["status"], "False");
}

#[test]
fn always_restarts_even_after_success() {
    let mut p = pod("Always", &["tensorflow"], json!({}));
    // exit, restart at once, exit, back off 0.1 s, restart
    drive(&mut p, &[0.0, 1.0, 1.0, 2.0, 2.0, 2.1]);
    let cs = container(&p, "tensorflow");
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(cs["restartCount"], 2);
    assert_eq!(cs["lastState"]["terminated"]["reason"], "Completed");
    assert!(cs["state"].get("running").is_some());
}

#[test]
fn eviction_fails_the_pod_without_terminated_state() {
    let mut p = pod(
        "OnFailure",
        &["tensorflow"],
        json!({"sim.tfjob.dev/evict": "true"}),
    );
    let last = drive(&mut p, &[0.0, 1.0]);
    let s = &p["status"];
    assert_eq!(
        (s["phase"].as_str(), s["reason"].as_str()),
        (Some("Failed"), Some("Evicted"))
    );
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("low on resource"))
    );
    let cs = container(&p, "tensorflow");
    assert!(cs["state"].get("terminated").is_none());
    assert_eq!(cs["ready"], false);
    assert_eq!(
        condition(&p, "DisruptionTarget")["reason"],
        "TerminationByKubelet"
    );
    assert_eq!(condition(&p, "Ready")["status"], "False");
    assert_eq!(last.next_at, None);
}

#[test]
fn an_unscripted_parameter_server_runs_until_deleted_and_a_scripted_one_ends() {
    let ps = |annotations: Value| {
        let mut p = pod("Never", &["tensorflow"], annotations);
        p["metadata"]["labels"] = json!({"training.kubeflow.org/replica-type": "ps"});
        p
    };
    let mut forever = ps(json!({}));
    let last = drive(&mut forever, &[0.0, 1.0, 3600.0]);
    assert_eq!(forever["status"]["phase"], "Running");
    assert!(container(&forever, "tensorflow")["state"]["running"].is_object());
    assert_eq!(condition(&forever, "Ready")["status"], "True");
    assert_eq!(last.next_at, None, "nothing left to happen until deletion");

    let mut scripted = ps(json!({"sim.tfjob.dev/run-seconds": "2"}));
    drive(&mut scripted, &[0.0, 1.0]);
    assert_eq!(scripted["status"]["phase"], "Running");
    drive(&mut scripted, &[2.0]);
    assert_eq!(scripted["status"]["phase"], "Succeeded");
}

#[test]
fn never_start_waits_forever() {
    let cases = [
        (
            "ImagePullBackOff",
            "Back-off pulling image \"tensorflow:1\"",
        ),
        ("CreateContainerConfigError", "never-start"),
    ];
    for (reason, message_part) in cases {
        let mut p = pod(
            "Never",
            &["tensorflow"],
            json!({"sim.tfjob.dev/never-start": reason}),
        );
        let first = drive(&mut p, &[0.0]);
        assert_eq!(first.next_at, None);
        let waiting = &container(&p, "tensorflow")["state"]["waiting"];
        assert_eq!(waiting["reason"], reason);
        assert!(
            waiting["message"]
                .as_str()
                .is_some_and(|m| m.contains(message_part)),
            "{waiting}"
        );
        assert_eq!(p["status"]["phase"], "Pending");
        assert_eq!(
            drive(&mut p, &[3600.0]),
            Step {
                status: None,
                next_at: None
            }
        );
    }
}

#[test]
fn init_containers_complete_at_once() {
    let mut p = pod("Never", &["tensorflow"], json!({}));
    p["spec"]["initContainers"] = json!([{"name": "init", "image": "busybox"}]);
    drive(&mut p, &[0.0]);
    let init = &p["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["reason"], "Completed");
    assert_eq!(p["status"]["phase"], "Running");
}
