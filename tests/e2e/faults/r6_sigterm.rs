//! R6: SIGTERM in the middle of creating a 300-replica job → a clean exit; the next operator
//! completes the job with exactly 300 pods and 300 services, each created exactly once. And a
//! leader SIGTERMed while the API server answers nothing still exits cleanly, within seconds;
//! an operator whose pass the API server leaves unanswered exits within the grace period.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::Api;
use serde_json::json;
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};
use tfjob_sim::FaultRule;
use tokio::time::Instant;

use super::common::{self, restarts, spec, status_line};
use crate::support::faults::{
    OPERATOR_AGENT, WatchLog, breakdown, cluster, seed, shared, writes_of,
};
use crate::support::until;

const REPLICAS: usize = 300;
/// How long a SIGTERMed operator may take to drain and return.
const EXIT: Duration = Duration::from_secs(10);
/// How long a leader may take to stop when the API server answers nothing: the lease
/// release's bound (`RELEASE_WAIT`, 5 s) and slack.
const UNANSWERED_EXIT: Duration = Duration::from_secs(10);
/// Kubernetes' grace period: the drain's bound (15 s), the events' (5 s) and slack.
const GRACE: Duration = Duration::from_secs(30);

/// A 300-worker job (`AllWorkers`: every worker must run and succeed) is being created, each
/// create slowed by 10 ms; once 60 pods exist the operator gets SIGTERM (its shutdown future
/// resolves): `run_with` returns Ok within 10 s. A second operator (its pod list pages slowly)
/// completes the job: 300 pods and 300 services, one uid each, POSTed once each over both
/// operators, no restart counted and never Restarting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_creating_300_replicas_exits_cleanly_and_the_next_operator_creates_each_child_once()
 {
    let _shared = shared().await;
    let c = cluster("sigterm-300", seed("sigterm-300")).await;
    if !c.simulated() {
        return eprintln!("skipped: slows creates and counts them (simulator only)");
    }
    let sim = c.sim();
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let svcs = WatchLog::<Service>::start(c.services(), "").await;
    let jobs = WatchLog::<TFJob>::start(c.jobs(), "").await;
    let ms = Duration::from_millis;
    sim.set_fault(FaultRule::latency(Some("create"), Some("pods"), ms(10)));
    sim.set_fault(FaultRule::latency(Some("create"), Some("services"), ms(10)));
    let first = c.operator(&[]).await;
    first.until_ready().await;
    let mut big = spec("big", &[("Worker", REPLICAS as i32, "Never")], 2.0);
    big["spec"]["successPolicy"] = json!("AllWorkers");
    c.create(big).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while pods.uids().len() < 60 {
        assert!(
            Instant::now() < deadline,
            "the first operator created too little"
        );
        tokio::time::sleep(ms(5)).await;
    }
    let at_sigterm = pods.uids().len();
    let agent = first.agent().to_string();
    let stopped = first.stop(EXIT).await;
    let at_exit = pods.uids().len();
    sim.set_fault(FaultRule::latency(Some("list"), Some("pods"), ms(300)));
    let second = c.operator(&[]).await;
    // Progress: workers succeeded, then the job.
    let left = |all: &[TFJob]| match all.first() {
        Some(job) if common::finished(job) => 0,
        Some(job) => 1 + REPLICAS - common::counts(job, ReplicaType::Worker).1 as usize,
        None => 2 + REPLICAS,
    };
    let finished =
        common::jobs_progressing(&c, Duration::from_secs(60), Duration::from_secs(15), left).await;
    sim.clear_faults();
    let requests = sim.requests();
    let writes = writes_of(&requests, OPERATOR_AGENT);
    eprintln!(
        "SIGTERM with {at_sigterm} pods, {at_exit} when {agent} returned ({stopped:?}); \
         operators' writes {}",
        breakdown(&writes)
    );

    let mut problems = Vec::new();
    match stopped {
        Ok((Ok(()), took)) => eprintln!("the first operator exited cleanly in {took:?}"),
        Ok((Err(e), _)) => problems.push(format!("the first operator failed: {e:#}")),
        Err(e) => problems.push(e),
    }
    match &finished {
        Ok(all) => {
            let job = &all[0];
            let ok = common::is(job, ConditionType::Succeeded)
                && restarts(job, ReplicaType::Worker) == 0
                && common::counts(job, ReplicaType::Worker).1 == REPLICAS as i32;
            if !ok {
                problems.push(format!("the job ended {}", status_line(job)));
            }
        }
        Err(all) => problems.push(format!(
            "the job did not finish within 60 s: {}",
            all.first().map(status_line).unwrap_or_default()
        )),
    }
    for (kind, uids) in [("pods", pods.uids()), ("services", svcs.uids())] {
        let twice: Vec<&String> = uids
            .iter()
            .filter(|(_, u)| u.len() > 1)
            .map(|(n, _)| n)
            .collect();
        if uids.len() != REPLICAS || !twice.is_empty() {
            problems.push(format!(
                "{} {kind}, {} of them with more than one uid, e.g. {:?}",
                uids.len(),
                twice.len(),
                &twice[..twice.len().min(5)]
            ));
        }
        let posted = writes.count(Some("create"), Some(kind));
        if posted != REPLICAS as u64 {
            problems.push(format!("{kind} were POSTed {posted} times, not {REPLICAS}"));
        }
    }
    let restarting = jobs
        .versions("big")
        .iter()
        .filter(|v| common::is(&v.obj, ConditionType::Restarting))
        .count();
    if restarting > 0 {
        problems.push(format!(
            "{restarting} recorded versions of the job were Restarting"
        ));
    }
    drop(second);
    assert!(
        problems.is_empty(),
        "{} problems: {problems:#?}",
        problems.len()
    );
}

