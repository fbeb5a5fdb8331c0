//! The metrics of the shipped binary (docs/metrics.md), scraped while jobs run: every metric
//! documented is exported, under controller-runtime's and client-go's names where it takes
//! them, and each moves as the jobs do. Both tiers. `scenario` is the set of jobs, shared
//! with `monitoring` (a real Prometheus reading the dashboard's and alerts' expressions).

use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use tfjob_operator::crd::{ConditionType, TFJob};

use crate::support::scrape::{MetricsBinary, Scrape};
use crate::support::{TestCluster, annotate, eventually, job};

const SCOPE: &str = "tfjob-operator.dev/restart-scope";
const RUN: &str = "sim.tfjob.dev/run-seconds";

/// Jobs of every kind the metrics count, in the test's namespace and in a second one whose
/// Pod Security (`restricted`) refuses every pod the operator makes.
pub struct Scenario {
    /// The namespace that refuses pods.
    pub refusing: String,
    /// When the jobs began.
    pub started: f64,
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

impl Scenario {
    /// The second namespace, made before the operator starts (it watches both).
    pub async fn prepare(c: &TestCluster) -> Self {
        let refusing = format!("{}-refusing", c.namespace);
        let namespaces: Api<Namespace> = Api::all(c.client.clone());
        let _ = namespaces.delete(&refusing, &DeleteParams::default()).await;
        let ns = json!({"metadata": {"name": refusing,
            "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
        let ns = serde_json::from_value(ns).expect("a namespace");
        eventually("the refusing namespace", || async {
            namespaces.create(&PostParams::default(), &ns).await.ok()
        })
        .await;
        Self {
            refusing,
            started: now(),
        }
    }

    /// The operator's `run` flags: both namespaces, leader election, `concurrency` turns.
    pub fn flags(&self, c: &TestCluster, concurrency: &str) -> Vec<String> {
        let mut flags: Vec<String> = ["--namespace", &c.namespace, "--namespace", &self.refusing]
            .map(String::from)
            .into();
        flags.extend(["--concurrency".into(), concurrency.into()]);
        flags.extend(["--max-error-backoff".into(), "1".into()]);
        flags.extend(c.leader_flags());
        flags
    }

    /// A job that keeps running (`held`), then jobs that succeed (and are deleted on their
    /// TTL), fail, restart a replica, restart whole, and one whose pods are refused; returns
    /// once each has got where it was sent.
    pub async fn run(&self, c: &TestCluster) {
        let mut held = job("held", &[("Worker", 1, "Never")]);
        annotate(&mut held, "Worker", RUN, "3600");
        c.create(held).await;
        c.until_condition("held", ConditionType::Running).await;
        let mut ok = job("ok", &[("Worker", 1, "Never")]);
        ok["spec"]["runPolicy"] = json!({"ttlSecondsAfterFinished": 1});
        c.script_pod("bad-worker-0", &[("run-seconds", "1"), ("exit-code", "1")]);
        let killed: &[(&str, &str)] = &[("run-seconds", "1"), ("exit-code", "137")];
        let then_ok: &[(&str, &str)] = &[("run-seconds", "1")];
        c.script_pod_in_turn("retry-worker-0", &[killed, then_ok]);
        c.script_pod_in_turn("whole-worker-0", &[killed, then_ok]);
        let mut whole = job("whole", &[("Worker", 1, "ExitCode")]);
        whole["metadata"]["annotations"] = json!({SCOPE: "Job"});
        for spec in [
            ok,
            job("bad", &[("Worker", 1, "Never")]),
            job("retry", &[("Worker", 1, "ExitCode")]),
            whole,
        ] {
            c.create(spec).await;
        }
        let refused: Api<TFJob> = Api::namespaced(c.client.clone(), &self.refusing);
        let spec: TFJob =
            serde_json::from_value(job("refused", &[("Worker", 1, "Never")])).expect("a TFJob");
        refused
            .create(&PostParams::default(), &spec)
            .await
            .expect("creating the refused job");
        for (name, done) in [
            ("bad", ConditionType::Failed),
            ("retry", ConditionType::Succeeded),
            ("whole", ConditionType::Succeeded),
        ] {
            c.until_condition(name, done).await;
        }
        c.until_gone(&c.jobs(), "ok", "deletion on its TTL").await;
        eventually("the refusal recorded", || async {
            let job = refused.get("refused").await.ok()?;
            crate::support::has_condition(&job, ConditionType::ReplicaFailure).then_some(())
        })
        .await;
    }

    pub async fn clean_up(&self, c: &TestCluster) {
        let namespaces: Api<Namespace> = Api::all(c.client.clone());
        let _ = namespaces
            .delete(&self.refusing, &DeleteParams::default())
            .await;
    }
}

/// The metric names docs/metrics.md lists (its table rows' first column).
pub fn documented_names() -> Vec<String> {
    let doc = include_str!("../../docs/metrics.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|name| !name.contains(' '))
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn the_binary_exports_the_documented_metrics_and_they_move_with_the_jobs() {
    let c = TestCluster::without_operator("metrics").await;
    let scenario = Scenario::prepare(&c).await;
    let flags = scenario.flags(&c, "3");
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let operator = MetricsBinary::start(&c, "metrics", &flags);
    let (_, lease) = c.lease();
    let ns = c.namespace.as_str();
    let first = operator
        .until("the Lease", |s| {
            s.value("leader_election_master_status", &[("name", &lease)]) == Some(1.0)
        })
        .await;
    assert_started(&first, scenario.started);

    scenario.run(&c).await;
    let end = operator
        .until("the jobs' states", |s| {
            let jobs = |state| {
                s.value(
                    "tfjob_operator_jobs",
                    &[("job_namespace", ns), ("state", state)],
                )
            };
            jobs("Running") == Some(1.0)
                && jobs("Succeeded") == Some(2.0)
                && jobs("Failed") == Some(1.0)
        })
        .await;
    let kubeflow =
        |name: &str| end.must(name, &[("job_namespace", ns), ("framework", "tensorflow")]);
    assert_eq!(kubeflow("training_operator_jobs_created_total"), 5.0);
    assert_eq!(kubeflow("training_operator_jobs_successful_total"), 3.0);
    assert_eq!(kubeflow("training_operator_jobs_failed_total"), 1.0);
    assert_eq!(kubeflow("training_operator_jobs_deleted_total"), 1.0);
    assert!(kubeflow("training_operator_jobs_restarted_total") >= 1.0);
    let mine = |name: &str| end.must(name, &[("job_namespace", ns)]);
    assert_eq!(
        mine("tfjob_operator_job_restarts_total"),
        1.0,
        "one whole-job restart"
    );
    let running = mine("tfjob_operator_job_time_to_running_seconds_count");
    assert!(
        (1.0..=5.0).contains(&running),
        "{running} jobs first Running"
    );
    let refusing = [("job_namespace", scenario.refusing.as_str())];
    assert_eq!(
        end.value("tfjob_operator_jobs", &[refusing[0], ("state", "Created")]),
        Some(1.0)
    );
    assert!(
        end.must(
            "tfjob_operator_jobs_longest_in_state_seconds",
            &[refusing[0], ("state", "ReplicaFailure")]
        ) > 0.0
    );
    assert!(
        end.must(
            "tfjob_operator_jobs_longest_in_state_seconds",
            &[("job_namespace", ns), ("state", "Running")]
        ) > 0.0
    );

    let controller = [("controller", "tfjob-controller")];
    let result = |r| {
        end.must(
            "controller_runtime_reconcile_total",
            &[controller[0], ("result", r)],
        )
    };
    assert!(
        result("success") >= 10.0 && result("error") >= 1.0,
        "{}",
        end.text
    );
    assert!(end.must("controller_runtime_reconcile_errors_total", &controller) >= 1.0);
    assert!(
        end.must(
            "tfjob_operator_reconcile_errors_total",
            &[("error", "create_pod")]
        ) >= 1.0
    );
    let passes = end.must(
        "controller_runtime_reconcile_time_seconds_count",
        &controller,
    );
    assert_eq!(
        passes,
        result("success") + result("error") + result("requeue_after") + result("requeue")
    );
    let queue = [
        ("name", "tfjob-controller"),
        ("controller", "tfjob-controller"),
    ];
    assert!(end.must("workqueue_adds_total", &queue) >= 6.0);
    assert!(
        end.must("workqueue_retries_total", &queue) >= 1.0,
        "the refused pass is retried"
    );
    // Every pass that got a turn waited (observed at its turn) and worked (at its end); one
    // may be working as the scrape is taken.
    let waited = end.must("workqueue_queue_duration_seconds_count", &queue);
    let worked = end.must("workqueue_work_duration_seconds_count", &queue);
    assert!(
        worked >= 10.0 && worked <= passes + 1.0,
        "{worked} passes worked of {passes}"
    );
    assert!(
        waited >= worked && waited <= worked + 6.0,
        "{waited} waited, {worked} worked"
    );
    assert_eq!(
        end.must("controller_runtime_max_concurrent_reconciles", &controller),
        6.0,
        "3 turns in each of 2 namespaces"
    );

    let rest = |code: &str, method: &str| {
        end.value(
            "rest_client_requests_total",
            &[("code", code), ("method", method)],
        )
    };
    assert!(
        rest("201", "POST").unwrap_or(0.0) >= 5.0,
        "pods and services created"
    );
    assert!(rest("403", "POST").unwrap_or(0.0) >= 1.0, "the refused pod");
    assert!(
        rest("200", "GET").unwrap_or(0.0) >= 3.0,
        "lists and watches"
    );
    for verb in ["GET", "POST", "PUT"] {
        assert!(
            end.must(
                "rest_client_request_duration_seconds_count",
                &[("verb", verb)]
            ) >= 1.0,
            "{verb}"
        );
    }
    assert!(
        end.must("tfjob_operator_watch_lists_total", &[("resource", "pods")]) >= 2.0,
        "a list per namespace"
    );
    assert!(end.must("process_cpu_seconds_total", &[]) > 0.0);

    // At rest the queue drains and the workers go idle (the refused job's retries come and go).
    operator
        .until("an idle queue", |s| {
            s.value("workqueue_depth", &queue) == Some(0.0)
                && s.value("controller_runtime_active_workers", &controller) == Some(0.0)
        })
        .await;
    let exported: std::collections::BTreeSet<&str> = end
        .samples
        .iter()
        .map(|(name, _, _)| name.as_str())
        .collect();
    // A histogram's samples are its `_bucket`, `_sum` and `_count`.
    let missing: Vec<String> = documented_names()
        .into_iter()
        .filter(|name| !exported.contains(name.as_str()))
        .filter(|name| !exported.contains(format!("{name}_count").as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "documented but not exported: {missing:?}\n{}",
        end.text
    );
    scenario.clean_up(&c).await;
}

/// What a scrape says before any job: who built the binary, the process, and controller
/// series present at zero as controller-runtime starts them.
fn assert_started(s: &Scrape, started: f64) {
    let build = s.must(
        "tfjob_operator_build_info",
        &[("version", env!("CARGO_PKG_VERSION"))],
    );
    assert_eq!(build, 1.0);
    let start = s.must("process_start_time_seconds", &[]);
    assert!(
        start > started - 60.0 && start < now() + 1.0,
        "started at {start}"
    );
    assert!(s.must("process_resident_memory_bytes", &[]) > 1e6);
    assert!(s.must("process_virtual_memory_bytes", &[]) > 1e6);
    let fds = s.must("process_open_fds", &[]);
    assert!(fds >= 3.0 && s.value("process_max_fds", &[]).is_none_or(|max| max >= fds));
    for result in ["success", "error", "requeue", "requeue_after"] {
        let have = [("controller", "tfjob-controller"), ("result", result)];
        assert!(
            s.value("controller_runtime_reconcile_total", &have)
                .is_some(),
            "{result}"
        );
    }
    assert!(s.must("rest_client_requests_total", &[("method", "GET")]) >= 1.0);
}
