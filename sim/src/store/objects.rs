//! The store's state: objects of every resource under one global resourceVersion, the uid
//! index, a bounded event history for watch replay and the broadcast channel fanning events
//! out, all behind one mutex so every write and its event are ordered (no I/O). Writes and
//! deletes are in `write`, `update` and `delete`.
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{Notify, broadcast};

use super::error::ApiError;
use super::meta;
use super::resource::{Registry, ResourceId, ResourceType};

/// Kind of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change of one object; `old` is the previous state (for selector transitions).
#[derive(Debug)]
pub struct WatchEvent {
    pub rv: u64,
    pub resource: ResourceId,
    pub kind: EventType,
    pub object: Arc<Value>,
    pub old: Option<Arc<Value>>,
}

/// (namespace or "" for cluster-scoped, name)
pub type ObjectName = (String, String);

/// Where an object lives, for the uid index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectKey {
    pub resource: ResourceId,
    pub namespace: String,
    pub name: String,
}

/// Store tuning.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Events kept for watch replay; older resourceVersions get 410 Expired.
    pub history: usize,
    /// Events buffered per watcher before a slow watcher is disconnected.
    pub watch_buffer: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            history: 10_000,
            watch_buffer: 65_536,
        }
    }
}

pub(crate) struct Inner {
    pub(super) rv: u64,
    pub(super) registry: Registry,
    pub(super) objects: BTreeMap<ResourceId, BTreeMap<ObjectName, Arc<Value>>>,
    pub(super) uids: HashMap<String, ObjectKey>,
    history: VecDeque<Arc<WatchEvent>>,
    history_cap: usize,
    /// Watches may start from any resourceVersion >= this one.
    history_start: u64,
    /// Per resource, a later start: that resource's history was compacted on its own (as one
    /// resource's watch cache in the API server can lose its window while another keeps it).
    resource_history_start: BTreeMap<ResourceId, u64>,
    pub(super) next_cluster_ip: u32,
}

/// The store shared by the HTTP server, the garbage collector and the pod loop.
pub struct Store {
    inner: Mutex<Inner>,
    pub(super) tx: broadcast::Sender<Arc<WatchEvent>>,
    /// Woken after deletions (and owner changes) so the garbage collector runs.
    pub gc_wakeup: Notify,
}

/// Replay plus live events for one watcher, consistent with each other.
pub struct Subscription {
    pub replay: Vec<Arc<WatchEvent>>,
    pub snapshot: Vec<Arc<Value>>,
    pub rx: broadcast::Receiver<Arc<WatchEvent>>,
    pub rv: u64,
}

impl Store {
    pub fn new(opts: StoreOptions) -> Self {
        let (tx, _) = broadcast::channel(opts.watch_buffer.max(16));
        let inner = Inner {
            rv: 0,
            registry: Registry::with_builtins(),
            objects: BTreeMap::new(),
            uids: HashMap::new(),
            history: VecDeque::new(),
            history_cap: opts.history.max(1),
            history_start: 0,
            resource_history_start: BTreeMap::new(),
            next_cluster_ip: 10,
        };
        Self {
            inner: Mutex::new(inner),
            tx,
            gc_wakeup: Notify::new(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    pub fn registry(&self) -> Registry {
        self.lock().registry.clone()
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.lock().registry.lookup(group, version, plural).cloned()
    }

    pub fn resource_type(&self, id: &ResourceId) -> Option<ResourceType> {
        self.lock().registry.get(id).cloned()
    }

    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.lock().get(&rt.storage, ns, name).cloned()
    }

    pub fn uid_exists(&self, uid: &str) -> bool {
        self.lock().uids.contains_key(uid)
    }

    /// Objects of `rt` (in `ns`, or all namespaces) accepted by `filter`, and the list's RV.
    pub fn list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        filter: impl Fn(&Value) -> bool,
    ) -> (Vec<Arc<Value>>, u64) {
        let inner = self.lock();
        let items = inner
            .list(&rt.storage, ns)
            .filter(|o| filter(o))
            .cloned()
            .collect();
        (items, inner.rv)
    }

    /// Every stored object, for the garbage collector.
    pub fn snapshot_all(&self) -> Vec<(ResourceId, Arc<Value>)> {
        let inner = self.lock();
        let mut out = Vec::new();
        for (id, objs) in &inner.objects {
            out.extend(objs.values().map(|o| (id.clone(), o.clone())));
        }
        out
    }

    /// All events from now on (for in-process loops).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<WatchEvent>> {
        let _guard = self.lock();
        self.tx.subscribe()
    }

