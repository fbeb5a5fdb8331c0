//! What the real kubelet (v1.34, containerd 1.6, runc) writes for the pod lives the operator
//! reacts to, pinned so that the simulator (`sim/`) can be held to them: exit codes and
//! reasons of a deleted, killed or OOM-killed container, the termination message, the Ready
//! condition's reason on a finished pod. Busybox pods, all at once (a few MB each).

use serde_json::{Value, json};

use crate::cluster::{Namespace, Node, Share, condition, wait_for};

fn pod(node: &Node, ns: &Namespace, name: &str, policy: &str, script: &str, extra: Value) {
    let mut container = json!({
        "name": "c", "image": node.busybox_image, "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", script],
    });
    if let Value::Object(m) = extra {
        container.as_object_mut().unwrap().extend(m);
    }
    node.apply(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns.name},
        "spec": {"restartPolicy": policy, "terminationGracePeriodSeconds": 2, "containers": [container]},
    }));
}

fn terminated(p: &Value) -> &Value {
    &p["status"]["containerStatuses"][0]["state"]["terminated"]
}

/// The pod once FINISHED says so (panics after 60 s).
fn wait_pod(ns: &Namespace, name: &str, finished: impl Fn(&Value) -> bool) -> Value {
    wait_for(&format!("pod {name}"), 60, || {
        let p = ns.get(&["pod", name]);
        finished(&p).then_some(p)
    })
}

type Events = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;

