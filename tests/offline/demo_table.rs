//! The demo (`cargo run --example local`) does what `docs/demo.md` says: every command of its
//! table of demo outcomes ends as the table says; the kubectl hint is printed only with
//! `--keep`, and its kubeconfig is gone once the demo ends; its by-hand block works against a
//! kept cluster; bad input is refused as `render` refuses it, before anything
//! starts; a PS serves until its job ends.

use clap::Parser;

use crate::demo;

/// A row of the outcome table in `docs/demo.md`: the demo's arguments, the state every job ends in,
/// the restarts counted over all jobs.
#[derive(Debug)]
struct Row {
    args: Vec<String>,
    ends: String,
    restarts: i32,
}

/// The demo's page, where its outcome table and by-hand block live.
const DEMO_DOC: &str = include_str!("../../docs/demo.md");

fn demo_doc_rows() -> Vec<Row> {
    let prefix = "| `cargo run --example local -- ";
    DEMO_DOC
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|rest| {
            let (command, cells) = rest.split_once('`').expect("closing backtick");
            let cells: Vec<&str> = cells.split('|').map(str::trim).collect();
            Row {
                args: command.split_whitespace().map(String::from).collect(),
                ends: cells[1].trim_matches('`').to_string(),
                restarts: cells[2]
                    .parse()
                    .unwrap_or_else(|_| panic!("restarts in {rest}")),
            }
        })
        .collect()
}

async fn run(args: &[String]) -> (Vec<demo::JobOutcome>, String) {
    let argv = std::iter::once("local".to_string()).chain(args.iter().cloned());
    let args = demo::Args::try_parse_from(argv).expect("the arguments in docs/demo.md parse");
    let mut out = Vec::new();
    // The demo itself waits as long as its jobs run; a test must not.
    let outcomes = tokio::time::timeout(
        std::time::Duration::from_secs(180),
        demo::run(&args, &mut out, async {}),
    )
    .await
    .unwrap_or_else(|_| panic!("the demo did not end: {args:?}"))
    .expect("the demo runs");
    (outcomes, String::from_utf8(out).expect("utf-8"))
}

#[tokio::test]
async fn every_outcome_the_demo_doc_promises_is_what_the_demo_does() {
    // Run from the repository root, as the commands in docs/demo.md are.
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("cd");
    let rows = demo_doc_rows();
    assert!(
        rows.len() >= 5,
        "the outcome table of docs/demo.md: {rows:?}"
    );
    let runs = rows
        .iter()
        .map(|row| async move { (row, run(&row.args).await) });
    for (row, (outcomes, out)) in futures::future::join_all(runs).await {
        let states: Vec<&str> = outcomes.iter().map(|o| o.state.as_str()).collect();
        assert!(
            states.iter().all(|s| *s == row.ends),
            "{:?}: ends {states:?}, docs/demo.md says {}:\n{out}",
            row.args,
            row.ends
        );
        let restarts: i32 = outcomes.iter().map(|o| o.restarts).sum();
        assert_eq!(restarts, row.restarts, "{:?}:\n{out}", row.args);
        assert!(
            !out.contains("kubectl"),
            "no kubectl hint without --keep:\n{out}"
        );
    }
}

#[tokio::test]
async fn keep_prints_the_kubectl_hint_and_leaves_no_file_behind() {
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("cd");
    let args: Vec<String> = [
        "examples/tf_job_mnist.yaml",
        "--run-seconds",
        "0.2",
        "--keep",
    ]
    .map(String::from)
    .to_vec();
    let (outcomes, out) = run(&args).await;
    assert_eq!(outcomes[0].state, "Succeeded", "{out}");
    let hint = out
        .lines()
        .find(|l| l.trim_start().starts_with("kubectl --kubeconfig "))
        .unwrap_or_else(|| panic!("no kubectl hint:\n{out}"));
    let path = hint.split_whitespace().nth(2).expect("a path");
    assert!(
        !std::path::Path::new(path).exists(),
        "{path} left behind after the demo ended"
    );
}

