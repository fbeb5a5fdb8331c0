//! Publishing events about jobs (`events.k8s.io/v1`). I/O.
//!
//! Ours rather than kube-runtime's `Recorder`, for its memory (below). As kube's does, a repeat of an event (same job, type, reason and action) within
//! six minutes is not a new object: the first one's `series` counts it. Unlike kube's, which
//! keeps every whole event it published for those six minutes (about 1.5 KiB each: 6 MiB at
//! 1000 jobs, tens of MiB at 10k), this remembers only what a repeat needs: the event's name
//! and namespace, its count and when it was last seen, under a 64-bit hash of the key.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::EventType;

/// How long a published event can be continued as a series (kube's, and client-go's, value).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);
/// How often the remembered events are swept for expired ones.
const SWEEP_EVERY: SignedDuration = SignedDuration::from_secs(30);

/// One event to publish about an object.
pub struct Note<'a> {
    pub type_: EventType,
    pub reason: &'a str,
    /// What the controller did; repeats share it.
    pub action: &'a str,
    pub note: String,
}

pub struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    recent: Mutex<Recent>,
}

#[derive(Default)]
struct Recent {
    by_key: HashMap<u64, Published>,
    swept: Option<Timestamp>,
}

/// What a repeat needs of the event it continues.
#[derive(Clone)]
struct Published {
    name: String,
    namespace: String,
    count: i32,
    last: Timestamp,
}

impl Recent {
    /// Forgets events whose series window closed (at most every `SWEEP_EVERY`).
    fn sweep(&mut self, now: Timestamp) {
        if self.swept.is_some_and(|at| at + SWEEP_EVERY > now) {
            return;
        }
        self.by_key.retain(|_, p| p.last + SERIES_WINDOW > now);
        self.by_key.shrink_to_fit();
        self.swept = Some(now);
    }

    /// The event `key` continues, if any, now counted once more.
    fn repeat(&mut self, key: u64, now: Timestamp) -> Option<Published> {
        self.sweep(now);
        let p = self
            .by_key
            .get_mut(&key)
            .filter(|p| p.last + SERIES_WINDOW > now)?;
        p.count += 1;
        p.last = now;
        Some(p.clone())
    }
}

impl EventRecorder {
    pub fn new(client: Client, controller: &str, instance: &str) -> Self {
        Self {
            client,
            controller: controller.to_string(),
            instance: instance.to_string(),
            recent: Mutex::default(),
        }
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes `note` about `regarding`: a new event, or the next count of its series.
    pub async fn publish(
        &self,
        note: &Note<'_>,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        self.publish_at(note, regarding, Timestamp::now()).await
    }

    /// `publish`, for something that happened at `now` (queued events are published later).
    pub async fn publish_at(
        &self,
        note: &Note<'_>,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> Result<(), kube::Error> {
        let key = key(note, regarding);
        let repeat = self.recent().repeat(key, now);
        match repeat {
            Some(p) => {
                let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), &p.namespace);
                let series = serde_json::json!({"series": EventSeries {
                    count: p.count,
                    last_observed_time: MicroTime(now),
                }});
                events
                    .patch(&p.name, &PatchParams::default(), &Patch::Merge(&series))
                    .await?;
            }
            None => {
                let event = self.event(note, regarding, now);
                let namespace = event.metadata.namespace.clone().unwrap_or_default();
                let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
                events.create(&PostParams::default(), &event).await?;
                let published = Published {
                    name: event.metadata.name.unwrap_or_default(),
                    namespace,
                    count: 1,
                    last: now,
                };
                self.recent().by_key.insert(key, published);
            }
        }
        Ok(())
    }

    fn event(&self, note: &Note<'_>, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let object = regarding.name.as_deref().unwrap_or(&self.controller);
        K8sEvent {
            metadata: ObjectMeta {
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".into()),
                ),
                name: Some(format!("{object}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            action: Some(note.action.to_string()),
            reason: Some(note.reason.to_string()),
            note: Some(note.note.clone()),
            type_: Some(
                match note.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_string(),
            ),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..K8sEvent::default()
        }
    }

    /// How many events are remembered for series (for tests and benchmarks).
    pub fn remembered(&self) -> usize {
        self.recent().by_key.len()
    }
}

/// The series key: who reports, about what, which type, reason and action.
fn key(note: &Note<'_>, regarding: &ObjectReference) -> u64 {
    let mut h = DefaultHasher::new();
    (
        &regarding.api_version,
        &regarding.kind,
        &regarding.namespace,
        &regarding.name,
        &regarding.uid,
    )
        .hash(&mut h);
    (
        matches!(note.type_, EventType::Warning),
        note.reason,
        note.action,
    )
        .hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn published(last: Timestamp) -> Published {
        Published {
            name: "j.1".into(),
            namespace: "ns".into(),
            count: 1,
            last,
        }
    }

    #[test]
    fn a_repeat_within_six_minutes_continues_the_series_and_a_later_one_starts_anew() {
        let mut recent = Recent::default();
        recent.by_key.insert(1, published(at(0)));
        let again = recent.repeat(1, at(60)).expect("a repeat");
        assert_eq!((again.name.as_str(), again.count), ("j.1", 2));
        assert_eq!(recent.repeat(1, at(60 + 359)).map(|p| p.count), Some(3));
        assert!(
            recent.repeat(1, at(60 + 359 + 361)).is_none(),
            "window closed"
        );
        assert!(recent.repeat(2, at(0)).is_none(), "another key");
    }

    #[test]
    fn expired_events_are_forgotten() {
        let mut recent = Recent::default();
        recent.by_key.insert(1, published(at(0)));
        recent.by_key.insert(2, published(at(300)));
        recent.sweep(at(400));
        assert_eq!(recent.by_key.len(), 1);
        recent.by_key.insert(3, published(at(0)));
        recent.sweep(at(410));
        assert_eq!(recent.by_key.len(), 2, "swept at most every 30 s");
        recent.sweep(at(700));
        assert_eq!(recent.by_key.len(), 0);
    }

    #[test]
    fn the_key_tells_jobs_reasons_and_actions_apart() {
        let job = |uid: &str| ObjectReference {
            api_version: Some("kubeflow.org/v1".into()),
            kind: Some("TFJob".into()),
            namespace: Some("ns".into()),
            name: Some("j".into()),
            uid: Some(uid.into()),
            ..Default::default()
        };
        let note = |reason, action| Note {
            type_: EventType::Normal,
            reason,
            action,
            note: String::new(),
        };
        let base = key(&note("R", "a"), &job("u1"));
        assert_eq!(base, key(&note("R", "a"), &job("u1")));
        assert_ne!(base, key(&note("R", "b"), &job("u1")));
        assert_ne!(base, key(&note("S", "a"), &job("u1")));
        assert_ne!(
            base,
            key(&note("R", "a"), &job("u2")),
            "a new job of the same name"
        );
    }
}
