//! R7: another client updates the TFJob all through its life (its status writes meet 409
//! Conflicts) → no status write is left unretried, no condition lost.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::json;
use tfjob_operator::crd::{ConditionStatus, ConditionType, ReplicaType, TFJob};
use tokio::time::Instant;

use super::common::{self, is, restarts, spec, status_line, status_regressions};
use crate::support::faults::{WatchLog, cluster, seed, shared};

/// Six jobs (two workers under `AllWorkers`; a PS cleaned up; a worker the kubelet restarts
/// once) while another client patches an annotation of each job every 20 ms from creation
/// until after the end, so the operator's status writes race with them. Every job ends
/// Succeeded with Created, Running (False) and Succeeded, the right counts and restarts; its
/// recorded history shows Running True before Succeeded and never regresses; the status stays
/// put once the patching stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tfjob_patched_every_20ms_by_another_client_loses_no_status_write() {
    let _shared = shared().await;
    let c = cluster("concurrent-updates", seed("concurrent-updates")).await;
    let jobs = WatchLog::<TFJob>::start(c.jobs(), "").await;
    let operator = c.operator(&[]).await;
    let mut specs = Vec::new();
    let mut want = Vec::new();
    for i in 0..6 {
        let name = format!("u{i}");
        let mut job = match i % 3 {
            0 => spec(&name, &[("Worker", 2, "Never")], 1.5),
            1 => {
                let mut job = spec(&name, &[("PS", 1, "Never"), ("Worker", 2, "Never")], 1.5);
                common::annotate(&mut job, "PS", common::RUN, "3600");
                job
            }
            _ => {
                let mut job = spec(&name, &[("Worker", 2, "OnFailure")], 0.8);
                common::annotate(&mut job, "Worker", "sim.tfjob.dev/fail-times", "1");
                common::annotate(&mut job, "Worker", "sim.tfjob.dev/exit-code", "1");
                job
            }
        };
        job["spec"]["successPolicy"] = json!("AllWorkers");
        // The kubelet (the simulator's, or kwok's stages on the real tier) restarts each
        // worker once in place.
        let restarts = if i % 3 == 2 { 2 } else { 0 };
        want.push((name, restarts));
        specs.push(job);
    }
    let patcher = c.test_jobs().await;
    let stop = AtomicBool::new(false);
    let patches = AtomicU64::new(0);
    let patching = async {
        let mut tick = 0u64;
        while !stop.load(Ordering::Relaxed) {
            tick += 1;
            let patch = Patch::Merge(
                json!({"metadata": {"annotations": {"faults.tfjob.dev/tick": tick.to_string()}}}),
            );
            let pp = PatchParams::default();
            let each = want
                .iter()
                .map(|(name, _)| patcher.patch(name, &pp, &patch));
            let done = futures::future::join_all(each).await;
            let ok = done.iter().filter(|r| r.is_ok()).count();
            patches.fetch_add(ok as u64, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let started = Instant::now();
    let running = async {
        common::create_all(&c, specs, 6).await;
        let result = common::jobs_within(&c, Duration::from_secs(30), |all| {
            all.len() == want.len() && all.iter().all(common::finished)
        })
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.store(true, Ordering::Relaxed);
        result
    };
    let (finished, ()) = tokio::join!(running, patching);
    eprintln!(
        "{} annotation patches in {:?}",
        patches.load(Ordering::Relaxed),
        started.elapsed()
    );
    let mut problems = Vec::new();
    let finished = match finished {
        Ok(all) => all,
        Err(all) => {
            problems.push(format!(
                "not every job finished within 30 s under the patching: {}",
                common::summarize(&all, common::finished)
            ));
            all
        }
    };
    // Anything still owed is written now that nobody races the operator.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let settled = common::list_jobs(&c).await;
    for (name, want_restarts) in &want {
        let Some(job) = settled.iter().find(|j| common::name(j) == name) else {
            problems.push(format!("{name}: missing"));
            continue;
        };
        let running_false = job.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ConditionType::Running && c.status == ConditionStatus::False)
        });
        let (active, succeeded, _) = common::counts(job, ReplicaType::Worker);
        let ok = is(job, ConditionType::Created)
            && is(job, ConditionType::Succeeded)
            && running_false
            && active == 0
            && succeeded == 2
            && restarts(job, ReplicaType::Worker) == *want_restarts;
        if !ok {
            problems.push(format!("{name} ended {}", status_line(job)));
        }
        let before = finished.iter().find(|j| common::name(j) == name);
        if before.is_some_and(|b| b.status != job.status) {
            problems.push(format!(
                "{name}: status still changed after the patching stopped: {}",
                status_line(job)
            ));
        }
        let history = jobs.versions(name);
        let ran = history.iter().any(|v| is(&v.obj, ConditionType::Running));
        if !ran {
            problems.push(format!(
                "{name}: Running was never True in any recorded version"
            ));
        }
        for r in status_regressions(&history) {
            problems.push(format!("{name}: {r}"));
        }
    }
    if c.simulated() {
        common::until_quiet(
            &c,
            operator.agent(),
            Duration::from_millis(500),
            Duration::from_secs(10),
        )
        .await;
    }
    assert!(
        problems.is_empty(),
        "{} problems: {problems:#?}",
        problems.len()
    );
}
