//! From the events of a watch to what they mean for the controller: which objects were
//! touched or are gone, and whether the watch's cache holds a complete view. Pure.
//!
//! A watch reports deletions as `Delete` events only while it is connected. When it has to
//! re-list (its history was compacted, 410 Gone), an object deleted in the meantime is simply
//! absent from the new list: no event says so. So during a re-list the objects the cache held
//! before are remembered, and at its end those the list no longer had are reported gone too.
//! And from a re-list's start to its end the cache is not synced: decisions wait for it.
//! An object a re-list finds as the cache had it (same resourceVersion) is not reported: it did
//! not change while the watch was down, and with 50k children, waking their jobs again would
//! queue 50k passes behind the ones the re-listed jobs already get.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube::runtime::watcher::Event;

use crate::child::Identity;

/// What an event did to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Added, updated, or listed.
    Touched,
    /// Deleted, or missing from a re-list.
    Gone,
}

/// Follows one watch's events (after they were applied to its cache).
#[derive(Debug)]
pub struct Tracker<K> {
    relist: Option<Relist<K>>,
}

/// A re-list under way: what the cache held before it, and what it has listed so far.
#[derive(Debug)]
struct Relist<K> {
    before: HashMap<(Option<String>, String), Arc<K>>,
    listed: HashSet<(Option<String>, String)>,
}

impl<K> Default for Tracker<K> {
    fn default() -> Self {
        Self { relist: None }
    }
}

/// The cache is complete (`Some(true)`), or a (re-)list has begun (`Some(false)`).
pub type Synced = Option<bool>;

impl<K: Identity> Tracker<K> {
    /// Reports each object `event` touched or removed to `seen`, and returns the change of
    /// sync state. `cached` is called at the start of a re-list, for the objects the cache
    /// holds then (the cache keeps its old content until the re-list is done).
    pub fn on_event(
        &mut self,
        event: &Event<K>,
        cached: impl FnOnce() -> Vec<Arc<K>>,
        mut seen: impl FnMut(&K, Seen),
    ) -> Synced {
        match event {
            Event::Apply(obj) => seen(obj, Seen::Touched),
            Event::Delete(obj) => seen(obj, Seen::Gone),
            Event::Init => {
                self.relist = Some(Relist {
                    before: cached().into_iter().map(|o| (key(&*o), o)).collect(),
                    listed: HashSet::new(),
                });
                return Some(false);
            }
            Event::InitApply(obj) => {
                let mut replaced = None;
                let unchanged = self.relist.as_mut().is_some_and(|relist| {
                    let k = key(obj);
                    let old = relist.before.get(&k);
                    replaced = old.filter(|old| other_object(&***old, obj)).cloned();
                    relist.listed.insert(k);
                    old.is_some_and(|old| same_version(&**old, obj))
                });
                // Deleted and created again under its name while the watch was down: the
                // old object is gone too (its uid's memory must go with it).
                if let Some(old) = replaced {
                    seen(&old, Seen::Gone);
                }
                if !unchanged {
                    seen(obj, Seen::Touched);
                }
            }
            Event::InitDone => {
                if let Some(relist) = self.relist.take() {
                    for (k, old) in relist.before {
                        if !relist.listed.contains(&k) {
                            seen(&old, Seen::Gone);
                        }
                    }
                }
                return Some(true);
            }
        }
        None
    }
}

/// Two objects of one name, each with its own uid.
fn other_object(a: &impl Identity, b: &impl Identity) -> bool {
    a.uid().is_some() && b.uid().is_some() && a.uid() != b.uid()
}

/// Both carry the same resourceVersion (an object without one is taken as changed).
fn same_version(a: &impl Identity, b: &impl Identity) -> bool {
    a.resource_version().is_some() && a.resource_version() == b.resource_version()
}

