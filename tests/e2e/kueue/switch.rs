//! Changing Kueue's mode in a live cluster, as a user upgrading Kueue does: the runbook of
//! docs/kueue.md ("Switching a live cluster"), step by step, each way, with the Kueue
//! Configuration and operator flags read from the runbook (`runbook.rs`); and the API writes a queued job
//! costs from creation to `Finished` in each mode, on the same cluster in one run. These
//! tests restart Kueue, so they run alone, one after the other, each setting the mode it
//! starts from: `testcluster/e2e` runs them after the external mode's tests
//! (`TFJOB_E2E_KUEUE_SWITCH=1`); elsewhere they print that they are skipped.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DynamicObject, ListParams};
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionType, TFJob};

use super::runbook::Direction;
use super::{Flavor, Queue, kueue_present, kueue_true, queued_job, suspended, until_bound_pods};
use crate::support::real::{audit_entries_since, audit_offset};
use crate::support::{Recorder, TestCluster, record_jobs, record_pods, settle};

fn alone(test: &str) -> bool {
    if !kueue_present(test) {
        return false;
    }
    let asked = std::env::var("TFJOB_E2E_KUEUE_SWITCH").as_deref() == Ok("1");
    if !asked {
        eprintln!(
            "{test}: skipped: it restarts Kueue, so it runs alone (testcluster/e2e runs it with TFJOB_E2E_KUEUE_SWITCH=1)"
        );
    }
    asked
}

/// `testcluster/kueue-mode MODE`: Kueue restarted with the other Configuration.
fn kueue_mode(mode: &str) {
    kueue_mode_with(mode, &[]);
}

/// Step 1 of the runbook's `direction`: Kueue restarted with the Configuration it shows.
fn runbook_step_1(direction: &Direction) {
    let settings = direction.settings_file();
    kueue_mode_with(direction.mode, &[settings.to_str().expect("a UTF-8 path")]);
    let _ = std::fs::remove_file(settings);
}

/// Step 2: the test's operator restarted with the flags of the `config/` directory it applies.
async fn runbook_step_2(c: &mut TestCluster, direction: &Direction) {
    let flags = direction.operator_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    c.stop_operator().await;
    c.start_operator_with(&flags);
}

