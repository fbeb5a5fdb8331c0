//! kubectl against the running `tfjob-sim` binary: apply a CRD and custom resources, get with
//! printer columns, short names and categories, describe with events, patch the status
//! subresource, pods with kubectl's columns, delete with garbage collection.
//! kubectl must be installed (CI installs it); these tests fail, not skip, without it.
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

struct Cluster {
    child: Child,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn require_kubectl() {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "kubectl is required for the kubectl tests (CI installs it); it was not found on PATH"
    );
}

impl Cluster {
    fn start(name: &str) -> Self {
        require_kubectl();
        let dir =
            std::env::temp_dir().join(format!("tfjob-sim-kubectl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let kubeconfig = dir.join("kubeconfig");
        let child = Command::new(env!("CARGO_BIN_EXE_tfjob-sim"))
            .args(["--port", "0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tfjob-sim binary starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !kubeconfig.exists() {
            assert!(
                Instant::now() < deadline,
                "tfjob-sim did not write its kubeconfig"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            dir,
            kubeconfig,
        }
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    }

    fn file(&self, name: &str, content: &serde_json::Value) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, serde_json::to_string_pretty(content).expect("json")).expect("write");
        p.to_string_lossy().into_owned()
    }

    fn until(&self, what: &str, args: &[&str], pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let (_, out, err) = self.run(args);
            if pred(&out) {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {out}{err}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.sim.test"},
        "spec": {
            "group": "sim.test", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["simtest"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "State", "type": "string", "jsonPath": ".status.state"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {"state": {"type": "string"}}}}}}}]
        }
    })
}

#[test]
fn kubectl_apply_get_patch_describe_delete_custom_resources() {
    let c = Cluster::start("cr");
    let out = c.ok(&["apply", "-f", &c.file("crd.json", &crd())]);
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.sim.test created"),
        "{out}"
    );
    c.ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=10s",
        "crd/widgets.sim.test",
    ]);
    let w = json!({"apiVersion": "sim.test/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}});
    let path = c.file("w1.json", &w);
    assert!(
        c.ok(&["apply", "-f", &path])
            .contains("widget.sim.test/w1 created")
    );
    assert!(c.ok(&["apply", "-f", &path]).contains("unchanged"));
    let table = c.ok(&["get", "widgets"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SIZE", "STATE", "AGE"], "{table}");
    assert!(
        table.lines().nth(1).unwrap_or("").starts_with("w1"),
        "{table}"
    );
    assert!(c.ok(&["get", "wd"]).contains("w1"), "short name");
    assert!(c.ok(&["get", "simtest"]).contains("w1"), "category");
    c.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"state":"Ready"}}"#,
    ]);
    assert_eq!(
        c.ok(&["get", "widget", "w1", "-o", "jsonpath={.status.state}"]),
        "Ready"
    );
    assert!(
        c.ok(&["get", "widget", "w1"]).contains("Ready"),
        "status column"
    );
    let uid = c.ok(&["get", "widget", "w1", "-o", "jsonpath={.metadata.uid}"]);
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "w1.ev1"},
        "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "sim-test", "reportingInstance": "sim-test-0",
        "action": "Poke", "reason": "Poked", "note": "the widget was poked", "type": "Normal",
        "regarding": {"apiVersion": "sim.test/v1", "kind": "Widget", "name": "w1", "namespace": "default", "uid": uid}});
    c.ok(&["apply", "-f", &c.file("event.json", &event)]);
    let described = c.ok(&["describe", "widget", "w1"]);
    assert!(
        described.contains("Poked")
            && described.contains("the widget was poked")
            && described.contains("sim-test"),
        "{described}"
    );
    let owned = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w1-owned",
        "ownerReferences": [{"apiVersion": "sim.test/v1", "kind": "Widget", "name": "w1", "uid": uid}]}});
    c.ok(&["apply", "-f", &c.file("owned.json", &owned)]);
    let out = c.ok(&["delete", "widget", "w1"]);
    assert!(out.contains("widget.sim.test \"w1\" deleted"), "{out}");
    c.until(
        "GC of the owned configmap",
        &["get", "configmaps", "-o", "name"],
        |o| !o.contains("w1-owned"),
    );
    let (ok, _, err) = c.run(&["get", "widget", "w1"]);
    assert!(
        !ok && (err.contains("NotFound") || err.contains("not found")),
        "{err}"
    );
}

