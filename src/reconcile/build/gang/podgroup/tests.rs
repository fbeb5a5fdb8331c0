use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::reconcile::plan::tests::support::{gang_job as job, gang_replica as replica, plugins};

fn resources(job: &TFJob, priorities: &[(&str, i32)]) -> Vec<(String, String)> {
    let priorities = priorities
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    min_resources(job, min_member(job), &priorities)
        .into_iter()
        .map(|(k, q)| (k, q.0))
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn min_member_is_min_available_else_every_replica() {
    let specs = json!({
        "PS": replica(1, json!({}), None),
        "Worker": replica(3, json!({}), None),
        "Chief": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
    });
    assert_eq!(
        min_member(&job(json!({}), specs.clone())),
        5,
        "1 + 3 + the default 1"
    );
    let policy = json!({"schedulingPolicy": {"minAvailable": 2}});
    assert_eq!(min_member(&job(policy, specs)), 2);
}

#[test]
fn min_resources_sum_the_requests_of_every_pod_when_all_are_needed() {
    let specs = json!({
        "PS": replica(1, json!({"requests": {"cpu": "500m", "memory": "1Gi"}}), None),
        "Worker": replica(3, json!({"requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}}), None),
    });
    assert_eq!(
        resources(&job(json!({}), specs), &[]),
        pairs(&[("cpu", "3500m"), ("memory", "7Gi"), ("nvidia.com/gpu", "3")])
    );
}

#[test]
fn min_resources_count_only_the_first_min_member_pods_in_type_order() {
    // minAvailable 2 of PS 1 + Worker 3: the PS and one worker (equal priorities keep the
    // canonical order Chief, Master, PS, Worker, Evaluator).
    let specs = json!({
        "Worker": replica(3, json!({"requests": {"cpu": "2"}}), None),
        "PS": replica(1, json!({"requests": {"cpu": "1"}}), None),
    });
    let policy = json!({"schedulingPolicy": {"minAvailable": 2}});
    assert_eq!(resources(&job(policy, specs), &[]), pairs(&[("cpu", "3")]));
}

#[test]
fn min_resources_take_higher_priority_replicas_first() {
    let specs = json!({
        "PS": replica(1, json!({"requests": {"cpu": "1"}}), Some("low")),
        "Worker": replica(3, json!({"requests": {"cpu": "2"}}), Some("high")),
    });
    let policy = json!({"schedulingPolicy": {"minAvailable": 2}});
    let j = job(policy, specs);
    assert_eq!(
        resources(&j, &[("high", 1000), ("low", 10)]),
        pairs(&[("cpu", "4")]),
        "two workers, the higher priority"
    );
    assert_eq!(
        resources(&j, &[("low", 10)]),
        pairs(&[("cpu", "3")]),
        "an unknown PriorityClass counts as 0: the PS (10) first"
    );
}

#[test]
fn min_resources_use_limits_only_where_a_container_has_no_requests() {
    let specs = json!({
        "Worker": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tf", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
            {"name": "sidecar", "image": "s", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}}},
            {"name": "plain", "image": "p"}
        ], "initContainers": [{"name": "init", "image": "i", "resources": {"requests": {"cpu": "8"}}}]}}}
    });
    assert_eq!(
        resources(&job(json!({}), specs), &[]),
        pairs(&[("cpu", "4200m"), ("memory", "2Gi")])
    );
}

#[test]
fn min_resources_as_written_win() {
    let specs = json!({"Worker": replica(3, json!({"requests": {"cpu": "2"}}), None)});
    let policy = json!({"schedulingPolicy": {"minResources": {"cpu": "5", "memory": "1Gi"}}});
    assert_eq!(
        resources(&job(policy, specs), &[]),
        pairs(&[("cpu", "5"), ("memory", "1Gi")])
    );
}

#[test]
fn the_scheduler_plugins_podgroup() {
    let specs = json!({"Worker": replica(4, json!({"requests": {"cpu": "1"}}), None)});
    let policy = json!({"schedulingPolicy": {"queue": "q", "priorityClass": "high", "scheduleTimeoutSeconds": 30}});
    let pg = desired(&job(policy, specs), &plugins(), &BTreeMap::new()).unwrap();
    assert_eq!(pg["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
    assert_eq!(pg["kind"], "PodGroup");
    assert_eq!(pg["metadata"]["name"], "dist");
    assert_eq!(pg["metadata"]["namespace"], "ns");
    let owner = &pg["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            owner["kind"].as_str(),
            owner["uid"].as_str(),
            owner["controller"].as_bool()
        ),
        (Some("TFJob"), Some("u1"), Some(true))
    );
    assert_eq!(
        pg["spec"],
        json!({"minMember": 4, "minResources": {"cpu": "4"}, "scheduleTimeoutSeconds": 30}),
        "scheduler-plugins' PodGroup has no queue nor priority class"
    );
}

#[test]
fn the_volcano_podgroup() {
    let specs = json!({"Worker": replica(2, json!({"requests": {"memory": "3Gi"}}), None)});
    let policy = json!({"schedulingPolicy": {"queue": "q", "priorityClass": "high", "scheduleTimeoutSeconds": 30}});
    let pg = desired(&job(policy, specs), &Gang::Volcano, &BTreeMap::new()).unwrap();
    assert_eq!(pg["apiVersion"], "scheduling.volcano.sh/v1beta1");
    assert_eq!(
        pg["spec"],
        json!({"minMember": 2, "minResources": {"memory": "6Gi"}, "queue": "q", "priorityClassName": "high"}),
        "Volcano's PodGroup has no scheduleTimeoutSeconds"
    );
}

#[test]
fn a_min_available_no_gang_can_meet_is_refused_naming_the_field() {
    let specs = json!({"Worker": replica(2, json!({}), None)});
    for (min, words) in [
        (0, "at least 1 member"),
        (3, "more than the job's 2 replicas"),
    ] {
        let policy = json!({"schedulingPolicy": {"minAvailable": min}});
        let err = desired(
            &job(policy.clone(), specs.clone()),
            &Gang::Volcano,
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(
            err.starts_with(&format!(
                "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: {min}: "
            )) && err.contains(words),
            "{err}"
        );
    }
}
