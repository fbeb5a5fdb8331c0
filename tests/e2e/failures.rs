//! End to end: failures (docs/behaviour.md §3, §6.2, §6.3, §7.4) — a replica failing under
//! restartPolicy Never, an invalid job beside a valid one, and finished jobs whose pods are
//! never recreated. The real controller against the simulator (or a real cluster via
//! KUBECONFIG, where scripted outcomes are skipped).

use crate::support::{
    TestCluster, annotate, has_condition, job, reason_and_message, record_pods, settle, until,
};
use futures::future::join_all;
use kube::api::DeleteParams;
use tfjob_operator::crd::ConditionType;

/// One case of "a replica of type T fails under Never": the job's replicas and the pod
/// scripted to exit 1.
struct NeverCase {
    replica_type: &'static str,
    replicas: &'static [(&'static str, i32, &'static str)],
    failing_pod_index: i32,
}

const NEVER_CASES: [NeverCase; 4] = [
    NeverCase {
        replica_type: "PS",
        replicas: &[("PS", 1, "Never"), ("Worker", 1, "Never")],
        failing_pod_index: 0,
    },
    NeverCase {
        replica_type: "Worker",
        replicas: &[("PS", 1, "Never"), ("Worker", 2, "Never")],
        failing_pod_index: 1,
    },
    NeverCase {
        replica_type: "Evaluator",
        replicas: &[("Evaluator", 1, "Never"), ("Worker", 1, "Never")],
        failing_pod_index: 0,
    },
    NeverCase {
        replica_type: "Chief",
        replicas: &[("Chief", 1, "Never"), ("Worker", 1, "Never")],
        failing_pod_index: 0,
    },
];

#[tokio::test]
async fn a_replica_of_any_type_failing_under_never_fails_the_job_and_nothing_is_recreated() {
    let c = TestCluster::start("never").await;
    // Every case runs at once, each its own job in the same namespace.
    let pods = crate::support::Recorder::start(c.pods(), "").await;
    join_all(
        NEVER_CASES
            .iter()
            .map(|case| fails_under_never(&c, case, &pods)),
    )
    .await;
}

async fn fails_under_never(
    c: &TestCluster,
    case: &NeverCase,
    pods: &crate::support::Recorder<k8s_openapi::api::core::v1::Pod>,
) {
    let t = case.replica_type;
    let name = format!("never-{}", t.to_lowercase());
    let failing = format!("{name}-{}-{}", t.to_lowercase(), case.failing_pod_index);
    let ns = &c.namespace;
    let mut spec = job(&name, case.replicas);
    for (other, _, _) in case.replicas {
        annotate(&mut spec, other, "sim.tfjob.dev/run-seconds", "3600");
    }
    c.script_pod(&failing, &[("run-seconds", "0.3"), ("exit-code", "1")]);
    c.create(spec).await;
    let uid = c.until_pod_uid(&failing, None).await;

    let failed = c.until_condition(&name, ConditionType::Failed).await;
    let message = format!("TFJob {ns}/{name} has failed because 1 {t} replica(s) failed.");
    assert_eq!(
        reason_and_message(&failed, ConditionType::Failed),
        Some(("TFJobFailed".into(), message.clone())),
        "{t}"
    );
    let status = failed.status.clone().unwrap();
    assert!(status.completion_time.is_some(), "{t}: completionTime");
    assert!(
        !has_condition(&failed, ConditionType::Running),
        "{t}: Running still True: {:?}",
        status.conditions
    );
    assert!(
        !has_condition(&failed, ConditionType::Succeeded),
        "{t}: Succeeded too"
    );
    let exited = format!("Pod: {ns}.{failing} exited with code 1");
    c.until_event(&name, "ExitedWithCode", &exited).await;
    c.until_event(&name, "TFJobFailed", &message).await;

    // Default cleanPodPolicy Running: the pods still running go, the failed one stays.
    c.until_pods_are(&name, &[&failing]).await;
    settle().await;
    assert_eq!(c.pod_names(&name).await, [failing.as_str()], "{t}");
    let still = c.pods().get(&failing).await.unwrap();
    assert_eq!(still.metadata.uid.as_ref(), Some(&uid), "{t}");
    assert_eq!(pods.uids_of(&failing), [uid], "{t}");
    for (pod, _) in pods.identities() {
        if pod.starts_with(&format!("{name}-")) {
            assert_eq!(pods.uids_of(&pod).len(), 1, "{t}: {pod} was recreated");
        }
    }
    let job = c.jobs().get(&name).await.unwrap();
    assert_eq!(
        job.status.unwrap().conditions,
        status.conditions,
        "{t}: conditions changed after failing"
    );
}

