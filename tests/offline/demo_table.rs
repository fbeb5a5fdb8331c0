//! The demo (`cargo run --example local`) does what the README says: every command of the
//! README's table of demo outcomes ends as the table says; the kubectl hint is printed only
//! with `--keep`, and its kubeconfig is gone once the demo ends.

use clap::Parser;

use crate::demo;

/// A row of the README's outcome table: the demo's arguments, the state every job ends in,
/// the restarts counted over all jobs.
#[derive(Debug)]
struct Row {
    args: Vec<String>,
    ends: String,
    restarts: i32,
}

fn readme_rows() -> Vec<Row> {
    let readme = include_str!("../../README.md");
    let prefix = "| `cargo run --example local -- ";
    readme
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
    let args = demo::Args::try_parse_from(argv).expect("the README's arguments parse");
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
async fn every_outcome_the_readme_promises_is_what_the_demo_does() {
    // Run from the repository root, as the README's commands are.
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("cd");
    let rows = readme_rows();
    assert!(rows.len() >= 5, "the README's outcome table: {rows:?}");
    let runs = rows
        .iter()
        .map(|row| async move { (row, run(&row.args).await) });
    for (row, (outcomes, out)) in futures::future::join_all(runs).await {
        let states: Vec<&str> = outcomes.iter().map(|o| o.state.as_str()).collect();
        assert!(
            states.iter().all(|s| *s == row.ends),
            "{:?}: ends {states:?}, README says {}:\n{out}",
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
