//! End to end: recovery (docs/behaviour.md §6.7) — whole-job restart under
//! `tfjob-operator.dev/restart-scope: Job` (every pod restarts together, old pods gone before
//! the next attempt's are made), Kubeflow's per-replica outcome without it, pods that cannot
//! start named in `Stuck` and ended by the startup deadline, finished work that stays
//! finished, and bad settings refused by field path. Pods are scripted, on both tiers.

use k8s_openapi::api::core::v1::Pod;
use kube::api::DeleteParams;
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};

use crate::support::{
    Recorder, TestCluster, condition, eventually, has_condition, job, reason_and_message,
    record_jobs, record_pods, restarts,
};

const SCOPE: &str = "tfjob-operator.dev/restart-scope";
const ATTEMPT: &str = "tfjob-operator.dev/restart-attempt";

fn annotated(mut job: Value, pairs: &[(&str, &str)]) -> Value {
    for (k, v) in pairs {
        job["metadata"]["annotations"][*k] = json!(v);
    }
    job
}

fn attempt_of(pod: &Pod) -> Option<&str> {
    pod.metadata
        .labels
        .as_ref()?
        .get(ATTEMPT)
        .map(String::as_str)
}

/// Two synchronous workers: worker 1 is killed (137) a second in, and worker 0 then exits 1,
/// as TensorFlow's collective health check makes it; their next pods run to success.
fn scripted_kill(c: &TestCluster, name: &str) {
    c.script_pod_in_turn(
        &format!("{name}-worker-1"),
        &[
            &[("run-seconds", "1"), ("exit-code", "137")],
            &[("run-seconds", "1")],
        ],
    );
    c.script_pod_in_turn(
        &format!("{name}-worker-0"),
        &[
            &[("run-seconds", "1.5"), ("exit-code", "1")],
            &[("run-seconds", "1")],
        ],
    );
}

#[tokio::test]
async fn whole_job_restart_restarts_every_pod_once_the_old_ones_are_gone_and_the_job_succeeds() {
    let c = TestCluster::start("wholejob").await;
    let (jobs, pods) = (record_jobs(&c).await, record_pods(&c, "sync").await);
    scripted_kill(&c, "sync");
    let spec = annotated(job("sync", &[("Worker", 2, "ExitCode")]), &[(SCOPE, "Job")]);
    c.create(spec).await;
    let done = c.until_condition("sync", ConditionType::Succeeded).await;

    let status = done.status.as_ref().unwrap();
    assert_eq!(
        status.restart_attempt,
        Some(1),
        "one fault, one job restart"
    );
    assert_eq!(
        restarts(&done, ReplicaType::Worker),
        Some(1),
        "counted once"
    );
    for worker in ["sync-worker-0", "sync-worker-1"] {
        assert_eq!(
            pods.uids_of(worker).len(),
            2,
            "{worker}: one pod per attempt"
        );
    }
    // The next attempt's pods appear only after every pod of the first attempt is gone, and
    // the kubelet never restarts them in place.
    let seen = pods.seen();
    let last_old = seen.iter().rposition(|p| attempt_of(p) == Some("0"));
    let first_new = seen.iter().position(|p| attempt_of(p) == Some("1"));
    assert!(
        last_old < first_new,
        "a new pod was made while an old one existed"
    );
    for p in seen.iter().filter(|p| attempt_of(p) == Some("1")) {
        let policy = p.spec.as_ref().and_then(|s| s.restart_policy.as_deref());
        assert_eq!(policy, Some("Never"));
    }
    // Restarting said why, then Running came back; never both at once.
    let versions: Vec<TFJob> = jobs.seen();
    let restarting = versions
        .iter()
        .find_map(|j| reason_and_message(j, ConditionType::Restarting))
        .expect("Restarting seen");
    assert_eq!(restarting.0, "TFJobRestarting");
    assert!(
        restarting.1.starts_with(
            "job sync is restarting because Worker replica(s) failed: every pod restarts as attempt 1; pod sync-worker-"
        ),
        "{}",
        restarting.1
    );
    for j in &versions {
        let both = condition(j, ConditionType::Running).is_some()
            && condition(j, ConditionType::Restarting).is_some();
        assert!(!both, "Running and Restarting both present");
    }
}

#[tokio::test]
async fn without_the_annotation_the_survivors_exit_fails_the_job_as_in_kubeflow() {
    let c = TestCluster::start("perreplica").await;
    let pods = record_pods(&c, "sync").await;
    scripted_kill(&c, "sync");
    c.create(job("sync", &[("Worker", 2, "ExitCode")])).await;
    let failed = c.until_condition("sync", ConditionType::Failed).await;

    // Worker 1's 137 is retried alone; worker 0's exit 1 is permanent: the job fails.
    assert_eq!(
        reason_and_message(&failed, ConditionType::Failed),
        Some((
            "TFJobFailed".into(),
            "job \"sync\" is failing because \"Worker\" replica(s) failed.".into()
        ))
    );
    assert_eq!(pods.uids_of("sync-worker-0").len(), 1);
    assert!(failed.status.unwrap().restart_attempt.is_none());
    assert!(pods.seen().iter().all(|p| attempt_of(p).is_none()));
}

