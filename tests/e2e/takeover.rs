//! Taking over from Kubeflow's training-operator (docs/migration.md, "What happens to running
//! jobs"; docs/behaviour.md §12): a TFJob whose pods and services Kubeflow's
//! controller created and whose status it wrote — its labels, its controller owner references
//! with blockOwnerDeletion, its status without our `restarts`/`podRestarts`, conditions Created
//! and Running — is continued by this operator without deleting or recreating any pod: the
//! conditions are carried over, the kubelet restarts a pod already had are counted, and the job
//! finishes as it would have. On the simulator and on the real tier.

use std::collections::BTreeMap;

use crate::support::{
    TestCluster, condition, eventually, has_condition, record_pods, restarts, settle, until,
};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionStatus, ConditionType, ReplicaType, TFJob};

const JOB: &str = "legacy";

/// The job as a user applied it to Kubeflow: one PS and two workers, restarted on failure.
fn job() -> Value {
    let replica = |n: i32| {
        json!({"replicas": n, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 1"]}
        ]}}})
    };
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": JOB},
        "spec": {"tfReplicaSpecs": {"PS": replica(1), "Worker": replica(2)}}
    })
}

/// The labels Kubeflow's controller (training-operator v1.7+) puts on a replica's pod and
/// service; `job-role: master` on worker 0 of a job without a chief (pods only).
fn kubeflow_labels(t: &str, i: i32, pod: bool) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (
            "training.kubeflow.org/operator-name".to_string(),
            "tfjob-controller".to_string(),
        ),
        (
            "training.kubeflow.org/job-name".to_string(),
            JOB.to_string(),
        ),
        (
            "training.kubeflow.org/replica-type".to_string(),
            t.to_string(),
        ),
        (
            "training.kubeflow.org/replica-index".to_string(),
            i.to_string(),
        ),
    ]);
    if pod && t == "worker" && i == 0 {
        l.insert("training.kubeflow.org/job-role".into(), "master".into());
    }
    l
}

fn owner(uid: &str) -> Value {
    json!([{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": JOB, "uid": uid,
        "controller": true, "blockOwnerDeletion": true}])
}

/// A pod as Kubeflow's controller created it, scripted by `sim.tfjob.dev/` annotations.
fn kubeflow_pod(ns: &str, uid: &str, t: &str, i: i32, script: &[(&str, &str)]) -> Pod {
    let tf_config = json!({
        "cluster": {"ps": [format!("{JOB}-ps-0.{ns}.svc:2222")],
            "worker": [format!("{JOB}-worker-0.{ns}.svc:2222"), format!("{JOB}-worker-1.{ns}.svc:2222")]},
        "task": {"type": t, "index": i}, "environment": "cloud"
    });
    let annotations: BTreeMap<String, String> = script
        .iter()
        .map(|(k, v)| (format!("sim.tfjob.dev/{k}"), v.to_string()))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": format!("{JOB}-{t}-{i}"), "namespace": ns,
            "labels": kubeflow_labels(t, i, true), "annotations": annotations,
            "ownerReferences": owner(uid)},
        "spec": {"restartPolicy": "OnFailure", "containers": [{
            "name": "tensorflow", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 1"],
            "ports": [{"name": "tfjob-port", "containerPort": 2222}],
            "env": [{"name": "TF_CONFIG", "value": tf_config.to_string()}],
        }]}
    }))
    .expect("a pod")
}

/// A service as Kubeflow's controller created it (no `publishNotReadyAddresses`).
fn kubeflow_service(ns: &str, uid: &str, t: &str, i: i32) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{JOB}-{t}-{i}"), "namespace": ns,
            "labels": kubeflow_labels(t, i, false), "ownerReferences": owner(uid)},
        "spec": {"clusterIP": "None", "selector": kubeflow_labels(t, i, false),
            "ports": [{"name": "tfjob-port", "port": 2222}]}
    }))
    .expect("a service")
}

/// The status as Kubeflow's controller writes it: its conditions and counts, no `restarts`,
/// no `podRestarts`, no `selector`, and `lastReconcileTime`.
fn kubeflow_status(ns: &str) -> Value {
    let t0 = "2024-05-01T10:00:00Z";
    let t1 = "2024-05-01T10:00:05Z";
    json!({
        "conditions": [
            {"type": "Created", "status": "True", "reason": "TFJobCreated",
                "message": format!("TFJob {JOB} is created."), "lastUpdateTime": t0, "lastTransitionTime": t0},
            {"type": "Running", "status": "True", "reason": "TFJobRunning",
                "message": format!("TFJob {ns}/{JOB} is running."), "lastUpdateTime": t1, "lastTransitionTime": t1},
        ],
        "replicaStatuses": {"PS": {"active": 1}, "Worker": {"active": 2}},
        "startTime": t0,
        "lastReconcileTime": t1,
    })
}