#[tokio::test]
async fn every_older_seed_example_runs_in_the_demo_with_a_pointer_at_convert() {
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("cd");
    let seeds = "tests/fixtures/seeds";
    // Two runs: 013 and 017 share their names with 011 and 016.
    let runs = [
        vec![
            "011-v1alpha1-example-job.yaml",
            "012-v1alpha1-tf-smoke-gpu.yaml",
            "014-v1beta1-example-tfjob.yaml",
            "015-v1beta1-module6-ex1-gpu.yaml",
            "016-t9k-tensorflow-example.yaml",
            "008-mnist-get-output-legacy-fields.yaml",
        ],
        vec![
            "013-v1alpha1-example-job-get-output.yaml",
            "017-t9k-tensorflow-example-scheduler-tensorboard.yaml",
        ],
    ];
    for files in runs {
        let mut args: Vec<String> = files.iter().map(|f| format!("{seeds}/{f}")).collect();
        args.extend(["--run-seconds".to_string(), "0.2".to_string()]);
        let (outcomes, out) = run(&args).await;
        assert_eq!(outcomes.len(), files.len(), "{out}");
        assert!(outcomes.iter().all(|o| o.state == "Succeeded"), "{out}");
        for file in files.iter().filter(|f| !f.starts_with("008")) {
            assert!(
                out.contains(&format!("{seeds}/{file}: a "))
                    && out.contains(&format!(
                        "running it as `tfjob-operator convert {seeds}/{file}`"
                    )),
                "{file}: no pointer at convert in:\n{out}"
            );
        }
        if files.iter().any(|f| f.starts_with("008")) {
            assert!(
                out.contains("008-mnist-get-output-legacy-fields.yaml: an early kubeflow.org/v1 TFJob (run policy directly under spec): its run policy fields are honoured"),
                "{out}"
            );
        }
    }
}

