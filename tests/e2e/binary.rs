//! The shipped binary: `tfjob-operator run` finds the cluster through KUBECONFIG, serves
//! /metrics, /healthz and /readyz, runs a job, and exits cleanly on SIGTERM.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::scrape::{free_port, get};
use crate::support::{TestCluster, job};
use tfjob_operator::crd::ConditionType;

fn until_http(port: u16, path: &str, want: impl Fn(u16, &str) -> bool) -> (u16, String) {
    let deadline = Instant::now() + crate::support::WAIT;
    loop {
        if let Some((code, body)) = get(port, path)
            && want(code, &body)
        {
            return (code, body);
        }
        assert!(Instant::now() < deadline, "timed out waiting for {path}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_runs_jobs_serves_probes_and_metrics_and_stops_on_sigterm() {
    let c = TestCluster::without_operator("binary").await;
    let start = c.mark();
    let dir = std::env::temp_dir().join(format!("tfjob-binary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The simulator's kubeconfig, or on the real tier the operator's ServiceAccount's.
    let kubeconfig = match &c.real {
        Some(real) => real.operator_kubeconfig.clone(),
        None => {
            let path = dir.join("kubeconfig");
            c.sim().write_kubeconfig(&path).unwrap();
            path
        }
    };
    let (metrics, health) = (free_port(), free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"))
        .args(["run", "--namespace", &c.namespace])
        .args(["--metrics-bind-address", &format!("127.0.0.1:{metrics}")])
        .args([
            "--health-probe-bind-address",
            &format!("127.0.0.1:{health}"),
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", &dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting tfjob-operator");

    assert_eq!(
        until_http(health, "/healthz", |code, _| code == 200).1,
        "ok"
    );
    until_http(health, "/readyz", |code, _| code == 200);
    assert_eq!(
        get(health, "/metrics").map(|r| r.0),
        Some(404),
        "metrics live on their own address"
    );

    c.create(job("bin", &[("Worker", 1, "Never")])).await;
    c.until_condition("bin", ConditionType::Succeeded).await;
    let (_, text) = until_http(metrics, "/metrics", |_, body| {
        body.contains("training_operator_jobs_successful_total")
    });
    let ns = &c.namespace;
    for name in ["created", "successful"] {
        let line = format!(
            r#"training_operator_jobs_{name}_total{{job_namespace="{ns}",framework="tensorflow"}} 1"#
        );
        assert!(text.contains(&line), "{line} not in:\n{text}");
    }
    assert!(text.contains("tfjob_operator_reconciles_total"), "{text}");
    if c.counts_requests() {
        // Counted by the harness under user agents starting with `tfjob-operator`.
        let requests = c.operator_requests_since(&start);
        assert!(
            requests.count(Some("create"), Some("pods")) == 1,
            "the binary names itself in User-Agent: {requests:?}"
        );
    }

    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "tfjob-operator did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "exit status {status}; stderr:\n{stderr}");
    assert!(stderr.contains("shutting down"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
