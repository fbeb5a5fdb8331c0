//! R9: restart counts live in the status: they survive pod garbage collection and operator
//! restarts, and a count in progress continues across operator restarts.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use serde_json::json;
use tfjob_operator::crd::{ConditionType, ReplicaType};
use tokio::time::Instant;

use super::common::{self, is, restarts, spec, status_line};
use crate::support::faults::{Operator, WatchLog, cluster, seed, shared, writes_of};

const SUCCEED: &[(&str, &str)] = &[("run-seconds", "0.5"), ("exit-code", "0")];
const FAIL_137: &[(&str, &str)] = &[("run-seconds", "0.5"), ("exit-code", "137")];

/// Two finished jobs with restarts counted (one worker restarted twice in place by the kubelet,
/// one recreated once by the operator); every pod is then deleted from outside, and the
/// operator is restarted: no status changes, no pod comes back, and the new operator writes
/// nothing.
#[tokio::test]
async fn restart_counts_survive_pod_deletion_and_an_operator_restart_after_the_job_finished() {
    let _shared = shared().await;
    let c = cluster("counts-gc", seed("counts-gc")).await;
    if !c.simulated() {
        return eprintln!("skipped: scripts restarts (simulator only)");
    }
    let sim = c.sim();
    let first = c.operator(&[]).await;
    let mut inplace = spec("inplace", &[("Worker", 1, "OnFailure")], 0.5);
    common::annotate(&mut inplace, "Worker", "sim.tfjob.dev/fail-times", "2");
    common::annotate(&mut inplace, "Worker", "sim.tfjob.dev/exit-code", "1");
    common::run_policy(&mut inplace, "cleanPodPolicy", json!("None"));
    let mut recreated = spec(
        "recreated",
        &[("PS", 1, "Never"), ("Worker", 1, "ExitCode")],
        0.5,
    );
    common::annotate(&mut recreated, "PS", common::RUN, "3600");
    // By incarnation (each pod held until scripted): the recreated pod succeeds, however fast.
    c.script_pod_in_turn("recreated-worker-0", &[FAIL_137, SUCCEED]);
    let done = (async {
        c.create(inplace).await;
        c.create(recreated).await;
        common::jobs_within(&c, Duration::from_secs(20), |all| {
            all.len() == 2 && all.iter().all(common::finished)
        })
        .await
    })
    .await;
    let done = done.unwrap_or_else(|all| {
        panic!(
            "the jobs did not finish within 20 s: {}",
            common::summarize(&all, common::finished)
        )
    });
    let want = [("inplace", 2), ("recreated", 1)];
    for (name, n) in want {
        let job = done.iter().find(|j| common::name(j) == name).unwrap();
        assert!(
            is(job, ConditionType::Succeeded) && restarts(job, ReplicaType::Worker) == n,
            "{name} ended {} (want Succeeded with {n} restarts)",
            status_line(job)
        );
    }
    common::until_quiet(
        &c,
        first.agent(),
        Duration::from_secs(1),
        Duration::from_secs(20),
    )
    .await;
    let before: BTreeMap<String, serde_json::Value> = common::list_jobs(&c)
        .await
        .iter()
        .map(|j| (common::name(j).to_string(), json!(j.status)))
        .collect();

    let now = DeleteParams::default().grace_period(0);
    c.pods()
        .delete_collection(&now, &ListParams::default())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !c
        .pods()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the pods were not deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The first operator may tidy up after the pods' deletion (a finished replica's service
    // goes once its pod is gone, docs/behaviour.md §6.3): let it finish, so that what the next
    // one does is measured against a settled cluster.
    common::until_quiet(
        &c,
        first.agent(),
        Duration::from_secs(1),
        Duration::from_secs(20),
    )
    .await;
    first.stop_cleanly().await;
    let counted = sim.requests();
    let second = c.operator(&[]).await;
    second.until_ready().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after: BTreeMap<String, serde_json::Value> = common::list_jobs(&c)
        .await
        .iter()
        .map(|j| (common::name(j).to_string(), json!(j.status)))
        .collect();
    let left = c.pods().list(&ListParams::default()).await.unwrap().items;
    let wrote = writes_of(&sim.requests().since(&counted), second.agent());
    assert_eq!(
        after, before,
        "statuses changed after the pods went and the operator restarted"
    );
    assert!(
        left.is_empty(),
        "pods of finished jobs came back: {}",
        left.len()
    );
    assert_eq!(
        wrote.writes(),
        0,
        "the restarted operator wrote: {}",
        crate::support::faults::breakdown(&wrote)
    );
}