fn kueue_mode_with(mode: &str, settings: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/testcluster/kueue-mode");
    let out = std::process::Command::new(script)
        .arg(mode)
        .args(settings)
        .output()
        .expect("running testcluster/kueue-mode");
    assert!(
        out.status.success(),
        "testcluster/kueue-mode {mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Workloads whose owner is the job with `uid`.
async fn workloads_of(q: &Queue, uid: &str) -> Vec<DynamicObject> {
    let list = q.workloads().list(&ListParams::default()).await.unwrap();
    list.items
        .into_iter()
        .filter(|w| {
            let owners = w.metadata.owner_references.iter().flatten();
            owners.clone().any(|o| o.uid == uid)
        })
        .collect()
}

/// The runbook to the external framework: one job admitted and running and one waiting under
/// Kueue's built-in integration; Kueue switched to the external framework, then the operator
/// given `--kueue`. The running job keeps its Workload (the same object) and its quota, and is
/// never suspended nor restarted; when it finishes, the waiting job's Workload (the one the
/// built-in integration made, adopted, not duplicated) is admitted and the job runs.
#[tokio::test]
async fn switching_to_the_external_framework_keeps_running_jobs_and_admits_queued_ones() {
    let test = "switching_to_the_external_framework_keeps_running_jobs_and_admits_queued_ones";
    if !alone(test) {
        return;
    }
    let from = Direction::read("Back to the built-in integration");
    let to = Direction::read("To the external framework");
    switch_keeps_running_jobs_and_admits_queued_ones("kueue-switch", &from, &to).await;
}

/// The runbook back to Kueue's built-in integration: the same, the other way; Kueue's
/// integration adopts the Workloads the operator made.
#[tokio::test]
async fn switching_back_to_the_builtin_integration_keeps_running_jobs_and_admits_queued_ones() {
    let test =
        "switching_back_to_the_builtin_integration_keeps_running_jobs_and_admits_queued_ones";
    if !alone(test) {
        return;
    }
    let from = Direction::read("To the external framework");
    let to = Direction::read("Back to the built-in integration");
    switch_keeps_running_jobs_and_admits_queued_ones("kueue-switch-back", &from, &to).await;
}

/// The cluster as the runbook's `from` direction leaves it, a job admitted and running and one
/// waiting, then the runbook's `to` direction step by step, and its step 3's checks.
async fn switch_keeps_running_jobs_and_admits_queued_ones(
    namespace: &str,
    from: &Direction,
    to: &Direction,
) {
    runbook_step_1(from);
    let mut c = TestCluster::without_operator(namespace).await;
    runbook_step_2(&mut c, from).await;
    let q = Queue::new(
        &c,
        &[Flavor {
            suffix: "a",
            cpu: "2",
            memory: "8Gi",
        }],
    )
    .await;
    let (jobs, pods) = (record_jobs(&c).await, record_pods(&c, "first").await);
    let first = c.create(queued_job("first", &[("Worker", 2, "30")])).await;
    let first_wl = q.workload_of(&first).await;
    until_bound_pods(&c, "first", 2).await;
    c.until_condition("first", ConditionType::Running).await;
    let second = c.create(queued_job("second", &[("Worker", 2, "2")])).await;
    let second_wl = q.workload_of(&second).await;
    settle().await;
    assert!(!kueue_true(
        &q.workloads().get(&name(&second_wl)).await.unwrap(),
        "QuotaReserved"
    ));
    q.until_admitted(1).await;
    let held = quota_held(&q, &name(&first_wl)).await;

    // Step 1: Kueue's Configuration as the runbook shows it, Kueue restarted.
    runbook_step_1(to);
    let after = quota_held(&q, &name(&first_wl)).await;
    assert_eq!(after, held, "quota kept after step 1 ({})", to.mode);
    // Step 2: the operator restarted with the flags of the runbook's config/ directory.
    runbook_step_2(&mut c, to).await;
    settle().await;
    let after = quota_held(&q, &name(&first_wl)).await;
    assert_eq!(after, held, "quota kept after step 2 ({})", to.mode);

    // Step 3: the running job finishes under its own Workload; the waiting one runs.
    c.until_condition("first", ConditionType::Succeeded).await;
    let finished = q
        .until_workload(&name(&first_wl), "finished", |w| kueue_true(w, "Finished"))
        .await;
    assert_eq!(
        finished.metadata.uid, first_wl.metadata.uid,
        "the same Workload"
    );
    q.until_workload(&name(&second_wl), "admitted", |w| kueue_true(w, "Admitted"))
        .await;
    c.until_condition("second", ConditionType::Succeeded).await;
    for (job, before) in [(&first, &first_wl), (&second, &second_wl)] {
        let uid = job.metadata.uid.clone().unwrap();
        let now = workloads_of(&q, &uid).await;
        assert_eq!(now.len(), 1, "one Workload per job: {now:?}");
        assert_eq!(
            now[0].metadata.uid, before.metadata.uid,
            "adopted, not replaced"
        );
    }
    never_suspended_nor_restarted(&jobs, &pods, "first");
}

/// What holds the quota of the admitted job's Workload `workload`: the Workload (uid) and its
/// `status.admission`, and its ClusterQueue's `admittedWorkloads` and `flavorsUsage`.
async fn quota_held(q: &Queue, workload: &str) -> Value {
    let w = q.workloads().get(workload).await.unwrap();
    let cq = q.cluster_queues().get(&q.name).await.unwrap();
    let admission = &w.data["status"]["admission"];
    assert!(admission.is_object(), "{workload} is admitted: {w:?}");
    json!({
        "workload": w.metadata.uid,
        "admission": admission,
        "admittedWorkloads": cq.data["status"]["admittedWorkloads"],
        "flavorsUsage": cq.data["status"]["flavorsUsage"],
    })
}

/// Job `job` was never suspended after its admission, its worker pods were never replaced and
/// never restarted.
fn never_suspended_nor_restarted(jobs: &Recorder<TFJob>, pods: &Recorder<Pod>, job: &str) {
    let versions: Vec<TFJob> = jobs
        .seen()
        .into_iter()
        .filter(|j| j.metadata.name.as_deref() == Some(job))
        .collect();
    let resumed = versions
        .iter()
        .position(|j| suspended(j) == Some(false))
        .unwrap_or_else(|| panic!("{job} resumed"));
    assert!(
        versions[resumed..]
            .iter()
            .all(|j| suspended(j) == Some(false)),
        "{job} suspended after its admission"
    );
    for worker in [format!("{job}-worker-0"), format!("{job}-worker-1")] {
        assert_eq!(pods.uids_of(&worker).len(), 1, "{worker} restarted");
    }
    assert!(versions.iter().all(|j| {
        crate::support::restarts(j, tfjob_operator::crd::ReplicaType::Worker).unwrap_or(0) == 0
    }));
}

fn name(w: &DynamicObject) -> String {
    w.metadata.name.clone().unwrap_or_default()
}

/// Who wrote, as the audit log names it by User-Agent.
fn writer(agent: &str) -> Option<&'static str> {
    [
        ("kueue/", "Kueue"),
        ("tfjob-kueue/", "operator (Kueue side)"),
        ("tfjob-operator/", "operator (TFJob controller)"),
    ]
    .into_iter()
    .find(|(prefix, _)| agent.starts_with(prefix))
    .map(|(_, who)| who)
}

/// The API writes one queued job costs, from its creation to its Workload finished and
/// released, by Kueue and by the operator, in each mode, on the same cluster in one run
/// (BENCHMARKS.md). Printed; the job runs the same way in both.
#[tokio::test]
async fn api_writes_of_a_queued_job_in_each_mode() {
    if !alone("api_writes_of_a_queued_job_in_each_mode") {
        return;
    }
    let mut table = Vec::new();
    for mode in ["builtin", "external"] {
        kueue_mode(mode);
        let mut c = TestCluster::without_operator(&format!("kueue-writes-{mode}")).await;
        c.start_operator_with(if mode == "external" {
            &["--kueue"]
        } else {
            &[]
        });
        let q = Queue::roomy(&c).await;
        let log = c
            .real
            .as_ref()
            .and_then(|r| r.audit_log.clone())
            .expect("audit log");
        let offset = audit_offset(&log);
        let created = c
            .create(queued_job(
                "counted",
                &[("PS", 1, super::LONG), ("Worker", 2, "2")],
            ))
            .await;
        let wl = q.workload_name_of(&created).await;
        c.until_condition("counted", ConditionType::Succeeded).await;
        q.until_workload(&wl, "finished and released", |w| {
            kueue_true(w, "Finished") && w.metadata.finalizers.as_ref().is_none_or(|f| f.is_empty())
        })
        .await;
        settle().await;
        let mut writes: BTreeMap<(&str, String), u64> = BTreeMap::new();
        for e in audit_entries_since(&log, offset) {
            let here = e.object_ref.namespace.as_deref() == Some(c.namespace.as_str());
            let write = ["create", "update", "patch", "delete"].contains(&e.verb.as_str());
            if let (true, true, Some(who)) = (here, write, writer(&e.user_agent)) {
                *writes
                    .entry((who, format!("{} {}", e.verb, e.resource())))
                    .or_default() += 1;
            }
        }
        let total: u64 = writes.values().sum();
        let events: u64 = writes
            .iter()
            .filter(|((_, r), _)| r.ends_with(" events"))
            .map(|(_, n)| n)
            .sum();
        eprintln!("kueue writes, {mode}: {total} ({events} of them events)");
        for ((who, what), n) in &writes {
            eprintln!("  {who:30} {what:28} {n}");
        }
        table.push((mode, total, events));
    }
    eprintln!("kueue writes per queued job (mode, all, events): {table:?}");
    assert!(table.iter().all(|(_, total, _)| *total > 0));
}
