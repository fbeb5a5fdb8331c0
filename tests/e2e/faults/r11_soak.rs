//! R11 soak: over 10,000 child events at full speed on a loaded machine (CPU burners), with
//! many deletions mixed in: every pod transition reaches its job within 2 s, from the first
//! event to the last.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::json;
use tfjob_operator::crd::{ConditionType, TFJob};
use tokio::time::Instant;

use super::common::{self, is, spec};
use crate::support::faults::{CpuBurner, Rng, WatchLog, alone, cluster, phase, quantile, seed};

const JOBS: usize = 640;
const MIN_EVENTS: usize = 10_000;
const BOUND: Duration = Duration::from_secs(2);
/// A transition waiting this long for its job ends the run early (it stalled).
/// Jobs in flight at once: new ones as fast as old ones finish.
const WINDOW: usize = 40;
const STALL: Duration = Duration::from_secs(10);
const LIMIT: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Three workers, cleanPodPolicy All: every pod and service deleted after success.
    CleanAll,
    /// A PS and a worker, cleanPodPolicy Running: the running PS is deleted after success.
    Ps,
    /// One worker under OnFailure failing three times: kubelet restarts.
    InPlace,
    /// One worker under ExitCode that always exits 137, backoffLimit 1: deleted, recreated,
    /// failed again, the job Failed.
    Recreated,
}

fn kind(rng: &mut Rng) -> Kind {
    match rng.below(20) {
        0..=7 => Kind::CleanAll,
        8..=10 => Kind::Ps,
        11..=16 => Kind::InPlace,
        _ => Kind::Recreated,
    }
}

fn job(name: &str, kind: Kind, run: f64) -> serde_json::Value {
    match kind {
        Kind::CleanAll => {
            let mut job = spec(name, &[("Worker", 3, "Never")], run);
            common::run_policy(&mut job, "cleanPodPolicy", json!("All"));
            job
        }
        Kind::Ps => {
            let mut job = spec(name, &[("PS", 1, "Never"), ("Worker", 1, "Never")], run);
            common::annotate(&mut job, "PS", common::RUN, "3600");
            job
        }
        Kind::InPlace => {
            let mut job = spec(name, &[("Worker", 1, "OnFailure")], run / 3.0);
            common::annotate(&mut job, "Worker", "sim.tfjob.dev/fail-times", "3");
            common::annotate(&mut job, "Worker", "sim.tfjob.dev/exit-code", "1");
            job
        }
        Kind::Recreated => {
            let mut job = spec(name, &[("Worker", 1, "ExitCode")], run / 2.0);
            common::annotate(&mut job, "Worker", "sim.tfjob.dev/exit-code", "137");
            common::run_policy(&mut job, "backoffLimit", json!(1));
            job
        }
    }
}

/// The job a child belongs to: `<job>-<type>-<index>`.
fn owner_of(child: &str) -> &str {
    child.rsplitn(3, '-').last().unwrap_or_default()
}

/// One measured transition: when the test saw the pod reach it, and when the test saw the job
/// reflect it (None: never).
struct Transition {
    job: String,
    what: &'static str,
    pod_at: Instant,
    job_at: Option<Instant>,
}

/// Every transition seen so far: a job's first pod Running, and the pod deciding its end.
fn measure(
    pods: &WatchLog<Pod>,
    jobs: &WatchLog<TFJob>,
    kinds: &BTreeMap<&str, Kind>,
) -> Vec<Transition> {
    // When the test first saw each pod state, by job.
    let mut first_running: BTreeMap<String, Instant> = BTreeMap::new();
    let mut decided: BTreeMap<String, Instant> = BTreeMap::new();
    pods.with(|seen| {
        let mut failed_uids: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for v in seen {
            let job = owner_of(v.name()).to_string();
            let Some(kind) = kinds.get(job.as_str()) else {
                continue;
            };
            let deciding = v.name().contains("-worker-0");
            match phase(&v.obj) {
                "Running" if !v.deleted => {
                    first_running.entry(job).or_insert(v.at);
                }
                "Succeeded" if deciding && *kind != Kind::Recreated => {
                    decided.entry(job).or_insert(v.at);
                }
                "Failed" if deciding && *kind == Kind::Recreated => {
                    let uids = failed_uids.entry(job.clone()).or_default();
                    if !uids.iter().any(|u| u == v.uid()) {
                        uids.push(v.uid().to_string());
                    }
                    // The second failure exhausts backoffLimit 1.
                    if uids.len() == 2 {
                        decided.entry(job).or_insert(v.at);
                    }
                }
                _ => {}
            }
        }
    });
    let mut job_running: BTreeMap<String, Instant> = BTreeMap::new();
    let mut job_ended: BTreeMap<String, Instant> = BTreeMap::new();
    jobs.with(|seen| {
        for v in seen {
            let name = v.name().to_string();
            if is(&v.obj, ConditionType::Running) || common::finished(&v.obj) {
                job_running.entry(name.clone()).or_insert(v.at);
            }
            if common::finished(&v.obj) {
                job_ended.entry(name).or_insert(v.at);
            }
        }
    });
    let mut transitions = Vec::new();
    for (job, at) in &first_running {
        transitions.push(Transition {
            job: job.clone(),
            what: "Running",
            pod_at: *at,
            job_at: job_running.get(job).copied(),
        });
    }
    for (job, at) in &decided {
        transitions.push(Transition {
            job: job.clone(),
            what: "end",
            pod_at: *at,
            job_at: job_ended.get(job).copied(),
        });
    }
    transitions
}

