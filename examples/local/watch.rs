//! The demo's view of its jobs: a line whenever a job's state or a pod's status changes, as
//! `kubectl get tfjobs,pods -w` would print it, until every job has finished; then each job's
//! outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use tfjob_operator::crd::{ConditionStatus, TFJob};

use crate::demo::JobOutcome;

/// Print a line whenever a job's state or a pod's status changes, like `kubectl get -w`,
/// until every job has finished; then each job's outcome.
pub async fn watch(
    client: &Client,
    jobs: &[(String, String)],
    out: &mut dyn Write,
) -> anyhow::Result<Vec<JobOutcome>> {
    let started = Instant::now();
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    // Each job's pods seen so far: one gone from the list was deleted (a PS by the
    // cleanPodPolicy, a pod the operator replaces), which a poll can see only afterwards.
    let mut seen: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut cleaned_up = false;
    writeln!(out, "{:<8} {:<40} {:<12} RESTARTS", "AGE", "NAME", "STATUS")?;
    loop {
        let mut finished = 0;
        for (ns, name) in jobs {
            let job = Api::<TFJob>::namespaced(client.clone(), ns)
                .get(name)
                .await?;
            let state = state(&job);
            if matches!(state.as_str(), "Succeeded" | "Failed") {
                finished += 1;
            }
            show(
                &mut shown,
                started,
                format!("tfjob/{name}"),
                format!("{state:<12} {}", restarts(&job)),
                out,
            )?;
            let lp =
                ListParams::default().labels(&format!("training.kubeflow.org/job-name={name}"));
            let pods = Api::<Pod>::namespaced(client.clone(), ns).list(&lp).await?;
            let listed: BTreeSet<String> = pods
                .items
                .iter()
                .map(|p| format!("pod/{}", p.name_any()))
                .collect();
            for pod in pods.items {
                show(
                    &mut shown,
                    started,
                    format!("pod/{}", pod.name_any()),
                    pod_line(&pod),
                    out,
                )?;
            }
            let known = seen.entry((ns.clone(), name.clone())).or_default();
            for gone in known.difference(&listed) {
                show(&mut shown, started, gone.clone(), "Deleted".into(), out)?;
            }
            known.extend(listed);
        }
        if finished == jobs.len() && !cleaned_up {
            // One more look, half a second on: the cleanup of finished jobs (a PS deleted).
            cleaned_up = true;
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        if finished == jobs.len() {
            let mut outcomes = Vec::new();
            for (ns, name) in jobs {
                let job = Api::<TFJob>::namespaced(client.clone(), ns)
                    .get(name)
                    .await?;
                let last = job.status.as_ref().and_then(|s| {
                    s.conditions
                        .iter()
                        .rev()
                        .find(|c| c.status == ConditionStatus::True)
                });
                let outcome = JobOutcome {
                    name: name.clone(),
                    state: state(&job),
                    reason: last.and_then(|c| c.reason.clone()).unwrap_or_default(),
                    message: last.and_then(|c| c.message.clone()).unwrap_or_default(),
                    restarts: restarts(&job),
                };
                writeln!(
                    out,
                    "tfjob/{name}: {} ({}): {} [restarts: {}]",
                    outcome.state, outcome.reason, outcome.message, outcome.restarts
                )?;
                outcomes.push(outcome);
            }
            return Ok(outcomes);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn restarts(job: &TFJob) -> i32 {
    job.status
        .iter()
        .flat_map(|s| s.replica_statuses.values())
        .filter_map(|r| r.restarts)
        .sum()
}

fn show(
    shown: &mut BTreeMap<String, String>,
    started: Instant,
    name: String,
    line: String,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let deleted = shown.get(&name).is_some_and(|l| l == "Deleted");
    if shown.get(&name) != Some(&line) && !(deleted && line == "Deleted") {
        let age = format!("{:.1}s", started.elapsed().as_secs_f64());
        writeln!(out, "{age:<8} {name:<40} {line}")?;
        shown.insert(name, line);
    }
    Ok(())
}

fn state(job: &TFJob) -> String {
    job.status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .rev()
                .find(|c| c.status == ConditionStatus::True)
        })
        .map(|c| format!("{:?}", c.type_))
        .unwrap_or_else(|| "Pending".into())
}

fn pod_line(pod: &Pod) -> String {
    let status = pod.status.clone().unwrap_or_default();
    let terminated = status.container_statuses.iter().flatten().find_map(|c| {
        c.state
            .as_ref()?
            .terminated
            .as_ref()
            .map(|t| t.reason.clone().unwrap_or_default())
    });
    let waiting = status.container_statuses.iter().flatten().find_map(|c| {
        c.state
            .as_ref()?
            .waiting
            .as_ref()
            .and_then(|w| w.reason.clone())
    });
    let restarts: i32 = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.restart_count)
        .sum();
    let phase = if pod.metadata.deletion_timestamp.is_some() {
        "Terminating".to_string()
    } else {
        waiting
            .or(terminated)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| status.phase.clone().unwrap_or_else(|| "Pending".into()))
    };
    format!("{phase:<12} {restarts}")
}
