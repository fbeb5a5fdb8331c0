//! End to end: one bad object or a misbehaving API server never stops the operator
//! (docs/behaviour.md §3, issue "The controller" item 1).

use std::time::Duration;

use crate::support::{TestCluster, job};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::json;
use tfjob_operator::crd::{ConditionType, TFJob};
use tfjob_sim::FaultRule;

/// A TFJob the typed API cannot read (stored under a CRD that did not check types, like an old
/// Kubeflow CRD) is failed with the field named, and the job beside it still runs.
#[tokio::test]
async fn an_unreadable_tfjob_fails_with_the_field_named_and_does_not_stall_others() {
    let mut c = TestCluster::without_operator("unreadable").await;
    if !c.simulated() {
        return eprintln!("skipped: replaces the CRD with a permissive one (simulator only)");
    }
    let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
    let mut crd = crds.get("tfjobs.kubeflow.org").await.unwrap();
    let schema = crd.spec.versions[0]
        .schema
        .as_mut()
        .unwrap()
        .open_api_v3_schema
        .as_mut()
        .unwrap();
    let spec = schema.properties.as_mut().unwrap().get_mut("spec").unwrap();
    *spec = serde_json::from_value(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    )
    .unwrap();
    crds.replace("tfjobs.kubeflow.org", &PostParams::default(), &crd)
        .await
        .unwrap();

    let resource = ApiResource::erase::<TFJob>(&());
    let raw: Api<DynamicObject> = Api::namespaced_with(c.client.clone(), &c.namespace, &resource);
    let mut bad = job("bad", &[("Worker", 1, "Never")]);
    bad["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = json!("two");
    raw.create(
        &PostParams::default(),
        &serde_json::from_value(bad).unwrap(),
    )
    .await
    .unwrap();
    c.create(job("good", &[("Worker", 1, "Never")])).await;
    c.start_operator();

    c.until_condition("good", ConditionType::Succeeded).await;
    let failed = crate::support::until(&raw, "bad", "bad job failed", |o| {
        let status = o?.data.get("status")?.clone();
        let conditions = status.get("conditions")?.as_array()?.clone();
        conditions
            .into_iter()
            .find(|c| c["type"] == "Failed" && c["status"] == "True")
    })
    .await;
    assert_eq!(failed["reason"], "TFJobFailedValidation");
    let message = failed["message"].as_str().unwrap();
    assert_eq!(
        message,
        "TFJob bad is invalid: spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be of type integer",
        "named as render names it"
    );
    assert!(c.pod_names("bad").await.is_empty());
    c.until_event_reason("bad", "TFJobFailedValidation").await;
}

/// Half of all pod and service creations fail with 500, and status writes are throttled with
/// 429: the job still runs to success, and no child is created twice.
#[tokio::test]
async fn server_errors_and_throttling_are_retried_until_the_job_succeeds() {
    let c = TestCluster::start("faults").await;
    if !c.simulated() {
        return eprintln!("skipped: injects API server faults (simulator only)");
    }
    let sim = c.sim();
    sim.set_fault(FaultRule::error(Some("create"), Some("pods"), 500, 0.5));
    sim.set_fault(FaultRule::error(Some("create"), Some("services"), 500, 0.5));
    sim.set_fault(FaultRule::error(
        Some("update"),
        Some("tfjobs/status"),
        429,
        0.3,
    ));
    c.create(job("flaky", &[("PS", 1, "Never"), ("Worker", 3, "Never")]))
        .await;
    let done = c.until_condition("flaky", ConditionType::Succeeded).await;
    let status = done.status.unwrap();
    let restarts: i32 = status
        .replica_statuses
        .values()
        .filter_map(|r| r.restarts)
        .sum();
    assert_eq!(restarts, 0, "failed creates are not restarts");
    sim.clear_faults();
    // Worker 0 may succeed before a slow sibling was ever created (a finished job creates
    // nothing more); what must never happen is one child created twice.
    let events = c.events_of("flaky").await;
    for reason in ["SuccessfulCreatePod", "SuccessfulCreateService"] {
        let mut names: Vec<String> = events
            .iter()
            .filter(|(r, _)| r == reason)
            .flat_map(|(_, m)| crate::support::children_named(m))
            .collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "{reason} twice for one child: {events:?}");
        assert!(all >= 1, "{events:?}");
    }
}

/// Every watch connection drops and the watch history is compacted (410 Gone on re-watch):
/// the operator re-lists and carries on.
#[tokio::test]
async fn dropped_watches_and_compacted_history_do_not_lose_jobs() {
    let c = TestCluster::start("rewatch").await;
    if !c.simulated() {
        return eprintln!("skipped: drops the simulator's watches (simulator only)");
    }
    let mut spec = job("rewatch", &[("Worker", 1, "Never")]);
    crate::support::annotate(&mut spec, "Worker", "sim.tfjob.dev/run-seconds", "1");
    c.create(spec).await;
    c.until_condition("rewatch", ConditionType::Running).await;
    c.sim().compact_history();
    c.sim().drop_watches();
    c.until_condition("rewatch", ConditionType::Succeeded).await;
}

/// Pod creates fail while the services succeed: once the API server recovers, the pods are
/// created, and since they never existed, their creation is not counted as a restart.
#[tokio::test]
async fn a_pod_whose_create_failed_is_not_counted_as_restarted() {
    let c = TestCluster::start("failedcreate").await;
    if !c.simulated() {
        return eprintln!("skipped: injects API server faults (simulator only)");
    }
    c.sim()
        .set_fault(FaultRule::error(Some("create"), Some("pods"), 500, 1.0));
    c.create(job("fc", &[("Worker", 2, "Never")])).await;
    crate::support::until(&c.services(), "fc-worker-1", "services created", |s| {
        s.cloned()
    })
    .await;
    crate::support::until(&c.jobs(), "fc", "startTime written", |j| {
        j?.status.as_ref()?.start_time.clone()
    })
    .await;
    c.sim().clear_faults();
    let done = c.until_condition("fc", ConditionType::Succeeded).await;
    let restarts: Vec<Option<i32>> = done
        .status
        .unwrap()
        .replica_statuses
        .values()
        .map(|r| r.restarts)
        .collect();
    assert_eq!(restarts, [None], "no restart was counted");
}

/// A pod that cannot start (bad image) is reported on the TFJob, once, with the reason.
#[tokio::test]
async fn a_pod_stuck_pulling_its_image_is_reported_once() {
    let c = TestCluster::start("stuck").await;
    let start = c.mark();
    c.script_pod("stuck-worker-0", &[("never-start", "ImagePullBackOff")]);
    c.create(job("stuck", &[("Worker", 1, "Never")])).await;
    let warned = |events: &[(String, String)]| {
        events
            .iter()
            .filter(|(r, _)| r == "ImagePullBackOff")
            .cloned()
            .collect::<Vec<_>>()
    };
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    while warned(&c.events_of("stuck").await).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no ImagePullBackOff warning"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Later passes (the job is still reconciled) do not repeat it, not even as a series update.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    if c.counts_requests() {
        let requests = c.operator_requests_since(&start);
        assert_eq!(
            requests.count(Some("patch"), Some("events")),
            0,
            "{requests:?}"
        );
    }
    let events = warned(&c.events_of("stuck").await);
    let ns = &c.namespace;
    assert_eq!(
        events,
        [(
            "ImagePullBackOff".to_string(),
            format!("Pod: {ns}.stuck-worker-0 container tensorflow is waiting: ImagePullBackOff")
        )]
    );
}