/// 640 jobs (over 10,000 pod and service events: creations, kubelet status changes, restarts
/// in place, pods recreated, cleanups deleting pods and services), 40 in flight at any time (a
/// new job as soon as one finishes), while two busy processes load both cores. From the watches of pods and jobs: each
/// job shows Running (or already its end) within 2 s of the test seeing its first pod Running,
/// and its end (Succeeded, or Failed for the recreated kind) within 2 s of seeing the pod that
/// decides it finish. The distribution is printed; the maximum must stay within 2 s and no
/// transition may be lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_cpu_load_every_pod_transition_reaches_its_job_within_2s_over_10000_child_events() {
    let _alone = alone().await;
    let seed = seed("soak");
    let c = cluster("soak", seed).await;
    if !c.simulated() {
        return eprintln!("skipped: a load test of the simulator tier");
    }
    let mut rng = Rng::new(seed);
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let svcs = WatchLog::<Service>::start(c.services(), "").await;
    let jobs = WatchLog::<TFJob>::start(c.jobs(), "").await;
    let _operator = c.operator(&[]).await;
    let burner = CpuBurner::start(2);
    let started = Instant::now();
    let plan: Vec<(String, Kind)> = (0..JOBS)
        .map(|i| (format!("s{i:03}"), kind(&mut rng)))
        .collect();
    let specs: Vec<serde_json::Value> = plan
        .iter()
        .map(|(name, k)| job(name, *k, rng.range_f64(0.6, 1.6)))
        .collect();
    let kinds: BTreeMap<&str, Kind> = plan.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    // Keep WINDOW jobs in flight: a new one as soon as one finishes, until all ran, or a pod
    // transition has waited STALL for its job (stalled: stop measuring).
    let api = c.test_jobs().await;
    let (mut next, mut cursor, mut checked) = (0, 0, Instant::now());
    let mut done: std::collections::BTreeSet<String> = Default::default();
    let finished = loop {
        for v in jobs.since(cursor) {
            cursor += 1;
            if common::finished(&v.obj) {
                done.insert(v.name().to_string());
            }
        }
        if done.len() == JOBS {
            break Ok(());
        }
        while next < JOBS && next - done.len().min(next) < WINDOW {
            let spec: TFJob = serde_json::from_value(specs[next].clone()).expect("a TFJob");
            api.create(&Default::default(), &spec)
                .await
                .expect("creating a TFJob");
            next += 1;
        }
        if checked.elapsed() > Duration::from_millis(500) {
            checked = Instant::now();
            let stalled = measure(&pods, &jobs, &kinds)
                .iter()
                .any(|t| t.job_at.is_none() && t.pod_at.elapsed() > STALL);
            if stalled || started.elapsed() > LIMIT {
                break Err(common::list_jobs(&c).await);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let created = next;
    // Cleanups still under way.
    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(burner);
    let elapsed = started.elapsed();

    let transitions = measure(&pods, &jobs, &kinds);
    let mut latencies: Vec<Duration> = transitions
        .iter()
        .filter_map(|t| t.job_at.map(|j| j.saturating_duration_since(t.pod_at)))
        .collect();
    latencies.sort();
    let lost: Vec<&Transition> = transitions.iter().filter(|t| t.job_at.is_none()).collect();
    let slow: Vec<String> = transitions
        .iter()
        .filter_map(|t| {
            let late = t.job_at?.saturating_duration_since(t.pod_at);
            (late > BOUND).then(|| {
                format!(
                    "{} {} after {late:?} (pod seen at +{:?})",
                    t.job,
                    t.what,
                    t.pod_at - started
                )
            })
        })
        .collect();
    let events = pods.len() + svcs.len();
    let deletions = pods.with(|s| s.iter().filter(|v| v.deleted).count())
        + svcs.with(|s| s.iter().filter(|v| v.deleted).count());
    eprintln!(
        "soak: {created} jobs created ({WINDOW} at a time), run in {elapsed:?}; {events} child events \
         ({deletions} deletions); {} transitions: p50 {:?}, p99 {:?}, max {:?}; {} lost",
        transitions.len(),
        quantile(&latencies, 0.5),
        quantile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
        lost.len()
    );
    let mut problems = Vec::new();
    if let Err(all) = &finished {
        problems.push(format!(
            "not every job finished (stopped: a transition waited {STALL:?}, or over {LIMIT:?}): {}",
            common::summarize(all, common::finished)
        ));
    }
    if !lost.is_empty() {
        let last_reached = transitions
            .iter()
            .filter_map(|t| t.job_at)
            .max()
            .map(|t| t - started);
        let first_lost = lost.iter().map(|t| t.pod_at).min().map(|t| t - started);
        problems.push(format!(
            "{} of {} pod transitions never reached their job (first lost at +{first_lost:?}, \
             last one reached at +{last_reached:?}), e.g. {:?}",
            lost.len(),
            transitions.len(),
            lost.iter()
                .take(5)
                .map(|t| format!("{} {}", t.job, t.what))
                .collect::<Vec<_>>()
        ));
    }
    if !slow.is_empty() {
        problems.push(format!(
            "{} transitions took over {BOUND:?}, e.g. {:?}",
            slow.len(),
            &slow[..slow.len().min(5)]
        ));
    }
    if events < MIN_EVENTS {
        problems.push(format!(
            "only {events} child events (want at least {MIN_EVENTS})"
        ));
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
