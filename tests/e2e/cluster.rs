//! End to end: what the cluster around the operator does to its jobs (issue "The operator on a
//! real Kubernetes control plane", item 6) — garbage collection of a deleted job's children,
//! a namespace deleted under running jobs, a node removed under running pods. On the real
//! tier these are the real garbage collector, namespace controller and pod GC.

use std::time::Duration;

use crate::support::{TestCluster, annotate, job, record_pods, settle, until};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use tfjob_operator::crd::{ConditionType, ReplicaType};

const RUN: &str = "sim.tfjob.dev/run-seconds";

/// Deleting a running TFJob leaves its pods and services to the garbage collector: they go,
/// and the operator recreates none of them.
#[tokio::test]
async fn a_deleted_job_s_children_go_by_garbage_collection_and_none_is_recreated() {
    let c = TestCluster::start("gc").await;
    let pods = record_pods(&c, "gc").await;
    let mut spec = job("gc", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", RUN, "3600");
    annotate(&mut spec, "Worker", RUN, "3600");
    c.create(spec).await;
    c.until_condition("gc", ConditionType::Running).await;
    c.until_pods_are("gc", &["gc-ps-0", "gc-worker-0", "gc-worker-1"])
        .await;

    c.jobs()
        .delete("gc", &DeleteParams::background())
        .await
        .expect("deleting the TFJob");
    c.until_pods_are("gc", &[]).await;
    crate::support::eventually("services collected", || async {
        c.service_names("gc").await.is_empty().then_some(())
    })
    .await;
    settle().await;
    assert_eq!(
        pods.identities().len(),
        3,
        "a pod was recreated: {:?}",
        pods.identities()
    );
    assert!(c.pod_names("gc").await.is_empty());
}

/// A namespace deleted while a job runs in it: the namespace goes away (nothing the operator
/// does holds it up) and jobs of the other namespace it watches carry on.
#[tokio::test]
async fn a_namespace_deleted_under_a_running_job_goes_away_and_other_namespaces_carry_on() {
    let mut c = TestCluster::without_operator("ns-deleted").await;
    let doomed = format!("{}-doomed", c.namespace);
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": doomed}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    c.start_operator_with(&["--namespace", &doomed]);
    let doomed_jobs: Api<tfjob_operator::crd::TFJob> = Api::namespaced(c.client.clone(), &doomed);
    let mut spec = job("busy", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", RUN, "3600");
    annotate(&mut spec, "Worker", RUN, "3600");
    doomed_jobs
        .create(
            &PostParams::default(),
            &serde_json::from_value(spec).unwrap(),
        )
        .await
        .unwrap();
    until(&doomed_jobs, "busy", "Running", |j| {
        j.filter(|j| crate::support::has_condition(j, ConditionType::Running))
            .map(|_| ())
    })
    .await;

    namespaces
        .delete(&doomed, &DeleteParams::default())
        .await
        .unwrap();
    until(&namespaces, &doomed, "namespace removed", |n| {
        n.is_none().then_some(())
    })
    .await;
    c.create(job("after", &[("Worker", 1, "Never")])).await;
    c.until_condition("after", ConditionType::Succeeded).await;
}

/// A node that goes away while a pod runs on it: the pod fails without an exit code (on the
/// real tier the pod GC marks it Failed and deletes it, 40-80 s after the Node is deleted),
/// which `restartPolicy: ExitCode` retries: the replica is recreated once, counted, and the job
/// succeeds once the replacement runs.
#[tokio::test]
async fn a_pod_lost_with_its_node_is_restarted_once_and_not_charged() {
    let c = TestCluster::start("node-gone").await;
    let node = format!("{}-node", c.namespace);
    let mut spec = job("ng", &[("Worker", 1, "ExitCode")]);
    // The first pod runs until its node goes; its replacement runs the default 1 s.
    c.script_pod_in_turn("ng-worker-0", &[&[("run-seconds", "3600")], &[]]);
    if c.real.is_some() {
        testcluster_node(&["add", &node]);
        spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] =
            json!({"kubernetes.io/hostname": node});
    }
    c.create(spec).await;
    c.until_condition("ng", ConditionType::Running).await;
    let first = c.until_pod_uid("ng-worker-0", None).await;

    match &c.sim {
        Some(sim) => {
            let pod = c.pods().get("ng-worker-0").await.unwrap();
            let on = pod.spec.and_then(|s| s.node_name).expect("scheduled");
            sim.lose_node(&on);
        }
        None => testcluster_node(&["remove", &node]),
    }
    // The pod GC waits out its 40 s quarantine (checked every 20 s) on the real tier.
    until_long("ng-worker-0 replaced", Duration::from_secs(150), || async {
        let pod = c.pods().get_opt("ng-worker-0").await.ok().flatten()?;
        (pod.metadata.uid.as_deref() != Some(&first)).then_some(())
    })
    .await;
    if c.real.is_some() {
        testcluster_node(&["add", &node]);
    }
    let done = c.until_condition("ng", ConditionType::Succeeded).await;
    // Pod GC marks the pod DisruptionTarget and deletes it at once: a disruption, known by the
    // delete event's last state even when no pass saw the pod marked (docs/behaviour.md §6.8).
    let worker = &done.status.as_ref().unwrap().replica_statuses[&ReplicaType::Worker];
    assert_eq!(
        (worker.restarts, worker.uncharged_restarts),
        (None, Some(1)),
        "restarted once, not charged"
    );
    if c.real.is_some() {
        testcluster_node(&["remove", &node, "--gc-now"]);
    }
}

/// `testcluster/node ARGS` (real tier only).
fn testcluster_node(args: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/testcluster/node");
    let out = std::process::Command::new(script)
        .args(args)
        .output()
        .expect("running testcluster/node");
    assert!(
        out.status.success(),
        "testcluster/node {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Poll `check` until it returns `Some`, up to `limit` (for the real pod GC's delays).
async fn until_long<T, Fut>(what: &str, limit: Duration, check: impl Fn() -> Fut) -> T
where
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
