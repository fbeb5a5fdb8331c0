use serde_json::json;

use super::*;
use crate::kueue::plan::workload::{
    Admission, AdmissionCheckState, PodSetAssignment, PodSetUpdate,
};

fn workload() -> Workload {
    let mut w = Workload::default();
    w.metadata.name = Some("tfjob-a-12345".into());
    w.spec.queue_name = Some("user-queue".into());
    w.spec.pod_sets = vec![
        PodSet {
            name: "ps".into(),
            count: 1,
            template: json!({"spec": {"containers": []}}),
            ..PodSet::default()
        },
        PodSet {
            name: "worker".into(),
            count: 2,
            template: json!({"metadata": {"labels": {"team": "x"}}, "spec": {"containers": []}}),
            ..PodSet::default()
        },
    ];
    let assignment = |name: &str| PodSetAssignment {
        name: name.into(),
        flavors: [
            ("cpu".to_string(), "a".to_string()),
            ("memory".to_string(), "a".to_string()),
        ]
        .into_iter()
        .collect(),
        ..PodSetAssignment::default()
    };
    w.status.admission = Some(Admission {
        cluster_queue: "cq".into(),
        pod_set_assignments: vec![assignment("ps"), assignment("worker")],
    });
    w
}

fn flavors() -> BTreeMap<String, FlavorSpec> {
    let spec: FlavorSpec = serde_json::from_value(json!({
        "nodeLabels": {"pool": "a"},
        "tolerations": [{"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]
    }))
    .unwrap();
    [("a".to_string(), spec)].into_iter().collect()
}

fn job() -> Value {
    json!({
        "metadata": {"name": "a", "resourceVersion": "7"},
        "spec": {
            "runPolicy": {"suspend": true},
            "tfReplicaSpecs": {
                "worker": {"replicas": 2, "template": {"metadata": {"labels": {"team": "x"}}, "spec": {"containers": []}}},
                "PS": {"template": {"spec": {"containers": []}}}
            }
        }
    })
}

#[test]
fn admission_adds_the_flavor_the_labels_and_the_annotation_to_each_template() {
    let infos = infos(&workload(), &flavors()).unwrap();
    assert_eq!(flavor_names(&workload()), ["a"]);
    let started = started(&job(), &infos).unwrap();
    assert_eq!(started["spec"]["runPolicy"]["suspend"], json!(false));
    // The job's own spelling `worker` is kept; PS comes first in Kueue's order.
    let worker = &started["spec"]["tfReplicaSpecs"]["worker"]["template"];
    assert_eq!(
        worker["metadata"]["labels"],
        json!({"team": "x", "kueue.x-k8s.io/podset": "worker",
               "kueue.x-k8s.io/local-queue-name": "user-queue",
               "kueue.x-k8s.io/cluster-queue-name": "cq"})
    );
    assert_eq!(
        worker["metadata"]["annotations"],
        json!({"kueue.x-k8s.io/workload": "tfjob-a-12345"})
    );
    assert_eq!(worker["spec"]["nodeSelector"], json!({"pool": "a"}));
    assert_eq!(
        worker["spec"]["tolerations"],
        json!([{"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}])
    );
    let ps = &started["spec"]["tfReplicaSpecs"]["PS"]["template"];
    assert_eq!(
        ps["metadata"]["labels"]["kueue.x-k8s.io/podset"],
        json!("ps")
    );
    assert!(started["spec"]["tfReplicaSpecs"].get("Worker").is_none());
}

#[test]
fn the_patch_holds_only_what_changed() {
    let infos = infos(&workload(), &flavors()).unwrap();
    let patch = merge_patch(&job(), &started(&job(), &infos).unwrap());
    assert_eq!(patch["spec"]["runPolicy"], json!({"suspend": false}));
    assert_eq!(
        patch["spec"]["tfReplicaSpecs"]["worker"]["template"]["metadata"]["labels"]
            .as_object()
            .unwrap()
            .len(),
        3,
        "the team label is unchanged: {patch}"
    );
    assert!(patch.get("metadata").is_none());
}

#[test]
fn eviction_gives_back_the_templates_the_workload_recorded() {
    let w = workload();
    let infos = infos(&w, &flavors()).unwrap();
    let running = started(&job(), &infos).unwrap();
    let back = stopped(&running, Some(&w.spec.pod_sets));
    assert_eq!(back["spec"]["runPolicy"]["suspend"], json!(true));
    assert_eq!(
        back["spec"]["tfReplicaSpecs"],
        job()["spec"]["tfReplicaSpecs"]
    );
    let patch = merge_patch(&running, &back);
    let worker = &patch["spec"]["tfReplicaSpecs"]["worker"]["template"];
    assert_eq!(worker["spec"]["nodeSelector"], Value::Null);
    assert!(
        worker["spec"]
            .as_object()
            .unwrap()
            .contains_key("nodeSelector")
    );
    assert_eq!(
        worker["metadata"]["labels"]["kueue.x-k8s.io/podset"],
        Value::Null
    );
    // Without a Workload (or with another shape) only `suspend` changes.
    let only_suspend = stopped(&running, None);
    assert_eq!(
        only_suspend["spec"]["tfReplicaSpecs"],
        running["spec"]["tfReplicaSpecs"]
    );
}

#[test]
fn admission_check_updates_merge_and_a_conflict_stops_the_start() {
    let mut w = workload();
    w.status.admission_checks = vec![AdmissionCheckState {
        name: "prov".into(),
        state: "Ready".into(),
        pod_set_updates: vec![PodSetUpdate {
            name: "worker".into(),
            annotations: [("cloud/slot".to_string(), "7".to_string())].into(),
            ..PodSetUpdate::default()
        }],
    }];
    let infos = infos(&w, &flavors()).unwrap();
    assert_eq!(
        infos[1].annotations.get("cloud/slot").map(String::as_str),
        Some("7")
    );
    assert!(!infos[0].annotations.contains_key("cloud/slot"));

    let mut conflicting = job();
    conflicting["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["nodeSelector"] =
        json!({"pool": "b"});
    let err = started(&conflicting, &infos).unwrap_err();
    assert!(
        matches!(
            err,
            StartError::Conflict {
                field: "nodeSelector",
                ..
            }
        ),
        "{err}"
    );
    let err = started(&job(), &infos[..1]).unwrap_err();
    assert_eq!(err, StartError::Count { want: 2, got: 1 });
}

#[test]
fn topology_placement_gates_the_pods() {
    let mut w = workload();
    if let Some(a) = w.status.admission.as_mut() {
        a.pod_set_assignments[1].topology_assignment = Some(json!({"levels": ["host"]}));
    }
    let infos = infos(&w, &flavors()).unwrap();
    assert_eq!(
        infos[1].scheduling_gates,
        [json!({"name": "kueue.x-k8s.io/topology"})]
    );
    assert_eq!(
        infos[1]
            .annotations
            .get(UNCONSTRAINED_TOPOLOGY)
            .map(String::as_str),
        Some("true")
    );
    assert!(infos[0].scheduling_gates.is_empty());
}
