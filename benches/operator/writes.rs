//! Benchmark 2: the operator's API requests for one job, from its creation until it settled
//! (Succeeded, cleanup done, no write for 1 s), by verb and resource, against the minimum
//! docs/behaviour.md allows. I/O.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::bail;
use tfjob_sim::RequestCounts;

use super::cluster::{Cluster, InProcess, LONG_RUN, job};

const NS: &str = "bench-writes";
/// How long the deciding pod runs; every other pod outlives the job, so cleanPodPolicy
/// `Running` (the default) has a known amount of work: every pod but the deciding one.
const DECIDER_RUN: f64 = 1.0;
/// The operator's reporting controller name in its events.
const OPERATOR: &str = tfjob_operator::operator::CONTROLLER_NAME;
const QUIET: Duration = Duration::from_secs(1);
const TIMEOUT: Duration = Duration::from_secs(60);

/// One job shape and what happened to it.
pub struct JobWrites {
    pub label: String,
    /// (verb, resource) → requests, over the job's whole life.
    pub measured: BTreeMap<(String, String), u64>,
    /// (verb, resource) → the fewest requests that produce the effects docs/behaviour.md asks for.
    pub minimum: BTreeMap<(String, String), u64>,
    /// Pods and services still stored once it settled.
    pub left: (usize, usize),
    /// The operator's events about the job, by reason.
    pub event_reasons: BTreeMap<String, u64>,
}

pub async fn measure() -> anyhow::Result<Vec<JobWrites>> {
    let cluster = Cluster::start().await?;
    cluster.namespace(NS).await?;
    let operator = InProcess::start(&cluster, &["--namespace", NS]).await?;
    cluster.until_quiet(QUIET, TIMEOUT).await?;
    let small = one_job(
        &cluster,
        "ps-worker",
        &[("PS", 1), ("Worker", 1)],
        "1 PS + 1 Worker",
    )
    .await?;
    let large = one_job(&cluster, "workers", &[("Worker", 100)], "100 Workers").await?;
    operator.stop().await;
    Ok(vec![small, large])
}

async fn one_job(
    cluster: &Cluster,
    name: &str,
    shape: &[(&str, i32)],
    label: &str,
) -> anyhow::Result<JobWrites> {
    let replicas: Vec<(&str, i32, f64)> = shape.iter().map(|(t, n)| (*t, *n, LONG_RUN)).collect();
    // Worker 0 decides success (no chief); it alone finishes.
    let decider = format!("{name}-worker-0");
    cluster
        .sim
        .script_pod(NS, &decider, [("run-seconds", DECIDER_RUN.to_string())]);
    let before = cluster.operator_requests();
    cluster.create_job(NS, job(name, &replicas)).await?;
    let start = Instant::now();
    cluster
        .until(name, start, Duration::from_millis(20), TIMEOUT, |c| {
            c.succeeded(NS, name)
        })
        .await?;
    cluster.until_quiet(QUIET, TIMEOUT).await?;
    let terminating = cluster
        .children("pods", NS, name)
        .iter()
        .any(|p| p["metadata"]["deletionTimestamp"].is_string());
    if terminating {
        bail!("{name}: pods still terminating after the operator went quiet");
    }
    let total: i32 = shape.iter().map(|(_, n)| n).sum();
    let measured = by_key(&cluster.operator_requests().since(&before));
    Ok(JobWrites {
        label: label.to_string(),
        measured,
        minimum: minimum(total as u64, total as u64 - 1),
        left: (
            cluster.child_count("pods", NS, name),
            cluster.child_count("services", NS, name),
        ),
        event_reasons: event_reasons(cluster, name),
    })
}

/// Events the operator recorded about job `name`, counted by reason.
fn event_reasons(cluster: &Cluster, name: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Some(rt) = cluster.sim.store().lookup("", "v1", "events") else {
        return out;
    };
    let (events, _) = cluster.sim.store().list(&rt, Some(NS), |e| {
        e["involvedObject"]["name"] == name && e["reportingComponent"] == OPERATOR
    });
    for e in events {
        let reason = e["reason"].as_str().unwrap_or_default().to_string();
        *out.entry(reason).or_default() += 1;
    }
    out
}

fn by_key(counts: &RequestCounts) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for (k, n) in &counts.0 {
        *out.entry((k.verb.clone(), k.resource.clone())).or_default() += n;
    }
    out
}

/// The fewest writes for a job of `replicas` pods of which `running_at_end` are still
/// running when it succeeds (all reads come from the watch caches, shared by every job):
/// - one create per pod and per service;
/// - three status writes, one per visible transition: Created, Running, Succeeded (the
///   replica counts ride along when the pods change together);
/// - cleanPodPolicy `Running`: one delete per pod still running at success, and its service;
/// - one event per occurrence (docs/behaviour.md §9): each create and delete, and `TFJobSucceeded`.
pub fn minimum(replicas: u64, running_at_end: u64) -> BTreeMap<(String, String), u64> {
    let rows = [
        ("create", "pods", replicas),
        ("create", "services", replicas),
        ("update", "tfjobs/status", 3),
        ("delete", "pods", running_at_end),
        ("delete", "services", running_at_end),
        ("create", "events", 2 * replicas + 2 * running_at_end + 1),
    ];
    rows.into_iter()
        .map(|(v, r, n)| ((v.to_string(), r.to_string()), n))
        .collect()
}