#[test]
fn kubectl_sees_pods_with_their_columns_and_deletes_them() {
    let c = Cluster::start("pods");
    let pod = |name: &str, secs: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": {"sim.tfjob.dev/run-seconds": secs}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "img"}]}})
    };
    c.ok(&["apply", "-f", &c.file("quick.json", &pod("quick", "0.2"))]);
    c.ok(&["apply", "-f", &c.file("long.json", &pod("long", "600"))]);
    let header = c.ok(&["get", "pods"]);
    let cols: Vec<&str> = header
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        cols,
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{header}"
    );
    c.until(
        "quick Completed",
        &["get", "pod", "quick", "--no-headers"],
        |o| o.contains("Completed"),
    );
    c.until(
        "long Running",
        &["get", "pod", "long", "--no-headers"],
        |o| o.contains("1/1") && o.contains("Running"),
    );
    let wide = c.ok(&["get", "pod", "long", "-o", "wide"]);
    assert!(wide.contains("sim-node-"), "{wide}");
    let out = c.ok(&["delete", "pod", "long", "--timeout=20s"]);
    assert!(out.contains("pod \"long\" deleted"), "{out}");
    assert!(!c.ok(&["get", "pods", "-o", "name"]).contains("pod/long"));
    // kubectl shows `Completed` from the container's state; the phase follows ~1 s later.
    c.until("quick Succeeded", &["describe", "pod", "quick"], |o| {
        o.contains("Succeeded") && o.contains("Scheduled")
    });
}

#[test]
fn kubectl_apply_of_a_kind_without_a_resource_says_no_matches() {
    let c = Cluster::start("nokind");
    // A T9k job: its CRD is not installed. kubectl reads the OpenAPI v2 document while
    // validating; its media type must parse for kubectl to get as far as its RESTMapper.
    let job = json!({"apiVersion": "tensorflow.tensorstack.dev/v1beta1", "kind": "TensorFlowTrainingJob",
        "metadata": {"name": "t9k"}, "spec": {"replicaSpecs": []}});
    let (ok, out, err) = c.run(&["apply", "-f", &c.file("t9k.json", &job)]);
    assert!(!ok, "{out}");
    assert!(
        err.contains(
            "no matches for kind \"TensorFlowTrainingJob\" in version \"tensorflow.tensorstack.dev/v1beta1\""
        ),
        "{err}"
    );
    assert!(!err.contains("mime"), "{err}");
}

#[test]
fn kubectl_apply_refuses_a_misspelled_tfjob_field_and_warns_when_asked_to() {
    let c = Cluster::start("strict");
    let crd = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crds/kubeflow.org_tfjobs.yaml"
    );
    c.ok(&["apply", "-f", crd]);
    let job = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "typo"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolcy": "Never",
            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}}});
    let path = c.file("typo.json", &job);
    // kubectl sends fieldValidation=Strict by default and prints the server's answer.
    let (ok, _, err) = c.run(&["apply", "-f", &path]);
    assert!(!ok);
    assert!(
        err.contains("Error from server (BadRequest): error when creating")
            && err.contains(
                "TFJob in version \"v1\" cannot be handled as a TFJob: strict decoding error: unknown field \"spec.tfReplicaSpecs.Worker.restartPolcy\""
            ),
        "{err}"
    );
    let (ok, _, err) = c.run(&["apply", "-f", &path, "--validate=warn"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("Warning: unknown field \"spec.tfReplicaSpecs.Worker.restartPolcy\""),
        "{err}"
    );
    let spec = c.ok(&[
        "get",
        "tfjob",
        "typo",
        "-o",
        "jsonpath={.spec.tfReplicaSpecs.Worker}",
    ]);
    assert!(!spec.contains("restartPolcy"), "pruned: {spec}");
    // Applying it again is a patch: refused as the patch handler words it.
    let (ok, _, err) = c.run(&["apply", "-f", &path]);
    assert!(!ok);
    assert!(
        err.contains("patch: Invalid value:")
            && err.contains(
                "strict decoding error: unknown field \"spec.tfReplicaSpecs.Worker.restartPolcy\""
            ),
        "{err}"
    );
}
