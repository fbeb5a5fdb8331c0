//! R8: restartPolicy × exit code × backoffLimit, end to end, every row at once in one cluster.
//! Expectations from the behaviour contract (§6.2 pods that finish, §6.3 finished jobs, §6.4
//! backoffLimit), not from the code.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};
use tokio::time::Instant;

use super::common::{self, is, restarts, spec, status_line};
use crate::support::faults::{WatchLog, cluster, seed, shared};
use crate::support::reason_and_message;

const POLICIES: [&str; 4] = ["Never", "OnFailure", "Always", "ExitCode"];
const CODES: [i32; 4] = [1, 137, 139, 143];
const LIMITS: [Option<i32>; 3] = [None, Some(0), Some(2)];
/// Seconds each run of a worker's container lasts.
const RUN: &str = "1";

/// One row: the worker's container fails `failures` times with `code`, then exits 0.
#[derive(Clone, Debug)]
struct Row {
    policy: &'static str,
    code: i32,
    limit: Option<i32>,
    failures: i32,
}

/// What the contract says happens.
#[derive(Clone, Debug, PartialEq)]
enum End {
    Succeeded,
    /// A permanent failure of the worker (§6.2, §7.4).
    FailedReplica,
    /// The backoff limit was reached (§6.4).
    FailedBackoff,
    /// Never finishes (Always restarts even a clean exit); restarts keep growing.
    KeepsRunning,
}

#[derive(Clone, Debug)]
struct Expected {
    end: End,
    /// `replicaStatuses[Worker].restarts` (for KeepsRunning: at least).
    restarts: i32,
    /// Pods of the worker over the job's life (1 + recreations).
    incarnations: usize,
    /// Whether the worker's pod is still there at the end.
    pod_left: bool,
}

impl Row {
    fn name(&self) -> String {
        let limit = self.limit.map_or("n".to_string(), |l| l.to_string());
        format!("{}-{}-{limit}", self.policy.to_lowercase(), self.code)
    }

    /// §6.2: ExitCode retries 130, 137, 138, 143 and other codes ≥ 129 but 139; 1–127, 128 and
    /// 139 are permanent.
    fn retryable(&self) -> bool {
        self.code > 128 && self.code != 139
    }

    fn expected(&self) -> Expected {
        let limit = self.limit.unwrap_or(i32::MAX);
        let f = self.failures;
        let fail = |restarts: i32, incarnations: usize, pod_left: bool| Expected {
            end: End::FailedBackoff,
            restarts,
            incarnations,
            pod_left,
        };
        match self.policy {
            // A failed pod under Never is a permanent failure, whatever the code or limit.
            "Never" => Expected {
                end: End::FailedReplica,
                restarts: 0,
                incarnations: 1,
                pod_left: true,
            },
            "ExitCode" if !self.retryable() => Expected {
                end: End::FailedReplica,
                restarts: 0,
                incarnations: 1,
                pod_left: true,
            },
            // Retryable: the operator deletes and recreates the pod, each a restart, while the
            // limit allows; "backoffLimit: 2 → two restarts happen, the third failure fails
            // the job". The last failed pod is finished, so no cleanup deletes it.
            "ExitCode" if f <= limit => Expected {
                end: End::Succeeded,
                restarts: f,
                incarnations: f as usize + 1,
                pod_left: true,
            },
            "ExitCode" => fail(limit, limit as usize + 1, true),
            // The kubelet restarts in place (any non-zero exit); each restart counts; once a
            // restart went beyond the limit the operator stops the job and deletes the
            // unfinished pod.
            "OnFailure" if f <= limit => Expected {
                end: End::Succeeded,
                restarts: f,
                incarnations: 1,
                pod_left: true,
            },
            "OnFailure" => fail(limit + 1, 1, false),
            // Always restarts even after exit 0: the pod never succeeds.
            _ if self.limit.is_none() => Expected {
                end: End::KeepsRunning,
                restarts: f,
                incarnations: 1,
                pod_left: true,
            },
            _ => fail(limit + 1, 1, false),
        }
    }

    fn worker(&self) -> String {
        format!("{}-worker-0", self.name())
    }
}

fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    for policy in POLICIES {
        for code in CODES {
            for limit in LIMITS {
                // Two failures for some codes, three for others: with backoffLimit 2 both the
                // boundary (2 restarts, then success) and going beyond it are covered.
                let failures = if code == 1 || code == 137 { 2 } else { 3 };
                out.push(Row {
                    policy,
                    code,
                    limit,
                    failures,
                });
            }
        }
    }
    out
}

