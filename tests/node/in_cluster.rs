//! The operator as its users run it: `kubectl apply -k config/default`, the image built from
//! the Dockerfile (testcluster/images/build), 2 replicas, in `kubeflow` under Pod Security
//! `restricted` (enforced). Each test deploys it and scales it back to 0 at its end (the
//! other tests run their own operator, one namespace each). The first watches every namespace,
//! as installed, and so runs with no other TFJob test beside it; the others watch only their
//! own namespace (`KUBEFLOW_NAMESPACE`, as a user scopes it) and run beside the rest.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster::{Namespace, Node, Share, condition, finished, wait_for};
use crate::recovery::{Fault, fault_run};

const NS: &str = "kubeflow";
const LEASE: &str = "tfjob-operator-leader";
const SELECTOR: &str = "app.kubernetes.io/name=tfjob-operator";
const OPERATOR_USER: &str = "system:serviceaccount:kubeflow:tfjob-operator";
/// src/runtime/leader.rs: a standby takes over at most LEASE_DURATION + RETRY_PERIOD after the
/// leader stopped renewing, and within RETRY_PERIOD after it released the lease.
const LEASE_DURATION: f64 = 10.0;
const RETRY_PERIOD: f64 = 2.0;

/// The Deployment of config/default, running; scaled to 0 again on drop.
struct Deployed<'a> {
    node: &'a Node,
}

/// Deploys config/default watching every namespace as installed, or with ONLY, only that
/// namespace.
fn deploy<'a>(node: &'a Node, only: Option<&str>) -> Deployed<'a> {
    let deployed = Deployed { node };
    // Set on the Deployment while it is at 0 replicas, before `apply` starts its pods (apply
    // keeps an env var it never set).
    let scope = match only {
        Some(ns) => format!("KUBEFLOW_NAMESPACE={ns}"),
        None => "KUBEFLOW_NAMESPACE-".to_string(),
    };
    node.kubectl(&["-n", NS, "set", "env", "deployment/tfjob-operator", &scope]);
    node.kubectl(&[
        "label",
        "namespace",
        NS,
        "pod-security.kubernetes.io/enforce=restricted",
        "--overwrite",
    ]);
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/config/default");
    // As a user installs it (replicas: 2 from the manifest; node-e2e had scaled it to 0).
    node.kubectl(&["apply", "-k", config]);
    node.kubectl(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/tfjob-operator",
        "--timeout=120s",
    ]);
    let pods = operator_pods(node);
    assert_eq!(pods.len(), 2, "{pods:?}");
    wait_for("a lease holder among the operator's pods", 30, || {
        let holder = lease_holder(node)?;
        pods.iter()
            .any(|p| holder_pod(&holder) == p.as_str())
            .then_some(())
    });
    deployed
}

impl Drop for Deployed<'_> {
    fn drop(&mut self) {
        let n = self.node;
        let _ = n.try_kubectl(&[
            "-n",
            NS,
            "scale",
            "deployment/tfjob-operator",
            "--replicas",
            "0",
        ]);
        let _ = n.try_kubectl(&[
            "-n",
            NS,
            "wait",
            "--for=delete",
            "pod",
            "-l",
            SELECTOR,
            "--timeout=60s",
        ]);
        let _ = n.try_kubectl(&[
            "label",
            "namespace",
            NS,
            "pod-security.kubernetes.io/enforce-",
        ]);
    }
}

/// Names of the operator's pods that are not being deleted.
fn operator_pods(node: &Node) -> Vec<String> {
    node.get(&["-n", NS, "pods", "-l", SELECTOR])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn lease_holder(node: &Node) -> Option<String> {
    let lease = node
        .try_kubectl(&["-n", NS, "get", "lease", LEASE, "-o", "json"])
        .ok()?;
    let lease: Value = serde_json::from_str(&lease).ok()?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_string)
}

/// The pod of a holder identity `<pod>_<pid>_<instance>` (src/operator.rs, `identity`).
fn holder_pod(holder: &str) -> &str {
    holder.rsplitn(3, '_').last().unwrap()
}