/// A leader (`--leader-elect`), idle, gets SIGTERM while the API server answers none of its
/// requests (frozen: a hung API server, a partitioned node): `run_with` returns Ok within 10 s,
/// the lease left to expire (it still names the leader). Before, the release waited for an
/// answer for good (kube's client has no read timeout), past the kubelet's 30 s grace period.
#[tokio::test]
async fn a_leader_stopped_while_the_api_server_answers_nothing_exits_within_10s() {
    let _shared = shared().await;
    let c = cluster("sigterm-unanswered", seed("sigterm-unanswered")).await;
    if !c.simulated() {
        return eprintln!("skipped: freezes the operator's client (simulator only)");
    }
    let ns = c.namespace.clone();
    let lease = "sigterm-unanswered";
    let flags = [
        "--leader-elect",
        "--leader-election-namespace",
        &ns,
        "--leader-election-id",
        lease,
    ];
    let leader = c.operator(&flags).await;
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), &ns);
    let holder = |l: Option<&Lease>| l?.spec.as_ref()?.holder_identity.clone();
    let held_by = until(&leases, lease, "a leader", holder).await;
    leader.until_ready().await;

    c.sim().freeze_after_writes(leader.agent(), 0);
    let stopped = leader.stop(UNANSWERED_EXIT).await;
    c.sim().unfreeze();
    match stopped {
        Ok((Ok(()), took)) => eprintln!("the frozen leader exited cleanly in {took:?}"),
        Ok((Err(e), _)) => panic!("the frozen leader failed: {e:#}"),
        Err(e) => panic!("{e}"),
    }
    let now = leases.get(lease).await.expect("the lease");
    assert_eq!(
        holder(Some(&now)),
        Some(held_by),
        "the API server answered the frozen leader's release"
    );
}

/// An operator is SIGTERMed while its pass for a 3-worker job waits on a create the API server
/// never answers (its client frozen after its first write): `run_with` returns Ok within the
/// 30 s grace period, the pass cut short after 15 s (before, the drain waited for good). Once
/// the API server answers again, a second operator finishes the job (`AllWorkers`), each pod
/// created once.
#[tokio::test]
async fn a_pass_the_api_server_never_answers_is_cut_short_and_the_stop_ends_within_30s() {
    let _shared = shared().await;
    let c = cluster("sigterm-unanswered-pass", seed("sigterm-unanswered-pass")).await;
    if !c.simulated() {
        return eprintln!("skipped: freezes the operator's client (simulator only)");
    }
    let sim = c.sim();
    let pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let first = c.operator(&[]).await;
    first.until_ready().await;
    sim.freeze_after_writes(first.agent(), 1);
    let mut job = spec("unanswered", &[("Worker", 3, "Never")], 0.5);
    job["spec"]["successPolicy"] = json!("AllWorkers");
    c.create(job).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sim
        .requests()
        .0
        .keys()
        .any(|k| k.verb == "create" && k.user_agent == first.agent())
    {
        assert!(
            Instant::now() < deadline,
            "the first operator wrote nothing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopped = first.stop(GRACE).await;
    sim.unfreeze();
    match stopped {
        Ok((Ok(()), took)) => eprintln!("stopped with a pass unanswered in {took:?}"),
        Ok((Err(e), _)) => panic!("the first operator failed: {e:#}"),
        Err(e) => panic!("{e}"),
    }
    let _second = c.operator(&[]).await;
    c.until_condition("unanswered", ConditionType::Succeeded)
        .await;
    let twice: Vec<_> = pods
        .uids()
        .into_iter()
        .filter(|(_, u)| u.len() > 1)
        .collect();
    assert!(
        pods.uids().len() == 3 && twice.is_empty(),
        "pods: {:?}",
        pods.uids()
    );
}
