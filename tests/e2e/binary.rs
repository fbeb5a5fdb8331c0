//! The shipped binary: `tfjob-operator run` finds the cluster through KUBECONFIG, serves
//! /metrics, /healthz and /readyz, runs a job, and exits cleanly on SIGTERM: with jobs, idle,
//! and before it could list TFJobs at all (no CRD, or the listing refused).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::scrape::{free_port, get};
use crate::support::{TestCluster, job, sim_options};
use tfjob_operator::crd::ConditionType;
use tfjob_sim::{FaultRule, Sim, SimHandle};

/// How soon an operator with nothing in flight must exit after SIGTERM (it takes ~0.1 s; the
/// kubelet's grace period is 30 s).
const IDLE_STOP: Duration = Duration::from_secs(5);

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

/// `tfjob-operator run` on its own ports, with `kubeconfig` and `flags`; stderr kept.
struct Binary {
    child: Child,
    metrics: u16,
    health: u16,
    dir: PathBuf,
    test: String,
}

impl Binary {
    fn spawn(
        test: &str,
        kubeconfig: Option<&Path>,
        sim: Option<&SimHandle>,
        flags: &[&str],
    ) -> Self {
        let dir = std::env::temp_dir().join(format!("tfjob-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = match (kubeconfig, sim) {
            (Some(path), _) => path.to_path_buf(),
            (None, Some(sim)) => {
                let path = dir.join("kubeconfig");
                sim.write_kubeconfig(&path).unwrap();
                path
            }
            (None, None) => panic!("{test}: no kubeconfig and no simulator"),
        };
        let (metrics, health) = (free_port(), free_port());
        let child = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"))
            .arg("run")
            .args(flags)
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
        Self {
            child,
            metrics,
            health,
            dir,
            test: test.to_string(),
        }
    }

    /// The binary of a test cluster, watching its namespace (on the real tier with the
    /// operator's ServiceAccount's credentials).
    fn on(c: &TestCluster, test: &str) -> Self {
        let kubeconfig = c
            .real
            .as_ref()
            .map(|real| real.operator_kubeconfig.as_path());
        Self::spawn(
            test,
            kubeconfig,
            c.sim.as_ref(),
            &["--namespace", &c.namespace],
        )
    }

    /// SIGTERM; waits up to `within` for the exit (then kills it and fails). Returns the
    /// status, how long the exit took and what the binary wrote to stderr.
    fn terminate(mut self, within: Duration) -> (ExitStatus, Duration, String) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "{}: tfjob-operator exited before SIGTERM",
            self.test
        );
        let kill = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let sent = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if sent.elapsed() > within {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.stderr();
                panic!(
                    "{}: tfjob-operator did not stop within {within:?} of SIGTERM; stderr:\n{stderr}",
                    self.test
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = sent.elapsed();
        let stderr = self.stderr();
        let _ = std::fs::remove_dir_all(&self.dir);
        (status, took, stderr)
    }

    fn stderr(&mut self) -> String {
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_string(&mut stderr).unwrap();
        }
        stderr
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_runs_jobs_serves_probes_and_metrics_and_stops_on_sigterm() {
    let c = TestCluster::without_operator("binary").await;
    let start = c.mark();
    let binary = Binary::on(&c, "binary");
    let (metrics, health) = (binary.metrics, binary.health);

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

    let (status, _, stderr) = binary.terminate(Duration::from_secs(20));
    assert!(status.success(), "exit status {status}; stderr:\n{stderr}");
    assert!(stderr.contains("shutting down"), "{stderr}");
}

/// An operator with no job at all stops at once, as a rollout expects.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_binary_stops_on_sigterm_within_seconds() {
    let c = TestCluster::without_operator("binary-idle").await;
    let binary = Binary::on(&c, "binary-idle");
    until_http(binary.health, "/readyz", |code, _| code == 200);
    let (status, took, stderr) = binary.terminate(IDLE_STOP);
    assert!(status.success(), "exit status {status}; stderr:\n{stderr}");
    assert!(stderr.contains("shutting down"), "{stderr}");
    eprintln!("idle binary stopped {took:?} after SIGTERM");
}

/// SIGTERM before the TFJob watch could list once: the standalone simulator before
/// `kubectl apply -f crds/` (404), and a cluster that refuses the operator the list (403, as
/// RBAC would). kube's controller waited for that first list for ever (`runtime::first_list`).
/// Simulator only: the real tier's CRD and RBAC are shared by every test.
#[tokio::test(flavor = "multi_thread")]
async fn a_binary_that_cannot_list_tfjobs_stops_on_sigterm_within_seconds() {
    if crate::support::RealTier::from_env().is_some() {
        return eprintln!(
            "a_binary_that_cannot_list_tfjobs_stops_on_sigterm_within_seconds: skipped: \
             needs a cluster without the TFJob CRD (simulator only)"
        );
    }
    let refusing = TestCluster::without_operator("binary-unlisted").await;
    refusing
        .sim()
        .set_fault(FaultRule::error(None, Some("tfjobs"), 403, 1.0));
    let without_crd = Sim::start(sim_options())
        .await
        .expect("starting the simulator");
    let cases = [
        ("binary-no-crd", &without_crd),
        ("binary-listing-refused", refusing.sim()),
    ];
    for (case, sim) in cases {
        let binary = Binary::spawn(case, None, Some(sim), &[]);
        until_http(binary.health, "/healthz", |code, _| code == 200);
        // Refused twice: the TFJob watch is retrying, the controller's store still empty.
        let deadline = Instant::now() + crate::support::WAIT;
        while sim.requests().count(None, Some("tfjobs")) < 2 {
            assert!(
                Instant::now() < deadline,
                "{case}: the operator never asked for TFJobs"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (status, took, stderr) = binary.terminate(IDLE_STOP);
        assert!(
            status.success(),
            "{case}: exit status {status}; stderr:\n{stderr}"
        );
        assert!(stderr.contains("shutting down"), "{case}: {stderr}");
        eprintln!("{case}: stopped {took:?} after SIGTERM");
    }
}
