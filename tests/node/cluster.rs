//! What the real-node tests share: the node's environment (set by `testcluster/node-e2e`),
//! kubectl, a namespace per test, the operator as a process, TFJobs of the training script,
//! and what the pods' logs say.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How a test shares the node with the tests beside it (`node-e2e` runs a few at a time: a
/// test mostly waits for pods, and a TensorFlow job takes 1-2.3 GiB, a few cores' worth of
/// seconds to start, and little afterwards).
pub enum Share {
    /// Runs TFJobs in its own namespace, under its own operator watching only that namespace:
    /// beside any test but one whose operator watches every namespace.
    OwnNamespace,
    /// Deploys config/default (`kubeflow/tfjob-operator`, one such test at a time) watching
    /// only the test's namespace; otherwise as `OwnNamespace`.
    Deployment,
    /// Deploys config/default as installed, watching every namespace: it would act on the
    /// other tests' TFJobs, so no TFJob test runs beside it.
    DeploymentEveryNamespace,
    /// Creates no TFJob (kubelet and image checks): beside anything.
    NoJobs,
}

/// Readers: tests whose TFJobs only their own operator sees; the writer: a test running an
/// operator that watches every namespace.
static TFJOBS: RwLock<()> = RwLock::new(());
/// The one Deployment `kubeflow/tfjob-operator`.
static DEPLOYMENT: Mutex<()> = Mutex::new(());

/// What a test holds while it runs (released when its `Node` drops, after its namespaces).
struct Held {
    _deployment: Option<MutexGuard<'static, ()>>,
    _tfjobs: TfJobs,
}

