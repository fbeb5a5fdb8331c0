//! End to end: restarts (docs/behaviour.md §6.2, §6.4, §7.2) — kubelet restarts under OnFailure
//! (counted in `restarts`), ExitCode retryable and permanent codes, the backoff limit, pods
//! deleted from outside, and an operator restarted mid-job. Every test scripts pod
//! outcomes, so they run on the simulator only.

use crate::support::{
    Recorder, TestCluster, annotate, condition, eventually, has_condition, job, reason_and_message,
    record_jobs, record_pods, restarts, settle, until,
};
use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::DeleteParams;
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};

/// Every recorded version of TFJob `name`.
fn versions(jobs: &Recorder<TFJob>, name: &str) -> Vec<TFJob> {
    jobs.seen()
        .into_iter()
        .filter(|j| j.metadata.name.as_deref() == Some(name))
        .collect()
}

/// Contract §7.2: Running and Restarting are never both present, in any version seen.
fn assert_running_and_restarting_exclusive(jobs: &Recorder<TFJob>, name: &str) {
    for j in versions(jobs, name) {
        let both = condition(&j, ConditionType::Running).is_some()
            && condition(&j, ConditionType::Restarting).is_some();
        assert!(
            !both,
            "Running and Restarting both present: {:#?}",
            j.status.unwrap().conditions
        );
    }
}

/// Position of the first recorded version of `name` at or after `from` where `t` is True.
fn first_true(jobs: &[TFJob], from: usize, t: ConditionType) -> Option<usize> {
    (from..jobs.len()).find(|&i| has_condition(&jobs[i], t))
}

/// Wait until the watch saw pod `name` with phase `phase`; returns its UID. Used where the
/// operator may delete the pod right away, so a poll could miss the phase.
async fn until_seen_phase(pods: &Recorder<Pod>, name: &str, phase: &str) -> String {
    eventually(&format!("{name} seen {phase}"), || async {
        pods.seen().into_iter().find_map(|p| {
            let matches = p.metadata.name.as_deref() == Some(name)
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase);
            matches.then(|| p.metadata.uid.clone()).flatten()
        })
    })
    .await
}

fn tensorflow_restart_count(pod: &Pod) -> Option<i32> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|s| s.name == "tensorflow")
        .map(|s| s.restart_count)
}

#[tokio::test]
async fn on_failure_the_kubelet_restarts_the_container_in_place_and_the_job_succeeds() {
    let c = TestCluster::start("onfailure").await;
    let (jobs, pods) = (record_jobs(&c).await, record_pods(&c, "flaky").await);
    c.script_pod("flaky-worker-0", &[("fail-times", "2"), ("exit-code", "1")]);
    c.create(job("flaky", &[("Worker", 1, "OnFailure")])).await;
    let done = c.until_condition("flaky", ConditionType::Succeeded).await;

    let pod = c.pods().get("flaky-worker-0").await.unwrap();
    assert_eq!(tensorflow_restart_count(&pod), Some(2));
    assert_eq!(pods.uids_of("flaky-worker-0").len(), 1, "pod was recreated");
    // The kubelet's two in-place restarts are restarts (§6.4), counted once each in the
    // durable `replicaStatuses[Worker].restarts`; the operator restarted nothing itself, so
    // no Restarting.
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(2));
    for j in versions(&jobs, "flaky") {
        assert!(condition(&j, ConditionType::Restarting).is_none());
    }
    assert!(
        c.events_of("flaky")
            .await
            .iter()
            .all(|(r, _)| r != "TFJobRestarting")
    );
}