    /// Events of `storage` after resourceVersion `from` (410 if compacted), or, with `from`
    /// None, the current objects of `storage` as a snapshot; plus a live receiver with no gap.
    pub fn watch(&self, storage: &ResourceId, from: Option<u64>) -> Result<Subscription, ApiError> {
        let inner = self.lock();
        let rx = self.tx.subscribe();
        let mut sub = Subscription {
            replay: Vec::new(),
            snapshot: Vec::new(),
            rx,
            rv: inner.rv,
        };
        match from {
            None => sub.snapshot = inner.list(storage, None).cloned().collect(),
            Some(rv) if rv < inner.history_start_of(storage) => {
                return Err(ApiError::expired(format!(
                    "too old resource version: {rv} ({})",
                    inner.history_start_of(storage)
                )));
            }
            Some(rv) => {
                sub.replay = inner
                    .history
                    .iter()
                    .filter(|e| e.rv > rv && e.resource == *storage)
                    .cloned()
                    .collect();
            }
        }
        Ok(sub)
    }

    /// Forget the event history: every watch from an older resourceVersion gets 410.
    pub fn compact_history(&self) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.history_start = inner.rv;
    }

    /// Forget the event history of the resources with these plurals alone: their watches from
    /// an older resourceVersion get 410, other resources' watches still resume.
    pub fn compact_history_of(&self, plurals: &[&str]) {
        let mut inner = self.lock();
        let rv = inner.rv;
        let storages: Vec<ResourceId> = inner
            .registry
            .storages()
            .filter(|id| plurals.contains(&id.plural.as_str()))
            .cloned()
            .collect();
        for storage in storages {
            inner.resource_history_start.insert(storage, rv);
        }
    }
}

impl Inner {
    /// The oldest resourceVersion a watch of `storage` may start from.
    fn history_start_of(&self, storage: &ResourceId) -> u64 {
        let own = self.resource_history_start.get(storage).copied();
        own.map_or(self.history_start, |own| own.max(self.history_start))
    }

    pub(super) fn get(&self, id: &ResourceId, ns: &str, name: &str) -> Option<&Arc<Value>> {
        self.objects
            .get(id)?
            .get(&(ns.to_string(), name.to_string()))
    }

    pub(super) fn list<'a>(
        &'a self,
        id: &ResourceId,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Value>> {
        self.objects
            .get(id)
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(move |((n, _), _)| ns.is_none_or(|want| want == n))
            .map(|(_, o)| o)
    }

    /// Bump the global RV, store (or remove) the object and publish the event.
    pub(super) fn commit(
        &mut self,
        tx: &broadcast::Sender<Arc<WatchEvent>>,
        id: &ResourceId,
        kind: EventType,
        mut obj: Value,
        old: Option<Arc<Value>>,
    ) -> Arc<Value> {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let key = (
            meta::namespace(&obj).to_string(),
            meta::name(&obj).to_string(),
        );
        let uid = meta::uid(&obj).to_string();
        let obj = Arc::new(obj);
        let objs = self.objects.entry(id.clone()).or_default();
        if kind == EventType::Deleted {
            objs.remove(&key);
            self.uids.remove(&uid);
        } else {
            objs.insert(key.clone(), obj.clone());
            let (namespace, name) = key;
            self.uids.insert(
                uid,
                ObjectKey {
                    resource: id.clone(),
                    namespace,
                    name,
                },
            );
        }
        let ev = Arc::new(WatchEvent {
            rv: self.rv,
            resource: id.clone(),
            kind,
            object: obj.clone(),
            old,
        });
        self.history.push_back(ev.clone());
        while self.history.len() > self.history_cap {
            if let Some(e) = self.history.pop_front() {
                self.history_start = e.rv;
            }
        }
        let _ = tx.send(ev);
        obj
    }
}