#[allow(dead_code)] // held, not read
enum TfJobs {
    Shared(RwLockReadGuard<'static, ()>),
    Alone(RwLockWriteGuard<'static, ()>),
    Free,
}

impl Held {
    /// Waits until SHARE allows the test to run. The Deployment is taken before the TFJobs'
    /// lock (always in this order: no deadlock). A test that failed while holding a lock
    /// leaves it poisoned; the next still runs.
    fn take(share: &Share) -> Held {
        let deployment = matches!(share, Share::Deployment | Share::DeploymentEveryNamespace)
            .then(|| DEPLOYMENT.lock().unwrap_or_else(|e| e.into_inner()));
        let tfjobs = match share {
            Share::OwnNamespace | Share::Deployment => {
                TfJobs::Shared(TFJOBS.read().unwrap_or_else(|e| e.into_inner()))
            }
            Share::DeploymentEveryNamespace => {
                TfJobs::Alone(TFJOBS.write().unwrap_or_else(|e| e.into_inner()))
            }
            Share::NoJobs => TfJobs::Free,
        };
        Held {
            _deployment: deployment,
            _tfjobs: tfjobs,
        }
    }
}

/// The training script, given to every TF pod through the ConfigMap `scripts`.
const TRAIN_PY: &str = include_str!("tf/train.py");

pub struct Node {
    pub kubectl: PathBuf,
    pub kubeconfig: PathBuf,
    /// The operator's ServiceAccount (`config/rbac`) credentials.
    pub operator_kubeconfig: PathBuf,
    pub audit_log: PathBuf,
    /// containerd's socket and state directory (images, container pids).
    pub containerd_sock: PathBuf,
    pub containerd_state: PathBuf,
    /// Where hostPath volumes of the tests and the operators' logs go.
    pub scratch: PathBuf,
    pub tf_image: String,
    pub busybox_image: String,
    /// The second zone CoreDNS serves (for `--cluster-domain`).
    pub extra_domain: String,
    _held: Held,
}

impl Node {
    /// The node for a test of TFJobs in its own namespace (`Share::OwnNamespace`), or `None`
    /// (after saying the test is skipped) when it is not there.
    pub fn here(test: &str) -> Option<Node> {
        Node::sharing(test, Share::OwnNamespace)
    }

    /// The node, once SHARE allows this test to run beside those running.
    pub fn sharing(test: &str, share: Share) -> Option<Node> {
        if std::env::var_os("TFJOB_NODE_E2E").is_none() {
            eprintln!("{test}: skipped: needs the real node (run testcluster/node-e2e)");
            return None;
        }
        let held = Held::take(&share);
        let var = |name: &str| {
            std::env::var(name)
                .unwrap_or_else(|_| panic!("{name} is not set (testcluster/node-e2e sets it)"))
        };
        let node_dir = PathBuf::from(var("TESTCLUSTER_NODE_DIR"));
        let scratch = node_dir.join("tests");
        std::fs::create_dir_all(&scratch).expect("scratch directory");
        eprintln!("{test}: on the real node");
        Some(Node {
            kubectl: var("TESTCLUSTER_KUBECTL").into(),
            kubeconfig: var("KUBECONFIG").into(),
            operator_kubeconfig: var("TFJOB_NODE_OPERATOR_KUBECONFIG").into(),
            audit_log: var("TESTCLUSTER_AUDIT_LOG").into(),
            containerd_sock: var("TESTCLUSTER_NODE_CONTAINERD").into(),
            containerd_state: PathBuf::from(var("TESTCLUSTER_NODE_RUN")).join("containerd"),
            scratch,
            tf_image: var("TESTCLUSTER_NODE_TENSORFLOW_IMAGE"),
            busybox_image: var("TESTCLUSTER_NODE_BUSYBOX_IMAGE"),
            extra_domain: var("TESTCLUSTER_NODE_EXTRA_DOMAIN"),
            _held: held,
        })
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.kubectl);
        c.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        c
    }

    /// `kubectl ARGS`: its standard output, or the error with its standard error.
    pub fn try_kubectl(&self, args: &[&str]) -> Result<String, String> {
        let out = self.command(args).output().expect("run kubectl");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "kubectl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> String {
        self.try_kubectl(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `kubectl ARGS` with INPUT on its standard input (e.g. `apply -f -`).
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> String {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn apply(&self, object: &Value) {
        self.kubectl_stdin(&["apply", "-f", "-"], &object.to_string());
    }

    pub fn get(&self, args: &[&str]) -> Value {
        let mut a = vec!["get"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl(&a)).expect("kubectl get -o json")
    }

    /// A fresh namespace (deleted, with its pods, when the guard drops) holding the training
    /// script as the ConfigMap `scripts`.
    pub fn namespace(&self, prefix: &str) -> Namespace<'_> {
        // Unique among the tests running beside this one (a counter), and among earlier runs
        // on a kept node (the time).
        static CREATED: AtomicU32 = AtomicU32::new(0);
        let suffix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            % 100_000;
        let n = CREATED.fetch_add(1, Ordering::Relaxed);
        let name = format!("{prefix}-{suffix}-{n}");
        self.kubectl(&["create", "namespace", &name]);
        // The ServiceAccount admission refuses pods until `default` exists.
        wait_for(&format!("ServiceAccount {name}/default"), 30, || {
            self.try_kubectl(&["-n", &name, "get", "serviceaccount", "default"])
                .ok()
                .map(|_| ())
        });
        self.apply(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "scripts", "namespace": name},
            "data": {"train.py": TRAIN_PY},
        }));
        Namespace { node: self, name }
    }

    /// `tfjob-operator run --namespace NS FLAGS...` as a process of this machine with the
    /// operator's ServiceAccount credentials (no probes or metrics ports).
    pub fn operator(&self, namespace: &str, flags: &[&str]) -> Operator {
        let log = self.scratch.join(format!("operator-{namespace}.log"));
        let out = std::fs::File::create(&log).expect("operator log");
        let child = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"))
            .args([
                "run",
                "--namespace",
                namespace,
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "0",
            ])
            .args(flags)
            .env("KUBECONFIG", &self.operator_kubeconfig)
            .env("RUST_LOG", "info")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start the operator");
        Operator { child, log }
    }