fn key<K: Identity>(obj: &K) -> (Option<String>, String) {
    (obj.namespace().map(str::to_string), obj.name().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Runs events through a tracker; returns every (name, change) reported and the sync
    /// states, with `cache` standing for the cache's content at a re-list's start.
    fn run(events: Vec<Event<Pod>>, cache: &[&str]) -> (Vec<(String, Seen)>, Vec<bool>) {
        let mut tracker = Tracker::default();
        let mut seen = Vec::new();
        let mut synced = Vec::new();
        for event in &events {
            let cached = || cache.iter().map(|n| Arc::new(pod(n))).collect();
            let state = tracker.on_event(event, cached, |p: &Pod, c| {
                seen.push((p.metadata.name.clone().unwrap_or_default(), c))
            });
            synced.extend(state);
        }
        (seen, synced)
    }

    #[test]
    fn watch_events_report_what_they_touch() {
        let (seen, synced) = run(vec![Event::Apply(pod("a")), Event::Delete(pod("b"))], &[]);
        assert_eq!(
            seen,
            [("a".into(), Seen::Touched), ("b".into(), Seen::Gone)]
        );
        assert!(
            synced.is_empty(),
            "a plain watch event does not change the sync state"
        );
    }

    #[test]
    fn an_object_missing_from_a_relist_is_reported_gone() {
        let events = vec![
            Event::Init,
            Event::InitApply(pod("kept")),
            Event::InitApply(pod("new")),
            Event::InitDone,
        ];
        let (seen, synced) = run(events, &["kept", "deleted-meanwhile"]);
        assert_eq!(
            seen,
            [
                ("kept".into(), Seen::Touched),
                ("new".into(), Seen::Touched),
                ("deleted-meanwhile".into(), Seen::Gone),
            ]
        );
        assert_eq!(
            synced,
            [false, true],
            "unsynced from the list's start to its end"
        );
    }

    #[test]
    fn a_relist_reports_only_what_changed_while_the_watch_was_down() {
        let at = |name: &str, rv: &str| {
            let mut p = pod(name);
            p.metadata.resource_version = Some(rv.into());
            p
        };
        let mut tracker = Tracker::default();
        let mut seen = Vec::new();
        let before = [at("same", "1"), at("changed", "1"), at("gone", "1")];
        let events = [
            Event::Init,
            Event::InitApply(at("same", "1")),
            Event::InitApply(at("changed", "2")),
            Event::InitApply(at("new", "3")),
            Event::InitDone,
        ];
        for event in &events {
            let cached = || before.iter().cloned().map(Arc::new).collect();
            tracker.on_event(event, cached, |p: &Pod, c| {
                seen.push((p.metadata.name.clone().unwrap_or_default(), c))
            });
        }
        assert_eq!(
            seen,
            [
                ("changed".into(), Seen::Touched),
                ("new".into(), Seen::Touched),
                ("gone".into(), Seen::Gone),
            ]
        );
    }

    /// A job (or child) deleted and created again under its name while the watch was down:
    /// the re-list shows the new one, and the old one is reported gone (its memory goes).
    #[test]
    fn an_object_recreated_under_its_name_while_the_watch_was_down_is_reported_gone() {
        let with_uid = |uid: &str| {
            let mut p = pod("a");
            p.metadata.uid = Some(uid.into());
            p.metadata.resource_version = Some(uid.into());
            p
        };
        let mut tracker = Tracker::default();
        let mut seen = Vec::new();
        let before = [with_uid("1")];
        for event in [
            Event::Init,
            Event::InitApply(with_uid("2")),
            Event::InitDone,
        ] {
            let cached = || before.iter().cloned().map(Arc::new).collect();
            tracker.on_event(&event, cached, |p: &Pod, c| {
                seen.push((p.metadata.uid.clone().unwrap_or_default(), c))
            });
        }
        assert_eq!(
            seen,
            [("1".into(), Seen::Gone), ("2".into(), Seen::Touched)]
        );
    }

    #[test]
    fn the_first_list_reports_nothing_gone() {
        let events = vec![Event::Init, Event::InitApply(pod("a")), Event::InitDone];
        let (seen, synced) = run(events, &[]);
        assert_eq!(seen, [("a".into(), Seen::Touched)]);
        assert_eq!(synced, [false, true]);
    }

    #[test]
    fn a_relist_restarted_midway_compares_with_the_cache_before_it() {
        // The first re-list fails after one page; the cache still holds its old content.
        let events = vec![
            Event::Init,
            Event::InitApply(pod("a")),
            Event::Init,
            Event::InitApply(pod("b")),
            Event::InitDone,
        ];
        let (seen, synced) = run(events, &["a", "b"]);
        assert_eq!(seen.last(), Some(&("a".into(), Seen::Gone)));
        assert_eq!(synced, [false, false, true]);
    }
}
