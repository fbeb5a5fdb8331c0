//! R1: no duplicate or missing child over 1,000 jobs run under randomized API faults.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::ListParams;
use serde_json::json;
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};
use tfjob_sim::FaultRule;
use tokio::time::Instant;

use super::common::{self, counts, is, restarts, spec};
use crate::support::TestCluster;
use crate::support::faults::{Rng, WatchLog, breakdown, cluster, phase, requests_of, seed, shared};

const BATCHES: usize = 4;
const JOBS_PER_BATCH: usize = 250;

/// One job of a batch.
struct Planned {
    name: String,
    workers: i32,
    ps: bool,
    clean: &'static str,
}

impl Planned {
    fn pods(&self) -> Vec<String> {
        let mut out: Vec<String> = (0..self.workers)
            .map(|i| format!("{}-worker-{i}", self.name))
            .collect();
        if self.ps {
            out.push(format!("{}-ps-0", self.name));
        }
        out
    }
    /// The children left once the job succeeded and its cleanup is done (pods and services
    /// share names): workers have Succeeded, the PS still runs.
    fn left(&self) -> Vec<String> {
        match self.clean {
            "All" => vec![],
            "Running" => self
                .pods()
                .into_iter()
                .filter(|p| !p.contains("-ps-"))
                .collect(),
            _ => self.pods(),
        }
    }
}

/// Faults of one batch, drawn from the seed; printed so a failure names them.
fn draw_faults(rng: &mut Rng) -> Vec<FaultRule> {
    let mut rules = Vec::new();
    let rate = |rng: &mut Rng, max: f64| rng.range_f64(0.0, max);
    for resource in ["pods", "services"] {
        rules.push(FaultRule::error(
            Some("create"),
            Some(resource),
            500,
            rate(rng, 0.2),
        ));
        // Stored, then answered 500: the retry meets AlreadyExists for the operator's own child.
        rules.push(FaultRule::error_after_write(
            Some("create"),
            Some(resource),
            500,
            rate(rng, 0.1),
        ));
        rules.push(FaultRule::error(
            Some("delete"),
            Some(resource),
            500,
            rate(rng, 0.2),
        ));
        rules.push(FaultRule::latency(
            Some("create"),
            Some(resource),
            Duration::from_millis(rng.below(30)),
        ));
    }
    rules.push(FaultRule::error(
        Some("update"),
        Some("tfjobs/status"),
        409,
        rate(rng, 0.2),
    ));
    rules.push(FaultRule::error_after_write(
        Some("update"),
        Some("tfjobs/status"),
        500,
        rate(rng, 0.1),
    ));
    rules.push(FaultRule::error(
        Some("create"),
        Some("events"),
        500,
        rate(rng, 0.3),
    ));
    // Throttled, with Retry-After: 1.
    for (verb, resource) in [
        ("create", "pods"),
        ("create", "services"),
        ("update", "tfjobs/status"),
        ("delete", "pods"),
    ] {
        rules.push(FaultRule::error(
            Some(verb),
            Some(resource),
            429,
            rate(rng, 0.05),
        ));
    }
    rules
}

/// The faults compactly: `500 create pods 7%`, `500* ...` when stored first.
fn show(rules: &[FaultRule]) -> String {
    let parts: Vec<String> = rules
        .iter()
        .map(|r| {
            let verb = r.verb.as_deref().unwrap_or("*");
            let resource = r.resource.as_deref().unwrap_or("*");
            if r.code == 0 {
                format!("+{:?} {verb} {resource}", r.latency)
            } else {
                let stored = if r.after_write { "*" } else { "" };
                format!(
                    "{}{stored} {verb} {resource} {:.0}%",
                    r.code,
                    r.rate * 100.0
                )
            }
        })
        .collect();
    parts.join(", ")
}

