use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::crd::labels::LABEL_JOB_NAME;

use super::*;

/// A moment for the cache's clock (only the TTL reads it).
fn t() -> Instant {
    Instant::now()
}

/// A pod of job `job` with a uid and a resourceVersion.
fn pod(name: &str, job: &str, uid: &str, rv: u64) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(uid.into()),
            resource_version: Some(rv.to_string()),
            labels: Some(BTreeMap::from([(LABEL_JOB_NAME.into(), job.into())])),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

/// Their names, sorted (the cache keeps no order).
fn names(pods: Vec<Arc<Pod>>) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    names
}

fn uids(pods: Vec<Arc<Pod>>) -> Vec<String> {
    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect()
}

/// A cache that listed `pods`.
fn listed(pods: &[Pod]) -> ChildCache<Pod> {
    let cache = ChildCache::default();
    cache.update(&Event::Init, t());
    for p in pods {
        cache.update(&Event::InitApply(p.clone()), t());
    }
    cache.update(&Event::InitDone, t());
    cache
}

#[test]
fn children_are_found_by_job_and_follow_their_label() {
    let cache = listed(&[
        pod("a-worker-0", "a", "u1", 1),
        pod("b-worker-0", "b", "u2", 2),
    ]);
    cache.update(&Event::Apply(pod("a-worker-1", "a", "u3", 3)), t());
    assert_eq!(names(cache.of_job("ns", "a")), ["a-worker-0", "a-worker-1"]);
    assert_eq!(names(cache.of_job("other", "a")), Vec::<String>::new());
    // Relabelled by hand to job b: it leaves a.
    cache.update(&Event::Apply(pod("a-worker-1", "b", "u3", 4)), t());
    assert_eq!(names(cache.of_job("ns", "a")), ["a-worker-0"]);
    assert_eq!(names(cache.of_job("ns", "b")), ["a-worker-1", "b-worker-0"]);
    cache.update(&Event::Delete(pod("a-worker-1", "b", "u3", 5)), t());
    assert_eq!(names(cache.of_job("ns", "b")), ["b-worker-0"]);
    assert_eq!(cache.len(), 2);
}

#[test]
fn a_relist_replaces_the_content_at_its_end_and_serves_the_old_one_meanwhile() {
    let cache = listed(&[pod("a-worker-0", "a", "u1", 1)]);
    cache.update(&Event::Init, t());
    cache.update(&Event::InitApply(pod("b-worker-0", "b", "u2", 2)), t());
    assert_eq!(
        names(cache.all()),
        ["a-worker-0"],
        "old content until the list ends"
    );
    cache.update(&Event::InitDone, t());
    assert_eq!(names(cache.all()), ["b-worker-0"]);
    assert!(cache.of_job("ns", "a").is_empty());
}

#[test]
fn a_created_child_is_seen_at_once_and_then_as_the_watch_shows_it() {
    let cache = listed(&[]);
    cache.created(pod("a-worker-0", "a", "u1", 10), t());
    assert_eq!(names(cache.of_job("ns", "a")), ["a-worker-0"]);
    // The watch shows it, then a later change of it: nothing is reported gone.
    assert!(
        cache
            .update(&Event::Apply(pod("a-worker-0", "a", "u1", 10)), t())
            .is_empty()
    );
    assert!(
        cache
            .update(&Event::Apply(pod("a-worker-0", "a", "u1", 12)), t())
            .is_empty()
    );
    assert_eq!(
        cache.of_job("ns", "a")[0]
            .metadata
            .resource_version
            .as_deref(),
        Some("12")
    );
}

#[test]
fn a_create_the_watch_showed_first_is_not_filed_again() {
    let cache = listed(&[]);
    cache.update(&Event::Apply(pod("a-worker-0", "a", "u1", 11)), t());
    cache.created(pod("a-worker-0", "a", "u1", 10), t());
    assert_eq!(
        cache.of_job("ns", "a")[0]
            .metadata
            .resource_version
            .as_deref(),
        Some("11")
    );
    // Settled: a later event of another object does not take it for gone.
    assert!(
        cache
            .update(&Event::Apply(pod("b-worker-0", "b", "u2", 20)), t())
            .is_empty()
    );
    assert_eq!(cache.len(), 2);
}

/// A resumed stream replays the child's creation and deletion: the deletion removes it.
#[test]
fn a_created_child_deleted_while_the_watch_was_down_goes_with_the_replayed_deletion() {
    let cache = listed(&[]);
    cache.created(pod("a-worker-0", "a", "u1", 10), t());
    cache.update(&Event::Apply(pod("a-worker-0", "a", "u1", 10)), t());
    cache.update(&Event::Delete(pod("a-worker-0", "a", "u1", 11)), t());
    assert!(cache.of_job("ns", "a").is_empty());
}

