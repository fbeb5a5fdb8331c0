//! R4: watches dropped, history compacted (410 on re-watch) and API server restarts, over and
//! over during the jobs' lives → every job finishes, no transition is lost, and once the
//! disruptions stop the operator goes quiet (no hot loop).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tfjob_operator::crd::{ConditionStatus, ConditionType, ReplicaType, TFJob};
use tokio::time::Instant;

use super::common::{self, is, restarts, spec, status_line};
use crate::support::faults::{
    Rescript, Rng, WatchLog, breakdown, cluster, requests_of, seed, shared, while_rescripting,
};

/// Requests an idle operator may make in [`IDLE`]: its three watches (TFJobs, pods, services)
/// are long-lived requests that the server ends only after minutes, bookmarks flow inside
/// them, and no job has a timer; so it needs none. The bound leaves room for one re-watch of
/// each stream and a few stray requests; a relist or requeue loop makes hundreds.
const IDLE_REQUESTS: u64 = 10;
const IDLE: Duration = Duration::from_secs(5);

/// Whether condition `t` is present (any status).
fn present(job: &TFJob, t: ConditionType) -> bool {
    job.status
        .as_ref()
        .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == t))
}

/// Eight jobs with transitions spread over several seconds (runs of 1–4 s, a PS cleaned up, a
/// kubelet restart, a recreated pod) while, every 0.3–0.9 s, the simulator drops every watch,
/// compacts its history and drops them (re-watches get 410 and relist), or restarts (all
/// watches end). Every job succeeds with Created, Running (now False) and Succeeded in its
/// conditions and the expected restarts; the jobs whose pod was recreated recorded
/// their TFJobRestarting event; and afterwards the operator makes at most 10 requests in 5 idle seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_watches_compacted_history_and_api_restarts_lose_no_transition_and_leave_no_hot_loop()
{
    let _shared = shared().await;
    let seed = seed("watch-loss");
    let c = cluster("watch-loss", seed).await;
    if !c.simulated() {
        return eprintln!("skipped: breaks the simulator's watches (simulator only)");
    }
    let sim = c.sim();
    let mut rng = Rng::new(seed);
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let operator = c.operator(&[]).await;
    let mut specs = Vec::new();
    let mut restarted = Vec::new();
    let mut recreated = Vec::new();
    let mut rules = Vec::new();
    for i in 0..8 {
        let name = format!("w{i}");
        let run = 1.0 + f64::from(i) * 0.4;
        let mut job = match i % 4 {
            0 => spec(&name, &[("Worker", 2, "Never")], run),
            1 => {
                let mut job = spec(&name, &[("PS", 1, "Never"), ("Worker", 1, "Never")], run);
                common::annotate(&mut job, "PS", common::RUN, "3600");
                job
            }
            2 => {
                let mut job = spec(&name, &[("Worker", 1, "OnFailure")], run / 2.0);
                common::annotate(&mut job, "Worker", "sim.tfjob.dev/fail-times", "1");
                common::annotate(&mut job, "Worker", "sim.tfjob.dev/exit-code", "1");
                restarted.push(name.clone());
                job
            }
            _ => {
                let pod = format!("{name}-worker-0");
                let half = format!("{}", run / 2.0);
                sim.script_pod(
                    &c.namespace,
                    &pod,
                    [("run-seconds", half.as_str()), ("exit-code", "137")],
                );
                // The recreated pod runs 3 s: long enough to be seen Running between the
                // disruptions, so Running must come back after Restarting.
                rules.push(Rescript {
                    pod,
                    after_failures: 1,
                    keys: vec![("run-seconds".into(), "3".into())],
                });
                restarted.push(name.clone());
                recreated.push(name.clone());
                spec(&name, &[("Worker", 1, "ExitCode")], run)
            }
        };
        common::run_policy(&mut job, "cleanPodPolicy", json!("Running"));
        specs.push(job);
    }
    let started = Instant::now();
    let disruptions = while_rescripting(sim, &c.namespace, &pods, rules, async {
        common::create_all(&c, specs, 8).await;
        let mut done = 0;
        let mut disruptions = Vec::new();
        while started.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(300 + rng.below(600))).await;
            match rng.below(3) {
                0 => {
                    sim.drop_watches();
                    disruptions.push("drop");
                }
                1 => {
                    sim.compact_history();
                    sim.drop_watches();
                    disruptions.push("compact+drop");
                }
                _ => {
                    sim.restart();
                    disruptions.push("restart");
                }
            }
            let jobs = common::list_jobs(&c).await;
            if jobs.len() == 8 && jobs.iter().all(common::finished) {
                // One more round after the last transition, then stop.
                done += 1;
                if done == 2 {
                    break;
                }
            }
        }
        disruptions
    })
    .await;
    eprintln!(
        "{} disruptions in {:?}: {disruptions:?}",
        disruptions.len(),
        started.elapsed()
    );
    let jobs = common::until_jobs(
        &c,
        "every job finished after the disruptions stopped",
        Duration::from_secs(20),
        |jobs| jobs.len() == 8 && jobs.iter().all(common::finished),
        |jobs| common::summarize(jobs, common::finished),
    )
    .await;
    let mut problems = Vec::new();
    for job in &jobs {
        let name = common::name(job);
        let want_restarts = i32::from(restarted.iter().any(|r| r == name));
        let running_false = job.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ConditionType::Running && c.status == ConditionStatus::False)
        });
        let ok = is(job, ConditionType::Created)
            && is(job, ConditionType::Succeeded)
            && running_false
            && !present(job, ConditionType::Failed)
            && restarts(job, ReplicaType::Worker) == want_restarts;
        if !ok {
            problems.push(format!("{name} ended {}", status_line(job)));
        }
    }
    common::until_quiet(
        &c,
        operator.agent(),
        Duration::from_secs(1),
        Duration::from_secs(20),
    )
    .await;
    // (after the operator went quiet: its events are published behind its passes)
    for name in &recreated {
        let events = c.events_of(name).await;
        if !events.iter().any(|(r, _)| r == "TFJobRestarting") {
            problems.push(format!("{name}: no TFJobRestarting event: {events:?}"));
        }
    }
    let before = sim.requests();
    tokio::time::sleep(IDLE).await;
    let idle = requests_of(&sim.requests().since(&before), operator.agent());
    let n: u64 = idle.0.values().sum();
    if n > IDLE_REQUESTS {
        problems.push(format!(
            "{n} requests in {IDLE:?} of idleness (at most {IDLE_REQUESTS}): {}",
            breakdown(&idle)
        ));
    }
    assert!(
        problems.is_empty(),
        "{} problems: {problems:#?}",
        problems.len()
    );
}