/// A TFJob of busybox replicas that sleep SECONDS (what the operator does, not TF, is tested here).
fn sleeping_job(node: &Node, ns: &str, name: &str, workers: i32, seconds: u32) -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"tfReplicaSpecs": {"Worker": {
            "replicas": workers, "restartPolicy": "Never",
            "template": {"spec": {
                "terminationGracePeriodSeconds": 2,
                "containers": [{
                    "name": "tensorflow", "image": node.busybox_image, "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", format!("echo \"TF_CONFIG=$TF_CONFIG\"; sleep {seconds}")],
                }],
            }},
        }}},
    })
}

/// Creates of OBJECT (pods or services) in NS by the operator's ServiceAccount, by name,
/// from the API server's audit log.
fn creates(node: &Node, ns: &str, resource: &str) -> BTreeMap<String, Vec<Value>> {
    let text = std::fs::read_to_string(&node.audit_log).expect("audit log");
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in text.lines() {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if e["verb"] == "create"
            && e["user"]["username"] == OPERATOR_USER
            && e["objectRef"]["resource"] == resource
            && e["objectRef"]["namespace"] == ns
            && e["objectRef"]["subresource"].is_null()
        {
            let name = e["objectRef"]["name"].as_str().unwrap_or("").to_string();
            out.entry(name).or_default().push(e);
        }
    }
    out
}

