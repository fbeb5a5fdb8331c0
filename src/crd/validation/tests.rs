//! Table tests of validation: one case per rule of docs/behaviour.md §3, exact messages.

use super::*;

/// A valid job: one worker.
const BASE: &str = r#"
metadata: {name: ok}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: tf}]
"#;

fn tf_container_block(t: &str, replicas: i32) -> String {
    format!(
        "    {t}:\n      replicas: {replicas}\n      template:\n        spec:\n          containers: [{{name: tensorflow, image: tf}}]\n"
    )
}

/// A job named `name` with the given replica blocks.
fn job_with(name: &str, blocks: &[String]) -> String {
    format!(
        "metadata: {{name: {name}}}\nspec:\n  tfReplicaSpecs:\n{}",
        blocks.concat()
    )
}

fn errors_of(yaml: &str) -> Vec<String> {
    let value: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
    let job = parse_tfjob(value).unwrap();
    match validate(&job) {
        Ok(_) => vec![],
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn valid_jobs_pass() {
    let cases = [
        BASE.to_string(),
        job_with(
            "dist",
            &[tf_container_block("PS", 2), tf_container_block("Worker", 4)],
        ),
        job_with(
            "c",
            &[
                tf_container_block("Chief", 1),
                tf_container_block("Worker", 0),
            ],
        ),
        job_with("m", &[tf_container_block("MASTER", 1)]),
        job_with(
            "lower",
            &[tf_container_block("worker", 1), tf_container_block("ps", 0)],
        ),
        job_with(
            "e",
            &[
                tf_container_block("Worker", 1),
                tf_container_block("Evaluator", 1),
            ],
        ),
    ];
    for yaml in cases {
        assert_eq!(errors_of(&yaml), Vec::<String>::new(), "{yaml}");
    }
}

#[test]
fn one_error_per_rule() {
    let w1 = tf_container_block("Worker", 1);
    let long = "a".repeat(56); // "<56>-worker-0" is 65 characters
    let long_error = format!(
        "metadata.name: Invalid value: \"{long}\": the child name \"{long}-worker-0\" would be 65 characters, must be no more than 63"
    );
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "name required",
            BASE.replace("name: ok", "name: ''"),
            vec!["metadata.name: Required value"],
        ),
        (
            "name is a DNS-1035 label",
            BASE.replace("name: ok", "name: 1bad"),
            vec![
                "metadata.name: Invalid value: \"1bad\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, end with an alphanumeric character, and be at most 63 characters",
            ],
        ),
        (
            "child names fit in 63 characters",
            job_with(&long, std::slice::from_ref(&w1)),
            vec![&long_error],
        ),
        (
            "empty tfReplicaSpecs",
            "metadata: {name: e}\nspec: {tfReplicaSpecs: {}}".to_string(),
            vec![
                "spec.tfReplicaSpecs: Required value",
                "spec.tfReplicaSpecs: Required value: a Chief, Master or Worker replica must decide the job's success",
            ],
        ),
        (
            "unknown replica type",
            job_with("u", &[w1.clone(), tf_container_block("Launcher", 1)]),
            vec![
                "spec.tfReplicaSpecs[Launcher]: Unsupported value: \"Launcher\": supported values: \"Chief\", \"Master\", \"PS\", \"Worker\", \"Evaluator\" (any case)",
            ],
        ),
        (
            "two spellings of one type",
            job_with("d", &[w1.clone(), tf_container_block("worker", 1)]),
            vec![
                "spec.tfReplicaSpecs[worker]: Duplicate value: \"worker\": names the same replica type as \"Worker\"",
            ],
        ),
        (
            "chief and master",
            job_with(
                "cm",
                &[
                    tf_container_block("Chief", 1),
                    tf_container_block("master", 1),
                ],
            ),
            vec![
                "spec.tfReplicaSpecs: Forbidden: Chief and Master are one role; set only one of them",
            ],
        ),
        (
            "chief replicas at most 1",
            job_with("c", &[tf_container_block("Chief", 2), w1.clone()]),
            vec![
                "spec.tfReplicaSpecs[Chief].replicas: Invalid value: 2: must be less than or equal to 1",
            ],
        ),
        (
            "chief with 0 replicas cannot decide",
            job_with("c", &[tf_container_block("Master", 0), w1.clone()]),
            vec![
                "spec.tfReplicaSpecs[Master].replicas: Invalid value: 0: the Master decides the job's success and needs 1 replica",
            ],
        ),
        (
            "no deciding replica",
            job_with(
                "p",
                &[
                    tf_container_block("PS", 1),
                    tf_container_block("Evaluator", 1),
                ],
            ),
            vec![
                "spec.tfReplicaSpecs: Required value: a Chief, Master or Worker replica must decide the job's success",
            ],
        ),
        (
            "worker with 0 replicas cannot decide",
            job_with(
                "w",
                &[tf_container_block("Worker", 0), tf_container_block("PS", 1)],
            ),
            vec![
                "spec.tfReplicaSpecs[Worker].replicas: Invalid value: 0: without a Chief or Master, Worker decides the job's success and needs at least 1 replica",
            ],
        ),
        (
            "negative replicas",
            job_with("neg", &[w1.clone(), tf_container_block("PS", -1)]),
            vec![
                "spec.tfReplicaSpecs[PS].replicas: Invalid value: -1: must be greater than or equal to 0",
            ],
        ),
        (
            "no containers",
            BASE.replace(
                "containers: [{name: tensorflow, image: tf}]",
                "containers: []",
            ),
            vec!["spec.tfReplicaSpecs[Worker].template.spec.containers: Required value"],
        ),
        (
            "no pod spec at all",
            "metadata: {name: t}\nspec: {tfReplicaSpecs: {Worker: {replicas: 1}}}".to_string(),
            vec!["spec.tfReplicaSpecs[Worker].template.spec.containers: Required value"],
        ),
        (
            "container without image",
            BASE.replace(
                "[{name: tensorflow, image: tf}]",
                "[{name: tensorflow, image: tf}, {name: side}]",
            ),
            vec!["spec.tfReplicaSpecs[Worker].template.spec.containers[1].image: Required value"],
        ),
        (
            "no tensorflow container",
            BASE.replace("name: tensorflow", "name: main"),
            vec![
                "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: one container must be named \"tensorflow\"",
            ],
        ),
        (
            "two tensorflow containers",
            BASE.replace(
                "[{name: tensorflow, image: tf}]",
                "[{name: tensorflow, image: tf}, {name: tensorflow, image: tf}]",
            ),
            vec![
                "spec.tfReplicaSpecs[Worker].template.spec.containers[1].name: Duplicate value: \"tensorflow\"",
            ],
        ),
        (
            "unknown managedBy",
            format!("{BASE}  runPolicy: {{managedBy: me}}\n"),
            vec![
                "spec.runPolicy.managedBy: Unsupported value: \"me\": supported values: \"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\"",
            ],
        ),
        (
            "negative backoffLimit, ttl and deadline",
            format!(
                "{BASE}  runPolicy: {{backoffLimit: -1, ttlSecondsAfterFinished: -2, activeDeadlineSeconds: 0}}\n"
            ),
            vec![
                "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -2: must be greater than or equal to 0",
                "spec.runPolicy.activeDeadlineSeconds: Invalid value: 0: must be greater than or equal to 1",
            ],
        ),
    ];
    for (name, yaml, want) in cases {
        assert_eq!(errors_of(&yaml), want, "{name}");
    }
}