fn restart_count(p: &Pod) -> i32 {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).sum())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_job_kubeflow_started_is_continued_without_touching_its_pods() {
    let mut c = TestCluster::without_operator("takeover").await;
    let ns = c.namespace.clone();

    // What Kubeflow's controller leaves: the job, its status, its pods and services.
    let created = c.create(job()).await;
    let uid = created.metadata.uid.clone().expect("uid");
    let raw: Api<DynamicObject> =
        Api::namespaced_with(c.client.clone(), &ns, &ApiResource::erase::<TFJob>(&()));
    let mut obj = raw.get(JOB).await.expect("the job");
    obj.data["status"] = kubeflow_status(&ns);
    raw.replace_status(JOB, &PostParams::default(), &obj)
        .await
        .expect("writing Kubeflow's status");
    let pp = PostParams::default();
    // The PS serves until cleanup; worker 1 crashed twice (kubelet restarts) and finished;
    // worker 0 is still training when our operator takes over.
    let pods = [
        ("ps", 0, vec![("run-seconds", "300")]),
        ("worker", 0, vec![("run-seconds", "10")]),
        (
            "worker",
            1,
            vec![("run-seconds", "0.2"), ("fail-times", "2")],
        ),
    ];
    for (t, i, script) in &pods {
        c.pods()
            .create(&pp, &kubeflow_pod(&ns, &uid, t, *i, script))
            .await
            .expect("creating a pod as Kubeflow did");
        c.services()
            .create(&pp, &kubeflow_service(&ns, &uid, t, *i))
            .await
            .expect("creating a service as Kubeflow did");
    }
    let finished = c
        .until_pod_phase(&format!("{JOB}-worker-1"), "Succeeded")
        .await;
    assert_eq!(
        restart_count(&finished),
        2,
        "two kubelet restarts before the takeover"
    );
    c.until_pod_phase(&format!("{JOB}-worker-0"), "Running")
        .await;
    let before = c.jobs().get(JOB).await.expect("the job");
    let uids: BTreeMap<String, String> = c
        .pods()
        .list(&Default::default())
        .await
        .expect("pods")
        .items
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.unwrap_or_default(),
                p.metadata.uid.unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(uids.len(), 3);

    // Our operator starts.
    let recorder = record_pods(&c, JOB).await;
    let mark = c.mark();
    c.start_operator();
    let counted = until(&c.jobs(), JOB, "worker 1's kubelet restarts counted", |j| {
        j.filter(|j| restarts(j, ReplicaType::Worker) == Some(2))
            .cloned()
    })
    .await;
    let worker = &counted.status.as_ref().expect("status").replica_statuses[&ReplicaType::Worker];
    assert_eq!(
        worker.pod_restarts.get(&uids[&format!("{JOB}-worker-1")]),
        Some(&2),
        "counted once, by pod uid"
    );
    for t in [ConditionType::Created, ConditionType::Running] {
        assert_eq!(
            condition(&counted, t),
            condition(&before, t),
            "{t:?} carried over as Kubeflow wrote it"
        );
    }
    settle().await;
    let running = c.jobs().get(JOB).await.expect("the job");
    assert!(
        has_condition(&running, ConditionType::Running)
            && !has_condition(&running, ConditionType::Restarting),
        "a finished worker with old restarts is no reason to restart: {:?}",
        running.status
    );

    // The job finishes as Kubeflow would have let it: worker 0 decides.
    let done = c.until_condition(JOB, ConditionType::Succeeded).await;
    let created_after = condition(&done, ConditionType::Created).expect("Created");
    assert_eq!(
        Some(created_after),
        condition(&before, ConditionType::Created)
    );
    let running_after = condition(&done, ConditionType::Running).expect("Running");
    assert_eq!(running_after.status, ConditionStatus::False);
    assert_eq!(restarts(&done, ReplicaType::Worker), Some(2));
    // cleanPodPolicy Running (our default): the PS still serving goes, finished workers stay.
    c.until_pods_are(JOB, &["legacy-worker-0", "legacy-worker-1"])
        .await;

    // Not one pod recreated; the only deletion is the PS's cleanup, after success.
    for (name, uid) in &uids {
        assert_eq!(
            recorder.uids_of(name),
            std::slice::from_ref(uid),
            "{name} never recreated"
        );
    }
    let deleted_early: Vec<String> = recorder
        .seen()
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .filter_map(|p| p.metadata.name.clone())
        .filter(|n| n != "legacy-ps-0")
        .collect();
    assert!(deleted_early.is_empty(), "deleted: {deleted_early:?}");
    if c.counts_requests() {
        eventually("the PS cleanup counted", || async {
            let r = c.operator_requests_since(&mark);
            (r.count(Some("delete"), Some("pods")) == 1).then_some(())
        })
        .await;
        let r = c.operator_requests_since(&mark);
        assert_eq!(r.count(Some("create"), Some("pods")), 0, "{r:?}");
        assert_eq!(r.count(Some("create"), Some("services")), 0, "{r:?}");
    }
    let reasons: Vec<String> = c.events_of(JOB).await.into_iter().map(|(r, _)| r).collect();
    for never in [
        "TFJobCreated",
        "SuccessfulCreatePod",
        "SuccessfulCreateService",
        "TFJobRestarting",
    ] {
        assert!(
            !reasons.iter().any(|r| r == never),
            "{never} in {reasons:?}"
        );
    }
}