/// Issue 20: the demo checks its input as `tfjob-operator render` does — a misspelled field
/// and a bad value are each reported with the file, the field path and the hint, in render's
/// words — and then starts nothing (no simulated cluster, no job); the demo binary prints the
/// lines without a backtrace and exits with status 2.
#[tokio::test]
async fn bad_input_is_reported_as_render_reports_it_and_nothing_starts() {
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("cd");
    let simple = std::fs::read_to_string("examples/simple.yaml").expect("examples/simple.yaml");
    assert!(simple.contains("restartPolicy: OnFailure"));
    let dir = std::env::temp_dir().join(format!("tfjob-demo-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let cases = [
        (
            "misspelled-field.yaml",
            simple.replace("restartPolicy: OnFailure", "restartPolcy: OnFailure"),
            r#"unknown field "spec.tfReplicaSpecs.Worker.restartPolcy" (did you mean "restartPolicy"?)"#,
        ),
        (
            "bad-value.yaml",
            simple.replace("restartPolicy: OnFailure", "restartPolicy: OnFailre"),
            r#"spec.tfReplicaSpecs[Worker].restartPolicy: Unsupported value: "OnFailre": supported values: "Always", "OnFailure", "Never", "ExitCode""#,
        ),
    ];
    for (file, text, want) in cases {
        let path = dir.join(file);
        std::fs::write(&path, &text).expect("writing the manifest");
        let path = path.display().to_string();
        let args = demo::Args::try_parse_from(["local", &path]).expect("arguments");
        let mut out = Vec::new();
        let err = demo::run(&args, &mut out, async {})
            .await
            .expect_err("the demo ran a bad manifest");
        let bad = err
            .downcast_ref::<demo::BadInput>()
            .unwrap_or_else(|| panic!("{file}: not reported as bad input: {err:#}"));
        assert_eq!(bad.0, [format!("{path}: {want}")], "{file}");
        // Word for word what render says about the same manifest.
        let rendered = tfjob_operator::render::render(&text, None).expect_err("render refuses it");
        let rendered: Vec<String> = rendered.iter().map(|p| format!("{path}: {p}")).collect();
        assert_eq!(bad.0, rendered, "{file}");
        // Nothing started: the first line the demo prints once its cluster is up never came.
        let out = String::from_utf8(out).expect("utf-8");
        assert!(out.is_empty(), "{file}: the demo went on:\n{out}");
        let (message, status) = demo::failure(&err);
        assert_eq!(status, 2, "{file}");
        assert!(
            message.starts_with(&format!("{path}: {want}\n")),
            "{message}"
        );
        assert!(message.contains("nothing was started"), "{message}");
        assert!(!message.to_lowercase().contains("backtrace"), "{message}");
    }
    std::fs::remove_dir_all(&dir).expect("removing the scratch directory");
}

/// A parameter server never exits by itself: in the demo it serves until the workers finish,
/// then the job's cleanPodPolicy (`Running`, the default) deletes it, and the demo ends.
#[tokio::test]
async fn a_parameter_server_serves_until_the_job_ends_and_is_then_deleted() {
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("cd");
    let args: Vec<String> = ["examples/tf_job_ps_worker.yaml", "--run-seconds", "0.5"]
        .map(String::from)
        .to_vec();
    let (outcomes, out) = run(&args).await;
    assert_eq!(outcomes[0].state, "Succeeded", "{out}");
    let ps: Vec<&str> = out.lines().filter(|l| l.contains("-ps-0 ")).collect();
    assert!(
        ps.iter().any(|l| l.trim_end().ends_with("Deleted")),
        "the PS was not deleted:\n{out}"
    );
    assert!(
        ps.iter().all(|l| !l.contains("Completed")),
        "the PS exited by itself:\n{out}"
    );
}

/// The "By hand" block of `docs/demo.md`, run as written against a kept demo cluster: its manifest
/// (through `kubectl create -f -`) and its two `kubectl patch` lines (through `sh`). The job
/// runs, is suspended (its pods deleted), resumed, and succeeds after each worker failed once
/// and was restarted in place.
#[tokio::test]
async fn the_demo_doc_by_hand_block_scripts_a_failure_and_suspends_and_resumes() {
    use kube::Api;
    use tfjob_operator::crd::{ConditionStatus, ConditionType, TFJob};

    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("cd");
    let block = DEMO_DOC
        .split("<!-- tests/offline/demo_table.rs runs this block's manifest")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|rest| rest.split("\n```").next())
        .expect("the by-hand block of docs/demo.md");
    let manifest = block
        .split("kubectl create -f - <<'EOF'\n")
        .nth(1)
        .and_then(|rest| rest.split("\nEOF\n").next())
        .expect("the block's manifest")
        .to_string();
    let patches: Vec<String> = block
        .lines()
        .filter(|l| l.starts_with("kubectl patch tfjob by-hand"))
        .map(String::from)
        .collect();
    assert_eq!(patches.len(), 2, "suspend and resume: {block}");

    // A free port, so the kept cluster's kubeconfig path is known in advance.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let kubeconfig = std::env::temp_dir().join(format!("tfjob-demo-{port}.kubeconfig"));
    let sh = move |line: String, stdin: Option<String>| {
        let kubeconfig = kubeconfig.clone();
        tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            let mut child = std::process::Command::new("sh")
                .args(["-c", &line])
                .env("KUBECONFIG", &kubeconfig)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("sh");
            if let Some(text) = stdin {
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(text.as_bytes())
                    .unwrap();
            }
            let out = child.wait_with_output().expect("sh ran");
            assert!(
                out.status.success(),
                "{line}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        })
    };
    let client = kube::Client::try_from(kube::Config::new(
        format!("http://127.0.0.1:{port}").parse().unwrap(),
    ))
    .expect("a client");
    let jobs: Api<TFJob> = Api::namespaced(client.clone(), "default");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client, "default");
    let until = |what: &'static str, check: fn(&TFJob) -> bool| {
        let jobs = jobs.clone();
        async move {
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(90);
            loop {
                if let Ok(job) = jobs.get("by-hand").await
                    && check(&job)
                {
                    return job;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "by-hand never {what}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    };
    fn is(job: &TFJob, t: ConditionType) -> bool {
        job.status
            .iter()
            .flat_map(|s| &s.conditions)
            .any(|c| c.type_ == t && c.status == ConditionStatus::True)
    }
    let by_hand = async move {
        sh("kubectl create -f -".into(), Some(manifest))
            .await
            .unwrap();
        until("Running", |j| is(j, ConditionType::Running)).await;
        sh(patches[0].clone(), None).await.unwrap();
        until("Suspended", |j| is(j, ConditionType::Suspended)).await;
        let lp = kube::api::ListParams::default().labels("training.kubeflow.org/job-name=by-hand");
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        while !pods.list(&lp).await.expect("pods").items.is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "pods left while suspended"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        sh(patches[1].clone(), None).await.unwrap();
        let done = until("Succeeded", |j| is(j, ConditionType::Succeeded)).await;
        let restarts: i32 = done
            .status
            .iter()
            .flat_map(|s| s.replica_statuses.values())
            .filter_map(|r| r.restarts)
            .sum();
        assert_eq!(restarts, 2, "each worker restarted once in place");
    };
    let args: Vec<String> = [
        "examples/tf_job_mnist.yaml",
        "--run-seconds",
        "0.2",
        "--keep",
        "--port",
        &port.to_string(),
    ]
    .map(String::from)
    .to_vec();
    let args = demo::Args::try_parse_from(std::iter::once("local".to_string()).chain(args))
        .expect("arguments");
    let mut out = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(180),
        demo::run(&args, &mut out, by_hand),
    )
    .await
    .expect("the by-hand block did not finish")
    .expect("the demo runs");
}