#[tokio::test]
async fn exit_code_137_recreates_the_pod_restarting_then_running_and_the_job_succeeds() {
    let c = TestCluster::start("retryable").await;
    let (jobs, pods) = (record_jobs(&c).await, record_pods(&c, "retry").await);
    let (ns, pod) = (c.namespace.clone(), "retry-worker-0");
    // The first pod is killed; the recreated pod (same name) runs to success.
    c.script_pod_in_turn(
        pod,
        &[
            &[("run-seconds", "1"), ("exit-code", "137")],
            &[("run-seconds", "1"), ("exit-code", "0")],
        ],
    );
    c.create(job("retry", &[("Worker", 1, "ExitCode")])).await;

    let first = until_seen_phase(&pods, pod, "Failed").await;
    let second = c.until_pod_uid(pod, Some(&first)).await;
    let done = c.until_condition("retry", ConditionType::Succeeded).await;

    assert_eq!(pods.uids_of(pod), [first, second]);
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(1));
    let seen = versions(&jobs, "retry");
    let restarting = first_true(&seen, 0, ConditionType::Restarting).expect("Restarting seen");
    let message = "job retry is restarting because Worker replica(s) failed.";
    assert_eq!(
        reason_and_message(&seen[restarting], ConditionType::Restarting),
        Some(("TFJobRestarting".into(), message.into()))
    );
    assert!(
        first_true(&seen, restarting, ConditionType::Running).is_some(),
        "Running never came back after Restarting"
    );
    assert_running_and_restarting_exclusive(&jobs, "retry");
    c.until_event("retry", "TFJobRestarting", message).await;
    let exited = format!("Pod: {ns}.{pod} exited with code 137");
    c.until_event("retry", "ExitedWithCode", &exited).await;
}

#[tokio::test]
async fn permanent_exit_codes_fail_the_job_without_recreating_the_pod() {
    let c = TestCluster::start("permanent").await;
    let (jobs, pods) = (record_jobs(&c).await, Recorder::start(c.pods(), "").await);
    let (jobs, pods, c) = (&jobs, &pods, &c);
    join_all(["1", "139", "128"].map(|code| async move {
        let name = format!("perm-{code}");
        let pod = format!("{name}-worker-0");
        let ns = &c.namespace;
        c.script_pod(&pod, &[("run-seconds", "0.3"), ("exit-code", code)]);
        c.create(job(&name, &[("Worker", 1, "ExitCode")])).await;
        let failed = c.until_condition(&name, ConditionType::Failed).await;
        // Kubeflow's words for a permanent code under ExitCode (its common/pod.go).
        let message = format!("job \"{name}\" is failing because \"Worker\" replica(s) failed.");
        assert_eq!(
            reason_and_message(&failed, ConditionType::Failed),
            Some(("TFJobFailed".into(), message)),
            "exit code {code}"
        );
        let exited = format!("Pod: {ns}.{pod} exited with code {code}");
        c.until_event(&name, "ExitedWithCode", &exited).await;

        settle().await;
        assert_eq!(pods.uids_of(&pod).len(), 1, "exit code {code}: recreated");
        assert_eq!(c.pod_names(&name).await, [pod.as_str()], "exit code {code}");
        assert_eq!(
            restarts(&failed, ReplicaType::Worker),
            None,
            "exit code {code}"
        );
        for j in versions(jobs, &name) {
            assert!(
                condition(&j, ConditionType::Restarting).is_none(),
                "exit code {code}: Restarting"
            );
        }
    }))
    .await;
}

#[tokio::test]
async fn the_backoff_limit_counts_recreated_pods() {
    let c = TestCluster::start("backoff").await;
    let pods = record_pods(&c, "backoff").await;
    let pod = "backoff-worker-0";
    c.script_pod(pod, &[("run-seconds", "0.3"), ("exit-code", "137")]);
    let mut spec = job("backoff", &[("Worker", 1, "ExitCode")]);
    spec["spec"]["runPolicy"] = serde_json::json!({"backoffLimit": 1});
    c.create(spec).await;

    let failed = c.until_condition("backoff", ConditionType::Failed).await;
    assert_eq!(
        reason_and_message(&failed, ConditionType::Failed),
        Some((
            "TFJobFailed".into(),
            "Job backoff has failed because it has reached the specified backoff limit".into()
        ))
    );
    assert_eq!(restarts(&failed, ReplicaType::Worker), Some(1));
    settle().await;
    let uids = pods.uids_of(pod);
    assert_eq!(uids.len(), 2, "one recreation, then no more: {uids:?}");
    let last = c.pods().get(pod).await.unwrap();
    assert_eq!(last.metadata.uid.as_ref(), uids.last());
}

