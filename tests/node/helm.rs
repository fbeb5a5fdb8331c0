//! The Helm chart on the real node, with the operator's image, as docs/install.md tells users to
//! run it (`helm` from `testcluster/tools`: helm 4, and helm 3 for the takeover):
//! - taking over from Kubeflow: Kubeflow's own TFJob CRD (training-operator v1.9.4, applied
//!   server-side as its manifests are) and a job its controller was running (pods, services,
//!   status as it writes them), then `helm install --take-ownership` (helm 4 with
//!   `--force-conflicts`): the CRD becomes ours, kept on uninstall; not one pod is restarted or
//!   recreated, the conditions are carried over (docs/behaviour.md §12) and the job succeeds;
//! - a job running through `helm upgrade` with a changed value, then with a new image tag, then
//!   `helm rollback`: each rolls the operator's pods, the job's pods are never restarted or
//!   recreated, and the job ends `Succeeded`;
//! - `helm uninstall` with a job running: the CRD and every TFJob stay, the job's pods run on;
//!   `helm install` again adopts the CRD, and the operator the job, which succeeds.
//!
//! The release lives beside config/default's install (`kubeflow`, scaled to 0, which other
//! tests use): release `helm-tfjob-operator` in `tfjob-helm`, so its objects are named
//! `helm-tfjob-operator`. Its operator watches every namespace: no other TFJob test runs beside.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::cluster::{Namespace, Node, Share, condition, finished, wait_for};

const RELEASE: &str = "helm-tfjob-operator";
const NS: &str = "tfjob-helm";
const OPERATOR_PODS: &str = "app.kubernetes.io/instance=helm-tfjob-operator";
const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/tfjob-operator");
const CRD: &str = "tfjobs.kubeflow.org";
/// The image's second tag (the same image), for an upgrade to a new tag.
const NEXT_TAG: &str = "0.1.0-next";

/// `helm` with the node's kubeconfig.
struct Helm<'a> {
    bin: PathBuf,
    name: &'static str,
    node: &'a Node,
}

impl<'a> Helm<'a> {
    fn new(node: &'a Node, var: &str, name: &'static str) -> Helm<'a> {
        let bin = std::env::var_os(var)
            .unwrap_or_else(|| panic!("{var} is not set (testcluster/node-e2e sets it)"));
        Helm {
            bin: bin.into(),
            name,
            node,
        }
    }

    fn try_run(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(&self.bin)
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.node.kubeconfig)
            .output()
            .expect("run helm");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("{} {}: {text}", self.name, args.join(" ")))
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let start = std::time::Instant::now();
        let out = self.try_run(args).unwrap_or_else(|e| panic!("{e}"));
        let took = start.elapsed().as_secs_f64();
        eprintln!("$ {} {} ({took:.1} s)\n{out}", self.name, args.join(" "));
        out
    }
}

/// The release's operator pods that are not being deleted: name → image.
fn operator_pods(node: &Node) -> BTreeMap<String, String> {
    node.get(&["-n", NS, "pods", "-l", OPERATOR_PODS])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect()
}

/// Waits until the release's Deployment has rolled out: 2 pods, all of image tag TAG, none other
/// left.
fn rolled_out(node: &Node, tag: &str) -> BTreeMap<String, String> {
    let image = format!(":{tag}");
    node.kubectl(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/helm-tfjob-operator",
        "--timeout=120s",
    ]);
    wait_for(&format!("2 operator pods of {image}, no other"), 60, || {
        let all = node.get(&["-n", NS, "pods", "-l", OPERATOR_PODS]);
        let items = all["items"].as_array()?;
        let pods = operator_pods(node);
        (items.len() == 2 && pods.len() == 2 && pods.values().all(|i| i.ends_with(&image)))
            .then_some(pods)
    })
}

/// A job of busybox workers that sleep SECONDS, restarted by the kubelet on failure.
fn sleeping_job(node: &Node, ns: &str, name: &str, seconds: u32) -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"tfReplicaSpecs": {"Worker": {
            "replicas": 2, "restartPolicy": "OnFailure",
            "template": {"spec": {
                "terminationGracePeriodSeconds": 2,
                "containers": [{
                    "name": "tensorflow", "image": node.busybox_image, "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", format!("sleep {seconds}")],
                }],
            }},
        }}},
    })
}

/// A job's pods: name → (uid, restarts).
type Pods = BTreeMap<String, (String, i64)>;