    /// The host pid of a pod's container (its process 1), from containerd's state.
    pub fn container_pid(&self, namespace: &str, pod: &str, container: &str) -> u32 {
        let p = self.get(&["-n", namespace, "pod", pod]);
        let id = p["status"]["containerStatuses"]
            .as_array()
            .and_then(|s| s.iter().find(|c| c["name"] == container))
            .and_then(|c| c["containerID"].as_str())
            .and_then(|id| id.strip_prefix("containerd://"))
            .unwrap_or_else(|| panic!("{namespace}/{pod}: no containerd id for {container}"))
            .to_string();
        let file = self
            .containerd_state
            .join("io.containerd.runtime.v2.task/k8s.io")
            .join(&id)
            .join("init.pid");
        std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .trim()
            .parse()
            .expect("init.pid")
    }

    /// `kill -SIGNAL PID` on this machine.
    pub fn signal(&self, pid: u32, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }
}

pub struct Namespace<'a> {
    pub node: &'a Node,
    pub name: String,
}

impl Namespace<'_> {
    pub fn kubectl(&self, args: &[&str]) -> String {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        self.node.kubectl(&a)
    }

    pub fn try_kubectl(&self, args: &[&str]) -> Result<String, String> {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        self.node.try_kubectl(&a)
    }

    pub fn get(&self, args: &[&str]) -> Value {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        self.node.get(&a)
    }

    /// What is in the namespace: for failure messages.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for args in [
            &["get", "tfjobs,pods,services", "-o", "wide"][..],
            &["get", "events", "--sort-by", ".lastTimestamp"][..],
        ] {
            s += &self.try_kubectl(args).unwrap_or_else(|e| e);
            s += "\n";
        }
        // The pods' last words (the namespace and their logs are gone once the test ends).
        let pods = self.get(&["pods"]);
        for pod in pods["items"].as_array().into_iter().flatten() {
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            let log = self
                .try_kubectl(&["logs", name, "--all-containers", "--tail", "25"])
                .unwrap_or_else(|e| e);
            s += &format!("--- kubectl logs {name} --tail 25:\n{log}\n");
        }
        s
    }

    /// The TFJob once it is Succeeded or Failed (panics after LIMIT seconds).
    pub fn wait_finished(&self, job: &str, limit: u64) -> Value {
        let start = Instant::now();
        loop {
            let j = self.get(&["tfjob", job]);
            if finished(&j).is_some() {
                return j;
            }
            if start.elapsed() > Duration::from_secs(limit) {
                panic!(
                    "TFJob {}/{job} not finished after {limit} s: {}\n{}",
                    self.name,
                    j["status"],
                    self.describe()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Waits until every pod of the namespace is Succeeded or Failed (panics after LIMIT s).
    pub fn wait_pods_finished(&self, limit: u64) {
        wait_for("every pod finished", limit, || {
            let pods = self.get(&["pods"]);
            pods["items"]
                .as_array()?
                .iter()
                .all(|p| matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
                .then_some(())
        });
    }

    /// `kubectl logs POD` (the `tensorflow` container; `previous`: its run before the last
    /// restart).
    pub fn logs(&self, pod: &str, previous: bool) -> String {
        let mut args = vec!["logs", pod, "-c", "tensorflow"];
        if previous {
            args.push("--previous");
        }
        self.kubectl(&args)
    }
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        if std::env::var_os("TFJOB_NODE_KEEP").is_some() {
            eprintln!("keeping namespace {} (TFJOB_NODE_KEEP)", self.name);
            return;
        }
        // The namespace first, without waiting: Terminating, it takes no new pod (from an
        // operator still running, say). The namespace controller starts emptying it only 5 s
        // after the delete (a fixed grace, for other API servers to see it), so this test
        // deletes the pods itself and waits for them alone: the tests that follow do not share
        // the machine with these (their count stays what `--test-threads` says), and do not
        // wait for the rest of the namespace to go.
        let _ = self
            .node
            .try_kubectl(&["delete", "namespace", &self.name, "--wait=false"]);
        let _ = self.try_kubectl(&[
            "delete",
            "pods",
            "--all",
            "--ignore-not-found",
            "--wait=true",
            "--timeout=120s",
        ]);
    }
}

pub struct Operator {
    child: Child,
    pub log: PathBuf,
}

impl Operator {
    /// The operator's log so far (for failure messages).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- the operator's log ({}):\n{}",
                self.log.display(),
                self.log_tail()
            );
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `Succeeded` or `Failed` when that condition of a TFJob is True.
pub fn finished(job: &Value) -> Option<&'static str> {
    let conditions = job["status"]["conditions"].as_array()?;
    ["Succeeded", "Failed"].into_iter().find(|t| {
        conditions
            .iter()
            .any(|c| c["type"] == *t && c["status"] == "True")
    })
}

/// The condition of type T of an object, if any.
pub fn condition<'a>(object: &'a Value, t: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
}

/// Polls CHECK every 200 ms until it gives a value; panics after LIMIT seconds.
pub fn wait_for<T>(what: &str, limit: u64, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(limit),
            "{what}: not after {limit} s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A replica type of a TFJob running the training script.
pub struct Replica {
    pub kind: &'static str,
    pub replicas: i32,
    pub restart_policy: &'static str,
    /// The script's arguments (mode first).
    pub args: Vec<String>,
    /// A `tfjob-port` other than the default 2222.
    pub port: Option<i32>,
    /// A hostPath directory mounted at /shared.
    pub shared: Option<PathBuf>,
}

impl Replica {
    pub fn new(
        kind: &'static str,
        replicas: i32,
        restart_policy: &'static str,
        args: &[&str],
    ) -> Self {
        Replica {
            kind,
            replicas,
            restart_policy,
            args: args.iter().map(|a| a.to_string()).collect(),
            port: None,
            shared: None,
        }
    }
}

/// A TFJob whose replicas run `python3 /scripts/train.py ARGS` in the TensorFlow image.
/// Templates set terminationGracePeriodSeconds 2: TF as PID 1 ignores SIGTERM, so every
/// deleted pod would otherwise wait the default 30 s.
pub fn tf_job(node: &Node, namespace: &str, name: &str, replicas: &[Replica]) -> Value {
    let mut specs = serde_json::Map::new();
    for r in replicas {
        let mut command = vec![json!("python3"), json!("/scripts/train.py")];
        command.extend(r.args.iter().map(|a| json!(a)));
        let mut mounts = vec![json!({"name": "scripts", "mountPath": "/scripts"})];
        let mut volumes = vec![json!({"name": "scripts", "configMap": {"name": "scripts"}})];
        if let Some(dir) = &r.shared {
            mounts.push(json!({"name": "shared", "mountPath": "/shared"}));
            volumes.push(
                json!({"name": "shared", "hostPath": {"path": dir, "type": "DirectoryOrCreate"}}),
            );
        }
        let mut container = json!({
            "name": "tensorflow",
            "image": node.tf_image,
            "imagePullPolicy": "IfNotPresent",
            "command": command,
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
            "volumeMounts": mounts,
        });
        if let Some(port) = r.port {
            container["ports"] = json!([{"name": "tfjob-port", "containerPort": port}]);
        }
        specs.insert(
            r.kind.to_string(),
            json!({
                "replicas": r.replicas,
                "restartPolicy": r.restart_policy,
                "template": {"spec": {
                    "terminationGracePeriodSeconds": 2,
                    "containers": [container],
                    "volumes": volumes,
                }},
            }),
        );
    }
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"tfReplicaSpecs": specs},
    })
}

/// The `TFJOB-TEST {json}` lines of a log, in order.
pub fn reports(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| l.split_once("TFJOB-TEST ").map(|(_, j)| j))
        .map(|j| serde_json::from_str(j).unwrap_or_else(|e| panic!("{e}: {j}")))
        .collect()
}

/// The first report of EVENT (panics with the log when there is none).
pub fn report<'a>(reports: &'a [Value], event: &str, log: &str) -> &'a Value {
    reports
        .iter()
        .find(|r| r["event"] == event)
        .unwrap_or_else(|| panic!("no '{event}' report in this log:\n{log}"))
}
