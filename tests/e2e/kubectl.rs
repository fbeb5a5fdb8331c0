//! End to end through the real `kubectl` (docs/behaviour.md §10): every TFJob example in `examples/`,
//! applied unchanged, runs to completion, and `kubectl get`/`describe` show it as a user expects.
//! On the real tier kwok plays the pods (no images are pulled), its node has GPUs, and the test
//! provides the volume the MNIST example's claim binds to.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{TestCluster, has_condition, until};
use tfjob_operator::crd::ConditionType;

/// Run kubectl with `args` against the kubeconfig `config`; returns stdout, panics with
/// stderr on failure. Runs off the async runtime: the operator shares it.
async fn kubectl(tool: &Kubectl, args: &[&str]) -> String {
    let mut cmd = Command::new(&tool.program);
    cmd.arg("--kubeconfig").arg(&tool.config).args(args);
    let shown = format!("kubectl {}", args.join(" "));
    let output = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("kubectl task")
        .unwrap_or_else(|e| panic!("running {shown}: {e} (is kubectl installed and on PATH?)"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{shown} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Run kubectl expecting it to fail; returns its stderr.
async fn kubectl_fails(tool: &Kubectl, args: &[&str]) -> String {
    let mut cmd = Command::new(&tool.program);
    cmd.arg("--kubeconfig").arg(&tool.config).args(args);
    let shown = format!("kubectl {}", args.join(" "));
    let output = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("kubectl task")
        .unwrap_or_else(|e| panic!("running {shown}: {e}"));
    assert!(
        !output.status.success(),
        "{shown} succeeded:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The kubectl to use and the kubeconfig it reads.
struct Kubectl {
    program: PathBuf,
    config: PathBuf,
}

fn require_kubectl(program: &Path) {
    let found = Command::new(program)
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "this test needs `kubectl` on PATH (https://kubernetes.io/docs/tasks/tools/)"
    );
}

/// The example files holding a TFJob, in name order (the PVC of tfevent-volume.yaml is for
/// real clusters: the simulator runs pods without volumes).
fn tfjob_examples() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("reading an example");
            (p, text)
        })
        .filter(|(_, text)| {
            text.lines()
                .any(|l| l.trim().replace('"', "") == "kind: TFJob")
        })
        .collect();
    files.sort();
    files
}

/// A per-run scratch directory for the kubeconfig.
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tfjob-e2e-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creating a temp dir");
    dir
}

/// The kubectl of the cluster's tier, with a kubeconfig for it written under `dir`.
fn kubectl_for(c: &TestCluster, dir: &Path) -> Kubectl {
    let tool = match &c.real {
        Some(real) => Kubectl {
            program: real.kubectl.clone(),
            config: real.admin_kubeconfig.clone(),
        },
        None => {
            let config = dir.join("kubeconfig");
            c.sim()
                .write_kubeconfig(&config)
                .expect("writing the kubeconfig");
            Kubectl {
                program: "kubectl".into(),
                config,
            }
        }
    };
    require_kubectl(&tool.program);
    tool
}

fn seed(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/seeds")
        .join(file)
}

/// `tfjob-operator convert FILE` into `dir`; the converted file's path.
fn converted_file(file: &Path, dir: &Path) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"))
        .arg("convert")
        .arg(file)
        .output()
        .expect("running tfjob-operator convert");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = dir.join(file.file_name().expect("a file"));
    std::fs::write(&path, &out.stdout).expect("writing the converted manifest");
    path
}