fn plan_batch(rng: &mut Rng, batch: usize) -> Vec<Planned> {
    (0..JOBS_PER_BATCH)
        .map(|i| Planned {
            name: format!("b{batch}-{i:03}"),
            workers: if rng.chance(0.3) { 2 } else { 1 },
            ps: rng.chance(0.15),
            clean: ["All", "Running", "None"][rng.below(3) as usize],
        })
        .collect()
}

fn to_spec(p: &Planned) -> serde_json::Value {
    let mut replicas = vec![("Worker", p.workers, "Never")];
    if p.ps {
        replicas.push(("PS", 1, "Never"));
    }
    // Every pod runs until the test lets the workers finish: each desired child must come to
    // exist while the faults are on, and the job cannot succeed without every worker.
    let mut job = spec(&p.name, &replicas, 3600.0);
    job["spec"]["successPolicy"] = json!("AllWorkers");
    common::run_policy(&mut job, "cleanPodPolicy", json!(p.clean));
    job
}

/// Names of the pods and services that exist and are not being deleted.
async fn live_children(c: &TestCluster) -> (BTreeSet<String>, BTreeSet<String>) {
    let lp = ListParams::default();
    let pods = c.pods().list(&lp).await.expect("listing pods").items;
    let svcs = c
        .services()
        .list(&lp)
        .await
        .expect("listing services")
        .items;
    let live = |meta: &kube::api::ObjectMeta| {
        meta.deletion_timestamp
            .is_none()
            .then(|| meta.name.clone())
            .flatten()
    };
    (
        pods.iter().filter_map(|p| live(&p.metadata)).collect(),
        svcs.iter().filter_map(|s| live(&s.metadata)).collect(),
    )
}

