//! R3: watch events delayed and reordered between kinds (pods, services and TFJobs each
//! arrive late by different random amounts) → no wrong create or delete, no status regression.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::json;
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};
use tokio::time::Instant;

use super::common::{self, is, restarts, spec, status_line, status_regressions};
use crate::support::faults::{
    Rescript, Rng, WatchLog, cluster, phase, seed, shared, while_rescripting,
};

/// The kinds of job in the mix.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Two workers, nothing cleaned up.
    Plain,
    /// A PS (runs until cleanup) and two workers, cleanPodPolicy Running: the PS is deleted.
    WithPs,
    /// One worker under OnFailure that fails once: restarted in place by the kubelet.
    InPlace,
    /// One worker under ExitCode whose first pod exits 137: deleted and recreated.
    Recreated,
    /// Two workers, cleanPodPolicy All: everything deleted after success.
    CleanAll,
}

struct Planned {
    name: String,
    kind: Kind,
}

impl Planned {
    fn spec(&self, rng: &mut Rng) -> serde_json::Value {
        let run = rng.range_f64(0.3, 1.2);
        let name = &self.name;
        match self.kind {
            Kind::Plain => {
                let mut job = spec(name, &[("Worker", 2, "Never")], run);
                common::run_policy(&mut job, "cleanPodPolicy", json!("None"));
                job
            }
            Kind::WithPs => {
                let mut job = spec(name, &[("PS", 1, "Never"), ("Worker", 2, "Never")], run);
                common::annotate(&mut job, "PS", common::RUN, "3600");
                common::run_policy(&mut job, "cleanPodPolicy", json!("Running"));
                job
            }
            Kind::InPlace => {
                let mut job = spec(name, &[("Worker", 1, "OnFailure")], run);
                common::annotate(&mut job, "Worker", "sim.tfjob.dev/fail-times", "1");
                common::annotate(&mut job, "Worker", "sim.tfjob.dev/exit-code", "1");
                common::run_policy(&mut job, "cleanPodPolicy", json!("None"));
                job
            }
            Kind::Recreated => {
                let mut job = spec(name, &[("Worker", 1, "ExitCode")], run);
                common::run_policy(&mut job, "cleanPodPolicy", json!("None"));
                job
            }
            Kind::CleanAll => {
                let mut job = spec(name, &[("Worker", 2, "Never")], run);
                common::run_policy(&mut job, "cleanPodPolicy", json!("All"));
                job
            }
        }
    }
    fn pods(&self) -> Vec<String> {
        let n = &self.name;
        match self.kind {
            Kind::Plain | Kind::CleanAll => vec![format!("{n}-worker-0"), format!("{n}-worker-1")],
            Kind::WithPs => vec![
                format!("{n}-ps-0"),
                format!("{n}-worker-0"),
                format!("{n}-worker-1"),
            ],
            Kind::InPlace | Kind::Recreated => vec![format!("{n}-worker-0")],
        }
    }
    fn restarts(&self) -> i32 {
        match self.kind {
            Kind::InPlace | Kind::Recreated => 1,
            _ => 0,
        }
    }
    /// Pods the job may delete once it has succeeded.
    fn cleaned(&self, pod: &str) -> bool {
        match self.kind {
            Kind::CleanAll => true,
            Kind::WithPs => pod.ends_with("-ps-0"),
            _ => false,
        }
    }
}

const KINDS: [Kind; 5] = [
    Kind::Plain,
    Kind::WithPs,
    Kind::InPlace,
    Kind::Recreated,
    Kind::CleanAll,
];

