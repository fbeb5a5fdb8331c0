//! End to end: the failure and success policies (docs/behaviour.md §6.3, §6.8, §7.3) — an
//! eviction through the Eviction API restarted without charging the restart budget (per
//! replica, and as one whole-job restart), a failure rule failing the job at once, success
//! that waits for the evaluator (and, without the opt-in, does not), and `cleanPodPolicy:
//! None` keeping every pod when the backoff limit fails the job. Pods are scripted, on both
//! tiers; evictions go through the API server's Eviction API on both.

use kube::api::EvictParams;
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionType, ReplicaStatus, ReplicaType, TFJob};

use crate::support::{
    TestCluster, eventually, has_condition, job, reason_and_message, record_pods, settle,
};

fn annotated(mut job: Value, pairs: &[(&str, &str)]) -> Value {
    for (k, v) in pairs {
        job["metadata"]["annotations"][*k] = json!(v);
    }
    job
}

fn workers(job: &TFJob) -> ReplicaStatus {
    let statuses = &job.status.as_ref().expect("status").replica_statuses;
    statuses
        .get(&ReplicaType::Worker)
        .map(|s| (**s).clone())
        .unwrap_or_default()
}

/// Evicts pod `name` once it runs.
async fn evict_when_running(c: &TestCluster, name: &str) {
    c.until_pod_phase(name, "Running").await;
    c.pods()
        .evict(name, &EvictParams::default())
        .await
        .expect("the Eviction API");
}

/// Two workers that must both succeed; worker 1 runs until it is evicted, its replacement
/// for a second; worker 0 for six.
fn evicted_pair(c: &TestCluster, name: &str) -> Value {
    c.script_pod_in_turn(
        &format!("{name}-worker-1"),
        &[&[("run-seconds", "3600")], &[("run-seconds", "1")]],
    );
    c.script_pod(&format!("{name}-worker-0"), &[("run-seconds", "6")]);
    let mut spec = job(name, &[("Worker", 2, "ExitCode")]);
    spec["spec"]["successPolicy"] = json!("AllWorkers");
    spec
}

#[tokio::test]
async fn an_eviction_is_restarted_without_charging_backoff_limit() {
    let c = TestCluster::start("evict-replica").await;
    let pods = record_pods(&c, "ev").await;
    let mut spec = evicted_pair(&c, "ev");
    spec["spec"]["runPolicy"] = json!({"backoffLimit": 0});
    c.create(spec).await;
    evict_when_running(&c, "ev-worker-1").await;
    let done = c.until_condition("ev", ConditionType::Succeeded).await;
    let w = workers(&done);
    assert_eq!((w.restarts, w.uncharged_restarts), (None, Some(1)));
    assert_eq!(pods.uids_of("ev-worker-1").len(), 2, "recreated once");
    // (events are published behind the passes: waited for, not read once)
    c.until_event(
        "ev",
        "RestartNotCharged",
        "pod ev-worker-1 was disrupted (EvictionByEvictionAPI): a disruption, not charged",
    )
    .await;
}

#[tokio::test]
async fn a_whole_job_restart_for_an_eviction_is_not_charged() {
    let c = TestCluster::start("evict-whole").await;
    let spec = annotated(
        evicted_pair(&c, "ew"),
        &[
            ("tfjob-operator.dev/restart-scope", "Job"),
            ("tfjob-operator.dev/max-job-restarts", "0"),
        ],
    );
    // Every pod of the next attempt runs a second.
    c.script_pod_in_turn(
        "ew-worker-0",
        &[&[("run-seconds", "3600")], &[("run-seconds", "1")]],
    );
    c.create(spec).await;
    evict_when_running(&c, "ew-worker-1").await;
    let done = c.until_condition("ew", ConditionType::Succeeded).await;
    assert_eq!(done.status.as_ref().unwrap().restart_attempt, Some(1));
    let w = workers(&done);
    assert_eq!((w.restarts, w.uncharged_restarts), (None, Some(1)));
}

