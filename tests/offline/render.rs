//! `render` end to end: the library function and the `tfjob-operator` binary.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use tfjob_operator::render::render;

const DIST: &str = include_str!("../fixtures/seeds/005-tfjob-dist.yaml");
const SMOKE: &str = include_str!("../fixtures/seeds/003-tf-smoke-gpu.yaml");

const BAD: &str = r#"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: bad}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: tensorflow}]
    Launcher:
      template:
        spec:
          containers: [{name: main, image: x}]
"#;

fn docs(out: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(out).unwrap()
}

#[test]
fn output_is_byte_identical_every_time() {
    let first = render(DIST, Some("cluster.local")).unwrap();
    for _ in 0..3 {
        assert_eq!(render(DIST, Some("cluster.local")).unwrap(), first);
    }
}

#[test]
fn cluster_domain_reaches_tf_config() {
    let out = render(SMOKE, Some("corp.example")).unwrap();
    assert!(
        out.contains(r#"tf-smoke-gpu-ps-0.default.svc.corp.example:2222"#),
        "{out}"
    );
    let out = render(SMOKE, None).unwrap();
    assert!(
        out.contains(r#"tf-smoke-gpu-ps-0.default.svc:2222"#),
        "{out}"
    );
}

#[test]
fn notes_are_yaml_comments() {
    let out = render(DIST, None).unwrap();
    assert!(
        out.starts_with("# metadata.generateName \"tfjob\": rendered as \"tfjobxxxxx\""),
        "{out}"
    );
    let smoke = render(SMOKE, None).unwrap();
    assert!(
        smoke.starts_with("# tf-smoke-gpu: a template sets restartPolicy"),
        "{smoke}"
    );
    assert_eq!(docs(&smoke).len(), 4, "comments do not add documents");
}

#[test]
fn every_problem_is_reported() {
    let errors = render(BAD, None).unwrap_err();
    assert_eq!(
        errors,
        vec![
            "spec.tfReplicaSpecs[Launcher]: Unsupported value: \"Launcher\": supported values: \"Chief\", \"Master\", \"PS\", \"Worker\", \"Evaluator\" (any case)",
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value",
        ]
    );
}

#[test]
fn multi_document_input() {
    let pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n";
    let out = render(&format!("{pvc}---\n{SMOKE}---\n{DIST}"), None).unwrap();
    assert!(
        out.starts_with("# skipped document 1: kind PersistentVolumeClaim\n"),
        "{out}"
    );
    assert_eq!(docs(&out).len(), 4 + 8);
    let errors = render(&format!("{SMOKE}---\n{BAD}"), None).unwrap_err();
    assert_eq!(errors.len(), 2);
    assert!(
        errors
            .iter()
            .all(|e| e.starts_with("document 2: spec.tfReplicaSpecs[")),
        "{errors:?}"
    );
}

#[test]
fn unreadable_input() {
    assert_eq!(render("", None).unwrap_err(), vec!["no TFJob in the input"]);
    assert!(render("a: [", None).unwrap_err()[0].starts_with("invalid YAML"));
    let wrong_type = SMOKE.replace("replicas: 1", "replicas: one");
    let errors = render(&wrong_type, None).unwrap_err();
    assert_eq!(
        errors,
        [
            "spec.tfReplicaSpecs[PS].replicas: Invalid value: \"one\": must be of type integer",
            "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"one\": must be of type integer",
        ]
    );
}

#[test]
fn a_misspelled_field_fails_with_the_api_servers_words() {
    let typo = DIST.replace("restartPolicy: OnFailure", "restartPolcy: OnFailure");
    assert_eq!(
        render(&typo, None).unwrap_err(),
        [
            "unknown field \"spec.tfReplicaSpecs.PS.restartPolcy\" (did you mean \"restartPolicy\"?)",
            "unknown field \"spec.tfReplicaSpecs.Worker.restartPolcy\" (did you mean \"restartPolicy\"?)",
        ]
    );
}

/// Unknown fields (as the API server words them), schema and operator problems: all at once.
const MANY_PROBLEMS: &str = r#"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: bad, clusterName: x}
spec:
  backoffLimit: -2
  tfReplicaSpecs:
    Worker:
      replicas: "2"
      restartPolcy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow
    ps:
      restartPolicy: OnFailre
      template:
        spec:
          containers: [{name: tf, image: x}]
"#;

#[test]
fn every_kind_of_problem_at_once() {
    assert_eq!(
        render(MANY_PROBLEMS, None).unwrap_err(),
        [
            "unknown field \"metadata.clusterName\"",
            "unknown field \"spec.tfReplicaSpecs.Worker.restartPolcy\" (did you mean \"restartPolicy\"?)",
            "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
            "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"2\": must be of type integer",
            "spec.tfReplicaSpecs[PS].restartPolicy: Unsupported value: \"OnFailre\": supported values: \"Always\", \"OnFailure\", \"Never\", \"ExitCode\"",
            "spec.tfReplicaSpecs[PS].template.spec.containers: Required value: one container must be named \"tensorflow\"",
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value",
        ]
    );
}

#[test]
fn older_forms_point_at_convert() {
    let cases = [
        (
            include_str!("../fixtures/seeds/011-v1alpha1-example-job.yaml"),
            "a tf-operator v1alpha1 TFJob",
        ),
        (
            include_str!("../fixtures/seeds/014-v1beta1-example-tfjob.yaml"),
            "a kubeflow.org/v1beta1 TFJob",
        ),
        (
            include_str!("../fixtures/seeds/016-t9k-tensorflow-example.yaml"),
            "a T9k TensorFlowTrainingJob",
        ),
    ];
    for (yaml, what) in cases {
        let errors = render(yaml, None).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with(&format!("this is {what}")),
            "{errors:?}"
        );
        assert!(
            errors[0].contains("`tfjob-operator convert FILE`"),
            "{errors:?}"
        );
    }
    let get_output = render(
        include_str!("../fixtures/seeds/008-mnist-get-output-legacy-fields.yaml"),
        None,
    )
    .unwrap_err();
    assert_eq!(
        get_output[0],
        "unknown field \"status.replicaStatuses.Worker.running\""
    );
    assert!(
        get_output[1].contains("`tfjob-operator convert FILE`"),
        "{get_output:?}"
    );
}

#[test]
fn early_v1_fields_render_with_a_note() {
    let early = DIST.replacen(
        "spec:\n",
        "spec:\n  cleanPodPolicy: All\n  runPolicy: {backoffLimit: 2}\n  backoffLimit: 5\n",
        1,
    );
    let out = render(&early, None).unwrap();
    assert!(
        out.contains("# tfjobxxxxx: spec.cleanPodPolicy is the early kubeflow.org/v1 place, honoured as spec.runPolicy.cleanPodPolicy; `tfjob-operator convert` moves it\n"),
        "{out}"
    );
    assert!(
        out.contains("# tfjobxxxxx: spec.backoffLimit is the early kubeflow.org/v1 place, ignored: spec.runPolicy.backoffLimit is set and wins;"),
        "{out}"
    );
}

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"));
    cmd.env_remove("CUSTOM_CLUSTER_DOMAIN");
    cmd.env_remove("GANG_SCHEDULER_NAME");
    cmd.env_remove("SCHEDULER_PLUGINS_NAME");
    cmd
}