#[tokio::test]
async fn a_pod_that_cannot_start_is_named_in_stuck_and_the_startup_deadline_fails_the_job() {
    let c = TestCluster::start("stuck").await;
    c.script_pod("late-worker-0", &[("never-start", "ImagePullBackOff")]);
    let spec = annotated(
        job("late", &[("Worker", 1, "Never")]),
        &[("tfjob-operator.dev/startup-deadline-seconds", "3")],
    );
    c.create(spec).await;
    let stuck = eventually("the Stuck condition", || async {
        let j = c.jobs().get("late").await.ok()?;
        reason_and_message(&j, ConditionType::Stuck)
    })
    .await;
    assert_eq!(stuck.0, "ImagePullBackOff");
    assert!(
        stuck
            .1
            .starts_with("pod late-worker-0: container tensorflow is waiting: ImagePullBackOff"),
        "{}",
        stuck.1
    );
    let failed = c.until_condition("late", ConditionType::Failed).await;
    let status = failed.status.as_ref().unwrap();
    let (start, end) = (
        status.start_time.as_ref().unwrap().0,
        status.completion_time.as_ref().unwrap().0,
    );
    let took = end.duration_since(start).as_secs_f64();
    assert!(
        (3.0..=5.0).contains(&took),
        "failed {took} s after its start"
    );
    let (_, message) = reason_and_message(&failed, ConditionType::Failed).unwrap();
    assert!(
        message.starts_with(
            "Job late has failed because not every replica was running within 3 s of its (re)start"
        ) && message.contains(
            "pod late-worker-0 is not running: container tensorflow is waiting: ImagePullBackOff"
        ),
        "{message}"
    );
    assert!(
        !has_condition(&failed, ConditionType::Stuck),
        "a finished job is not stuck"
    );
    c.until_gone(&c.pods(), "late-worker-0", "the late pod deleted")
        .await;
}

#[tokio::test]
async fn a_succeeded_worker_whose_pod_is_deleted_is_not_run_again() {
    let c = TestCluster::start("finished").await;
    let pods: Recorder<Pod> = record_pods(&c, "done").await;
    c.script_pod("done-chief-0", &[("run-seconds", "6")]);
    c.script_pod("done-worker-1", &[("run-seconds", "0.5")]);
    c.script_pod("done-worker-0", &[("run-seconds", "30")]);
    c.create(job(
        "done",
        &[("Chief", 1, "OnFailure"), ("Worker", 2, "OnFailure")],
    ))
    .await;
    c.until_pod_phase("done-worker-1", "Succeeded").await;
    eventually("completedIndexes 1", || async {
        let j = c.jobs().get("done").await.ok()?;
        let workers = j
            .status?
            .replica_statuses
            .get(&ReplicaType::Worker)
            .cloned()?;
        (workers.completed_indexes.as_deref() == Some("1")).then_some(())
    })
    .await;
    c.pods()
        .delete("done-worker-1", &DeleteParams::default())
        .await
        .unwrap();
    let done = c.until_condition("done", ConditionType::Succeeded).await;
    assert_eq!(pods.uids_of("done-worker-1").len(), 1, "run again");
    assert_eq!(
        restarts(&done, ReplicaType::Worker),
        None,
        "counted as a restart"
    );
    let workers = &done.status.as_ref().unwrap().replica_statuses[&ReplicaType::Worker];
    assert_eq!(workers.completed_indexes.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_bad_recovery_setting_fails_the_job_naming_the_annotation() {
    let c = TestCluster::start("badsetting").await;
    let spec = annotated(job("bad", &[("Worker", 1, "Never")]), &[(SCOPE, "Jobs")]);
    c.create(spec).await;
    let failed = c.until_condition("bad", ConditionType::Failed).await;
    assert_eq!(
        reason_and_message(&failed, ConditionType::Failed),
        Some((
            "TFJobFailedValidation".into(),
            "metadata.annotations[tfjob-operator.dev/restart-scope]: Unsupported value: \"Jobs\": supported values: \"Job\", \"Replica\"".into()
        ))
    );
    assert!(c.pod_names("bad").await.is_empty());
}

#[tokio::test]
async fn on_failure_one_workers_exit_is_one_whole_job_restart_not_one_per_worker() {
    let c = TestCluster::start("onfailure-job").await;
    let pods = record_pods(&c, "once").await;
    c.script_pod_in_turn(
        "once-worker-1",
        &[
            &[("run-seconds", "1"), ("exit-code", "1")],
            &[("run-seconds", "1")],
        ],
    );
    c.script_pod_in_turn(
        "once-worker-0",
        &[
            &[("run-seconds", "1.5"), ("exit-code", "1")],
            &[("run-seconds", "1")],
        ],
    );
    let spec = annotated(
        job("once", &[("Worker", 2, "OnFailure")]),
        &[(SCOPE, "Job")],
    );
    c.create(spec).await;
    let done = c.until_condition("once", ConditionType::Succeeded).await;
    assert_eq!(done.status.as_ref().unwrap().restart_attempt, Some(1));
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(1));
    // Pods of this mode are never restarted in place: every exit is the operator's to see.
    for p in pods.seen() {
        let restarted = p
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .any(|s| s.restart_count > 0);
        assert!(!restarted, "{:?} restarted in place", p.metadata.name);
    }
}

#[tokio::test]
async fn a_pod_deleted_mid_training_restarts_the_whole_job_once() {
    let c = TestCluster::start("deleted-job").await;
    let pods = record_pods(&c, "pre").await;
    for w in ["pre-worker-0", "pre-worker-1"] {
        c.script_pod_in_turn(w, &[&[("run-seconds", "3600")], &[("run-seconds", "1")]]);
    }
    let spec = annotated(job("pre", &[("Worker", 2, "Never")]), &[(SCOPE, "Job")]);
    c.create(spec).await;
    c.until_condition("pre", ConditionType::Running).await;
    c.until_pod_phase("pre-worker-1", "Running").await;
    c.pods()
        .delete("pre-worker-1", &DeleteParams::default())
        .await
        .unwrap();
    let done = c.until_condition("pre", ConditionType::Succeeded).await;
    assert_eq!(done.status.as_ref().unwrap().restart_attempt, Some(1));
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(1));
    assert_eq!(
        pods.uids_of("pre-worker-0").len(),
        2,
        "worker 0 restarted with it"
    );
}