#[tokio::test]
async fn a_failure_rule_fails_the_job_on_the_ps_exit_code_at_once() {
    let c = TestCluster::start("rule-ps").await;
    let pods = record_pods(&c, "rp").await;
    c.script_pod("rp-ps-0", &[("run-seconds", "1"), ("exit-code", "3")]);
    c.script_pod("rp-worker-0", &[("run-seconds", "3600")]);
    let rules = "- {replicaTypes: [PS], exitCodes: [3], action: FailJob}\n\
                 - {exitCodes: [137], action: RestartReplica}\n";
    let spec = annotated(
        job("rp", &[("PS", 1, "OnFailure"), ("Worker", 1, "OnFailure")]),
        &[("tfjob-operator.dev/failure-rules", rules)],
    );
    c.create(spec).await;
    let failed = c.until_condition("rp", ConditionType::Failed).await;
    assert_eq!(
        reason_and_message(&failed, ConditionType::Failed),
        Some((
            "TFJobFailed".into(),
            "TFJob ".to_string()
                + &c.namespace
                + "/rp has failed because PS replica(s) failed: pod rp-ps-0 exited with code 3 (Error) \
                   (tfjob-operator.dev/failure-rules[0]: FailJob)"
        ))
    );
    assert_eq!(pods.uids_of("rp-ps-0").len(), 1, "never restarted");
    let ps = c.until_pod_phase("rp-ps-0", "Failed").await;
    let policy = ps.spec.as_ref().and_then(|s| s.restart_policy.as_deref());
    assert_eq!(
        policy,
        Some("Never"),
        "with rules the kubelet never restarts in place"
    );
}

/// A chief done after a second and an evaluator that runs four more.
fn evaluated(c: &TestCluster, name: &str, wait: Option<&str>) -> Value {
    c.script_pod(&format!("{name}-chief-0"), &[("run-seconds", "1")]);
    c.script_pod(&format!("{name}-evaluator-0"), &[("run-seconds", "5")]);
    let spec = job(
        name,
        &[("Chief", 1, "ExitCode"), ("Evaluator", 1, "ExitCode")],
    );
    let pairs: Vec<(&str, &str)> = wait
        .map(|w| ("tfjob-operator.dev/wait-for-evaluator-seconds", w))
        .into_iter()
        .collect();
    annotated(spec, &pairs)
}

#[tokio::test]
async fn success_waits_for_the_evaluator_with_the_opt_in_and_not_without() {
    let c = TestCluster::start("evaluator").await;
    c.create(evaluated(&c, "ev-wait", Some("60"))).await;
    c.create(evaluated(&c, "ev-cut", None)).await;

    let cut = c.until_condition("ev-cut", ConditionType::Succeeded).await;
    c.until_gone(&c.pods(), "ev-cut-evaluator-0", "the evaluator cut short")
        .await;
    let running = c.jobs().get("ev-wait").await.unwrap();
    assert!(
        !has_condition(&running, ConditionType::Succeeded),
        "ev-wait succeeded with its chief"
    );
    let done = c.until_condition("ev-wait", ConditionType::Succeeded).await;
    let evaluator = c.until_pod_phase("ev-wait-evaluator-0", "Succeeded").await;
    let ended = evaluator
        .status
        .as_ref()
        .and_then(|s| {
            s.container_statuses
                .as_ref()?
                .first()?
                .state
                .clone()?
                .terminated
        })
        .and_then(|t| t.finished_at)
        .expect("the evaluator's end");
    let succeeded = done
        .status
        .as_ref()
        .unwrap()
        .completion_time
        .clone()
        .unwrap();
    assert!(
        succeeded.0 >= ended.0,
        "succeeded at {succeeded:?}, before the evaluator ended"
    );
    let first = cut
        .status
        .as_ref()
        .unwrap()
        .completion_time
        .clone()
        .unwrap();
    assert!(succeeded.0 > first.0, "the wait made no difference");
}

#[tokio::test]
async fn clean_pod_policy_none_keeps_every_pod_when_the_backoff_limit_fails_the_job() {
    let c = TestCluster::start("keep-pods").await;
    c.script_pod("kp-worker-0", &[("run-seconds", "3600")]);
    c.script_pod("kp-worker-1", &[("run-seconds", "1"), ("exit-code", "137")]);
    let mut spec = job("kp", &[("Worker", 2, "ExitCode")]);
    spec["spec"]["runPolicy"] = json!({"backoffLimit": 1, "cleanPodPolicy": "None"});
    c.create(spec).await;
    let failed = c.until_condition("kp", ConditionType::Failed).await;
    let (_, message) = reason_and_message(&failed, ConditionType::Failed).unwrap();
    assert_eq!(
        message,
        "Job kp has failed because it has reached the specified backoff limit"
    );
    settle().await;
    let kept = eventually("both pods kept", || async {
        let names = c.pod_names("kp").await;
        (names == ["kp-worker-0", "kp-worker-1"]).then_some(names)
    })
    .await;
    for name in kept {
        let pod = c.pods().get(&name).await.unwrap();
        assert!(
            pod.metadata.deletion_timestamp.is_none(),
            "{name} is being deleted"
        );
    }
}