/// Poll the live children until `want` finds nothing left to do (None), or `within` passed,
/// or what is left (`want`'s count) did not shrink for [`STALL`]: the last problem then.
async fn until_children(
    c: &TestCluster,
    within: Duration,
    want: impl Fn(&BTreeSet<String>, &BTreeSet<String>) -> Option<(usize, String)>,
) -> Option<String> {
    let deadline = Instant::now() + within;
    let mut progress = (usize::MAX, Instant::now());
    loop {
        let (pods, svcs) = live_children(c).await;
        let (left, problem) = want(&pods, &svcs)?;
        if left < progress.0 {
            progress = (left, Instant::now());
        }
        if Instant::now() > deadline {
            return Some(format!("after {within:?}: {problem}"));
        }
        if progress.1.elapsed() > STALL {
            return Some(format!("no progress for {STALL:?}: {problem}"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `missing` of `want` in `have`: how many, and a few of them, for messages.
fn missing(want: &BTreeSet<String>, have: &BTreeSet<String>) -> Option<(usize, String)> {
    let gone: Vec<&String> = want.difference(have).collect();
    (!gone.is_empty()).then(|| {
        let e = &gone[..gone.len().min(6)];
        (gone.len(), format!("{} missing, e.g. {e:?}", gone.len()))
    })
}

/// Faults stay on for this long in each phase, then heal: a correct controller converges
/// however its retries back off.
const FAULT_WINDOW: Duration = Duration::from_secs(6);
/// How long a phase may take once the faults healed (on a loaded machine: four batches at once,
/// maybe other tests beside them; without faults, creating the children of all 1,000 jobs takes
/// the operator 25–45 s here)...
const HEALED: Duration = Duration::from_secs(120);
/// ...as long as it makes progress.
const STALL: Duration = Duration::from_secs(10);

/// One batch in its own simulator and namespace, with its own operator: its faults (shown)
/// and the problems found.
async fn run_batch(batch: usize, seed: u64) -> (String, Vec<String>) {
    let mut rng = Rng::new(seed);
    let c = cluster(&format!("api-faults-{batch}"), seed).await;
    let sim = c.sim();
    let plan = plan_batch(&mut rng, batch);
    let faults = draw_faults(&mut rng);
    let shown = format!("batch {batch}: {}", show(&faults));
    let mut problems = Vec::new();
    let mut problem = |p: String| problems.push(format!("batch {batch}: {p}"));
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let svcs = WatchLog::<Service>::start(c.services(), "").await;
    let tfjobs = WatchLog::<TFJob>::start(c.jobs(), "").await;
    let operator = c.operator(&[]).await;
    let inject = || {
        for rule in &faults {
            sim.set_fault(rule.clone());
        }
    };

    // Phase 1: creation under faults for FAULT_WINDOW (however long submitting takes), then
    // healed.
    inject();
    let t0 = Instant::now();
    let window = async {
        tokio::time::sleep(FAULT_WINDOW).await;
        sim.clear_faults();
    };
    tokio::join!(
        common::create_all(&c, plan.iter().map(to_spec).collect(), 16),
        window
    );
    let want: BTreeSet<String> = plan.iter().flat_map(Planned::pods).collect();
    let all_there = |p: &BTreeSet<String>, s: &BTreeSet<String>| {
        let (pods, services) = (missing(&want, p), missing(&want, s));
        let left = pods.as_ref().map_or(0, |m| m.0) + services.as_ref().map_or(0, |m| m.0);
        let show = |m: Option<(usize, String)>| m.map_or("none missing".into(), |m| m.1);
        (left > 0).then(|| {
            (
                left,
                format!("pods: {}; services: {}", show(pods), show(services)),
            )
        })
    };
    if let Some(absent) = until_children(&c, HEALED, all_there).await {
        problem(format!("children never created, {absent}"));
        return (shown, problems);
    }
    let created = t0.elapsed();

    // Phase 2: the workers finish under faults (status writes, cleanup deletes), then healed.
    inject();
    for p in &plan {
        for w in 0..p.workers {
            let pod = format!("{}-worker-{w}", p.name);
            sim.script_pod(&c.namespace, &pod, [("run-seconds", "0")]);
        }
    }
    let all_finished = |jobs: &[TFJob]| jobs.iter().all(common::finished);
    let _ = common::jobs_within(&c, FAULT_WINDOW, all_finished).await;
    sim.clear_faults();
    let left = |jobs: &[TFJob]| common::unfinished(jobs, plan.len());
    let jobs = match common::jobs_progressing(&c, HEALED, STALL, left).await {
        Ok(jobs) => jobs,
        Err(jobs) => {
            let unfinished: Vec<&TFJob> = jobs.iter().filter(|j| !common::finished(j)).collect();
            let mut stuck = Vec::new();
            for j in unfinished.iter().take(3) {
                let pods = common::describe_pods(&c, common::name(j)).await;
                stuck.push(format!(
                    "{} (rv {}) {}: pods {pods:?}",
                    common::name(j),
                    j.metadata.resource_version.as_deref().unwrap_or_default(),
                    common::status_line(j)
                ));
            }
            problem(format!(
                "{} jobs unfinished after the faults healed (no progress for {STALL:?}, or \
                 {HEALED:?} passed), e.g. {stuck:#?}",
                unfinished.len()
            ));
            jobs
        }
    };
    let planned: BTreeMap<&str, &Planned> = plan.iter().map(|p| (p.name.as_str(), p)).collect();
    for job in jobs.iter().filter(|j| common::finished(j)) {
        let p = planned[common::name(job)];
        let ok = is(job, ConditionType::Succeeded)
            && !is(job, ConditionType::Failed)
            && restarts(job, ReplicaType::Worker) == 0
            && restarts(job, ReplicaType::Ps) == 0
            && counts(job, ReplicaType::Worker).1 == p.workers;
        if !ok {
            problem(format!("{} ended {}", p.name, common::status_line(job)));
        }
    }
    let left: BTreeSet<String> = plan.iter().flat_map(Planned::left).collect();
    let policy = |n: &String| {
        let job = n.rsplitn(3, '-').last().unwrap_or_default();
        planned.get(job).map_or("?", |p| p.clean)
    };
    let unclean = until_children(&c, HEALED, |p, s| {
        let show = |set: Vec<&String>| -> Vec<String> {
            set.into_iter()
                .take(5)
                .map(|n| format!("{n} ({})", policy(n)))
                .collect()
        };
        let extra = p.symmetric_difference(&left).count() + s.symmetric_difference(&left).count();
        (extra > 0).then(|| {
            (
                extra,
                format!(
                    "pods extra {:?} missing {:?}; services extra {:?} missing {:?}",
                    show(p.difference(&left).collect()),
                    show(left.difference(p).collect()),
                    show(s.difference(&left).collect()),
                    show(left.difference(s).collect()),
                ),
            )
        })
    })
    .await;
    if let Some(unclean) = unclean {
        problem(format!(
            "cleanup (cleanPodPolicy in parentheses) not as planned {unclean}"
        ));
    }
    // A child created twice: how its first incarnation went, against its job's history
    // (server order: the simulator's resourceVersions).
    let finished_at = |child: &str| {
        let job = child.rsplitn(3, '-').last().unwrap_or_default();
        tfjobs
            .versions(job)
            .iter()
            .filter(|v| common::finished(&v.obj))
            .map(|v| v.rv())
            .min()
    };
    for name in tfjobs
        .uids()
        .into_iter()
        .filter(|(_, u)| u.len() != 1)
        .map(|(n, _)| n)
    {
        problem(format!(
            "TFJob {name} had several uids (the test's own creates?)"
        ));
    }
    for (name, uids) in pods.uids() {
        if uids.len() != 1 {
            let first_gone = pods
                .versions(&name)
                .iter()
                .find(|v| v.uid() == uids[0] && (v.terminating() || v.deleted))
                .map(|v| format!("deleted at rv {} while {}", v.rv(), phase(&v.obj)));
            problem(format!(
                "pod {name} had {} uids: the first {}; its job finished at rv {:?}",
                uids.len(),
                first_gone.unwrap_or_else(|| "never seen deleted".into()),
                finished_at(&name)
            ));
        }
    }
    for (name, uids) in svcs.uids() {
        if uids.len() != 1 {
            problem(format!("service {name} had {} uids", uids.len()));
        }
    }
    let used = requests_of(&sim.requests(), operator.agent());
    eprintln!(
        "{shown}; {} jobs, {} pods: every child existed after {created:?}, done in {:?}; \
         operator requests {}",
        plan.len(),
        want.len(),
        t0.elapsed(),
        breakdown(&used)
    );
    (shown, problems)
}

/// 1,000 jobs in 4 batches of 250, each batch in its own simulator under its own random mix of
/// faults (the batches run at once): creates failing with 500 before or after they are
/// stored, 409 on status writes, 429 with Retry-After, failing deletes, slow creates. The
/// faults are on while the children are created and again while the workers finish (each time
/// for a window, then healed). Every desired child comes to exist (no pod can finish before:
/// all run until the test lets the workers finish, and `AllWorkers` needs every worker);
/// every job succeeds with no restart counted, its cleanup policy is applied, and every child
/// name had exactly one uid (never created twice, never deleted and recreated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_jobs_under_random_api_faults_get_every_child_exactly_once() {
    let _shared = shared().await;
    if std::env::var_os("KUBECONFIG").is_some() {
        return eprintln!("skipped: injects API faults (simulator only)");
    }
    let seed = seed("api-faults");
    let started = Instant::now();
    let batches = (0..BATCHES).map(|b| run_batch(b, seed.wrapping_add(b as u64)));
    let (faults, problems): (Vec<String>, Vec<Vec<String>>) =
        futures::future::join_all(batches).await.into_iter().unzip();
    let problems = problems.concat();
    eprintln!(
        "{} jobs under faults in {:?}",
        BATCHES * JOBS_PER_BATCH,
        started.elapsed()
    );
    assert!(
        problems.is_empty(),
        "{} problems (first 40): {:#?}\nfaults ('*' = stored, then answered with the error): \
         {faults:#?}",
        problems.len(),
        &problems[..problems.len().min(40)]
    );
}