/// The job's pods.
fn job_pods(ns: &Namespace, job: &str) -> Pods {
    ns.get(&[
        "pods",
        "-l",
        &format!("training.kubeflow.org/job-name={job}"),
    ])["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let restarts = p["status"]["containerStatuses"][0]["restartCount"]
                .as_i64()
                .unwrap_or(0);
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                (p["metadata"]["uid"].as_str().unwrap().to_string(), restarts),
            )
        })
        .collect()
}

/// Waits until the job's 2 pods run; returns them.
fn running_pods(ns: &Namespace, job: &str) -> Pods {
    wait_for(&format!("{job}'s 2 pods running"), 90, || {
        let pods = ns.get(&[
            "pods",
            "-l",
            &format!("training.kubeflow.org/job-name={job}"),
        ]);
        let running = pods["items"]
            .as_array()?
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        (running == 2).then(|| job_pods(ns, job))
    })
}

/// The job is still running, on the same pods, none restarted.
fn untouched(ns: &Namespace, job: &str, pods: &Pods, after: &str) {
    let j = ns.get(&["tfjob", job]);
    assert!(
        finished(&j).is_none(),
        "{job} ended before {after} did: {}",
        j["status"]
    );
    assert_eq!(
        &job_pods(ns, job),
        pods,
        "{job}'s pods after {after} (uid, restarts)"
    );
}

fn succeeded(ns: &Namespace, job: &str, pods: &Pods) {
    let j = ns.wait_finished(job, 180);
    assert_eq!(
        finished(&j),
        Some("Succeeded"),
        "{}\n{}",
        j["status"],
        ns.describe()
    );
    assert_eq!(
        &job_pods(ns, job),
        pods,
        "{job}'s pods at its end (uid, restarts)"
    );
}

/// The CRD's spec as the API server holds it, against crds/'s: the same versions, schemas,
/// names; and its Helm metadata.
fn assert_crd_is_ours(node: &Node) {
    let live = node.get(&["crd", CRD]);
    let ours: Value =
        serde_saphyr::from_str(include_str!("../../crds/kubeflow.org_tfjobs.yaml")).unwrap();
    for field in ["group", "names", "scope", "versions"] {
        let mut got = live["spec"][field].clone();
        // (listKind is filled in by the API server.)
        if field == "names" {
            got.as_object_mut().unwrap().remove("listKind");
        }
        assert!(
            numbers_as_floats(&got) == numbers_as_floats(&ours["spec"][field]),
            "the CRD's spec.{field} is not crds/'s"
        );
    }
    let meta = &live["metadata"];
    assert_eq!(meta["annotations"]["helm.sh/resource-policy"], "keep");
    assert_eq!(meta["annotations"]["meta.helm.sh/release-name"], RELEASE);
    assert_eq!(meta["labels"]["app.kubernetes.io/managed-by"], "Helm");
}

