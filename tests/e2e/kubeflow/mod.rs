//! Kubeflow's own TFJob tests as an executable table (issue 20, item 3): every externally
//! observable case of training-operator release-1.9's `pkg/controller.v1/tensorflow/*_test.go`
//! and of its SDK end-to-end test (`sdk/python/test/e2e/test_e2e_tfjob.py`), ported as the
//! facts they check — the input, and what a user then sees: pods and services, their names,
//! labels, `TF_CONFIG` and restart policy, conditions with reason and message, replica counts,
//! cleanup, TTL, deadline, backoff, suspend/resume, success policy, exit codes. Our own code;
//! each test names the Kubeflow case (`file: Context / It` or the table entry) it ports.
//!
//! Kubeflow's tests call reconciler functions on fixtures (pods created in a given phase, a
//! status set in memory); here the real controller runs on either tier and the same situations
//! are reached the way a user reaches them: pods scripted by `sim.tfjob.dev/*` annotations,
//! and, where Kubeflow's fixture is children or a status left by an earlier controller, those
//! objects written before the operator starts (as `takeover.rs` does). A case whose outcome we
//! change on purpose asserts our rule and names the row of the README's table "What we do
//! differently" that explains it (each row links to its rule in docs/behaviour.md).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::support::{
    Recorder, TestCluster, annotate, condition, eventually, has_condition, job, record_jobs,
    settle, until,
};
use futures::future::join_all;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};

/// A pod that runs for an hour: it stays Running until the test or the operator acts.
const LONG: &str = "3600";
const RUN: &str = "sim.tfjob.dev/run-seconds";

mod controller_test;
mod job_test;
mod pod_test;
mod sdk_e2e;
mod status_test;

// ---------------------------------------------------------------------------------------
// Helpers: what a Kubeflow test reads, read the same way.

/// Every condition as (type, status, reason, message), in order: what Kubeflow's tests
/// compare with `BeComparableTo(..., IgnoreJobConditionsTimes)`.
fn conditions(job: &TFJob) -> Vec<(String, String, String, String)> {
    let text = |v: Value| v.as_str().unwrap_or_default().to_string();
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .map(|c| {
            (
                text(json!(c.type_)),
                text(json!(c.status)),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn cond(t: &str, status: bool, reason: &str, message: &str) -> (String, String, String, String) {
    let status = if status { "True" } else { "False" };
    (t.into(), status.into(), reason.into(), message.into())
}

/// `replicaStatuses[t]` as (active, succeeded, failed), absent counts 0; None without an entry.
fn counts(job: &TFJob, t: ReplicaType) -> Option<(i32, i32, i32)> {
    let s = job.status.as_ref()?.replica_statuses.get(&t)?;
    Some((
        s.active.unwrap_or(0),
        s.succeeded.unwrap_or(0),
        s.failed.unwrap_or(0),
    ))
}

/// Whether condition `t` is present, whatever its status (Kubeflow's `Test Status` checks
/// only that: `if condition.Type == c.expectedType { found = true }`).
fn present(job: &TFJob, t: ConditionType) -> bool {
    condition(job, t).is_some()
}

/// The `TF_CONFIG` of the pod's `tensorflow` container.
fn tf_config(pod: &Pod) -> Option<String> {
    pod.spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == "tensorflow")?
        .env
        .as_ref()?
        .iter()
        .find(|e| e.name == "TF_CONFIG")?
        .value
        .clone()
}

async fn until_pod(c: &TestCluster, name: &str) -> Pod {
    until(&c.pods(), name, "the pod", |p| p.cloned()).await
}

async fn until_service(c: &TestCluster, name: &str) -> Service {
    until(&c.services(), name, "the service", |s| s.cloned()).await
}

/// Wait until job `name` satisfies `check`; returns it then.
async fn until_job(
    c: &TestCluster,
    name: &str,
    what: &str,
    check: impl Fn(&TFJob) -> bool,
) -> TFJob {
    until(&c.jobs(), name, what, |j| j.filter(|j| check(j)).cloned()).await
}

/// Kubeflow's fixture job with every replica running for an hour unless scripted otherwise.
fn long_job(name: &str, replicas: &[(&str, i32, &str)]) -> Value {
    let mut spec = job(name, replicas);
    for (t, _, _) in replicas {
        annotate(&mut spec, t, RUN, LONG);
    }
    spec
}

/// Script pod `<job>-<t>-<i>` to end after `seconds` with `code`.
fn ends(c: &TestCluster, pod: &str, seconds: &str, code: &str) {
    c.script_pod(pod, &[("run-seconds", seconds), ("exit-code", code)]);
}

/// Writes a status on job `name` with the operator stopped, as an earlier controller (or
/// Kubeflow's fixture, which sets the status in memory before calling the reconciler) left
/// it; `edit` changes the current status JSON.
async fn write_status(c: &TestCluster, name: &str, edit: impl Fn(&mut Value)) {
    let raw: Api<DynamicObject> = Api::namespaced_with(
        c.client.clone(),
        &c.namespace,
        &ApiResource::erase::<TFJob>(&()),
    );
    let mut obj = raw.get(name).await.expect("the job");
    if obj.data["status"].is_null() {
        obj.data["status"] = json!({});
    }
    edit(&mut obj.data["status"]);
    raw.replace_status(name, &PostParams::default(), &obj)
        .await
        .expect("writing the job's status");
}

/// A status condition as Kubeflow's `UpdateJobConditions` writes it.
fn status_condition(t: &str, status: &str, reason: &str, message: &str) -> Value {
    let now = Timestamp::now().to_string();
    json!({"type": t, "status": status, "reason": reason, "message": message,
        "lastUpdateTime": now, "lastTransitionTime": now})
}

/// The four labels Kubeflow's controller puts on a replica's pod and service (the service's
/// selector too), and `job-role: master` on worker 0 of a job without a chief (pods only).
fn replica_labels(job: &str, t: &str, i: i32, pod: bool) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (
            "training.kubeflow.org/operator-name".to_string(),
            "tfjob-controller".to_string(),
        ),
        ("training.kubeflow.org/job-name".into(), job.to_string()),
        ("training.kubeflow.org/replica-type".into(), t.to_string()),
        ("training.kubeflow.org/replica-index".into(), i.to_string()),
    ]);
    if pod && t == "worker" && i == 0 {
        l.insert("training.kubeflow.org/job-role".into(), "master".into());
    }
    l
}