#[tokio::test]
async fn an_invalid_job_fails_validation_and_creates_nothing_while_a_valid_job_beside_it_runs() {
    let c = TestCluster::start("invalid").await;
    let pods = record_pods(&c, "bad").await;
    let services =
        crate::support::Recorder::start(c.services(), "training.kubeflow.org/job-name=bad").await;
    // The schema accepts any container name; only the controller can tell that no
    // container is named `tensorflow`.
    let mut bad = job("bad", &[("Worker", 1, "Never")]);
    bad["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] =
        "main".into();
    c.create(bad).await;
    c.create(job("good", &[("Worker", 1, "Never")])).await;

    let failed = c.until_condition("bad", ConditionType::Failed).await;
    let message = "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: \
                   one container must be named \"tensorflow\"";
    assert_eq!(
        reason_and_message(&failed, ConditionType::Failed),
        Some(("TFJobFailedValidation".into(), message.into()))
    );
    assert!(failed.status.as_ref().unwrap().completion_time.is_some());
    c.until_event("bad", "TFJobFailedValidation", message).await;

    c.until_condition("good", ConditionType::Succeeded).await;
    settle().await;
    assert!(c.pod_names("bad").await.is_empty());
    assert!(
        pods.seen().is_empty(),
        "pods created for the invalid job: {:?}",
        pods.identities()
    );
    assert!(
        services.seen().is_empty(),
        "services created for the invalid job: {:?}",
        services.identities()
    );
    let bad = c.jobs().get("bad").await.unwrap();
    assert_eq!(
        bad.status, failed.status,
        "the failed job's status moved on"
    );
}

#[tokio::test]
async fn pods_deleted_by_clean_pod_policy_all_after_success_never_come_back() {
    let c = TestCluster::start("finished-all").await;
    let pods = record_pods(&c, "done").await;
    let mut spec = job("done", &[("PS", 1, "Never"), ("Worker", 1, "Never")]);
    spec["spec"]["runPolicy"] = serde_json::json!({"cleanPodPolicy": "All"});
    annotate(&mut spec, "PS", "sim.tfjob.dev/run-seconds", "3600");
    c.create(spec).await;
    c.until_condition("done", ConditionType::Succeeded).await;
    c.until_pods_are("done", &[]).await;
    until(&c.services(), "done-worker-0", "service deleted", |s| {
        s.is_none().then_some(())
    })
    .await;

    settle().await;
    assert!(c.pod_names("done").await.is_empty());
    assert_eq!(pods.uids_of("done-ps-0").len(), 1, "PS pod recreated");
    assert_eq!(
        pods.uids_of("done-worker-0").len(),
        1,
        "worker pod recreated"
    );
    assert_eq!(pods.identities().len(), 2, "{:?}", pods.identities());
}

#[tokio::test]
async fn a_finished_pod_deleted_by_a_user_is_never_recreated() {
    let c = TestCluster::start("finished-none").await;
    let pods = record_pods(&c, "kept").await;
    let mut spec = job("kept", &[("Worker", 2, "Never")]);
    spec["spec"]["runPolicy"] = serde_json::json!({"cleanPodPolicy": "None"});
    c.create(spec).await;
    c.until_condition("kept", ConditionType::Succeeded).await;
    // Policy None keeps every pod; the user deletes worker 0 by hand.
    c.pods()
        .delete("kept-worker-0", &DeleteParams::default())
        .await
        .unwrap();
    c.until_pods_are("kept", &["kept-worker-1"]).await;

    settle().await;
    assert_eq!(c.pod_names("kept").await, ["kept-worker-1"]);
    assert_eq!(pods.uids_of("kept-worker-0").len(), 1, "worker 0 recreated");
    assert_eq!(pods.uids_of("kept-worker-1").len(), 1, "worker 1 recreated");
    let job = c.jobs().get("kept").await.unwrap();
    assert!(has_condition(&job, ConditionType::Succeeded));
}