/// The watch showed the child's creation and deletion before the create's answer was filed:
/// the next event, of a later version, shows the watch has passed it; it is reported gone.
#[test]
fn a_created_child_the_watch_passed_without_showing_is_reported_gone() {
    let cache = listed(&[]);
    cache.update(&Event::Apply(pod("a-worker-0", "a", "u1", 10)), t());
    cache.update(&Event::Delete(pod("a-worker-0", "a", "u1", 11)), t());
    cache.created(pod("a-worker-0", "a", "u1", 10), t());
    assert_eq!(names(cache.of_job("ns", "a")), ["a-worker-0"]);
    let gone = cache.update(&Event::Apply(pod("b-worker-0", "b", "u2", 12)), t());
    assert_eq!(uids(gone), ["u1"]);
    assert!(cache.of_job("ns", "a").is_empty());
}

/// A re-list begun after the create does not list the child: it is gone (the tracker, which
/// saw it in the cache at the list's start, reports it).
#[test]
fn a_relist_after_the_create_that_lacks_the_child_removes_it() {
    let cache = listed(&[]);
    cache.created(pod("a-worker-0", "a", "u1", 10), t());
    cache.update(&Event::Init, t());
    assert_eq!(names(cache.all()), ["a-worker-0"], "in the snapshot");
    assert!(cache.update(&Event::InitDone, t()).is_empty());
    assert!(cache.all().is_empty());
}

/// Created while a re-list was under way: the list may predate it, so it is kept until the
/// watch shows it, unless the list holds a newer version (then the list is later: gone).
#[test]
fn a_child_created_during_a_relist_is_kept_unless_the_list_is_newer() {
    let cache = listed(&[]);
    cache.update(&Event::Init, t());
    cache.update(&Event::InitApply(pod("b-worker-0", "b", "u2", 5)), t());
    cache.created(pod("a-worker-0", "a", "u1", 10), t());
    assert!(cache.update(&Event::InitDone, t()).is_empty());
    assert_eq!(
        names(cache.of_job("ns", "a")),
        ["a-worker-0"],
        "carried over"
    );
    cache.update(&Event::Apply(pod("a-worker-0", "a", "u1", 10)), t());
    assert!(
        cache
            .update(&Event::Apply(pod("b-worker-0", "b", "u2", 30)), t())
            .is_empty()
    );
    assert_eq!(names(cache.of_job("ns", "a")), ["a-worker-0"], "settled");

    let cache = listed(&[]);
    cache.update(&Event::Init, t());
    cache.created(pod("a-worker-0", "a", "u1", 10), t());
    cache.update(&Event::InitApply(pod("b-worker-0", "b", "u2", 15)), t());
    assert_eq!(uids(cache.update(&Event::InitDone, t())), ["u1"]);
    assert!(cache.of_job("ns", "a").is_empty());
}

/// The old pod's deletion (or last update), still queued in the watch when its successor of
/// the same name was created, does not replace or remove the successor.
#[test]
fn events_of_the_older_object_of_a_name_leave_the_created_one() {
    let cache = listed(&[pod("a-worker-0", "a", "old", 5)]);
    cache.created(pod("a-worker-0", "a", "new", 10), t());
    assert!(
        cache
            .update(&Event::Apply(pod("a-worker-0", "a", "old", 7)), t())
            .is_empty()
    );
    assert!(
        cache
            .update(&Event::Delete(pod("a-worker-0", "a", "old", 8)), t())
            .is_empty()
    );
    assert_eq!(uids(cache.of_job("ns", "a")), ["new"]);
    cache.update(&Event::Apply(pod("a-worker-0", "a", "new", 10)), t());
    assert_eq!(uids(cache.of_job("ns", "a")), ["new"]);
}

/// A re-list under way when the create answered, listing the old object of that name, keeps
/// the new one.
#[test]
fn a_relist_showing_the_older_object_of_a_name_keeps_the_created_one() {
    let cache = listed(&[pod("a-worker-0", "a", "old", 5)]);
    cache.update(&Event::Init, t());
    cache.update(&Event::InitApply(pod("a-worker-0", "a", "old", 5)), t());
    cache.created(pod("a-worker-0", "a", "new", 10), t());
    cache.update(&Event::InitDone, t());
    assert_eq!(uids(cache.of_job("ns", "a")), ["new"]);
}

#[test]
fn a_created_child_the_watch_never_mentions_goes_after_its_ttl() {
    let cache = listed(&[]);
    let created = t();
    cache.created(pod("a-worker-0", "a", "u1", 10), created);
    let event = pod("b-worker-0", "b", "u2", 3);
    // Any event settles what is due; this one is older, so only the TTL can.
    let before = cache.update(&Event::Apply(event.clone()), created + ASSUMED_TTL / 2);
    assert!(before.is_empty());
    let gone = cache.update(&Event::Apply(event), created + ASSUMED_TTL);
    assert_eq!(uids(gone), ["u1"]);
}