fn owned_by(job: &TFJob) -> Value {
    json!([{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": job.metadata.name,
        "uid": job.metadata.uid, "controller": true, "blockOwnerDeletion": true}])
}

/// Pod `<job>-<t>-<i>` as Kubeflow's controller made it (`tftestutil.SetPodsStatuses`), its
/// outcome scripted by `script` (`sim.tfjob.dev/` keys).
async fn existing_pod(c: &TestCluster, job: &TFJob, t: &str, i: i32, script: &[(&str, &str)]) {
    let name = job.metadata.name.clone().unwrap_or_default();
    let annotations: BTreeMap<String, String> = script
        .iter()
        .map(|(k, v)| (format!("sim.tfjob.dev/{k}"), v.to_string()))
        .collect();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-{t}-{i}"), "labels": replica_labels(&name, t, i, true),
            "annotations": annotations, "ownerReferences": owned_by(job)},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "tensorflow", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 1"],
            "ports": [{"name": "tfjob-port", "containerPort": 2222}]}]}
    }))
    .expect("a pod");
    c.pods()
        .create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
}

/// Service `<job>-<t>-<i>` as Kubeflow's controller made it (`tftestutil.SetServices`).
async fn existing_service(c: &TestCluster, job: &TFJob, t: &str, i: i32) {
    let name = job.metadata.name.clone().unwrap_or_default();
    let labels = replica_labels(&name, t, i, false);
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-{t}-{i}"), "labels": labels,
            "ownerReferences": owned_by(job)},
        "spec": {"clusterIP": "None", "selector": labels,
            "ports": [{"name": "tfjob-port", "port": 2222}]}
    }))
    .expect("a service");
    c.services()
        .create(&PostParams::default(), &service)
        .await
        .expect("creating the service");
}

/// The (name, uid) of every pod and service of job `name` that exists now.
async fn children(
    c: &TestCluster,
    name: &str,
) -> (BTreeSet<(String, String)>, BTreeSet<(String, String)>) {
    let lp =
        kube::api::ListParams::default().labels(&format!("training.kubeflow.org/job-name={name}"));
    let id = |m: &kube::api::ObjectMeta| {
        (
            m.name.clone().unwrap_or_default(),
            m.uid.clone().unwrap_or_default(),
        )
    };
    let pods = c.pods().list(&lp).await.expect("pods").items;
    let services = c.services().list(&lp).await.expect("services").items;
    (
        pods.iter().map(|p| id(&p.metadata)).collect(),
        services.iter().map(|s| id(&s.metadata)).collect(),
    )
}

/// Every owner reference of the job's children is the job's controller reference
/// (`tfjob_controller_test.go` checks apiVersion, kind, name and uid of each).
async fn assert_owned(c: &TestCluster, job: &TFJob) {
    let name = job.metadata.name.clone().unwrap_or_default();
    let lp =
        kube::api::ListParams::default().labels(&format!("training.kubeflow.org/job-name={name}"));
    let refs = c
        .pods()
        .list(&lp)
        .await
        .expect("pods")
        .items
        .into_iter()
        .map(|p| p.metadata)
        .chain(
            c.services()
                .list(&lp)
                .await
                .expect("services")
                .items
                .into_iter()
                .map(|s| s.metadata),
        );
    for meta in refs {
        let owners = meta.owner_references.unwrap_or_default();
        assert_eq!(owners.len(), 1, "{:?}: {owners:?}", meta.name);
        let o = &owners[0];
        assert_eq!(
            (
                o.api_version.as_str(),
                o.kind.as_str(),
                Some(&o.name),
                Some(&o.uid),
                o.controller
            ),
            (
                "kubeflow.org/v1",
                "TFJob",
                job.metadata.name.as_ref(),
                job.metadata.uid.as_ref(),
                Some(true)
            ),
            "{:?}",
            meta.name
        );
    }
}
