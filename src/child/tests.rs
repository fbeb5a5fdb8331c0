use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::{Value, json};

use super::*;

fn pod_json(conditions: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "j-worker-0", "namespace": "ns", "uid": "uid-0",
            "resourceVersion": "7", "creationTimestamp": "2026-11-25T10:00:00Z",
            "deletionTimestamp": "2026-11-25T10:05:00Z",
            "labels": {
                "training.kubeflow.org/job-name": "j",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "3",
                "training.kubeflow.org/operator-name": "tfjob-controller",
                "tfjob-operator.dev/restart-attempt": "2",
                "team": "a"
            },
            "annotations": {"big": "x".repeat(1000)},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "cm"},
                {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "j",
                 "uid": "job-uid", "controller": true}
            ],
            "managedFields": [{"manager": "kubectl", "operation": "Update"}]
        },
        "spec": {"containers": [{"name": "tensorflow", "image": "tf",
                                 "env": [{"name": "TF_CONFIG", "value": "{}"}]}]},
        "status": {
            "phase": "Failed", "podIP": "10.0.0.1", "message": "m", "reason": "Evicted",
            "conditions": conditions,
            "containerStatuses": [
                {"name": "sidecar", "restartCount": 1,
                 "state": {"waiting": {"reason": "ImagePullBackOff",
                                       "message": "Back-off pulling \"img\""}}},
                {"name": "tensorflow", "image": "tf", "imageID": "sha", "ready": false,
                 "restartCount": 2,
                 "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                           "finishedAt": "2026-01-01T00:00:09Z"}},
                 "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}
            ]
        }
    })
}

fn conditions() -> Value {
    json!([
        {"type": "Ready", "status": "False", "reason": "PodFailed"},
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/1 nodes are available"},
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    ])
}

fn ts(text: &str) -> Option<Timestamp> {
    Some(text.parse().unwrap())
}

#[test]
fn a_watched_pod_keeps_what_the_planner_reads() {
    let pod: ChildPod = serde_json::from_value(pod_json(conditions())).unwrap();
    let want = ChildPod {
        name: "j-worker-0".into(),
        namespace: "ns".into(),
        job: "j".into(),
        uid: Some("uid-0".into()),
        resource_version: Some("7".into()),
        replica: Some((crate::crd::ReplicaType::Worker, 3)),
        attempt: 2,
        owner: Some(Owner {
            uid: "job-uid".into(),
            name: "j".into(),
            tfjob: true,
        }),
        terminating: true,
        created: ts("2026-11-25T10:00:00Z"),
        phase: Phase::Failed,
        exit_code: Some(137),
        restart_count: 3,
        stuck: Some(Stuck {
            container: Some("sidecar".into()),
            reason: "ImagePullBackOff".into(),
            message: Some("Back-off pulling \"img\"".into()),
        }),
        reason: Some("Evicted".into()),
        exit_reason: Some("OOMKilled".into()),
        disruption: Some("EvictionByEvictionAPI".into()),
        finished: ts("2026-01-01T00:00:09Z"),
    };
    assert_eq!(pod, want);
}

#[test]
fn a_pod_we_created_reads_as_the_watch_reads_it() {
    let cases = [
        ("all conditions", conditions()),
        ("none", json!([])),
        (
            "scheduled false, not unschedulable",
            json!([{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]),
        ),
        (
            "disruption without reason",
            json!([{"type": "DisruptionTarget", "status": "True"}]),
        ),
    ];
    for (name, conditions) in cases {
        let full: Pod = serde_json::from_value(pod_json(conditions.clone())).unwrap();
        let watched: ChildPod = serde_json::from_value(pod_json(conditions)).unwrap();
        assert_eq!(ChildPod::from(&full), watched, "{name}");
    }
}

#[test]
fn only_an_unschedulable_pod_is_stuck_unscheduled() {
    let read = |reason: &str| {
        let mut pod = pod_json(json!([{"type": "PodScheduled", "status": "False",
                                        "reason": reason, "message": "0/1 nodes"}]));
        pod["status"]["containerStatuses"] = json!([]);
        serde_json::from_value::<ChildPod>(pod).unwrap().stuck
    };
    let unschedulable = read("Unschedulable").unwrap();
    assert_eq!(unschedulable.words(), "Unschedulable: 0/1 nodes");
    assert_eq!(read("SchedulerError"), None);
}

#[test]
fn the_disruption_is_the_condition_else_a_disruptive_pod_reason() {
    let read = |conditions: Value, reason: &str| {
        let mut pod = pod_json(conditions);
        pod["status"]["reason"] = json!(reason);
        serde_json::from_value::<ChildPod>(pod).unwrap().disruption
    };
    let condition = json!([{"type": "DisruptionTarget", "status": "True",
                            "reason": "DeletionByPodGC"}]);
    assert_eq!(
        read(condition, "Evicted").as_deref(),
        Some("DeletionByPodGC")
    );
    assert_eq!(read(json!([]), "NodeLost").as_deref(), Some("NodeLost"));
    assert_eq!(read(json!([]), "Other"), None);
}

#[test]
fn a_service_keeps_its_identity_only() {
    let mut json = pod_json(json!([]));
    json["kind"] = json!("Service");
    json["spec"] = json!({"ports": [{"port": 2222}]});
    json.as_object_mut().unwrap().remove("status");
    let watched: ChildService = serde_json::from_value(json.clone()).unwrap();
    let full: Service = serde_json::from_value(json).unwrap();
    assert_eq!(ChildService::from(&full), watched);
    assert_eq!(watched.name, "j-worker-0");
    assert_eq!(watched.replica, Some((crate::crd::ReplicaType::Worker, 3)));
    assert!(watched.owned_by(Some("job-uid")) && !watched.owned_by(Some("other")));
    assert!(watched.terminating);
}

#[test]
fn a_pod_without_labels_or_owner_is_kept_unplaced() {
    let pod: ChildPod = serde_json::from_value(json!({
        "metadata": {"name": "x", "namespace": "ns",
                     "labels": {"training.kubeflow.org/replica-index": "-1"}}
    }))
    .unwrap();
    assert_eq!((pod.replica, pod.owner, &*pod.job), (None, None, ""));
    assert_eq!((pod.phase, pod.attempt), (Phase::Unknown, 0));
}

/// How big a cached pod is (printed with `--nocapture`; asserted loosely so that a field
/// added by mistake, such as a whole `ObjectMeta`, shows).
#[test]
fn a_cached_pod_is_small() {
    let inline = std::mem::size_of::<ChildPod>();
    let service = std::mem::size_of::<ChildService>();
    println!("ChildPod: {inline} bytes inline, ChildService: {service}");
    assert!(inline <= 400, "{inline} bytes");
    assert!(service <= 192, "{service} bytes");
}
