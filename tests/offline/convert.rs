//! `convert` end to end: every seed example of an older form (tf-operator v1alpha1, Kubeflow
//! v1beta1, early v1, T9k) converts, and what it converts to renders; the binary's output,
//! summary and exit codes. (Running them: `tests/e2e/convert.rs`.)

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use tfjob_operator::convert::{Form, convert, form};
use tfjob_operator::render::render;

/// Each older-form seed example, and the pods its conversion renders.
const OLDER: [(&str, &str, usize); 8] = [
    (
        "011-v1alpha1-example-job.yaml",
        include_str!("../fixtures/seeds/011-v1alpha1-example-job.yaml"),
        4,
    ),
    (
        "012-v1alpha1-tf-smoke-gpu.yaml",
        include_str!("../fixtures/seeds/012-v1alpha1-tf-smoke-gpu.yaml"),
        1,
    ),
    (
        "013-v1alpha1-example-job-get-output.yaml",
        include_str!("../fixtures/seeds/013-v1alpha1-example-job-get-output.yaml"),
        4,
    ),
    (
        "014-v1beta1-example-tfjob.yaml",
        include_str!("../fixtures/seeds/014-v1beta1-example-tfjob.yaml"),
        1,
    ),
    (
        "015-v1beta1-module6-ex1-gpu.yaml",
        include_str!("../fixtures/seeds/015-v1beta1-module6-ex1-gpu.yaml"),
        1,
    ),
    (
        "016-t9k-tensorflow-example.yaml",
        include_str!("../fixtures/seeds/016-t9k-tensorflow-example.yaml"),
        4,
    ),
    (
        "017-t9k-tensorflow-example-scheduler-tensorboard.yaml",
        include_str!("../fixtures/seeds/017-t9k-tensorflow-example-scheduler-tensorboard.yaml"),
        4,
    ),
    (
        "008-mnist-get-output-legacy-fields.yaml",
        include_str!("../fixtures/seeds/008-mnist-get-output-legacy-fields.yaml"),
        1,
    ),
];

#[test]
fn every_older_seed_converts_and_then_renders() {
    for (file, yaml, pods) in OLDER {
        assert!(render(yaml, None).is_err(), "{file}: refused as it is");
        let converted = convert(yaml, file).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let docs: Vec<Value> = serde_saphyr::from_multiple(&converted.yaml).unwrap();
        assert_eq!(form(&docs[0]), Form::Current, "{file}");
        let out = render(&converted.yaml, None).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let children: Vec<Value> = serde_saphyr::from_multiple(&out).unwrap();
        assert_eq!(
            children.len(),
            2 * pods,
            "{file}: a pod and a service per replica"
        );
    }
}

fn bin(args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn binary_converts_files_and_stdin_with_a_summary() {
    let dir = std::env::temp_dir().join(format!("tfjob-convert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("old.yaml");
    std::fs::write(&file, OLDER[0].1).unwrap();
    let path = file.to_str().unwrap();
    let out = bin(&["convert", path, "-"], OLDER[5].1);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["example-job", "tensorflow-example"]);
    assert!(
        stdout.starts_with(
            "# Converted by `tfjob-operator convert` from a tf-operator v1alpha1 TFJob"
        )
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with(&format!("{path}, document 1: a tf-operator v1alpha1 TFJob")),
        "{stderr}"
    );
    assert!(
        lines[0].contains("\"example-job\": converted, 7 notes, 1 note to check"),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with("-, document 1: a T9k TensorFlowTrainingJob"),
        "{stderr}"
    );
}

#[test]
fn binary_fails_on_what_it_cannot_convert() {
    let out = bin(
        &["convert", "-"],
        "apiVersion: kubeflow.org/v1alpha1\nkind: TFJob\nspec: {replicaSpecs: 3}\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "-: spec.replicaSpecs: must be a list of replica specs\n"
    );
    let missing = bin(&["convert", "/nonexistent/old.yaml"], "");
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8(missing.stderr)
            .unwrap()
            .starts_with("/nonexistent/old.yaml: ")
    );
}

/// `convert` keeps a job's annotations, the recovery settings among them.
#[test]
fn annotations_survive_conversion() {
    let old = include_str!("../fixtures/seeds/011-v1alpha1-example-job.yaml").replace(
        "  name: \"example-job\"",
        "  name: \"example-job\"\n  annotations:\n    tfjob-operator.dev/restart-scope: Job",
    );
    let converted = convert(&old, "old.yaml").unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&converted.yaml).unwrap();
    let job = &docs[0];
    assert_eq!(
        job["metadata"]["annotations"]["tfjob-operator.dev/restart-scope"],
        "Job"
    );
    assert!(render(&converted.yaml, None).is_ok());
}