fn numbers_as_floats(v: &Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map(Value::from)
            .unwrap_or(Value::Number(n.clone())),
        Value::Array(a) => Value::Array(a.iter().map(numbers_as_floats).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), numbers_as_floats(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Kubeflow's CRD in place of ours, applied server-side as Kubeflow's manifests are
/// (`kubectl replace` first, so that nothing of ours is left in it).
fn install_kubeflows_crd(node: &Node) {
    let file = std::env::var("TFJOB_KUBEFLOW_TFJOB_CRD")
        .expect("TFJOB_KUBEFLOW_TFJOB_CRD is not set (testcluster/node-e2e sets it)");
    node.kubectl(&["replace", "-f", &file]);
    node.kubectl(&["apply", "--server-side", "--force-conflicts", "-f", &file]);
    let live = node.get(&["crd", CRD]);
    assert_eq!(
        live["spec"]["versions"].as_array().map(Vec::len),
        Some(1),
        "Kubeflow's CRD serves v1 alone"
    );
    wait_for("Kubeflow's CRD established", 30, || {
        (condition(&node.get(&["crd", CRD]), "Established")?["status"] == "True").then_some(())
    });
}

/// What Kubeflow's controller leaves for a running job: its pods and services (its labels,
/// its controller owner reference) and its status (Created, Running; no `restarts`).
fn kubeflows_running_job(node: &Node, ns: &Namespace, job: &str, seconds: u32) {
    let mut spec = sleeping_job(node, &ns.name, job, seconds);
    spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"name": "tfjob-port", "containerPort": 2222}]);
    node.apply(&spec);
    let created = ns.get(&["tfjob", job]);
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let owner = json!([{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": job, "uid": uid,
        "controller": true, "blockOwnerDeletion": true}]);
    let hosts: Vec<String> = (0..2)
        .map(|i| format!("{job}-worker-{i}.{}.svc:2222", ns.name))
        .collect();
    for i in 0..2 {
        let mut labels = json!({
            "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/job-name": job,
            "training.kubeflow.org/replica-type": "worker",
            "training.kubeflow.org/replica-index": i.to_string(),
        });
        let selector = labels.clone();
        if i == 0 {
            labels["training.kubeflow.org/job-role"] = json!("master");
        }
        let tf_config = json!({"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}, "environment": "cloud"});
        let mut container =
            spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].clone();
        container["env"] = json!([{"name": "TF_CONFIG", "value": tf_config.to_string()}]);
        node.apply(&json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{job}-worker-{i}"), "namespace": ns.name,
                "labels": labels, "ownerReferences": owner},
            "spec": {"restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 2,
                "containers": [container]},
        }));
        node.apply(&json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{job}-worker-{i}"), "namespace": ns.name,
                "labels": selector, "ownerReferences": owner},
            "spec": {"clusterIP": "None", "selector": selector,
                "ports": [{"name": "tfjob-port", "port": 2222}]},
        }));
    }
    let t0 = "2024-05-01T10:00:00Z";
    let status = json!({"status": {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "TFJobCreated",
                "message": format!("TFJob {job} is created."), "lastUpdateTime": t0, "lastTransitionTime": t0},
            {"type": "Running", "status": "True", "reason": "TFJobRunning",
                "message": format!("TFJob {}/{job} is running.", ns.name), "lastUpdateTime": t0, "lastTransitionTime": t0},
        ],
        "replicaStatuses": {"Worker": {"active": 2}},
        "startTime": t0,
        "lastReconcileTime": t0,
    }});
    ns.kubectl(&[
        "patch",
        "tfjob",
        job,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
}

/// The image of the release's operator (`config/manager`'s name), tagged NEXT_TAG as well.
fn tag_next(node: &Node, image: &str) -> String {
    let next = format!("{}:{NEXT_TAG}", image.rsplit_once(':').unwrap().0);
    let out = Command::new("ctr")
        .args([
            "--address",
            node.containerd_sock.to_str().unwrap(),
            "--namespace",
            "k8s.io",
        ])
        .args(["images", "tag", "--force", image, &next])
        .output()
        .expect("run ctr");
    assert!(
        out.status.success(),
        "ctr images tag: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    next
}

#[test]
fn helm_takes_over_from_kubeflow_upgrades_rolls_back_uninstalls_and_reinstalls_with_jobs_running() {
    let Some(node) = Node::sharing("helm_lifecycle", Share::DeploymentEveryNamespace) else {
        return;
    };
    let helm = Helm::new(&node, "TFJOB_HELM4", "helm 4");
    let _ = node.try_kubectl(&["create", "namespace", NS]);
    node.kubectl(&[
        "label",
        "namespace",
        NS,
        "pod-security.kubernetes.io/enforce=restricted",
        "--overwrite",
    ]);
    let _cleanup = Cleanup {
        node: &node,
        helm: &helm,
    };
    let ns = node.namespace("helm-jobs");

    let (legacy, first) = take_over(&node, &helm, &ns);
    // A job through two upgrades and a rollback (legacy, still running, too).
    node.apply(&sleeping_job(&node, &ns.name, "through", 75));
    let through = running_pods(&ns, "through");
    upgrade_and_roll_back(
        &node,
        &helm,
        &ns,
        &first,
        &[("through", &through), ("legacy", &legacy)],
    );
    succeeded(&ns, "legacy", &legacy);
    succeeded(&ns, "through", &through);

    // Uninstalled with a job running: the CRD and every TFJob stay, its pods run on.
    node.apply(&sleeping_job(&node, &ns.name, "across", 25));
    let across = running_pods(&ns, "across");
    let out = helm.run(&["uninstall", RELEASE, "--namespace", NS, "--wait"]);
    assert!(out.contains("kept due to the resource policy"), "{out}");
    wait_for("the operator's pods gone", 60, || {
        operator_pods(&node).is_empty().then_some(())
    });
    node.kubectl(&["get", "crd", CRD]);
    for job in ["legacy", "through", "across"] {
        ns.kubectl(&["get", "tfjob", job]);
    }
    untouched(&ns, "across", &across, "helm uninstall");
    // Installed again: the release adopts the CRD it kept, the operator the job.
    helm.run(&["install", RELEASE, CHART, "--namespace", NS, "--wait"]);
    rolled_out(&node, "0.1.0");
    assert_crd_is_ours(&node);
    succeeded(&ns, "across", &across);
}

/// Kubeflow's CRD and a job its controller was running, then the takeover as docs/install.md
/// says (helm 4 applies server-side: --force-conflicts takes the fields Kubeflow's `kubectl
/// apply --server-side` set): the job's pods and the operator's, once rolled out.
fn take_over(node: &Node, helm: &Helm, ns: &Namespace) -> (Pods, BTreeMap<String, String>) {
    install_kubeflows_crd(node);
    kubeflows_running_job(node, ns, "legacy", 40);
    let legacy = running_pods(ns, "legacy");
    let before = ns.get(&["tfjob", "legacy"]);
    let out = helm.run(&[
        "install",
        RELEASE,
        CHART,
        "--namespace",
        NS,
        "--take-ownership",
        "--force-conflicts",
        "--wait",
    ]);
    assert!(out.contains("STATUS: deployed"), "{out}");
    let operator = rolled_out(node, "0.1.0");
    assert_crd_is_ours(node);
    untouched(ns, "legacy", &legacy, "the takeover");
    // The operator's first status write (the selector is ours), Kubeflow's conditions kept.
    let adopted = wait_for("the operator's first status of legacy", 60, || {
        let j = ns.get(&["tfjob", "legacy"]);
        j["status"]["replicaStatuses"]["Worker"]["selector"]
            .is_string()
            .then_some(j)
    });
    for t in ["Created", "Running"] {
        assert_eq!(
            condition(&before, t),
            condition(&adopted, t),
            "{t} carried over"
        );
    }
    (legacy, operator)
}

/// `helm upgrade` with a changed value, then with a new image tag, then `helm rollback` to the
/// first upgrade: each rolls the operator's pods and leaves JOBS' pods alone.
fn upgrade_and_roll_back(
    node: &Node,
    helm: &Helm,
    ns: &Namespace,
    first: &BTreeMap<String, String>,
    jobs: &[(&str, &Pods)],
) {
    let unchanged = |after: &str| {
        for (job, pods) in jobs {
            assert_eq!(
                &job_pods(ns, job),
                *pods,
                "{job}'s pods after {after} (uid, restarts)"
            );
        }
        untouched(ns, jobs[0].0, jobs[0].1, after);
    };
    let out = helm.run(&[
        "upgrade",
        RELEASE,
        CHART,
        "--namespace",
        NS,
        "--reuse-values",
        "--set",
        "logFormat=text",
        "--wait",
    ]);
    assert!(out.contains("REVISION: 2"), "{out}");
    let second = rolled_out(node, "0.1.0");
    assert!(
        second.keys().all(|p| !first.contains_key(p)),
        "the value change rolled no pod: {second:?}"
    );
    unchanged("upgrade 2 (logFormat)");

    let deployment = node.get(&["-n", NS, "deployment", "helm-tfjob-operator"]);
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap();
    tag_next(node, image);
    let tag = format!("image.tag={NEXT_TAG}");
    helm.run(&[
        "upgrade",
        RELEASE,
        CHART,
        "--namespace",
        NS,
        "--reuse-values",
        "--set",
        &tag,
        "--wait",
    ]);
    rolled_out(node, NEXT_TAG);
    unchanged("upgrade 3 (image tag)");

    helm.run(&["rollback", RELEASE, "2", "--namespace", NS, "--wait"]);
    rolled_out(node, "0.1.0");
    unchanged("the rollback to revision 2");
    let history = helm.run(&["history", RELEASE, "--namespace", NS]);
    assert_eq!(
        history
            .lines()
            .filter(|l| l.contains("Rollback to 2"))
            .count(),
        1,
        "{history}"
    );
}

/// Uninstalls the release, whatever happened (the CRD stays: keep), and puts crds/'s CRD back
/// if the test stopped while Kubeflow's was in place, or without one (the other tests need
/// ours). Never panics: it runs while a failed test unwinds.
struct Cleanup<'a> {
    node: &'a Node,
    helm: &'a Helm<'a>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let n = self.node;
        let _ = self
            .helm
            .try_run(&["uninstall", RELEASE, "--namespace", NS, "--wait"]);
        let _ = n.try_kubectl(&["delete", "namespace", NS, "--wait=false"]);
        let ours = concat!(env!("CARGO_MANIFEST_DIR"), "/crds/kubeflow.org_tfjobs.yaml");
        let versions = n
            .try_kubectl(&["get", "crd", CRD, "-o", "jsonpath={.spec.versions[*].name}"])
            .map(|v| v.split_whitespace().count());
        match versions {
            Ok(1) => drop(n.try_kubectl(&["replace", "-f", ours])),
            Err(_) => drop(n.try_kubectl(&["create", "-f", ours])),
            Ok(_) => {}
        }
    }
}
