//! Helpers shared by the fault tests: job specs, many jobs at once, waiting on them, and the
//! checks every test makes on a job's history.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, stream};
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionStatus, ConditionType, ReplicaType, TFJob};
use tokio::time::Instant;

use crate::support::faults::{Seen, writes_of};
use crate::support::{self, TestCluster};

pub const RUN: &str = "sim.tfjob.dev/run-seconds";

/// A TFJob: `replicas` = (type, count, restartPolicy); every replica runs `run_seconds`.
pub fn spec(name: &str, replicas: &[(&str, i32, &str)], run_seconds: f64) -> Value {
    let mut job = support::job(name, replicas);
    for (t, _, _) in replicas {
        support::annotate(&mut job, t, RUN, &format!("{run_seconds}"));
    }
    job
}

/// Set `spec.runPolicy.<key>`.
pub fn run_policy(job: &mut Value, key: &str, value: Value) {
    job["spec"]["runPolicy"][key] = value;
}

/// Set an annotation of replica type `t`'s pod template.
pub fn annotate(job: &mut Value, t: &str, key: &str, value: &str) {
    support::annotate(job, t, key, value);
}

/// Create every job, `parallel` at a time (as the test's client, not the operator's).
pub async fn create_all(c: &TestCluster, jobs: Vec<Value>, parallel: usize) {
    let api = c.test_jobs().await;
    let api = &api;
    stream::iter(jobs)
        .for_each_concurrent(parallel, |job| async move {
            let job: TFJob = serde_json::from_value(job).expect("test job is a TFJob");
            let name = job.metadata.name.clone().unwrap_or_default();
            let deadline = Instant::now() + support::WAIT;
            loop {
                match api.create(&PostParams::default(), &job).await {
                    Ok(_) => break,
                    // A fault of the test may hit the test's own requests: retry those.
                    Err(kube::Error::Api(s)) if s.code == 409 => break,
                    Err(e) if Instant::now() < deadline => {
                        let _ = e;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Err(e) => panic!("creating {name}: {e}"),
                }
            }
        })
        .await;
}

/// Every TFJob of the namespace now (retrying a failed list).
pub async fn list_jobs(c: &TestCluster) -> Vec<TFJob> {
    let deadline = Instant::now() + support::WAIT;
    loop {
        match c.jobs().list(&ListParams::default()).await {
            Ok(list) => return list.items,
            Err(e) if Instant::now() > deadline => panic!("listing TFJobs: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Poll the namespace's TFJobs until `done` holds for them, or fail after `within` with
/// `describe` of the last list.
pub async fn until_jobs(
    c: &TestCluster,
    what: &str,
    within: Duration,
    done: impl Fn(&[TFJob]) -> bool,
    describe: impl Fn(&[TFJob]) -> String,
) -> Vec<TFJob> {
    match jobs_within(c, within, done).await {
        Ok(jobs) => jobs,
        Err(jobs) => panic!(
            "timed out after {within:?} waiting for {what}: {}",
            describe(&jobs)
        ),
    }
}

/// Poll the namespace's TFJobs until `done` holds for them (Ok) or `within` passed (Err with
/// the last list).
pub async fn jobs_within(
    c: &TestCluster,
    within: Duration,
    done: impl Fn(&[TFJob]) -> bool,
) -> Result<Vec<TFJob>, Vec<TFJob>> {
    let deadline = Instant::now() + within;
    loop {
        let jobs = list_jobs(c).await;
        if done(&jobs) {
            return Ok(jobs);
        }
        if Instant::now() > deadline {
            return Err(jobs);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Poll the namespace's TFJobs until `remaining` counts nothing left (Ok), or `within` passed,
/// or the count did not shrink for `stall` (Err with the last list).
pub async fn jobs_progressing(
    c: &TestCluster,
    within: Duration,
    stall: Duration,
    remaining: impl Fn(&[TFJob]) -> usize,
) -> Result<Vec<TFJob>, Vec<TFJob>> {
    let deadline = Instant::now() + within;
    let mut progress = (usize::MAX, Instant::now());
    loop {
        let jobs = list_jobs(c).await;
        let left = remaining(&jobs);
        if left == 0 {
            return Ok(jobs);
        }
        if left < progress.0 {
            progress = (left, Instant::now());
        }
        if Instant::now() > deadline || progress.1.elapsed() > stall {
            return Err(jobs);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Jobs not finished among `jobs`, plus those of `expected` not created yet.
pub fn unfinished(jobs: &[TFJob], expected: usize) -> usize {
    let done = jobs.iter().filter(|j| finished(j)).count();
    expected.saturating_sub(done).max(jobs.len() - done)
}

/// The pods of job `name` now: name, phase, uid, whether terminating, controller uid.
pub async fn describe_pods(c: &TestCluster, job: &str) -> Vec<String> {
    let lp = ListParams::default().labels(&format!("training.kubeflow.org/job-name={job}"));
    let pods = c
        .pods()
        .list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    pods.iter()
        .map(|p| {
            let owner = p
                .metadata
                .owner_references
                .iter()
                .flatten()
                .map(|o| o.uid.clone())
                .collect::<Vec<_>>();
            format!(
                "{} {} uid {} rv {} terminating {} owners {owner:?}",
                p.metadata.name.as_deref().unwrap_or_default(),
                p.status
                    .as_ref()
                    .and_then(|s| s.phase.as_deref())
                    .unwrap_or_default(),
                p.metadata.uid.as_deref().unwrap_or_default(),
                p.metadata.resource_version.as_deref().unwrap_or_default(),
                p.metadata.deletion_timestamp.is_some(),
            )
        })
        .collect()
}

/// Whether condition `t` is True.
pub fn is(job: &TFJob, t: ConditionType) -> bool {
    support::has_condition(job, t)
}

/// Succeeded or Failed.
pub fn finished(job: &TFJob) -> bool {
    is(job, ConditionType::Succeeded) || is(job, ConditionType::Failed)
}

/// `replicaStatuses[t].restarts`, absent = 0.
pub fn restarts(job: &TFJob, t: ReplicaType) -> i32 {
    support::restarts(job, t).unwrap_or(0)
}

/// `replicaStatuses[t]` counts (active, succeeded, failed), absent = 0.
pub fn counts(job: &TFJob, t: ReplicaType) -> (i32, i32, i32) {
    job.status
        .as_ref()
        .and_then(|s| s.replica_statuses.get(&t))
        .map_or((0, 0, 0), |r| {
            (
                r.active.unwrap_or(0),
                r.succeeded.unwrap_or(0),
                r.failed.unwrap_or(0),
            )
        })
}

pub fn name(job: &TFJob) -> &str {
    job.metadata.name.as_deref().unwrap_or_default()
}

/// A one-line summary of jobs that are not `ok`, for failure messages.
pub fn summarize(jobs: &[TFJob], ok: impl Fn(&TFJob) -> bool) -> String {
    let bad: Vec<String> = jobs
        .iter()
        .filter(|j| !ok(j))
        .take(8)
        .map(|j| format!("{}: {}", name(j), status_line(j)))
        .collect();
    let n = jobs.iter().filter(|j| !ok(j)).count();
    format!("{n} of {} jobs not there yet, e.g. {bad:#?}", jobs.len())
}

/// Conditions (True ones upper-case) and per-type counts, compactly.
pub fn status_line(job: &TFJob) -> String {
    let Some(s) = job.status.as_ref() else {
        return "no status".into();
    };
    let conditions: Vec<String> = s
        .conditions
        .iter()
        .map(|c| match c.status {
            ConditionStatus::True => format!("{:?}", c.type_),
            _ => format!("{:?}={:?}", c.type_, c.status),
        })
        .collect();
    let replicas: Vec<String> = s
        .replica_statuses
        .iter()
        .map(|(t, r)| {
            format!(
                "{t:?}(a{} s{} f{} r{})",
                r.active.unwrap_or(0),
                r.succeeded.unwrap_or(0),
                r.failed.unwrap_or(0),
                r.restarts.unwrap_or(0)
            )
        })
        .collect();
    format!("{} {}", conditions.join(","), replicas.join(" "))
}

/// Wait until the operator with User-Agent `agent` made no write for `quiet` (at most `within`).
pub async fn until_quiet(c: &TestCluster, agent: &str, quiet: Duration, within: Duration) {
    let deadline = Instant::now() + within;
    let writes = || {
        let counts = c.sim().requests();
        writes_of(&counts, agent).writes()
    };
    let mut last = writes();
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = writes();
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() >= quiet {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "operator {agent} still writing after {within:?}"
        );
    }
}

/// The status rules every recorded history of a job must keep (contract §7): Created, once
/// True, stays; restarts per type never decrease; active + succeeded never exceed the replicas;
/// Succeeded and Failed are never both True; once one of them is True, conditions and counts
/// never change again. Returns the violations found in `versions` (server order).
pub fn status_regressions(versions: &[Seen<TFJob>]) -> Vec<String> {
    let mut sorted: Vec<&Seen<TFJob>> = versions.iter().filter(|v| !v.deleted).collect();
    sorted.sort_by_key(|v| v.rv());
    sorted.dedup_by_key(|v| v.rv());
    let mut problems = Vec::new();
    let mut created = false;
    let mut max_restarts: BTreeMap<ReplicaType, i32> = BTreeMap::new();
    let mut terminal: Option<(Value, Value)> = None;
    for v in sorted {
        let job = &v.obj;
        let rv = v.rv();
        let Some(status) = job.status.as_ref() else {
            if created {
                problems.push(format!("rv {rv}: status disappeared"));
            }
            continue;
        };
        if is(job, ConditionType::Created) {
            created = true;
        } else if created {
            problems.push(format!("rv {rv}: Created went away: {}", status_line(job)));
        }
        if is(job, ConditionType::Succeeded) && is(job, ConditionType::Failed) {
            problems.push(format!("rv {rv}: Succeeded and Failed both True"));
        }
        let replicas: BTreeMap<ReplicaType, i32> = job
            .spec
            .tf_replica_specs
            .iter()
            .map(|(t, s)| (t, s.replicas.unwrap_or(1)))
            .collect();
        for (t, r) in &status.replica_statuses {
            let n = r.restarts.unwrap_or(0);
            let max = max_restarts.entry(*t).or_insert(0);
            if n < *max {
                problems.push(format!("rv {rv}: {t:?} restarts went from {max} to {n}"));
            }
            *max = n.max(*max);
            let (active, succeeded) = (r.active.unwrap_or(0), r.succeeded.unwrap_or(0));
            let want = replicas.get(t).copied().unwrap_or(0);
            if active + succeeded > want {
                problems.push(format!(
                    "rv {rv}: {t:?} active {active} + succeeded {succeeded} > replicas {want}"
                ));
            }
        }
        let frozen = (
            json!(
                status
                    .conditions
                    .iter()
                    .map(|c| (c.type_, c.status, c.reason.clone(), c.message.clone()))
                    .collect::<Vec<_>>()
            ),
            json!(
                status
                    .replica_statuses
                    .iter()
                    .map(|(t, r)| (t, r.active, r.succeeded, r.failed, r.restarts))
                    .collect::<Vec<_>>()
            ),
        );
        match &terminal {
            Some(done) if *done != frozen => problems.push(format!(
                "rv {rv}: changed after it finished: {}",
                status_line(job)
            )),
            Some(_) => {}
            None if finished(job) => terminal = Some(frozen),
            None => {}
        }
    }
    problems
}