fn run_with_stdin(mut cmd: Command, input: &str) -> std::process::Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn binary_crd_prints_the_committed_crd() {
    let out = bin().arg("crd").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        include_str!("../../crds/kubeflow.org_tfjobs.yaml")
    );
}

#[test]
fn binary_render_from_stdin_with_env_cluster_domain() {
    let mut cmd = bin();
    cmd.args(["render", "-"])
        .env("CUSTOM_CLUSTER_DOMAIN", "from.env");
    let out = run_with_stdin(cmd, SMOKE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout, render(SMOKE, Some("from.env")).unwrap());
}

#[test]
fn binary_render_errors_go_to_stderr_with_exit_code_1() {
    let mut cmd = bin();
    cmd.args(["render", "-"]);
    let out = run_with_stdin(cmd, BAD);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(
        stderr.contains(
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value"
        )
    );
}

#[test]
fn binary_render_missing_file() {
    let out = bin()
        .args(["render", "/nonexistent/job.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("/nonexistent/job.yaml: ")
    );
}

/// `render --gang-scheduler-name` shows the PodGroup first, as the operator creates it before
/// the pods, and the pods as the gang scheduler sees them.
#[test]
fn binary_render_with_a_gang_scheduler_shows_the_podgroup_first() {
    let cases = [
        (vec!["volcano"], "scheduling.volcano.sh/v1beta1", "volcano"),
        (
            vec!["scheduler-plugins"],
            "scheduling.x-k8s.io/v1alpha1",
            "scheduler-plugins-scheduler",
        ),
        (
            vec!["scheduler-plugins", "--scheduler-plugins-name", "gangs"],
            "scheduling.x-k8s.io/v1alpha1",
            "gangs",
        ),
        (
            vec!["my-coscheduler"],
            "scheduling.x-k8s.io/v1alpha1",
            "my-coscheduler",
        ),
    ];
    for (flags, api_version, scheduler) in cases {
        let mut cmd = bin();
        cmd.args(["render", "-", "--gang-scheduler-name"])
            .args(&flags);
        let out = run_with_stdin(cmd, SMOKE);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let docs = docs(&String::from_utf8(out.stdout).unwrap());
        let group = &docs[0];
        assert_eq!(group["kind"], "PodGroup", "{flags:?}");
        assert_eq!(group["apiVersion"], api_version, "{flags:?}");
        assert_eq!(group["metadata"]["name"], "tf-smoke-gpu");
        assert_eq!(group["metadata"]["ownerReferences"][0]["kind"], "TFJob");
        assert_eq!(group["spec"]["minMember"], 2, "PS and worker");
        let pods: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Pod").collect();
        assert_eq!(pods.len(), 2);
        for pod in pods {
            assert_eq!(pod["spec"]["schedulerName"], scheduler, "{flags:?}");
            let (label, annotation) = (
                &pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"],
                &pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
            );
            let group_of = if scheduler == "volcano" {
                annotation
            } else {
                label
            };
            assert_eq!(group_of, "tf-smoke-gpu", "{flags:?}");
        }
    }
}

#[test]
fn render_without_a_gang_scheduler_has_no_podgroup() {
    let out = render(SMOKE, None).unwrap();
    assert!(
        !out.contains("PodGroup") && !out.contains("schedulerName"),
        "{out}"
    );
}

#[test]
fn binary_render_refuses_a_gang_that_could_never_be_placed() {
    let job = SMOKE.replacen(
        "spec:\n  tfReplicaSpecs:",
        "spec:\n  runPolicy:\n    schedulingPolicy: {minAvailable: 3}\n  tfReplicaSpecs:",
        1,
    );
    assert_ne!(job, SMOKE);
    assert!(render(&job, None).is_ok(), "fine without gang scheduling");
    let mut cmd = bin();
    cmd.args(["render", "-", "--gang-scheduler-name", "volcano"]);
    let out = run_with_stdin(cmd, &job);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap().trim(),
        "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 3: more than the job's 2 \
         replicas, so the gang could never be scheduled"
    );
}

