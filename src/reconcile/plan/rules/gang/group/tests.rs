use serde_json::{Value, json};

use std::collections::BTreeMap;

use super::*;
use crate::reconcile::plan::tests::support::{gang_job as job, gang_replica as replica, plugins};

fn ready(group: Option<ObservedGroup>) -> GroupView {
    GroupView {
        cache: CacheState::Ready,
        group,
        priorities: BTreeMap::new(),
    }
}

fn observed(job: &TFJob, gang: &Gang, spec: Value) -> ObservedGroup {
    let _ = desired(job, gang, &BTreeMap::new()).unwrap();
    ObservedGroup {
        name: "dist".into(),
        uid: Some("pg-uid".into()),
        controller_uid: Some("u1".into()),
        terminating: false,
        spec,
        phase: Some("Running".into()),
        created: None,
    }
}

#[test]
fn decisions() {
    let specs = json!({"Worker": replica(4, json!({"requests": {"cpu": "1"}}), None)});
    let j = job(json!({}), specs);
    let gang = plugins();
    let in_sync = observed(
        &j,
        &gang,
        json!({"minMember": 4, "minResources": {"cpu": "4000m"}}),
    );
    let present = |view: &GroupView| group_action(&j, &gang, view, Want::Present);

    assert!(
        matches!(present(&ready(None)), GroupAction::Create(pg) if pg["spec"]["minMember"] == 4)
    );
    assert_eq!(
        present(&ready(Some(in_sync.clone()))),
        GroupAction::None,
        "1 CPU × 4 = 4000m"
    );
    let missing = GroupView {
        cache: CacheState::Missing,
        ..ready(None)
    };
    assert_eq!(
        present(&missing),
        GroupAction::CrdMissing {
            crd: "podgroups.scheduling.x-k8s.io".into()
        }
    );
    let syncing = GroupView {
        cache: CacheState::Syncing,
        ..ready(None)
    };
    assert_eq!(present(&syncing), GroupAction::Wait);
    let going = ObservedGroup {
        terminating: true,
        ..in_sync.clone()
    };
    assert_eq!(present(&ready(Some(going))), GroupAction::Wait);
    let foreign = ObservedGroup {
        controller_uid: None,
        spec: json!({"minMember": 1}),
        ..in_sync.clone()
    };
    assert_eq!(
        present(&ready(Some(foreign.clone()))),
        GroupAction::None,
        "left alone"
    );

    // Suspended or finished: ours goes; someone else's stays.
    let absent = |view: &GroupView| group_action(&j, &gang, view, Want::Absent);
    assert_eq!(
        absent(&ready(Some(in_sync.clone()))),
        GroupAction::Delete(Deletion {
            name: "dist".into(),
            uid: Some("pg-uid".into()),
            resource_version: None
        })
    );
    assert_eq!(absent(&ready(Some(foreign))), GroupAction::None);
    assert_eq!(absent(&ready(None)), GroupAction::None);
}

#[test]
fn a_changed_spec_is_patched_field_by_field() {
    let gang = Gang::Volcano;
    // Scaled from 4 to 6 workers of 1 CPU; Volcano filled in queue "default" itself.
    let specs = json!({"Worker": replica(6, json!({"requests": {"cpu": "1"}}), None)});
    let j = job(json!({}), specs);
    let old = observed(
        &j,
        &gang,
        json!({"minMember": 4, "minResources": {"cpu": "4", "memory": "1Gi"}, "queue": "default"}),
    );
    let action = group_action(&j, &gang, &ready(Some(old)), Want::Present);
    assert_eq!(
        action,
        GroupAction::Patch {
            name: "dist".into(),
            patch: json!({"spec": {"minMember": 6, "minResources": {"cpu": "6", "memory": null}}})
        }
    );
    // minAvailable set: only minMember and the resources of 2 pods change.
    let policy = json!({"schedulingPolicy": {"minAvailable": 2, "queue": "research"}});
    let specs = json!({"Worker": replica(6, json!({}), None)});
    let j = job(policy, specs);
    let old = observed(
        &j,
        &gang,
        json!({"minMember": 6, "minResources": {"cpu": "6"}, "queue": "research"}),
    );
    let action = group_action(&j, &gang, &ready(Some(old)), Want::Present);
    assert_eq!(
        action,
        GroupAction::Patch {
            name: "dist".into(),
            patch: json!({"spec": {"minMember": 2, "minResources": null}})
        }
    );
}

#[test]
fn a_podgroup_the_spec_cannot_make_is_invalid_and_no_pod_is_made() {
    let specs = json!({"Worker": replica(2, json!({}), None)});
    let policy = json!({"schedulingPolicy": {"minAvailable": 3}});
    let action = group_action(
        &job(policy, specs),
        &Gang::Volcano,
        &ready(None),
        Want::Present,
    );
    assert!(
        matches!(&action, GroupAction::Invalid(e) if e.starts_with("spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 3: ")),
        "{action:?}"
    );
    assert!(!action.allows_pods());
}