#[test]
fn child_name_over_63_characters_counts_the_last_index() {
    let name = "a".repeat(53); // "<53>-worker-10" is 63 characters, "<53>-worker-100" 64
    assert_eq!(
        errors_of(&job_with(&name, &[tf_container_block("Worker", 11)])),
        Vec::<String>::new()
    );
    assert_eq!(
        errors_of(&job_with(&name, &[tf_container_block("Worker", 101)])),
        vec![format!(
            "metadata.name: Invalid value: \"{name}\": the child name \"{name}-worker-100\" would be 64 characters, must be no more than 63"
        )]
    );
}

#[test]
fn managed_by_accepted_values() {
    for by in [
        "kubeflow.org/training-operator",
        "kueue.x-k8s.io/multikueue",
    ] {
        assert_eq!(
            errors_of(&format!("{BASE}  runPolicy: {{managedBy: {by}}}\n")),
            Vec::<String>::new()
        );
    }
}

#[test]
fn every_problem_at_once_in_stable_order() {
    let yaml = job_with(
        "Bad_Name",
        &[
            tf_container_block("Chief", 3),
            tf_container_block("Foo", 1),
            tf_container_block("PS", -2).replace("image: tf", "image: ''"),
        ],
    );
    let want = vec![
        "metadata.name: Invalid value: \"Bad_Name\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, end with an alphanumeric character, and be at most 63 characters",
        "spec.tfReplicaSpecs[Foo]: Unsupported value: \"Foo\": supported values: \"Chief\", \"Master\", \"PS\", \"Worker\", \"Evaluator\" (any case)",
        "spec.tfReplicaSpecs[Chief].replicas: Invalid value: 3: must be less than or equal to 1",
        "spec.tfReplicaSpecs[PS].replicas: Invalid value: -2: must be greater than or equal to 0",
        "spec.tfReplicaSpecs[PS].template.spec.containers[0].image: Required value",
    ];
    assert_eq!(errors_of(&yaml), want);
    assert_eq!(errors_of(&yaml), want, "same input, same order");
}