/// The recovery annotations (docs/behaviour.md §6.7): refused offline exactly as the
/// operator refuses them, by field path; under `restart-scope: Job` the pods are never
/// restarted in place and carry their attempt.
#[test]
fn recovery_annotations_are_checked_and_shape_the_pods() {
    let job = |annotations: &str| {
        format!(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: sync\n  annotations:\n{annotations}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      restartPolicy: OnFailure\n      template:\n        spec:\n          containers: [{{name: tensorflow, image: tf}}]\n"
        )
    };
    let bad = job(
        "    tfjob-operator.dev/restart-scope: job\n    tfjob-operator.dev/max-job-restart: \"3\"",
    );
    let problems = render(&bad, None).unwrap_err().join("\n");
    assert!(
        problems.contains("metadata.annotations[tfjob-operator.dev/restart-scope]: Unsupported value: \"job\": supported values: \"Job\", \"Replica\"")
            && problems.contains("metadata.annotations[tfjob-operator.dev/max-job-restart]: Unsupported value: \"tfjob-operator.dev/max-job-restart\": not a setting of tfjob-operator (did you mean \"tfjob-operator.dev/max-job-restarts\"?)"),
        "{problems}"
    );
    let good = render(&job("    tfjob-operator.dev/restart-scope: Job"), None).unwrap();
    let pods: Vec<Value> = docs(&good)
        .into_iter()
        .filter(|d| d["kind"] == "Pod")
        .collect();
    assert_eq!(pods.len(), 2);
    for pod in pods {
        assert_eq!(pod["spec"]["restartPolicy"], "Never", "{pod}");
        assert_eq!(
            pod["metadata"]["labels"]["tfjob-operator.dev/restart-attempt"],
            "0"
        );
    }
    let plain = render(&job("    team: a"), None).unwrap();
    assert!(!plain.contains("restart-attempt") && plain.contains("restartPolicy: OnFailure"));
}

/// With settings of ours, `render` says how each replica's failures would be handled, in the
/// order they are decided, and that success waits for the evaluator.
#[test]
fn failure_handling_is_rendered_for_each_replica() {
    let yaml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/recovery/failure_rules.yaml"
    ))
    .unwrap();
    let out = render(&yaml, None).unwrap();
    let notes: Vec<&str> = out.lines().take_while(|l| l.starts_with('#')).collect();
    assert_eq!(
        notes[..3],
        [
            "# ps-with-rules: success waits for the evaluator, up to 600 s after the chief (or worker 0) succeeded",
            "# ps-with-rules: failures are handled in this order, the first that matches deciding:",
            "#   Chief: tfjob-operator.dev/failure-rules[2]: exit codes 138 → RestartUncharged; then a disruption → restart the replica, not charged; exit codes 0-128, 139 → fail the job; any other exit → restart the replica; deleted from outside → restart the replica",
        ]
    );
    assert!(notes.contains(&"#   PS: tfjob-operator.dev/failure-rules[0]: any failure → FailJob"));
    let plain = render(DIST, None).unwrap();
    assert!(
        !plain.contains("failures are handled"),
        "only for jobs with settings of ours"
    );
}
