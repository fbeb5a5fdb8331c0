//! What the controller has just done to its pods but its cache may not show yet.
//!
//! Watches lag behind writes: right after deleting a failed pod, the cache may still show it
//! failed, and planning on that would count its restart twice. So the controller remembers the
//! pods it deleted and shows them terminating until the cache catches up (or the memory
//! expires). Creates need no such memory: they are filed in the cache at once
//! (`runtime::store`). Also remembered: creates that failed, whose absence is no deletion.
//! Plain data, one `Pending` per job; the caller passes `now`.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};

use crate::child::ChildPod;

/// After this long an unmet expectation is dropped: the cache is trusted again.
pub const EXPECTATION_TTL: SignedDuration = SignedDuration::from_secs(60);

/// One job's pending writes.
#[derive(Default, Debug)]
pub struct Pending {
    /// Pods we deleted, by uid.
    deleted: BTreeMap<String, Timestamp>,
    /// Pods whose create failed, by name, until a pod of that name shows up.
    failed_creates: BTreeMap<String, Timestamp>,
}

/// An emptied map still holds its root node: every job would keep one for good. Give it back.
fn release_if_empty<V>(map: &mut BTreeMap<String, V>) {
    if map.is_empty() {
        *map = BTreeMap::new();
    }
}

impl Pending {
    pub fn deleted(&mut self, pod_uid: &str, now: Timestamp) {
        self.deleted.insert(pod_uid.to_string(), now);
    }

    pub fn create_failed(&mut self, pod_name: &str, now: Timestamp) {
        self.failed_creates
            .entry(pod_name.to_string())
            .or_insert(now);
    }

    /// Pods whose create failed and that have not existed since: their absence is no deletion.
    pub fn never_created(&mut self, pods: &[ChildPod], now: Timestamp) -> BTreeSet<String> {
        self.failed_creates.retain(|name, at| {
            !pods.iter().any(|pod| pod.name == *name) && *at + EXPECTATION_TTL > now
        });
        release_if_empty(&mut self.failed_creates);
        self.failed_creates.keys().cloned().collect()
    }

    /// The cached pods as they are after our pending deletions: deleted pods the cache still
    /// shows live are shown terminating. Expectations the cache now satisfies, or that
    /// expired, are dropped.
    pub fn overlay(&mut self, mut pods: Vec<ChildPod>, now: Timestamp) -> Vec<ChildPod> {
        self.deleted.retain(|uid, at| {
            let still_live = pods
                .iter()
                .any(|pod| pod.uid.as_ref() == Some(uid) && !pod.terminating);
            still_live && *at + EXPECTATION_TTL > now
        });
        release_if_empty(&mut self.deleted);
        for pod in pods.iter_mut() {
            if pod
                .uid
                .as_ref()
                .is_some_and(|uid| self.deleted.contains_key(uid))
            {
                pod.terminating = true;
            }
        }
        pods
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(name: &str, uid: &str) -> ChildPod {
        ChildPod::from(&Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn names(pods: &[ChildPod]) -> Vec<(String, bool)> {
        pods.iter()
            .map(|p| (p.name.clone(), p.terminating))
            .collect()
    }

    #[test]
    fn a_deleted_pod_still_cached_live_is_shown_terminating() {
        let mut e = Pending::default();
        e.deleted("u1", t(0));
        let seen = e.overlay(vec![pod("j-worker-0", "u1")], t(1));
        assert_eq!(names(&seen), [("j-worker-0".to_string(), true)]);
        // A new pod with the same name but another uid is not masked.
        let seen = e.overlay(vec![pod("j-worker-0", "u2")], t(2));
        assert_eq!(names(&seen), [("j-worker-0".to_string(), false)]);
    }

    #[test]
    fn expectations_expire() {
        let mut e = Pending::default();
        e.deleted("u9", t(0));
        let later = t(61);
        assert_eq!(
            names(&e.overlay(vec![pod("x", "u9")], later)),
            [("x".to_string(), false)]
        );
    }

    #[test]
    fn a_failed_create_is_remembered_until_the_pod_exists() {
        let mut e = Pending::default();
        e.create_failed("j-worker-0", t(0));
        assert_eq!(
            e.never_created(&[], t(1)),
            BTreeSet::from(["j-worker-0".to_string()])
        );
        assert!(e.never_created(&[pod("j-worker-0", "u1")], t(2)).is_empty());
        // Once it existed, a later absence is a real deletion.
        assert!(e.never_created(&[], t(3)).is_empty());
    }
}