/// The problems of row `row` with its job `job` and pods watch `pods`.
fn check(
    row: &Row,
    job: &TFJob,
    pods: &WatchLog<Pod>,
    left: &BTreeSet<String>,
    ns: &str,
) -> Vec<String> {
    let want = row.expected();
    let name = row.name();
    let mut got = Vec::new();
    let failed = reason_and_message(job, ConditionType::Failed);
    // Kubeflow's words: ExitCode's permanent codes are judged where pods are examined.
    let replica = if row.policy == "ExitCode" {
        format!("job \"{name}\" is failing because \"Worker\" replica(s) failed.")
    } else {
        format!("TFJob {ns}/{name} has failed because 1 Worker replica(s) failed.")
    };
    let backoff =
        format!("Job {name} has failed because it has reached the specified backoff limit");
    let end_ok = match want.end {
        End::Succeeded => is(job, ConditionType::Succeeded) && !is(job, ConditionType::Failed),
        End::FailedReplica => {
            is(job, ConditionType::Failed)
                && !is(job, ConditionType::Succeeded)
                && failed == Some(("TFJobFailed".into(), replica))
        }
        End::FailedBackoff => {
            is(job, ConditionType::Failed)
                && !is(job, ConditionType::Succeeded)
                && failed == Some(("TFJobFailed".into(), backoff))
        }
        End::KeepsRunning => !common::finished(job),
    };
    if !end_ok {
        got.push(format!("ended {} {failed:?}", status_line(job)));
    }
    let n = restarts(job, ReplicaType::Worker);
    let restarts_ok = match want.end {
        End::KeepsRunning => n >= want.restarts,
        _ => n == want.restarts,
    };
    if !restarts_ok {
        got.push(format!("restarts {n}"));
    }
    let incarnations = pods.uids_of(&row.worker()).len();
    if incarnations != want.incarnations {
        got.push(format!("{incarnations} worker pods"));
    }
    if left.contains(&row.worker()) != want.pod_left {
        got.push(format!("worker pod left: {}", left.contains(&row.worker())));
    }
    if got.is_empty() {
        vec![]
    } else {
        vec![format!("{name}: want {want:?}, got {}", got.join("; "))]
    }
}

/// 48 jobs, one per row of Never/OnFailure/Always/ExitCode × exit code 1/137/139/143 ×
/// backoffLimit unset/0/2, each a single worker whose container fails 2 (codes 1, 137) or 3
/// (139, 143) times and then exits 0 (a recreated pod keeps the count: the test rescripts it).
/// Each ends as the contract says (§6.2–§6.4, table in `Row::expected`): Succeeded; Failed
/// for a failed replica (Never, ExitCode 1/139) or at the backoff limit, with Kubeflow's
/// reason and message; or, Always without a limit, still running with its restarts counted.
/// Restarts, recreated pods and the pods left are checked per row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_policy_exit_code_and_backoff_limit_table_end_to_end() {
    let _shared = shared().await;
    let c = cluster("restart-table", seed("restart-table")).await;
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let _operator = c.operator(&[]).await;
    let rows = rows();
    let mut specs = Vec::new();
    for row in &rows {
        let code = row.code.to_string();
        let failures = row.failures.to_string();
        // Runs long enough for the operator to see each failure before the next one, even on
        // a loaded machine: a kubelet restart it never saw could not be counted in time.
        let mut failing = vec![("run-seconds", RUN), ("exit-code", code.as_str())];
        if row.policy == "OnFailure" || row.policy == "Always" {
            failing.push(("fail-times", failures.as_str()));
        }
        let mut turns: Vec<&[(&str, &str)]> = vec![&failing];
        if row.policy == "ExitCode" && row.retryable() {
            // Each recreated pod fails again until `failures` pods have failed; the next runs.
            turns = vec![&failing[..]; row.failures as usize];
            turns.push(&[("run-seconds", RUN)]);
        }
        c.script_pod_in_turn(&row.worker(), &turns);
        let mut job = spec(&row.name(), &[("Worker", 1, row.policy)], 0.5);
        if let Some(limit) = row.limit {
            common::run_policy(&mut job, "backoffLimit", serde_json::json!(limit));
        }
        crate::support::script::hold_templates(&mut job);
        specs.push(job);
    }
    let started = Instant::now();
    let ends = |all: &[TFJob]| {
        rows.iter()
            .filter(|row| {
                let job = all.iter().find(|j| common::name(j) == row.name());
                !job.is_some_and(|j| row.expected().end == End::KeepsRunning || common::finished(j))
            })
            .count()
    };
    common::create_all(&c, specs, 8).await;
    let settled =
        common::jobs_progressing(&c, Duration::from_secs(90), Duration::from_secs(15), ends).await;
    // Cleanups of failed jobs land (the operator never goes quiet: the Always rows without a
    // limit restart forever).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    eprintln!("{} rows in {:?}", rows.len(), started.elapsed());
    let mut problems = Vec::new();
    if let Err(all) = &settled {
        let unfinished: Vec<String> = all
            .iter()
            .filter(|j| !common::finished(j))
            .map(|j| common::name(j).to_string())
            .collect();
        problems.push(format!(
            "not finished (no progress for 10 s): {unfinished:?}"
        ));
    }
    let jobs = common::list_jobs(&c).await;
    let lp = kube::api::ListParams::default();
    let left: BTreeSet<String> = c
        .pods()
        .list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name)
        .collect();
    for row in &rows {
        match jobs.iter().find(|j| common::name(j) == row.name()) {
            Some(job) => problems.extend(check(row, job, &pods, &left, &c.namespace)),
            None => problems.push(format!("{}: missing", row.name())),
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} rows wrong: {problems:#?}",
        problems.len(),
        rows.len()
    );
}
