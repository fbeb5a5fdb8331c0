//! End to end: the job's lifecycle (docs/behaviour.md §3 managedBy, §6.2 scaling, §6.3 cleanup, §6.5
//! deadline and TTL, §6.6 suspend/resume) and the operator's quiet once a job has settled,
//! the real controller against the simulator (or a real cluster via KUBECONFIG).

use std::time::Duration;

use crate::support::{
    Requests, TestCluster, annotate, condition, has_condition, job, true_conditions, until,
};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tfjob_operator::crd::{ConditionStatus, ConditionType, ReplicaType, TFJob};

/// A pod that runs for an hour: the job stays busy until the test acts on it.
const LONG: &str = "3600";
const RUN: &str = "sim.tfjob.dev/run-seconds";

fn seconds_between(from: Timestamp, to: Timestamp) -> f64 {
    to.duration_since(from).as_secs_f64()
}

#[tokio::test]
async fn active_deadline_fails_the_job_on_time_and_deletes_its_unfinished_pods() {
    let c = TestCluster::start("deadline").await;
    let mut spec = job("dl", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", RUN, LONG);
    annotate(&mut spec, "Worker", RUN, LONG);
    spec["spec"]["runPolicy"] = json!({"activeDeadlineSeconds": 2});
    c.create(spec).await;
    // Nothing else happens to this job once its pods run: only the timer can fail it.
    let job = c.until_condition("dl", ConditionType::Failed).await;
    let failed = condition(&job, ConditionType::Failed).unwrap();
    assert_eq!(failed.reason.as_deref(), Some("TFJobFailed"));
    assert_eq!(
        failed.message.as_deref(),
        Some("Job dl has failed because it was active longer than specified deadline")
    );
    let status = job.status.as_ref().unwrap();
    let start = status.start_time.as_ref().unwrap().0;
    let fired = failed.last_transition_time.as_ref().unwrap().0;
    let late = seconds_between(start + SignedDuration::from_secs(2), fired);
    // Times are stored with whole seconds; the operator requeues for the exact moment.
    assert!(
        (0.0..=1.5).contains(&late),
        "deadline fired {late}s after startTime+2s (start {start}, failed {fired})"
    );
    assert!(!has_condition(&job, ConditionType::Running));
    assert!(status.completion_time.is_some());
    // Unfinished pods go whatever the cleanPodPolicy, with their services.
    for name in ["dl-ps-0", "dl-worker-0", "dl-worker-1"] {
        c.until_gone(&c.pods(), name, "pod deleted").await;
        c.until_gone(&c.services(), name, "service deleted").await;
    }
}

#[tokio::test]
async fn the_deadline_clock_stops_while_suspended_and_restarts_on_resume() {
    let c = TestCluster::start("deadline-suspended").await;
    let mut spec = job("ds", &[("Worker", 1, "Never")]);
    annotate(&mut spec, "Worker", RUN, LONG);
    spec["spec"]["runPolicy"] = json!({"activeDeadlineSeconds": 1, "suspend": true});
    c.create(spec).await;
    c.until_condition("ds", ConditionType::Suspended).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let job = c.jobs().get("ds").await.unwrap();
    assert_eq!(
        true_conditions(&job),
        [ConditionType::Created, ConditionType::Suspended]
    );

    let before_resume = Timestamp::now() - SignedDuration::from_secs(1);
    c.merge_patch_job("ds", json!({"spec": {"runPolicy": {"suspend": false}}}))
        .await;
    let job = c.until_condition("ds", ConditionType::Failed).await;
    let failed = condition(&job, ConditionType::Failed).unwrap();
    assert_eq!(
        failed.message.as_deref(),
        Some("Job ds has failed because it was active longer than specified deadline")
    );
    let start = job.status.as_ref().unwrap().start_time.as_ref().unwrap().0;
    assert!(
        start >= before_resume,
        "startTime {start} not reset on resume"
    );
    let fired = failed.last_transition_time.clone().unwrap().0;
    let late = seconds_between(start + SignedDuration::from_secs(1), fired);
    assert!((0.0..=1.5).contains(&late), "deadline fired {late}s late");
}

#[tokio::test]
async fn ttl_deletes_the_finished_job_and_its_children_follow_by_garbage_collection() {
    use futures::StreamExt;
    use kube::runtime::watcher::{self, Event, watcher};

    let c = TestCluster::start("ttl").await;
    // Watched, not polled: the job may live only a moment after completion, and a poll
    // under load could miss that moment.
    let mut changes = watcher(
        c.jobs(),
        watcher::Config::default().fields("metadata.name=ttl"),
    )
    .boxed();
    while !matches!(changes.next().await, Some(Ok(Event::InitDone))) {}
    let mut spec = job("ttl", &[("Worker", 1, "Never")]);
    spec["spec"]["runPolicy"] = json!({"ttlSecondsAfterFinished": 1});
    c.create(spec).await;
    let mut completion = None;
    let gone_at = tokio::time::timeout(crate::support::WAIT, async {
        while let Some(change) = changes.next().await {
            match change.expect("watching the TFJob") {
                Event::Apply(j) if j.metadata.deletion_timestamp.is_some() => break,
                Event::Apply(j) if has_condition(&j, ConditionType::Succeeded) => {
                    // Seen present and Succeeded after completion: the TTL counts from here.
                    completion = j.status.and_then(|s| s.completion_time);
                }
                Event::Delete(_) => break,
                _ => {}
            }
        }
        Timestamp::now()
    })
    .await
    .expect("the TFJob was not deleted by its TTL");
    let completion = completion.expect("the TFJob was never seen Succeeded").0;
    let after = seconds_between(completion, gone_at);
    // completionTime is truncated to the second, hence up to 1 s of slack below the TTL.
    assert!(
        (1.0..=4.0).contains(&after),
        "TFJob deleted {after}s after completionTime"
    );
    assert!(c.jobs().get_opt("ttl").await.unwrap().is_none());
    until(&c.pods(), "ttl-worker-0", "pod garbage-collected", |p| {
        p.is_none().then_some(())
    })
    .await;
    until(
        &c.services(),
        "ttl-worker-0",
        "service garbage-collected",
        |s| s.is_none().then_some(()),
    )
    .await;
    c.until_event_reason("ttl", "SuccessfulDeleteJob").await;
}

/// A job with a PS running for an hour and two workers that succeed, under `policy` (None:
/// the default); after success exactly the pods and services named in `left` remain.
async fn clean_pod_policy_case(test: &str, policy: Option<&str>, left: &[&str]) {
    let c = TestCluster::start(test).await;
    let mut spec = job("cp", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", RUN, LONG);
    // Worker 0 decides success: it finishes last, so worker 1 is a finished pod by then.
    c.script_pod("cp-worker-0", &[("run-seconds", "1")]);
    if let Some(policy) = policy {
        spec["spec"]["runPolicy"] = json!({"cleanPodPolicy": policy});
    }
    c.create(spec).await;
    c.until_condition("cp", ConditionType::Succeeded).await;
    let left: Vec<String> = left.iter().map(|s| format!("cp-{s}")).collect();
    let all = ["cp-ps-0", "cp-worker-0", "cp-worker-1"];
    for name in all.iter().filter(|n| !left.contains(&n.to_string())) {
        c.until_gone(&c.pods(), name, "pod deleted").await;
        c.until_gone(&c.services(), name, "service deleted").await;
    }
    // What stays must still be there once the operator had time to do more.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(c.pod_names("cp").await, left, "pods left under {policy:?}");
    assert_eq!(
        c.service_names("cp").await,
        left,
        "services left under {policy:?}"
    );
}

#[tokio::test]
async fn clean_pod_policy_all_deletes_every_pod_and_service_after_success() {
    clean_pod_policy_case("clean-all", Some("All"), &[]).await;
}

#[tokio::test]
async fn clean_pod_policy_running_deletes_the_running_ps_and_keeps_finished_workers() {
    clean_pod_policy_case("clean-running", Some("Running"), &["worker-0", "worker-1"]).await;
}

#[tokio::test]
async fn clean_pod_policy_none_deletes_nothing() {
    clean_pod_policy_case(
        "clean-none",
        Some("None"),
        &["ps-0", "worker-0", "worker-1"],
    )
    .await;
}

#[tokio::test]
async fn clean_pod_policy_defaults_to_running() {
    clean_pod_policy_case("clean-default", None, &["worker-0", "worker-1"]).await;
}

fn condition_is(job: &TFJob, t: ConditionType, status: ConditionStatus, reason: &str) -> bool {
    condition(job, t).is_some_and(|c| c.status == status && c.reason.as_deref() == Some(reason))
}

/// How many times an event of `reason` was recorded about job `name` (a repeated event is one
/// object with a series count: kube's recorder folds repeats into it).
async fn event_count(c: &TestCluster, name: &str, reason: &str) -> i32 {
    let api: kube::Api<k8s_openapi::api::events::v1::Event> =
        kube::Api::namespaced(c.client.clone(), &c.namespace);
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum()
}

#[tokio::test]
async fn a_job_created_suspended_gets_nothing_until_resumed_then_runs_to_success() {
    let c = TestCluster::start("suspend-create").await;
    let mut spec = job("sc", &[("Worker", 1, "Never")]);
    spec["spec"]["runPolicy"] = json!({"suspend": true});
    c.create(spec).await;
    let job = c.until_condition("sc", ConditionType::Suspended).await;
    let suspended = condition(&job, ConditionType::Suspended).unwrap();
    assert_eq!(suspended.reason.as_deref(), Some("TFJobSuspended"));
    assert_eq!(suspended.message.as_deref(), Some("TFJob sc is suspended."));
    // Observe a while: still no children and no startTime.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let job = c.jobs().get("sc").await.unwrap();
    assert!(job.status.as_ref().unwrap().start_time.is_none());
    assert!(c.pod_names("sc").await.is_empty());
    assert!(c.service_names("sc").await.is_empty());

    let before_resume = Timestamp::now() - SignedDuration::from_secs(1);
    c.merge_patch_job("sc", json!({"spec": {"runPolicy": {"suspend": false}}}))
        .await;
    let job = until(&c.jobs(), "sc", "Suspended=False TFJobResumed", |j| {
        j.filter(|j| {
            condition_is(
                j,
                ConditionType::Suspended,
                ConditionStatus::False,
                "TFJobResumed",
            )
        })
        .cloned()
    })
    .await;
    let resumed = condition(&job, ConditionType::Suspended).unwrap();
    assert_eq!(resumed.message.as_deref(), Some("TFJob sc is resumed."));
    let start = job.status.as_ref().unwrap().start_time.as_ref().unwrap().0;
    assert!(
        start >= before_resume,
        "startTime {start} predates the resume"
    );
    until(&c.pods(), "sc-worker-0", "pod created after resume", |p| {
        p.cloned()
    })
    .await;
    c.until_condition("sc", ConditionType::Succeeded).await;
    assert_eq!(event_count(&c, "sc", "TFJobSuspended").await, 1);
    assert_eq!(event_count(&c, "sc", "TFJobResumed").await, 1);
}

#[tokio::test]
async fn suspending_a_running_job_deletes_its_children_and_resume_uses_the_edited_templates() {
    let c = TestCluster::start("suspend-running").await;
    let mut spec = job("sr", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", RUN, LONG);
    annotate(&mut spec, "Worker", RUN, LONG);
    c.create(spec).await;
    c.until_condition("sr", ConditionType::Running).await;
    let status = c.jobs().get("sr").await.unwrap().status.unwrap();
    let first_start = status.start_time.unwrap();

    c.merge_patch_job("sr", json!({"spec": {"runPolicy": {"suspend": true}}}))
        .await;
    let names = ["sr-ps-0", "sr-worker-0", "sr-worker-1"];
    for name in names {
        c.until_gone(&c.pods(), name, "pod deleted on suspend")
            .await;
        c.until_gone(&c.services(), name, "service deleted on suspend")
            .await;
    }
    let job = until(&c.jobs(), "sr", "suspended with no active pods", |j| {
        j.filter(|j| has_condition(j, ConditionType::Suspended))
            .filter(|j| {
                j.status
                    .as_ref()
                    .unwrap()
                    .replica_statuses
                    .values()
                    .all(|r| r.active.unwrap_or(0) == 0)
            })
            .cloned()
    })
    .await;
    assert!(condition_is(
        &job,
        ConditionType::Running,
        ConditionStatus::False,
        "TFJobSuspended"
    ));
    assert_eq!(
        condition(&job, ConditionType::Running)
            .unwrap()
            .message
            .as_deref(),
        Some("TFJob sr is suspended.")
    );

    // Kueue edits templates while a job is suspended: the new pods must carry the edit (and
    // the workers now finish quickly, so the job can succeed).
    c.merge_patch_job(
        "sr",
        json!({"spec": {"tfReplicaSpecs": {"Worker": {"template": {"metadata": {"annotations": {
            "e2e.tfjob.dev/edited": "while-suspended", RUN: "0.3"
        }}}}}}}),
    )
    .await;
    // Worker 0 decides success: it finishes last, so worker 1 is finished (and kept) by then.
    c.script_pod("sr-worker-0", &[("run-seconds", "1")]);
    // Nothing comes back while suspended, whatever the operator sees meanwhile.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(c.pod_names("sr").await.is_empty());
    assert!(c.service_names("sr").await.is_empty());
    // Times are stored in whole seconds: one second of slack.
    let before_resume = Timestamp::now() - SignedDuration::from_secs(1);
    assert!(
        first_start.0 < before_resume,
        "the job ran too briefly to tell"
    );
    c.merge_patch_job("sr", json!({"spec": {"runPolicy": {"suspend": false}}}))
        .await;
    let pod: Pod = until(
        &c.pods(),
        "sr-worker-1",
        "worker recreated on resume",
        |p| p.cloned(),
    )
    .await;
    let annotations = pod.metadata.annotations.unwrap();
    assert_eq!(
        annotations.get("e2e.tfjob.dev/edited").map(String::as_str),
        Some("while-suspended")
    );
    until(&c.pods(), "sr-ps-0", "PS recreated on resume", |p| {
        p.cloned()
    })
    .await;
    let job = c.until_condition("sr", ConditionType::Succeeded).await;
    assert!(condition_is(
        &job,
        ConditionType::Suspended,
        ConditionStatus::False,
        "TFJobResumed"
    ));
    let restarted = job.status.as_ref().unwrap().start_time.as_ref().unwrap().0;
    assert!(
        restarted >= before_resume,
        "startTime {restarted} not reset on resume"
    );
    // The running PS goes with its service under the default cleanPodPolicy (on the pass after
    // the one that concluded); finished workers keep their (recreated) services.
    c.until_gone(&c.services(), "sr-ps-0", "PS service deleted")
        .await;
    assert_eq!(c.service_names("sr").await, ["sr-worker-0", "sr-worker-1"]);
    assert_eq!(event_count(&c, "sr", "TFJobSuspended").await, 1);
    assert_eq!(event_count(&c, "sr", "TFJobResumed").await, 1);
}

#[tokio::test]
async fn a_job_managed_by_multikueue_is_left_alone_and_unknown_managers_are_refused() {
    let c = TestCluster::start("managed-by").await;
    let mut bad = job("other", &[("Worker", 1, "Never")]);
    bad["spec"]["runPolicy"] = json!({"managedBy": "example.com/my-controller"});
    let bad: TFJob = serde_json::from_value(bad).unwrap();
    match c.jobs().create(&Default::default(), &bad).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 422, "{s:?}"),
        other => panic!("an unknown managedBy must be refused at admission: {other:?}"),
    }
    if !c.counts_requests() {
        return eprintln!("skipped the rest: needs request counts (simulator or audit log)");
    }

    let mut spec = job("mk", &[("Worker", 1, "Never")]);
    spec["spec"]["runPolicy"] = json!({"managedBy": "kueue.x-k8s.io/multikueue"});
    let spec: TFJob = serde_json::from_value(spec).unwrap();
    let before = c.mark();
    c.test_jobs()
        .await
        .create(&Default::default(), &spec)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let during = c.operator_requests_since(&before);
    assert_eq!(during.writes(), 0, "operator wrote: {during:#?}");
    // The operator is alive and watching: a job of its own beside it runs.
    c.create(job("own", &[("Worker", 1, "Never")])).await;
    c.until_condition("own", ConditionType::Succeeded).await;
    let mk = c.jobs().get("mk").await.unwrap();
    assert_eq!(mk.status, None);
    assert!(c.pod_names("mk").await.is_empty());
    assert!(c.service_names("mk").await.is_empty());
}

#[tokio::test]
async fn scaling_workers_up_and_down_adds_and_removes_children_without_failing() {
    let c = TestCluster::start("scale").await;
    let mut spec = job("sc", &[("Worker", 2, "Never")]);
    annotate(&mut spec, "Worker", RUN, LONG);
    c.create(spec).await;
    c.until_condition("sc", ConditionType::Running).await;
    let worker0 = until(&c.pods(), "sc-worker-0", "worker 0", |p| p.cloned()).await;
    until(&c.pods(), "sc-worker-1", "worker 1", |p| p.cloned()).await;

    let replicas = |n: i32| json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": n}}}});
    c.merge_patch_job("sc", replicas(3)).await;
    until(&c.pods(), "sc-worker-2", "worker 2 pod", |p| p.cloned()).await;
    until(&c.services(), "sc-worker-2", "worker 2 service", |s| {
        s.cloned()
    })
    .await;

    c.merge_patch_job("sc", replicas(1)).await;
    for name in ["sc-worker-1", "sc-worker-2"] {
        c.until_gone(&c.pods(), name, "surplus pod deleted").await;
        c.until_gone(&c.services(), name, "surplus service deleted")
            .await;
    }
    // Give the operator time to (wrongly) count the deleted pods as failures.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let job = c.jobs().get("sc").await.unwrap();
    assert_eq!(
        true_conditions(&job),
        [ConditionType::Created, ConditionType::Running]
    );
    assert_eq!(c.pod_names("sc").await, ["sc-worker-0"]);
    assert_eq!(c.service_names("sc").await, ["sc-worker-0"]);
    let still = c.pods().get("sc-worker-0").await.unwrap();
    assert_eq!(
        still.metadata.uid, worker0.metadata.uid,
        "worker 0 was kept"
    );
    let workers = &job.status.unwrap().replica_statuses[&ReplicaType::Worker];
    assert_eq!(workers.failed.unwrap_or(0), 0);
}

/// Create `spec` and wait until its job settled (Succeeded, no pod left running or pending);
/// returns the operator's writes from creation to then.
async fn run_until_settled(c: &TestCluster, mut spec: serde_json::Value) -> Requests {
    let name = spec["metadata"]["name"].as_str().unwrap().to_string();
    crate::support::script::hold_templates(&mut spec);
    let spec: TFJob = serde_json::from_value(spec).unwrap();
    let before = c.mark();
    c.test_jobs()
        .await
        .create(&Default::default(), &spec)
        .await
        .unwrap();
    c.until_condition(&name, ConditionType::Succeeded).await;
    // (its event follows the status write: published behind the pass)
    c.until_event_reason(&name, "TFJobSucceeded").await;
    let lp =
        kube::api::ListParams::default().labels(&format!("training.kubeflow.org/job-name={name}"));
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    loop {
        let pods = c.pods().list(&lp).await.unwrap().items;
        let busy = pods.iter().any(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        });
        if !busy {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never settled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The audit log is written as requests complete: let the last ones land.
    tokio::time::sleep(Duration::from_millis(200)).await;
    c.operator_requests_since(&before)
}

/// The operator's writes in `requests`, by verb and resource.
fn write_breakdown(requests: &Requests) -> String {
    let writes: Vec<String> = requests
        .0
        .iter()
        .filter(|((verb, _), _)| verb != "get" && verb != "list")
        .map(|((verb, resource), n)| format!("{verb} {resource}: {n}"))
        .collect();
    writes.join(", ")
}

#[tokio::test]
async fn a_settled_job_causes_no_further_api_writes() {
    let c = TestCluster::start("quiet").await;
    if !c.counts_requests() {
        return eprintln!("skipped: needs request counts (simulator or audit log)");
    }
    let mut small = job("small", &[("PS", 1, "Never"), ("Worker", 1, "Never")]);
    annotate(&mut small, "PS", RUN, LONG);
    let mut big = job("big", &[("Worker", 100, "Never")]);
    // Worker 0 finishes last, so every worker's outcome is counted before success.
    c.script_pod("big-worker-0", &[("run-seconds", "1.5")]);
    big["metadata"]["name"] = json!("big");
    for (spec, label, replicas) in [(small, "1 PS + 1 Worker", 2), (big, "100 Workers", 100)] {
        let writes = run_until_settled(&c, spec).await;
        // Every child is created once: a lagging cache never makes the operator create again.
        for resource in ["pods", "services"] {
            let creates = writes.count(Some("create"), Some(resource));
            assert_eq!(
                creates,
                replicas,
                "{resource} creates for {label}: {}",
                write_breakdown(&writes)
            );
        }
        // One event per kind of action and pass, not one per child (docs/behaviour.md §9):
        // a handful for the whole life of either job.
        let events = writes.count(Some("create"), Some("events"))
            + writes.count(Some("patch"), Some("events"));
        assert!(
            events <= 10,
            "{events} event writes for {label}: {}",
            write_breakdown(&writes)
        );
        eprintln!(
            "API writes by the operator, creation to settled, {label}: {} ({})",
            writes.writes(),
            write_breakdown(&writes)
        );
        let settled = c.mark();
        // Long enough for the caches to deliver every late event of the cleanup.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = c.operator_requests_since(&settled);
        assert_eq!(
            after.writes(),
            0,
            "writes after {label} settled: {}",
            write_breakdown(&after)
        );
    }
}