#[tokio::test]
async fn the_backoff_limit_counts_kubelet_restarts_too() {
    let c = TestCluster::start("backoff-kubelet").await;
    let pods = record_pods(&c, "crashy").await;
    c.script_pod(
        "crashy-worker-0",
        &[
            ("run-seconds", "0.3"),
            ("fail-times", "5"),
            ("exit-code", "1"),
        ],
    );
    let mut spec = job("crashy", &[("Worker", 1, "OnFailure")]);
    spec["spec"]["runPolicy"] = serde_json::json!({"backoffLimit": 1});
    c.create(spec).await;

    let failed = c.until_condition("crashy", ConditionType::Failed).await;
    assert_eq!(
        reason_and_message(&failed, ConditionType::Failed),
        Some((
            "TFJobFailed".into(),
            "Job crashy has failed because it has reached the specified backoff limit".into()
        ))
    );
    // Failing on the backoff limit deletes the unfinished pod, whatever the clean policy.
    c.until_pods_are("crashy", &[]).await;
    let restarted = pods
        .seen()
        .iter()
        .filter_map(tensorflow_restart_count)
        .max();
    assert_eq!(
        restarted,
        Some(2),
        "the kubelet's second restart passes limit 1"
    );
    assert_eq!(
        restarts(&failed, ReplicaType::Worker),
        Some(2),
        "both kubelet restarts counted"
    );
    assert_eq!(
        pods.uids_of("crashy-worker-0").len(),
        1,
        "pod was recreated"
    );
}

#[tokio::test]
async fn a_pod_deleted_from_outside_is_recreated_and_counted_as_a_restart() {
    let c = TestCluster::start("vanished").await;
    let jobs = record_jobs(&c).await;
    let mut spec = job("gone", &[("Worker", 2, "Never")]);
    annotate(&mut spec, "Worker", "sim.tfjob.dev/run-seconds", "3600");
    c.create(spec).await;
    c.until_condition("gone", ConditionType::Running).await;
    let keep = c.until_pod_uid("gone-worker-0", None).await;
    let first = c.until_pod_uid("gone-worker-1", None).await;

    c.pods()
        .delete("gone-worker-1", &DeleteParams::default())
        .await
        .unwrap();
    let second = c.until_pod_uid("gone-worker-1", Some(&first)).await;
    let job = until(&c.jobs(), "gone", "restart counted", |j| {
        j.filter(|j| restarts(j, ReplicaType::Worker).is_some())
            .cloned()
    })
    .await;
    assert_eq!(restarts(&job, ReplicaType::Worker), Some(1));
    c.until_condition("gone", ConditionType::Running).await;
    // Running turns True once every replica has a pod again; the replacement's own start
    // (active 1 → 2) comes after: the settled status is the one with both running.
    let running = until(&c.jobs(), "gone", "both workers active", |j| {
        j.filter(|j| {
            let active = j
                .status
                .as_ref()
                .and_then(|s| s.replica_statuses.get(&ReplicaType::Worker));
            active.and_then(|r| r.active) == Some(2)
                && crate::support::has_condition(j, ConditionType::Running)
        })
        .cloned()
    })
    .await;
    assert_ne!(first, second);
    assert_eq!(
        c.pod_names("gone").await,
        ["gone-worker-0", "gone-worker-1"]
    );
    assert_eq!(
        c.pods().get("gone-worker-0").await.unwrap().metadata.uid,
        Some(keep)
    );
    let seen = versions(&jobs, "gone");
    let restarting = first_true(&seen, 0, ConditionType::Restarting).expect("Restarting seen");
    assert!(first_true(&seen, restarting, ConditionType::Running).is_some());
    assert_running_and_restarting_exclusive(&jobs, "gone");

    settle().await;
    let now = c.jobs().get("gone").await.unwrap();
    assert_eq!(
        restarts(&now, ReplicaType::Worker),
        Some(1),
        "counted again"
    );
    assert_eq!(now.status, running.status, "status still moving");
}

