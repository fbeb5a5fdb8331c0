//! Table-driven tests of the pod state machine: every scripted transition, driven over time.

use jiff::Timestamp;
use serde_json::{Value, json};

use std::time::Duration;

use super::{CrashBackoff, Event, Script, Step, kill, sim_log, step};

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

/// The lag of the terminal phase behind the containers' end the tests drive with.
const LAG: Duration = Duration::from_millis(500);

/// Steps `pod` at each time (seconds after T0), applying status changes; returns the last step.
fn drive(pod: &mut Value, times: &[f64]) -> Step {
    drive_with(pod, &mut short_backoff(), times)
}

fn drive_with(pod: &mut Value, backoff: &mut CrashBackoff, times: &[f64]) -> Step {
    let script = Script::from_pod(pod).unwrap_or_default();
    let mut last = Step::idle();
    for t in times {
        last = step(
            pod,
            &script,
            backoff,
            "198.19.0.10",
            "198.19.128.5",
            LAG,
            at(*t),
        );
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

/// Items 2 and 5 of testcluster/README.md ("The real kubelet and `sim/`"): exit codes and
/// reasons as the real kubelet's; a Succeeded pod's Ready/ContainersReady/Initialized say
/// `PodCompleted`, a Failed pod's Ready/ContainersReady say `PodFailed` and Initialized has no
/// reason.
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
        let last = drive(&mut p, &[0.0, 1.0, 1.5]);
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
        let (ready, initialized) = if phase == "Succeeded" {
            ("PodCompleted", json!("PodCompleted"))
        } else {
            ("PodFailed", Value::Null)
        };
        for type_ in ["Ready", "ContainersReady"] {
            assert_eq!(condition(&p, type_)["status"], "False", "{type_}");
            assert_eq!(condition(&p, type_)["reason"], ready, "{annotations}");
        }
        assert_eq!(condition(&p, "Initialized")["reason"], initialized);
        assert_eq!(
            condition(&p, "PodReadyToStartContainers")["status"],
            "False"
        );
        assert_eq!(drive(&mut p, &[5.0]), Step::idle(), "final pods stay");
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
        (json!("198.19.128.5"), json!([{"ip": "198.19.128.5"}]))
    );
    assert_eq!(
        (s["hostIP"].clone(), s["hostIPs"].clone()),
        (json!("198.19.0.10"), json!([{"ip": "198.19.0.10"}])),
        "the node's InternalIP (item 9 of testcluster/README.md)"
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
            next_at: Some(at(2.0)),
            events: vec![],
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
    // Item 6 of testcluster/README.md: within a back-off the exit stays `terminated` for 90% of
    // the wait (the real kubelet shows it ~10 s of a 10 s back-off), then `CrashLoopBackOff`;
    // the final status keeps restartCount but has no lastState.
    let timeline: Vec<Row> = vec![
        (0.0, "Running", "running", 0, None, None, Some(1.0)),
        (1.0, "Running", "terminated", 0, None, None, Some(1.0)),
        (1.0, "Running", "running", 1, Some(3), None, Some(2.0)),
        (2.0, "Running", "terminated", 1, Some(3), None, Some(2.0)),
        (2.0, "Running", "terminated", 1, Some(3), None, Some(2.09)),
        (
            2.09,
            "Running",
            "waiting",
            1,
            Some(3),
            Some(crash("100ms")),
            Some(2.1),
        ),
        (2.1, "Running", "running", 2, Some(3), None, Some(3.1)),
        (3.1, "Running", "terminated", 2, Some(3), None, Some(3.1)),
        (3.1, "Running", "terminated", 2, Some(3), None, Some(3.28)),
        (
            3.28,
            "Running",
            "waiting",
            2,
            Some(3),
            Some(crash("200ms")),
            Some(3.3),
        ),
        (3.3, "Running", "running", 3, Some(3), None, Some(4.3)),
        // The success: `terminated` under phase Running first (item 3), the phase a lag later.
        (4.3, "Running", "terminated", 3, Some(3), None, Some(4.8)),
        (4.8, "Succeeded", "terminated", 3, None, None, None),
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
    // restart, exit again, (terminated shown for 90% of the 0.1 s back-off), back off
    drive_with(&mut p, &mut backoff, &[1.0, 2.0, 2.0, 2.09]);
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
    drive(&mut scripted, &[2.0, 2.5]);
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
        assert_eq!(drive(&mut p, &[3600.0]), Step::idle());
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

fn terminated<'a>(pod: &'a Value, name: &str) -> &'a Value {
    &container(pod, name)["state"]["terminated"]
}

/// Item 3 of testcluster/README.md ("The real kubelet and `sim/`"): the first status after a
/// container's end under `restartPolicy: Never` shows `terminated` with the phase still
/// Running and `PodReadyToStartContainers` True; the terminal phase comes a lag later.
#[test]
fn item3_the_terminal_phase_follows_the_containers_end_a_lag_later() {
    let mut p = pod(
        "Never",
        &["tensorflow"],
        json!({"sim.tfjob.dev/exit-code": "1"}),
    );
    drive(&mut p, &[0.0]);
    let ended = drive(&mut p, &[1.0]);
    assert_eq!(terminated(&p, "tensorflow")["exitCode"], 1);
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(condition(&p, "PodReadyToStartContainers")["status"], "True");
    assert_eq!(condition(&p, "Ready")["reason"], "ContainersNotReady");
    assert_eq!(ended.next_at, Some(at(1.5)), "the phase is due a lag later");
    assert_eq!(
        drive(&mut p, &[1.4]),
        Step {
            status: None,
            next_at: Some(at(1.5)),
            events: vec![]
        }
    );
    let last = drive(&mut p, &[1.5]);
    assert_eq!(p["status"]["phase"], "Failed");
    assert_eq!(last.next_at, None);
    assert_eq!(condition(&p, "Ready")["reason"], "PodFailed");
}

/// A pod that ran, as `drive` leaves it running at t=0.
fn running(policy: &str, containers: &[&str], annotations: Value) -> Value {
    let mut p = pod(policy, containers, annotations);
    drive(&mut p, &[0.0]);
    assert_eq!(p["status"]["phase"], "Running");
    p
}

/// Item 1 of testcluster/README.md: deleting a running pod ends its containers (137 `Error`
/// after SIGKILL when PID 1 ignores SIGTERM; the process's own code when it exits on SIGTERM)
/// and the pod, in ONE status: terminal phase whatever the restart policy, Ready and
/// ContainersReady False with `PodFailed`/`PodCompleted`, PodReadyToStartContainers False,
/// and a `Killing` event per stopped container.
#[test]
fn item1_a_deleted_pods_containers_and_phase_end_in_one_status() {
    // (policy, annotations, exit code, reason, phase, Ready's reason)
    let cases = [
        (
            "Always",
            json!({"sim.tfjob.dev/run-seconds": "60"}),
            137,
            "Error",
            "Failed",
            "PodFailed",
        ),
        (
            "Never",
            json!({"sim.tfjob.dev/run-seconds": "60", "sim.tfjob.dev/sigterm-exit-code": "0"}),
            0,
            "Completed",
            "Succeeded",
            "PodCompleted",
        ),
        (
            "OnFailure",
            json!({"sim.tfjob.dev/run-seconds": "60", "sim.tfjob.dev/sigterm-exit-code": "143"}),
            143,
            "Error",
            "Failed",
            "PodFailed",
        ),
    ];
    for (policy, annotations, code, reason, phase, ready) in cases {
        let p = running(policy, &["tensorflow"], annotations.clone());
        let script = Script::from_pod(&p).unwrap_or_default();
        let step = kill(&p, &script, at(5.0));
        let status = step.status.clone().expect("one status write");
        let done = json!({"metadata": p["metadata"], "status": status});
        let t = terminated(&done, "tensorflow");
        assert_eq!(
            (t["exitCode"].as_i64(), t["reason"].as_str()),
            (Some(code), Some(reason))
        );
        assert_eq!(t["finishedAt"], json!(at(5.0).to_string()));
        assert_eq!(done["status"]["phase"], phase, "{policy} {annotations}");
        for type_ in ["Ready", "ContainersReady"] {
            assert_eq!(condition(&done, type_)["status"], "False");
            assert_eq!(condition(&done, type_)["reason"], ready, "{type_}");
        }
        assert_eq!(
            condition(&done, "PodReadyToStartContainers")["status"],
            "False"
        );
        assert_eq!(
            step.events,
            [Event::normal(
                "Killing",
                "Stopping container tensorflow".into()
            )]
        );
        assert_eq!(step.next_at, None);
    }

    // One container already ended 0, the other is killed: Failed.
    let mut p = running(
        "Never",
        &["tensorflow", "sidecar"],
        json!({"sim.tfjob.dev/run-seconds": "60"}),
    );
    p["status"]["containerStatuses"][1]["state"] =
        json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
    let status = kill(&p, &Script::default(), at(2.0))
        .status
        .expect("status");
    assert_eq!(status["phase"], "Failed");
    assert_eq!(
        status["containerStatuses"][1]["state"]["terminated"]["exitCode"],
        0
    );

    // Deleted while waiting in a back-off: nothing to stop, the pod fails, and the container
    // keeps its last exit (its only exit code).
    let mut crashing = pod(
        "OnFailure",
        &["tensorflow"],
        json!({"sim.tfjob.dev/exit-code": "3"}),
    );
    drive(&mut crashing, &[0.0, 1.0, 1.0, 2.0, 2.0, 2.09]);
    assert_eq!(
        container(&crashing, "tensorflow")["state"]["waiting"]["reason"],
        "CrashLoopBackOff"
    );
    let step = kill(&crashing, &Script::default(), at(2.095));
    assert_eq!(step.events, []);
    let status = step.status.expect("status");
    assert_eq!(status["phase"], "Failed");
    let cs = &status["containerStatuses"][0];
    assert_eq!(cs["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 3);

    // Nothing to end: a finished pod, and one the kubelet never ran.
    let mut finished = pod("Never", &["tensorflow"], json!({}));
    drive(&mut finished, &[0.0, 1.0, 1.5]);
    assert_eq!(finished["status"]["phase"], "Succeeded");
    assert_eq!(kill(&finished, &Script::default(), at(2.0)), Step::idle());
    let never_ran = pod("Never", &["tensorflow"], json!({}));
    assert_eq!(kill(&never_ran, &Script::default(), at(2.0)), Step::idle());
}

/// Item 4 of testcluster/README.md: `terminated.message` is the content of
/// `/dev/termination-log` (the script's `termination-message`, trailing newline kept); with
/// `terminationMessagePolicy: FallbackToLogsOnError` and a non-zero exit, the log's tail (the
/// sim's one-line log); absent otherwise.
#[test]
fn item4_termination_messages() {
    let log = sim_log("ns", "job-worker-0", "tensorflow");
    // (annotations, policy, message)
    let cases = [
        (
            json!({"sim.tfjob.dev/exit-code": "3", "sim.tfjob.dev/termination-message": "bye\n"}),
            None,
            Some("bye\n".to_string()),
        ),
        (
            json!({"sim.tfjob.dev/termination-message": "done\n"}),
            None,
            Some("done\n".into()),
        ),
        (
            json!({"sim.tfjob.dev/exit-code": "4"}),
            Some("FallbackToLogsOnError"),
            Some(log.clone()),
        ),
        (
            json!({"sim.tfjob.dev/exit-code": "4", "sim.tfjob.dev/termination-message": "bye\n"}),
            Some("FallbackToLogsOnError"),
            Some("bye\n".into()),
        ),
        (json!({}), Some("FallbackToLogsOnError"), None),
        (json!({"sim.tfjob.dev/exit-code": "4"}), Some("File"), None),
        (json!({"sim.tfjob.dev/exit-code": "4"}), None, None),
    ];
    for (annotations, policy, want) in cases {
        let mut p = pod("Never", &["tensorflow"], annotations.clone());
        if let Some(policy) = policy {
            p["spec"]["containers"][0]["terminationMessagePolicy"] = json!(policy);
        }
        drive(&mut p, &[0.0, 1.0]);
        assert_eq!(
            terminated(&p, "tensorflow")["message"].as_str(),
            want.as_deref(),
            "{annotations} {policy:?}"
        );
    }
    // The same on deletion: SIGKILL's 137 falls back to the log.
    let mut p = running(
        "Never",
        &["tensorflow"],
        json!({"sim.tfjob.dev/run-seconds": "60"}),
    );
    p["spec"]["containers"][0]["terminationMessagePolicy"] = json!("FallbackToLogsOnError");
    let status = kill(&p, &Script::from_pod(&p).unwrap_or_default(), at(2.0))
        .status
        .expect("status");
    assert_eq!(
        status["containerStatuses"][0]["state"]["terminated"]["message"],
        json!(log)
    );
}

/// Item 8 of testcluster/README.md: the kubelet's events in its words: `Pulled`, `Created`,
/// `Started` at each start, one `BackOff` (Warning) when a restart waits (`Killing` on
/// deletion: item 1's test).
#[test]
fn item8_the_kubelets_events() {
    let mut p = pod(
        "OnFailure",
        &["tensorflow"],
        json!({"sim.tfjob.dev/exit-code": "1"}),
    );
    let mut backoff = short_backoff();
    let started = vec![
        Event::normal(
            "Pulled",
            "Container image \"tensorflow:1\" already present on machine".into(),
        ),
        Event::normal("Created", "Created container: tensorflow".into()),
        Event::normal("Started", "Started container tensorflow".into()),
    ];
    let script = Script::from_pod(&p).unwrap_or_default();
    let mut events_at = |p: &mut Value, t: f64| {
        let s = step(
            p,
            &script,
            &mut backoff,
            "198.19.0.10",
            "198.19.128.5",
            LAG,
            at(t),
        );
        if let Some(status) = &s.status {
            p["status"] = status.clone();
        }
        s.events
    };
    assert_eq!(events_at(&mut p, 0.0), started, "first start");
    assert_eq!(events_at(&mut p, 1.0), [], "the exit");
    assert_eq!(events_at(&mut p, 1.0), started, "the immediate restart");
    assert_eq!(events_at(&mut p, 2.0), []);
    assert_eq!(
        events_at(&mut p, 2.09),
        [Event {
            type_: "Warning",
            reason: "BackOff",
            message: "Back-off restarting failed container tensorflow in pod job-worker-0_ns(u-1)"
                .into(),
        }]
    );
    assert_eq!(
        events_at(&mut p, 2.1),
        started,
        "the restart after the back-off"
    );
}