/// Two jobs whose worker fails three times before succeeding — one restarted in place by the
/// kubelet (OnFailure), one recreated by the operator (ExitCode 137) — while the operator is
/// replaced after each restart counted, alternately stopped (SIGTERM) and killed: each job ends
/// Succeeded with exactly 3 restarts, and the recreated worker had exactly 4 pods.
#[tokio::test]
async fn a_restart_count_in_progress_continues_across_operator_restarts_and_kills() {
    let _shared = shared().await;
    let c = cluster("counts-midrun", seed("counts-midrun")).await;
    if !c.simulated() {
        return eprintln!("skipped: scripts restarts (simulator only)");
    }
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let mut inplace = spec("inplace", &[("Worker", 1, "OnFailure")], 1.0);
    common::annotate(&mut inplace, "Worker", "sim.tfjob.dev/fail-times", "3");
    common::annotate(&mut inplace, "Worker", "sim.tfjob.dev/exit-code", "1");
    common::run_policy(&mut inplace, "cleanPodPolicy", json!("None"));
    let recreated = spec("recreated", &[("Worker", 1, "ExitCode")], 1.0);
    let fail = &[("run-seconds", "1"), ("exit-code", "137")][..];
    c.script_pod_in_turn("recreated-worker-0", &[fail, fail, fail, SUCCEED]);
    let mut replaced = Vec::new();
    let outcome = (async {
        let mut operator: Operator = c.operator(&[]).await;
        c.create(inplace).await;
        c.create(recreated).await;
        let mut seen = (0, 0);
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let jobs = common::list_jobs(&c).await;
            let count = |name: &str| {
                jobs.iter()
                    .find(|j| common::name(j) == name)
                    .map_or(0, |j| restarts(j, ReplicaType::Worker))
            };
            let now = (count("inplace"), count("recreated"));
            if jobs.len() == 2 && jobs.iter().all(common::finished) {
                break Ok(jobs);
            }
            if now != seen && replaced.len() < 6 {
                seen = now;
                let kill = replaced.len() % 2 == 1;
                replaced.push(format!(
                    "{} at restarts {now:?}",
                    if kill { "kill" } else { "stop" }
                ));
                if kill {
                    operator.kill().await;
                } else {
                    operator.stop_cleanly().await;
                }
                operator = c.operator(&[]).await;
            }
            if Instant::now() > deadline {
                break Err(jobs);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    eprintln!("operator replaced: {replaced:?}");
    let jobs = outcome.unwrap_or_else(|all| {
        panic!(
            "the jobs did not finish in 40 s: {}",
            common::summarize(&all, common::finished)
        )
    });
    let mut problems = Vec::new();
    for job in &jobs {
        if !(is(job, ConditionType::Succeeded) && restarts(job, ReplicaType::Worker) == 3) {
            problems.push(format!(
                "{} ended {} (want Succeeded with 3 restarts)",
                common::name(job),
                status_line(job)
            ));
        }
    }
    let recreated_pods = pods.uids_of("recreated-worker-0").len();
    if recreated_pods != 4 {
        problems.push(format!(
            "recreated-worker-0 had {recreated_pods} pods, want 4"
        ));
    }
    let inplace_pods = pods.uids_of("inplace-worker-0").len();
    if inplace_pods != 1 {
        problems.push(format!("inplace-worker-0 had {inplace_pods} pods, want 1"));
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