#[test]
fn parse_names_the_wrong_field() {
    let cases = [
        (
            BASE.replace(
                "    Worker:\n",
                "    Worker:\n      restartPolicy: Sometimes\n",
            ),
            "spec.tfReplicaSpecs[Worker].restartPolicy",
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\", \"ExitCode\"",
        ),
        (
            BASE.replace("    Worker:\n", "    Worker:\n      replicas: two\n"),
            "spec.tfReplicaSpecs[Worker].replicas",
            "Invalid value: \"two\": must be of type integer",
        ),
        (
            format!("{BASE}  runPolicy: {{cleanPodPolicy: Some}}\n"),
            "spec.runPolicy.cleanPodPolicy",
            "Unsupported value: \"Some\"",
        ),
        (
            format!("{BASE}  successPolicy: AnyWorker\n"),
            "spec.successPolicy",
            "Unsupported value: \"AnyWorker\": supported values: \"\", \"AllWorkers\"",
        ),
        (
            "metadata: {name: x}\nspec: {}".to_string(),
            "spec.tfReplicaSpecs",
            "Required value",
        ),
        (
            format!("apiVersion: kubeflow.org/v1beta1\n{BASE}"),
            "apiVersion",
            "Unsupported value: \"kubeflow.org/v1beta1\"",
        ),
        (
            format!("kind: PyTorchJob\n{BASE}"),
            "kind",
            "Unsupported value: \"PyTorchJob\"",
        ),
    ];
    for (yaml, path, message_start) in cases {
        let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        let err = parse_tfjob(value).unwrap_err();
        assert_eq!(err.path, path, "{yaml}");
        assert!(err.message.starts_with(message_start), "{}", err.message);
    }
}

#[test]
fn parse_reads_early_v1_fields_and_ignores_unknown_ones() {
    let yaml = format!(
        "{BASE}  cleanPodPolicy: None\nstatus:\n  replicaStatuses:\n    Worker: {{running: 1}}\n"
    );
    let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    let job = parse_tfjob(value).unwrap();
    assert_eq!(job.spec.run_policy, None);
    assert_eq!(
        job.spec.clean_pod_policy,
        Some(crate::crd::CleanPodPolicy::None),
        "the early v1 place, honoured by defaulting"
    );
    assert_eq!(job.status.unwrap().replica_statuses.len(), 1);
}

#[test]
fn early_v1_limits_are_checked_where_they_are_written() {
    let yaml = format!("{BASE}  backoffLimit: -1\n  activeDeadlineSeconds: 0\n");
    let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    let errors = validate(&parse_tfjob(value).unwrap()).unwrap_err();
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            "spec.activeDeadlineSeconds: Invalid value: 0: must be greater than or equal to 1",
        ]
    );
}

#[test]
fn dns1035() {
    for (s, ok) in [
        ("a", true),
        ("a-1", true),
        ("a-", false),
        ("-a", false),
        ("1a", false),
        ("aB", false),
        ("a.b", false),
        ("", false),
    ] {
        assert_eq!(is_dns1035_label(s), ok, "{s}");
    }
    assert!(is_dns1035_label(&"a".repeat(63)));
    assert!(!is_dns1035_label(&"a".repeat(64)));
}