#[tokio::test]
async fn an_operator_restarted_mid_job_keeps_the_restart_count_and_finishes_the_job() {
    let mut c = TestCluster::start("operator-restart").await;
    let (jobs, pods) = (record_jobs(&c).await, record_pods(&c, "resumed").await);
    let pod = "resumed-worker-0";
    c.script_pod_in_turn(
        pod,
        &[
            &[("run-seconds", "1"), ("exit-code", "137")],
            &[("run-seconds", "1"), ("exit-code", "0")],
        ],
    );
    let mut spec = job("resumed", &[("PS", 1, "Never"), ("Worker", 1, "ExitCode")]);
    annotate(&mut spec, "PS", "sim.tfjob.dev/run-seconds", "3600");
    c.create(spec).await;

    let first = until_seen_phase(&pods, pod, "Failed").await;
    let second = c.until_pod_uid(pod, Some(&first)).await;
    until(&c.jobs(), "resumed", "restart recorded", |j| {
        j.filter(|j| restarts(j, ReplicaType::Worker) == Some(1))
            .cloned()
    })
    .await;

    c.stop_operator().await;
    // The recreated pod runs to its end while no operator watches.
    c.until_pod_phase(pod, "Succeeded").await;
    let idle = c.jobs().get("resumed").await.unwrap();
    assert!(!has_condition(&idle, ConditionType::Succeeded));
    c.start_operator();

    let done = c.until_condition("resumed", ConditionType::Succeeded).await;
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(1));
    assert_eq!(restarts(&done, ReplicaType::Ps), None);
    settle().await;
    assert_eq!(pods.uids_of(pod), [first, second]);
    assert_eq!(pods.uids_of("resumed-ps-0").len(), 1, "PS recreated");
    assert_eq!(c.pod_names("resumed").await, [pod]);
    let after = c.jobs().get("resumed").await.unwrap();
    assert_eq!(after.status, done.status);
    assert_running_and_restarting_exclusive(&jobs, "resumed");
}

/// Each restart is an occurrence of its own: a pod restarted several times records
/// TFJobRestarting and ExitedWithCode once per restart (kube's recorder may fold repeats into
/// one event with a series count).
#[tokio::test]
async fn every_restart_is_recorded_as_its_own_occurrence() {
    let c = TestCluster::start("tworestarts").await;
    let pods = record_pods(&c, "twice").await;
    let pod = "twice-worker-0";
    let killed: &[(&str, &str)] = &[("run-seconds", "0.3"), ("exit-code", "137")];
    c.script_pod_in_turn(
        pod,
        &[
            killed,
            killed,
            &[("run-seconds", "0.3"), ("exit-code", "0")],
        ],
    );
    c.create(job("twice", &[("Worker", 1, "ExitCode")])).await;
    // Two failed pods and their replacement seen: at least two restarts happened.
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    while pods.uids_of(pod).len() < 3 {
        assert!(tokio::time::Instant::now() < deadline, "no second restart");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let done = c.until_condition("twice", ConditionType::Succeeded).await;
    let restarted = pods.uids_of(pod).len() as i32 - 1;
    assert!(restarted >= 2);
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(restarted));
    let occurrences = |reason: &str, events: &[k8s_openapi::api::events::v1::Event]| -> i32 {
        events
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .map(|e| e.series.as_ref().map_or(1, |s| s.count))
            .sum()
    };
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    loop {
        let events = c.events_about("twice").await;
        let counts = (
            occurrences("TFJobRestarting", &events),
            occurrences("ExitedWithCode", &events),
        );
        if counts == (restarted, restarted) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "restart events {counts:?}, want {restarted} each"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