#[tokio::test]
async fn suspending_during_a_restart_stops_it_and_resuming_runs_the_job_to_the_end() {
    let c = TestCluster::start("suspend-restart").await;
    // Two faults: the second restart waits its 10 s backoff, during which the job is
    // suspended; resumed, its pods come back as attempt 2 and succeed.
    c.script_pod_in_turn(
        "pause-worker-1",
        &[
            &[("run-seconds", "0.5"), ("exit-code", "137")],
            &[("run-seconds", "0.5"), ("exit-code", "137")],
            &[("run-seconds", "1")],
        ],
    );
    c.script_pod_in_turn(
        "pause-worker-0",
        &[
            &[("run-seconds", "3600")],
            &[("run-seconds", "3600")],
            &[("run-seconds", "1")],
        ],
    );
    let spec = annotated(
        job("pause", &[("Worker", 2, "ExitCode")]),
        &[(SCOPE, "Job")],
    );
    c.create(spec).await;
    eventually("the second restart", || async {
        let j = c.jobs().get("pause").await.ok()?;
        (j.status?.restart_attempt == Some(2)).then_some(())
    })
    .await;
    c.merge_patch_job("pause", json!({"spec": {"runPolicy": {"suspend": true}}}))
        .await;
    let suspended = c.until_condition("pause", ConditionType::Suspended).await;
    assert!(!has_condition(&suspended, ConditionType::Restarting));
    c.until_pods_are("pause", &[]).await;
    c.merge_patch_job("pause", json!({"spec": {"runPolicy": {"suspend": false}}}))
        .await;
    let done = c.until_condition("pause", ConditionType::Succeeded).await;
    assert_eq!(done.status.as_ref().unwrap().restart_attempt, Some(2));
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(2));
}

#[tokio::test]
async fn a_pod_no_node_fits_is_named_in_stuck_with_the_schedulers_words() {
    let c = TestCluster::start("unschedulable").await;
    let mut spec = job("nofit", &[("Worker", 1, "Never")]);
    spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] =
        json!({"kubernetes.io/hostname": "no-such-node"});
    c.create(spec).await;
    let (reason, message) = eventually("the Stuck condition", || async {
        let j = c.jobs().get("nofit").await.ok()?;
        reason_and_message(&j, ConditionType::Stuck)
    })
    .await;
    assert_eq!(reason, "Unschedulable");
    assert!(
        message.starts_with("pod nofit-worker-0: Unschedulable: 0/")
            && message.contains("node(s) didn't match Pod's node affinity/selector"),
        "{message}"
    );
    let job = c.jobs().get("nofit").await.unwrap();
    let last = job.status.unwrap().conditions.last().map(|c| c.type_);
    assert_eq!(
        last,
        Some(ConditionType::Stuck),
        "kubectl get shows State Stuck"
    );
}
