//! End to end: children, TF_CONFIG and success (docs/behaviour.md §4, §5, §7.3), the real controller
//! against the simulator (or a real cluster via KUBECONFIG).

use crate::support::{TestCluster, annotate, job, until};
use tfjob_operator::crd::ConditionType;

#[tokio::test]
async fn a_distributed_job_gets_a_pod_and_a_headless_service_per_replica_with_tf_config() {
    let c = TestCluster::start("children").await;
    let mut spec = job("dist", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", "sim.tfjob.dev/run-seconds", "3600");
    annotate(&mut spec, "Worker", "sim.tfjob.dev/run-seconds", "3600");
    c.create(spec).await;
    until(&c.pods(), "dist-worker-1", "pod created", |p| p.cloned()).await;
    assert_eq!(
        c.pod_names("dist").await,
        ["dist-ps-0", "dist-worker-0", "dist-worker-1"]
    );

    let pod = c.pods().get("dist-worker-1").await.unwrap();
    let labels = pod.metadata.labels.clone().unwrap();
    assert_eq!(labels["training.kubeflow.org/replica-type"], "worker");
    assert_eq!(labels["training.kubeflow.org/replica-index"], "1");
    let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("TFJob", Some(true))
    );
    let container = &pod.spec.as_ref().unwrap().containers[0];
    let tf_config = container
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "TF_CONFIG")
        .unwrap();
    let ns = &c.namespace;
    assert_eq!(
        tf_config.value.as_deref().unwrap(),
        format!(
            r#"{{"cluster":{{"ps":["dist-ps-0.{ns}.svc:2222"],"worker":["dist-worker-0.{ns}.svc:2222","dist-worker-1.{ns}.svc:2222"]}},"task":{{"type":"worker","index":1}},"environment":"cloud"}}"#
        )
    );

    for name in ["dist-ps-0", "dist-worker-0", "dist-worker-1"] {
        let svc = until(&c.services(), name, "service created", |s| s.cloned()).await;
        let spec = svc.spec.unwrap();
        assert_eq!(
            spec.cluster_ip.as_deref(),
            Some("None"),
            "{name} is headless"
        );
        assert_eq!(spec.publish_not_ready_addresses, Some(true), "{name}");
        assert_eq!(spec.ports.unwrap()[0].port, 2222, "{name}");
    }
    let job = c.until_condition("dist", ConditionType::Running).await;
    let status = job.status.unwrap();
    assert!(status.start_time.is_some());
    let workers = &status.replica_statuses[&tfjob_operator::crd::ReplicaType::Worker];
    assert_eq!(
        workers.selector.as_deref(),
        Some(
            "training.kubeflow.org/job-name=dist,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type=worker"
        )
    );
}

#[tokio::test]
async fn worker_zero_decides_success_and_running_pods_are_cleaned_up() {
    let c = TestCluster::start("worker0").await;
    let mut spec = job("w0", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", "sim.tfjob.dev/run-seconds", "3600");
    if c.simulated() {
        // Worker 1 finishes before worker 0 decides, so it is a finished pod at cleanup.
        c.script_pod("w0-worker-0", &[("run-seconds", "0.8")]);
        c.script_pod("w0-worker-1", &[("run-seconds", "0.1")]);
    }
    c.create(spec).await;
    let job = c.until_condition("w0", ConditionType::Succeeded).await;
    let status = job.status.unwrap();
    assert!(status.completion_time.is_some());
    // Default cleanPodPolicy Running: the PS pod, still running, is deleted with its service;
    // finished worker pods stay for their logs.
    until(&c.pods(), "w0-ps-0", "PS pod deleted", |p| {
        p.is_none().then_some(())
    })
    .await;
    until(&c.services(), "w0-ps-0", "PS service deleted", |s| {
        s.is_none().then_some(())
    })
    .await;
    if c.simulated() {
        assert_eq!(c.pod_names("w0").await, ["w0-worker-0", "w0-worker-1"]);
    } else {
        assert!(c.pod_names("w0").await.contains(&"w0-worker-0".to_string()));
    }
}

#[tokio::test]
async fn the_chief_decides_success() {
    let c = TestCluster::start("chief").await;
    let mut spec = job("ch", &[("Chief", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "Worker", "sim.tfjob.dev/run-seconds", "3600");
    c.create(spec).await;
    let job = c.until_condition("ch", ConditionType::Succeeded).await;
    let message = job
        .status
        .unwrap()
        .conditions
        .last()
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert_eq!(
        message,
        format!("TFJob {}/ch successfully completed.", c.namespace)
    );
}

#[tokio::test]
async fn all_workers_must_succeed_under_the_all_workers_policy() {
    let c = TestCluster::start("allworkers").await;
    let mut spec = job("aw", &[("Worker", 2, "Never")]);
    spec["spec"]["successPolicy"] = "AllWorkers".into();
    c.script_pod("aw-worker-1", &[("run-seconds", "2")]);
    c.create(spec).await;
    // Worker 0 finishes first; the job must wait for worker 1.
    until(&c.pods(), "aw-worker-0", "worker 0 succeeded", |p| {
        p.and_then(|p| p.status.as_ref()?.phase.clone())
            .filter(|ph| ph == "Succeeded")
    })
    .await;
    let job = c.jobs().get("aw").await.unwrap();
    assert!(
        !crate::support::has_condition(&job, ConditionType::Succeeded),
        "succeeded before worker 1"
    );
    c.until_condition("aw", ConditionType::Succeeded).await;
    let worker1 = c.pods().get("aw-worker-1").await.unwrap();
    assert_eq!(worker1.status.unwrap().phase.as_deref(), Some("Succeeded"));
}