#[tokio::test]
async fn kubectl_refuses_older_forms_pointing_at_convert_and_runs_them_converted() {
    let c = TestCluster::start("kubectl-older").await;
    let dir = scratch_dir().join("older");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let tool = kubectl_for(&c, &dir);
    let ns = c.namespace.clone();
    // (seed, what kubectl says; the retired versions are served only to say this)
    let cases = [
        (
            "011-v1alpha1-example-job.yaml",
            vec![
                "Warning: kubeflow.org/v1alpha1 TFJob is retired; `tfjob-operator convert FILE` rewrites it as kubeflow.org/v1",
                "kubeflow.org/v1alpha1 TFJobs are no longer served: rewrite the manifest as kubeflow.org/v1 with `tfjob-operator convert FILE`",
            ],
        ),
        (
            "014-v1beta1-example-tfjob.yaml",
            vec![
                "Warning: kubeflow.org/v1beta1 TFJob is retired",
                "kubeflow.org/v1beta1 TFJobs are no longer served: rewrite the manifest as kubeflow.org/v1 with `tfjob-operator convert FILE`",
            ],
        ),
        // Another group: only the docs (docs/older-forms.md) can point at convert (as the real
        // server, no match).
        (
            "016-t9k-tensorflow-example.yaml",
            vec![
                "no matches for kind \"TensorFlowTrainingJob\" in version \"batch.tensorstack.dev/v1beta1\"",
            ],
        ),
    ];
    for (file, says) in &cases {
        let path = seed(file);
        let stderr = kubectl_fails(
            &tool,
            &["-n", &ns, "apply", "-f", path.to_str().expect("path")],
        )
        .await;
        for s in says {
            assert!(stderr.contains(s), "{file}: {s:?} not in:\n{stderr}");
        }
    }

    // A misspelled field: the cluster says no, with the words `render` uses.
    let typo = std::fs::read_to_string(seed("004-tfjob-simple-get-output.yaml"))
        .expect("seed")
        .replace("restartPolicy: OnFailure", "restartPolcy: OnFailure")
        .replace("namespace: kubeflow", &format!("namespace: {ns}"));
    let typo_file = dir.join("typo.yaml");
    std::fs::write(&typo_file, &typo).expect("writing");
    let stderr = kubectl_fails(&tool, &["apply", "-f", typo_file.to_str().expect("path")]).await;
    let render_says =
        tfjob_operator::render::render(&typo, None).expect_err("render refuses it too");
    assert_eq!(render_says.len(), 1, "{render_says:?}");
    let words = render_says[0]
        .split(" (did you mean")
        .next()
        .expect("words");
    assert_eq!(
        words,
        "unknown field \"spec.tfReplicaSpecs.Worker.restartPolcy\""
    );
    assert!(
        stderr.contains(&format!("strict decoding error: {words}")),
        "{stderr}"
    );

    // Converted, the same manifests apply and run.
    let mut names = Vec::new();
    for (file, _) in &cases {
        let converted = converted_file(&seed(file), &dir);
        let out = kubectl(
            &tool,
            &[
                "-n",
                &ns,
                "apply",
                "-f",
                converted.to_str().expect("path"),
                "-o",
                "name",
            ],
        )
        .await;
        names.push(
            out.trim()
                .trim_start_matches("tfjob.kubeflow.org/")
                .to_string(),
        );
    }
    assert_eq!(
        names,
        ["example-job", "example-tfjob", "tensorflow-example"]
    );
    for name in &names {
        until(&c.jobs(), name, "converted and succeeded", |j| {
            j.filter(|j| has_condition(j, ConditionType::Succeeded))
                .map(|_| ())
        })
        .await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn every_example_applied_with_kubectl_runs_to_completion_and_shows_in_get_and_describe() {
    let c = TestCluster::start("kubectl").await;
    // Its own subdirectory: the tests of this binary run at once, and this one removes its
    // directory at the end (the whole scratch directory would take the others' files with it).
    let dir = scratch_dir().join("examples");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let tool = match &c.real {
        Some(real) => Kubectl {
            program: real.kubectl.clone(),
            config: real.admin_kubeconfig.clone(),
        },
        None => {
            let config = dir.join("kubeconfig");
            c.sim()
                .write_kubeconfig(&config)
                .expect("writing the kubeconfig");
            Kubectl {
                program: "kubectl".into(),
                config,
            }
        }
    };
    require_kubectl(&tool.program);
    let ns = c.namespace.clone();
    if !c.simulated() {
        provide_mnist_volume(&tool, &ns).await;
    }

    let examples = tfjob_examples();
    assert!(examples.len() >= 6, "seed examples missing: {examples:?}");
    let mut names = Vec::new();
    for (path, text) in &examples {
        let file = path.to_str().expect("UTF-8 path");
        // `apply` needs a fixed name; generateName manifests are meant for `create`.
        let verb = if text.contains("generateName:") {
            "create"
        } else {
            "apply"
        };
        let out = kubectl(&tool, &["-n", &ns, verb, "-f", file, "-o", "name"]).await;
        let name = out
            .trim()
            .strip_prefix("tfjob.kubeflow.org/")
            .unwrap_or_else(|| panic!("{verb} {file} printed {out:?}"))
            .to_string();
        names.push((name, file.to_string()));
    }

    for (name, file) in &names {
        until(&c.jobs(), name, &format!("{file} succeeded"), |j| {
            j.filter(|j| has_condition(j, ConditionType::Succeeded))
                .map(|_| ())
        })
        .await;
    }

    let table = kubectl(&tool, &["-n", &ns, "get", "tfjobs"]).await;
    eprintln!("kubectl get tfjobs:\n{table}");
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header.get(..3),
        Some(&["NAME", "STATE", "AGE"][..]),
        "{table}"
    );
    for (name, file) in &names {
        let row: Vec<&str> = lines
            .clone()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cols| cols.first() == Some(&name.as_str()))
            .unwrap_or_else(|| panic!("{name} ({file}) missing from:\n{table}"));
        assert_eq!(row.get(1), Some(&"Succeeded"), "{file}:\n{table}");
    }

    for (name, file) in &names {
        let described = kubectl(&tool, &["-n", &ns, "describe", "tfjob", name]).await;
        let events = described
            .split_once("\nEvents:")
            .inspect(|(_, e)| eprintln!("{file}, kubectl describe events:{e}"))
            .map(|(_, e)| e)
            .unwrap_or_else(|| panic!("no Events section for {file}:\n{described}"));
        assert!(
            events.contains("SuccessfulCreatePod"),
            "{file}: no SuccessfulCreatePod event:\n{described}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a real cluster the MNIST example mounts the claim `examples/tfevent-volume.yaml`: apply
/// it, with a volume for it to bind to (the test cluster has no provisioner).
async fn provide_mnist_volume(tool: &Kubectl, ns: &str) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let claim = examples.join("tfevent-volume.yaml");
    kubectl(
        tool,
        &["-n", ns, "apply", "-f", claim.to_str().expect("path")],
    )
    .await;
    let jsonpath = "-o=jsonpath={.metadata.uid}";
    let uid = kubectl(tool, &["-n", ns, "get", "pvc", "tfevent-volume", jsonpath]).await;
    // Named after this claim: a volume left bound to a claim of an earlier run is not reused.
    let volume = format!(
        r#"{{"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {{"name": "tfevent-{uid}"}},
            "spec": {{"capacity": {{"storage": "1Gi"}}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain",
                     "hostPath": {{"path": "/tmp/tfevent-{uid}"}},
                     "claimRef": {{"namespace": "{ns}", "name": "tfevent-volume", "uid": "{uid}"}}}}}}"#
    );
    let file = scratch_dir().join("volume.json");
    std::fs::write(&file, volume).expect("writing the volume");
    kubectl(tool, &["apply", "-f", file.to_str().expect("path")]).await;
}