/// `kubectl get ... --watch --output-watch-events -o json` in the background: every event,
/// with the time it arrived.
struct Watch {
    child: Child,
    events: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Watch {
    fn start(node: &Node, args: &[&str]) -> Watch {
        let mut child = Command::new(&node.kubectl)
            .arg("--kubeconfig")
            .arg(&node.kubeconfig)
            .args(args)
            .args(["--watch", "--output-watch-events", "-o", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl --watch");
        let stdout = child.stdout.take().unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        std::thread::spawn(move || {
            let stream =
                serde_json::Deserializer::from_reader(BufReader::new(stdout)).into_iter::<Value>();
            for event in stream.flatten() {
                sink.lock().unwrap().push((Instant::now(), event));
            }
        });
        Watch { child, events }
    }

    fn events(&self) -> Vec<(Instant, Value)> {
        self.events.lock().unwrap().clone()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn in_cluster_as_installed_two_replicas_one_lease_holder_probes_restricted_metrics_and_a_job() {
    let Some(node) = Node::sharing("in_cluster_as_installed", Share::DeploymentEveryNamespace)
    else {
        return;
    };
    let _deployed = deploy(&node, None);
    let pods = operator_pods(&node);
    let holder = lease_holder(&node).unwrap();
    let leader = holder_pod(&holder).to_string();
    let standby = pods.iter().find(|p| **p != leader).unwrap().clone();

    // Both pass their probes: Ready (readiness), and /healthz, /readyz answer on the health
    // port from the node.
    for pod in &pods {
        let p = node.get(&["-n", NS, "pod", pod]);
        assert_eq!(condition(&p, "Ready").unwrap()["status"], "True", "{pod}");
        let ip = p["status"]["podIP"].as_str().unwrap();
        for path in ["healthz", "readyz"] {
            let out = Command::new("curl")
                .args([
                    "-fsS",
                    "--max-time",
                    "3",
                    &format!("http://{ip}:8081/{path}"),
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{pod} /{path}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Pod Security `restricted` admitted it (the namespace enforces it): as the image's
        // non-root user, read-only root, no capabilities.
        let c = &p["spec"]["containers"][0];
        assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(p["spec"]["securityContext"]["runAsUser"], 65532);
    }
    // Enforced for real: a pod that is not `restricted` is refused in that namespace.
    let refused = node
        .try_kubectl(&[
            "-n",
            NS,
            "run",
            "not-restricted",
            "--image",
            &node.busybox_image,
            "--image-pull-policy",
            "IfNotPresent",
            "--restart",
            "Never",
            "--dry-run=server",
            "--",
            "true",
        ])
        .expect_err("a non-restricted pod was admitted in kubeflow");
    assert!(
        refused.contains("violates PodSecurity \"restricted"),
        "{refused}"
    );

    // Exactly one leads: the leader's log says it became leader, the standby's that it waits.
    let leader_log = node.kubectl(&["-n", NS, "logs", &leader]);
    let standby_log = node.kubectl(&["-n", NS, "logs", &standby]);
    assert!(
        leader_log.contains("became leader"),
        "{leader}:\n{leader_log}"
    );
    assert!(
        !standby_log.contains("became leader"),
        "{standby}:\n{standby_log}"
    );
    assert!(
        standby_log.contains("waiting for leadership"),
        "{standby}:\n{standby_log}"
    );

    // A TFJob runs to Succeeded under it; its children were created from inside the cluster
    // (the operator pod's address, not this machine's 198.18.0.1).
    let ns = node.namespace("incluster-job");
    node.apply(&sleeping_job(&node, &ns.name, "sleepy", 2, 2));
    let job = ns.wait_finished("sleepy", 120);
    assert_eq!(
        finished(&job),
        Some("Succeeded"),
        "{}\n{}",
        job["status"],
        ns.describe()
    );
    let pods_created = creates(&node, &ns.name, "pods");
    assert_eq!(pods_created.len(), 2, "{pods_created:?}");
    let leader_ip = node.get(&["-n", NS, "pod", &leader])["status"]["podIP"].clone();
    for (name, events) in &pods_created {
        assert_eq!(
            events[0]["sourceIPs"][0], leader_ip,
            "{name} was not created by the leader pod"
        );
    }

    // The metrics Service answers from inside the cluster: a pod resolves its name (CoreDNS)
    // and reaches it through its ClusterIP (kube-proxy). The pod uses the node's network:
    // from a pod's own network the way back to another pod through a ClusterIP needs the
    // node to forward, which the node never turns on (no packet may leave the machine).
    metrics_from_a_pod(&node, &ns);

    // No restarts: the liveness probe never failed.
    for pod in &pods {
        let p = node.get(&["-n", NS, "pod", pod]);
        assert_eq!(
            p["status"]["containerStatuses"][0]["restartCount"], 0,
            "{pod}"
        );
    }
}

/// Scrapes the metrics Service 12 times from a pod (kube-proxy spreads them over both
/// replicas): every scrape answers, and the leader's counters, reached through the Service,
/// count the job of NS. (A standby exposes only the families that exist before leading.)
fn metrics_from_a_pod(node: &Node, ns: &Namespace) {
    let url = "http://tfjob-operator-metrics.kubeflow.svc.cluster.local:8080/metrics";
    let script = format!(
        "import urllib.request\nfor _ in range(12):\n    print(urllib.request.urlopen('{url}', timeout=5).read().decode())\n    print('--- scrape end')"
    );
    node.apply(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "scrape", "namespace": ns.name},
        "spec": {
            "hostNetwork": true, "dnsPolicy": "ClusterFirstWithHostNet", "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            // Python (the TensorFlow image's; TF is not imported): busybox's static wget
            // crashes in the node's network namespace (glibc's static resolver).
            "containers": [{
                "name": "scrape", "image": node.tf_image, "imagePullPolicy": "IfNotPresent",
                "command": ["python3", "-c", script],
            }],
        },
    }));
    let phase = wait_for("the scrape pod to finish", 60, || {
        let p = ns.get(&["pod", "scrape"]);
        let phase = p["status"]["phase"].as_str()?.to_string();
        matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase)
    });
    let out = ns.kubectl(&["logs", "scrape"]);
    assert_eq!(phase, "Succeeded", "{url}:\n{out}");
    let scrapes: Vec<&str> = out
        .split("--- scrape end")
        .filter(|s| !s.trim().is_empty())
        .collect();
    assert_eq!(scrapes.len(), 12, "{out}");
    for scrape in &scrapes {
        assert!(
            scrape.contains("# TYPE tfjob_operator_reconciles counter"),
            "{scrape}"
        );
    }
    let leader_count = format!(
        "training_operator_jobs_created_total{{job_namespace=\"{}\"",
        ns.name
    );
    assert!(
        scrapes.iter().any(|s| s.contains(&leader_count)),
        "no scrape reached the leader's count of this namespace's job ({leader_count}):\n{out}"
    );
}

#[test]
fn in_cluster_rollout_restart_drains_hands_over_the_lease_and_creates_no_child_twice() {
    let Some(node) = Node::sharing("in_cluster_rollout_restart", Share::Deployment) else {
        return;
    };
    let ns = node.namespace("rollout");
    let _deployed = deploy(&node, Some(&ns.name));
    let old: Vec<String> = operator_pods(&node);
    let old_leader = holder_pod(&lease_holder(&node).unwrap()).to_string();

    // A job whose pods run across the rollout (which takes 3-4 s): the new leader must adopt,
    // not recreate, them.
    node.apply(&sleeping_job(&node, &ns.name, "across", 3, 10));
    wait_for("the job's 3 pods to run", 90, || {
        let pods = ns.get(&["pods"]);
        let running = pods["items"]
            .as_array()?
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        (running == 3).then_some(())
    });

    let pod_watch = Watch::start(&node, &["-n", NS, "get", "pods", "-l", SELECTOR]);
    let lease_watch = Watch::start(&node, &["-n", NS, "get", "lease", LEASE]);
    std::thread::sleep(Duration::from_millis(500));
    node.kubectl(&["-n", NS, "rollout", "restart", "deployment/tfjob-operator"]);
    node.kubectl(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/tfjob-operator",
        "--timeout=180s",
    ]);
    wait_for("the old operator pods to be gone", 90, || {
        let now = operator_pods(&node);
        let all = node.get(&["-n", NS, "pods", "-l", SELECTOR]);
        let names: Vec<&str> = all["items"]
            .as_array()?
            .iter()
            .filter_map(|p| p["metadata"]["name"].as_str())
            .collect();
        (!old.iter().any(|o| names.contains(&o.as_str())) && now.len() == 2).then_some(())
    });
    let new = operator_pods(&node);
    let job = ns.get(&["tfjob", "across"]);
    assert!(
        finished(&job).is_none(),
        "the job ended before the rollout did: {}",
        job["status"]
    );

    // Both old pods got SIGTERM, drained and exited 0 (their last status before deletion).
    std::thread::sleep(Duration::from_millis(500));
    let events = pod_watch.events();
    for pod in &old {
        let last = events
            .iter()
            .rev()
            .map(|(_, e)| &e["object"])
            .find(|o| {
                o["metadata"]["name"] == pod.as_str()
                    && !o["status"]["containerStatuses"][0]["state"]["terminated"].is_null()
            })
            .unwrap_or_else(|| panic!("{pod}: never seen terminated"));
        let terminated = &last["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(terminated["exitCode"], 0, "{pod}: {terminated}");
        assert_eq!(terminated["reason"], "Completed", "{pod}: {terminated}");
    }

    // The lease went from the old leader to a new pod: released (no holder) on SIGTERM, then
    // taken within one retry period.
    let holder = lease_holder(&node).unwrap();
    assert!(
        new.iter().any(|p| p == holder_pod(&holder)),
        "{holder} is not one of {new:?}"
    );
    let holders: Vec<(Instant, Option<String>)> = lease_watch
        .events()
        .iter()
        .map(|(t, e)| {
            (
                *t,
                e["object"]["spec"]["holderIdentity"]
                    .as_str()
                    .map(str::to_string),
            )
        })
        .collect();
    let released = holders
        .iter()
        .find(|(_, h)| h.is_none())
        .unwrap_or_else(|| panic!("the old leader never released the lease: {holders:?}"))
        .0;
    let (taken, by) = holders
        .iter()
        .find(|(t, h)| *t >= released && h.as_deref().is_some_and(|h| holder_pod(h) != old_leader))
        .map(|(t, h)| (*t, h.clone().unwrap()))
        .unwrap_or_else(|| panic!("nobody took the released lease: {holders:?}"));
    let handover = taken.duration_since(released).as_secs_f64();
    eprintln!("lease released by {old_leader}, taken by {by} {handover:.3} s later");
    assert!(
        handover <= RETRY_PERIOD + 0.5,
        "handover took {handover:.3} s"
    );

    // The job finishes under the new leader, and no child was created twice.
    let job = ns.wait_finished("across", 120);
    assert_eq!(
        finished(&job),
        Some("Succeeded"),
        "{}\n{}",
        job["status"],
        ns.describe()
    );
    for resource in ["pods", "services"] {
        let created = creates(&node, &ns.name, resource);
        assert_eq!(created.len(), 3, "{resource}: {created:?}");
        for (name, events) in &created {
            assert_eq!(
                events.len(),
                1,
                "{resource} {name} was created {} times",
                events.len()
            );
        }
    }
}

#[test]
fn in_cluster_frozen_leader_is_replaced_within_lease_duration_plus_one_retry() {
    let Some(node) = Node::sharing("in_cluster_frozen_leader", Share::Deployment) else {
        return;
    };
    // No TFJob here: it watches only its own namespace, which holds none.
    let _deployed = deploy(&node, Some(NS));
    let holder = lease_holder(&node).unwrap();
    let leader = holder_pod(&holder).to_string();
    let pid = node.container_pid(NS, &leader, "operator");

    // SIGSTOP: the leader's process stays, holds its lease and renews it no more.
    node.signal(pid, "STOP");
    let frozen = Instant::now();
    let new_holder = wait_for("another replica to take the lease", 30, || {
        let h = lease_holder(&node)?;
        (holder_pod(&h) != leader).then_some(h)
    });
    let takeover = frozen.elapsed().as_secs_f64();
    node.signal(pid, "CONT");
    eprintln!("leader {leader} frozen; {new_holder} took over after {takeover:.1} s");
    assert!(
        takeover <= LEASE_DURATION + RETRY_PERIOD + 0.5,
        "takeover after {takeover:.1} s, more than the lease duration plus one retry period"
    );

    // Thawed, the old leader finds the lease taken and exits (its container restarts as a
    // standby); the new leader keeps the lease.
    wait_for("the thawed leader to restart", 60, || {
        let p = node.get(&["-n", NS, "pod", &leader]);
        (p["status"]["containerStatuses"][0]["restartCount"].as_i64()? >= 1).then_some(())
    });
    let previous = node.kubectl(&["-n", NS, "logs", &leader, "--previous"]);
    assert!(
        previous.contains("lost the leader lease"),
        "{leader} --previous:\n{previous}"
    );
    assert_eq!(lease_holder(&node).as_deref(), Some(new_holder.as_str()));
}

/// The leader killed in the middle of a whole-job restart, after it deleted attempt 0's pods
/// and before it created attempt 1's (MWMS, `restart-scope: Job`, worker 1's TensorFlow
/// SIGKILLed at its step 5): another operator finishes that same restart. Attempts never
/// overlap, the restart is counted once, and the job succeeds from its checkpoint.
#[test]
fn in_cluster_leader_killed_mid_job_restart_another_finishes_it() {
    let Some(node) = Node::sharing("in_cluster_leader_killed_mid_restart", Share::Deployment)
    else {
        return;
    };
    let ns = node.namespace("leader-restart");
    let _deployed = deploy(&node, Some(&ns.name));
    let holder = lease_holder(&node).unwrap();
    let leader = holder_pod(&holder).to_string();
    let annotations = json!({"tfjob-operator.dev/restart-scope": "Job"});
    let mut killed: Option<String> = None;
    let o = fault_run(
        &node,
        &ns,
        "ExitCode",
        Fault::Killed,
        annotations,
        240,
        &mut |job, pods| {
            // Between the deletes and the creates: attempt 1 decided and stored, none of its pods.
            let decided = job["status"]["restartAttempt"] == 1;
            let created = pods.iter().any(|p| p.attempt.as_deref() == Some("1"));
            if killed.is_none() && decided && !created {
                let at: Vec<String> = pods
                    .iter()
                    .map(|p| format!("{} {}", p.name, p.state))
                    .collect();
                node.kubectl(&[
                    "-n",
                    NS,
                    "delete",
                    "pod",
                    &leader,
                    "--grace-period=0",
                    "--force",
                ]);
                killed = Some(at.join(", "));
            }
        },
    );
    eprintln!("--- kubectl get tfjob -w -o wide:\n{}", o.watch);
    let pods = killed.unwrap_or_else(|| {
        panic!(
            "never saw the restart between its deletes and its creates: {}",
            o.summary()
        )
    });
    let new_holder = lease_holder(&node).unwrap();
    eprintln!(
        "leader {leader} killed with the pods at [{pods}]; {new_holder} finished the restart"
    );
    assert_ne!(
        holder_pod(&new_holder),
        leader,
        "the killed leader holds the lease"
    );
    o.assert_one_job_restart("exited with code 137");
    assert_eq!(
        o.job["status"]["replicaStatuses"]["Worker"]["restarts"],
        1,
        "{}",
        o.summary()
    );
}