/// 40 jobs of five kinds (plain, PS cleaned up, in-place restart, recreated pod, clean all) run
/// while every watch event of pods, services and TFJobs reaches its watchers 0–300, 0–150 and
/// 0–400 ms late (each stream in order, the kinds drifting apart). Every job succeeds with the
/// expected restarts; no pod or service is created twice (one uid per name, two for the
/// recreated pod) or under another name; a pod is deleted only when it had failed (the
/// recreated one) or, for cleanup, after the job's Succeeded status was stored (server order:
/// the simulator's global resourceVersion) — a cleanup before the job is durably finished is
/// what turns into a recreated pod when the status write is lost; and no job's recorded status
/// regresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_and_reordered_watch_events_cause_no_wrong_create_or_delete_and_no_status_regression()
 {
    let _shared = shared().await;
    let seed = seed("watch-delays");
    let c = cluster("watch-delays", seed).await;
    if !c.simulated() {
        return eprintln!("skipped: delays the simulator's watch events (simulator only)");
    }
    let sim = c.sim();
    let mut rng = Rng::new(seed);
    let plan: Vec<Planned> = (0..40)
        .map(|i| Planned {
            name: format!("d{i:02}"),
            kind: KINDS[i % KINDS.len()],
        })
        .collect();
    let jobs = WatchLog::<TFJob>::start(c.jobs(), "").await;
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let svcs = WatchLog::<Service>::start(c.services(), "").await;
    let ms = Duration::from_millis;
    sim.set_watch_delay(Some("pods"), ms(0), ms(300));
    sim.set_watch_delay(Some("services"), ms(0), ms(150));
    sim.set_watch_delay(Some("tfjobs"), ms(0), ms(400));
    let operator = c.operator(&[]).await;
    let started = Instant::now();
    let mut rules = Vec::new();
    for p in plan.iter().filter(|p| p.kind == Kind::Recreated) {
        let pod = format!("{}-worker-0", p.name);
        sim.script_pod(
            &c.namespace,
            &pod,
            [("run-seconds", "0.5"), ("exit-code", "137")],
        );
        rules.push(Rescript {
            pod,
            after_failures: 1,
            keys: vec![("run-seconds".into(), "0.5".into())],
        });
    }
    let specs = plan.iter().map(|p| p.spec(&mut rng)).collect();
    let finished = while_rescripting(sim, &c.namespace, &pods, rules, async {
        common::create_all(&c, specs, 8).await;
        let left = |all: &[TFJob]| common::unfinished(all, plan.len());
        common::jobs_progressing(&c, Duration::from_secs(60), Duration::from_secs(10), left).await
    })
    .await;
    // Let late events and cleanups land, then stop delaying.
    common::until_quiet(
        &c,
        operator.agent(),
        Duration::from_secs(1),
        Duration::from_secs(20),
    )
    .await;
    sim.clear_watch_delays();
    tokio::time::sleep(Duration::from_millis(600)).await;
    eprintln!("40 jobs under delayed watches in {:?}", started.elapsed());

    let mut problems = Vec::new();
    let final_jobs = match finished {
        Ok(all) => all,
        Err(all) => {
            problems.push(format!(
                "not every job finished (no progress for 10 s): {}",
                common::summarize(&all, common::finished)
            ));
            all
        }
    };
    let by_name: BTreeMap<&str, &TFJob> = final_jobs.iter().map(|j| (common::name(j), j)).collect();
    let pod_uids = pods.uids();
    let svc_uids = svcs.uids();
    let desired: Vec<String> = plan.iter().flat_map(Planned::pods).collect();
    for name in pod_uids.keys().chain(svc_uids.keys()) {
        if !desired.contains(name) {
            problems.push(format!("{name}: a child nobody wants was created"));
        }
    }
    for p in &plan {
        let Some(job) = by_name.get(p.name.as_str()) else {
            problems.push(format!("{}: missing", p.name));
            continue;
        };
        let ok = is(job, ConditionType::Succeeded)
            && !is(job, ConditionType::Failed)
            && restarts(job, ReplicaType::Worker) == p.restarts()
            && restarts(job, ReplicaType::Ps) == 0;
        if !ok {
            problems.push(format!(
                "{} ({:?}) ended {}",
                p.name,
                p.kind,
                status_line(job)
            ));
        }
        let history = jobs.versions(&p.name);
        for r in status_regressions(&history) {
            problems.push(format!("{} ({:?}): {r}", p.name, p.kind));
        }
        let succeeded_at = history
            .iter()
            .filter(|v| is(&v.obj, ConditionType::Succeeded))
            .map(|v| v.rv())
            .min();
        for pod in p.pods() {
            let uids = pod_uids.get(&pod).map_or(0, Vec::len);
            let want = if p.kind == Kind::Recreated { 2 } else { 1 };
            if uids != want {
                problems.push(format!(
                    "pod {pod} ({:?}) had {uids} uids, want {want}",
                    p.kind
                ));
            }
            let svc = svc_uids.get(&pod).map_or(0, Vec::len);
            if svc != 1 {
                problems.push(format!("service {pod} had {svc} uids, want 1"));
            }
            // Each incarnation's first terminating version: how the pod stood when deleted.
            let versions = pods.versions(&pod);
            let mut seen_uids = Vec::new();
            for v in versions.iter().filter(|v| v.terminating()) {
                if seen_uids.contains(&v.uid().to_string()) {
                    continue;
                }
                seen_uids.push(v.uid().to_string());
                let failed = phase(&v.obj) == "Failed";
                let after_success = succeeded_at.is_some_and(|s| s < v.rv());
                let ok =
                    (failed && p.kind == Kind::Recreated) || (p.cleaned(&pod) && after_success);
                if !ok {
                    problems.push(format!(
                        "pod {pod} ({:?}) deleted while {} at rv {}; the job's Succeeded was \
                         stored at rv {succeeded_at:?}",
                        p.kind,
                        phase(&v.obj),
                        v.rv()
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems: {problems:#?}",
        problems.len()
    );
}