/// `kubectl get pod --watch` of one pod in the background, until the pod is gone (or 60 s):
/// its events, in order.
fn watch_until_deleted(node: &Node, ns: &str, name: &str) -> (std::thread::JoinHandle<()>, Events) {
    let mut child = std::process::Command::new(&node.kubectl)
        .arg("--kubeconfig")
        .arg(&node.kubeconfig)
        .args([
            "-n",
            ns,
            "get",
            "pod",
            name,
            "--watch",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .args(["--request-timeout", "60s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl --watch");
    let events: Events = Default::default();
    let sink = events.clone();
    let stdout = child.stdout.take().unwrap();
    let thread = std::thread::spawn(move || {
        let stream = serde_json::Deserializer::from_reader(stdout).into_iter::<Value>();
        for e in stream.flatten() {
            let deleted = e["type"] == "DELETED";
            sink.lock().unwrap().push(e);
            if deleted {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    });
    (thread, events)
}

#[test]
fn kubelet_exit_codes_reasons_and_messages() {
    let Some(node) = Node::sharing("kubelet_exit_codes_reasons_and_messages", Share::NoJobs) else {
        return;
    };
    let ns = node.namespace("kubelet");
    // PID 1 without a SIGTERM handler (sleep; TensorFlow's python is the same) and one that
    // exits 0 on SIGTERM: both deleted with a 2 s grace period.
    pod(
        &node,
        &ns,
        "ignores-term",
        "Always",
        "sleep 3600",
        json!({}),
    );
    pod(
        &node,
        &ns,
        "handles-term",
        "Never",
        "trap 'exit 0' TERM; while :; do sleep 0.1; done",
        json!({}),
    );
    pod(
        &node,
        &ns,
        "message",
        "Never",
        "echo bye > /dev/termination-log; exit 3",
        json!({}),
    );
    pod(
        &node,
        &ns,
        "fallback",
        "Never",
        "echo last words; exit 4",
        json!({"terminationMessagePolicy": "FallbackToLogsOnError"}),
    );
    pod(
        &node,
        &ns,
        "oom",
        "Never",
        "x=aaaaaaaa; while :; do x=$x$x; done",
        json!({"resources": {"limits": {"memory": "16Mi"}}}),
    );
    pod(&node, &ns, "killed", "OnFailure", "sleep 3600", json!({}));
    pod(&node, &ns, "succeeds", "Never", "exit 0", json!({}));
    for name in ["ignores-term", "handles-term", "killed"] {
        wait_pod(&ns, name, |p| {
            p["status"]["containerStatuses"][0]["state"]["running"].is_object()
        });
    }

    // Deletion: the kubelet writes the container's end and a terminal phase, then deletes the
    // pod with grace 0 (a MODIFIED with deletionGracePeriodSeconds 0), then it is gone.
    let watches: Vec<_> = ["ignores-term", "handles-term"]
        .map(|name| watch_until_deleted(&node, &ns.name, name))
        .into();
    // (each watch lists the pod first, as ADDED)
    for w in &watches {
        wait_for("the watch to start", 20, || {
            (!w.1.lock().unwrap().is_empty()).then_some(())
        });
    }
    ns.kubectl(&[
        "delete",
        "pod",
        "ignores-term",
        "handles-term",
        "--wait=false",
    ]);
    for ((name, code, reason, phase), (thread, events)) in [
        ("ignores-term", 137, "Error", "Failed"),
        ("handles-term", 0, "Completed", "Succeeded"),
    ]
    .into_iter()
    .zip(watches)
    {
        thread.join().unwrap();
        let events = events.lock().unwrap().clone();
        let last = &events.last().unwrap()["object"];
        assert_eq!(terminated(last)["exitCode"], code, "{name}: {last}");
        assert_eq!(terminated(last)["reason"], reason, "{name}");
        assert_eq!(last["status"]["phase"], phase, "{name}");
        assert_eq!(last["metadata"]["deletionGracePeriodSeconds"], 0, "{name}");
        // The end came before the kubelet's final delete: some MODIFIED shows it with the
        // grace period of the user's delete (2 s).
        assert!(
            events.iter().any(|e| e["type"] == "MODIFIED"
                && e["object"]["metadata"]["deletionGracePeriodSeconds"] == 2
                && terminated(&e["object"])["exitCode"] == code),
            "{name}: {events:?}"
        );
    }

    // A container's own end: the termination message (file, or the log's tail on error),
    // OOM, a SIGKILL from outside.
    let p = wait_pod(&ns, "message", |p| p["status"]["phase"] == "Failed");
    assert_eq!(terminated(&p)["exitCode"], 3);
    assert_eq!(terminated(&p)["reason"], "Error");
    assert_eq!(terminated(&p)["message"], "bye\n");
    // A failed pod's Ready condition says PodFailed (a succeeded one PodCompleted).
    assert_eq!(condition(&p, "Ready").unwrap()["reason"], "PodFailed");
    assert!(condition(&p, "Initialized").unwrap()["reason"].is_null());
    let p = wait_pod(&ns, "fallback", |p| p["status"]["phase"] == "Failed");
    assert_eq!(terminated(&p)["message"], "last words\n");
    let p = wait_pod(&ns, "oom", |p| p["status"]["phase"] == "Failed");
    assert_eq!(terminated(&p)["exitCode"], 137);
    assert_eq!(terminated(&p)["reason"], "OOMKilled");
    let p = wait_pod(&ns, "succeeds", |p| p["status"]["phase"] == "Succeeded");
    assert_eq!(condition(&p, "Ready").unwrap()["reason"], "PodCompleted");
    assert_eq!(
        condition(&p, "Initialized").unwrap()["reason"],
        "PodCompleted"
    );
    assert!(terminated(&p)["message"].is_null());

    let pid = node.container_pid(&ns.name, "killed", "c");
    node.signal(pid, "KILL");
    let p = wait_pod(&ns, "killed", |p| {
        p["status"]["containerStatuses"][0]["restartCount"] == 1
    });
    let last = &p["status"]["containerStatuses"][0]["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 137, "{p}");
    assert_eq!(last["reason"], "Error", "{p}");
    assert_eq!(p["status"]["phase"], "Running");
}

/// The node keeps every packet on the machine: forwarding and `route_localnet` off, the
/// guard chain in place, and an image pull from any registry goes to 127.0.0.1:1.
#[test]
fn nothing_leaves_the_machine() {
    let Some(node) = Node::sharing("nothing_leaves_the_machine", Share::NoJobs) else {
        return;
    };
    for sysctl in ["net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet"] {
        let v = std::fs::read_to_string(format!("/proc/sys/{sysctl}")).unwrap();
        assert_eq!(v.trim(), "0", "{sysctl}");
    }
    let rules = std::process::Command::new("iptables")
        .args(["-w", "-S", "TFNODE-GUARD"])
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout);
    assert!(
        rules.contains("-s 198.18.0.0/15 -j DROP") && rules.contains("-d 198.18.0.0/15 -j DROP"),
        "{rules}"
    );
    let ns = node.namespace("pulls");
    for (name, image) in [
        ("hub", "busybox:1.36"),
        ("elsewhere", "registry.example.org/team/image:1"),
    ] {
        node.apply(&json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns.name},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": image, "imagePullPolicy": "IfNotPresent"}]},
        }));
        let message = wait_for(&format!("{name}'s pull to fail"), 60, || {
            let events = ns.get(&[
                "events",
                "--field-selector",
                &format!("involvedObject.name={name},reason=Failed"),
            ]);
            events["items"].as_array()?.iter().find_map(|e| {
                let m = e["message"].as_str()?;
                m.starts_with("Failed to pull image").then(|| m.to_string())
            })
        });
        assert!(
            message.contains("http://127.0.0.1:1/v2/"),
            "{name}: {message}"
        );
    }
}
