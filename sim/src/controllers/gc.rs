//! The garbage collector: deletes dependents whose owners (by uid) are all gone, finishes
//! foreground deletions, empties terminating namespaces and deleted CRDs (a background task
//! over the store; no network I/O).
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::store::{DeleteOptions, ResourceId, Store, Sub, WriteOptions, meta};

const FOREGROUND: &str = "foregroundDeletion";
const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Run until `shutdown` flips; passes run after deletions (debounced) and every second.
pub async fn run(store: Arc<Store>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = store.gc_wakeup.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return,
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        for _ in 0..8 {
            if pass(&store) == 0 {
                break;
            }
        }
    }
}

fn delete(store: &Store, id: &ResourceId, obj: &Value, policy: &str) -> usize {
    let Some(rt) = store.resource_type(id) else {
        return 0;
    };
    let opts = DeleteOptions {
        propagation: Some(policy.into()),
        ..Default::default()
    };
    usize::from(
        store
            .delete(&rt, meta::namespace(obj), meta::name(obj), &opts)
            .is_ok(),
    )
}

fn remove_finalizer(store: &Store, id: &ResourceId, obj: &Value, finalizer: &str) -> usize {
    let Some(rt) = store.resource_type(id) else {
        return 0;
    };
    let opts = WriteOptions {
        internal: true,
        sub: Sub::Main,
        ..Default::default()
    };
    let uid = meta::uid(obj).to_string();
    let r = store.write(&rt, meta::namespace(obj), meta::name(obj), &opts, |cur| {
        let Some(cur) = cur.filter(|c| meta::uid(c) == uid) else {
            return Err(crate::store::ApiError::internal("gone"));
        };
        let mut new = cur.clone();
        let fins: Vec<String> = meta::finalizers(cur)
            .into_iter()
            .filter(|f| f != finalizer)
            .collect();
        new["metadata"]["finalizers"] = json!(fins);
        Ok(new)
    });
    usize::from(r.is_ok())
}

/// Delete every live object of `objs` (a container's content); true if none is left.
fn empty_out<'a>(
    store: &Store,
    objs: impl Iterator<Item = &'a (ResourceId, Arc<Value>)>,
    policy: &str,
) -> (usize, bool) {
    let (mut actions, mut empty) = (0, true);
    for (id, o) in objs {
        empty = false;
        if !meta::is_deleting(o) {
            actions += delete(store, id, o, policy);
        }
    }
    (actions, empty)
}

type Entry = (ResourceId, Arc<Value>);

/// Foreground deletion: delete the owner's dependents, then drop its finalizer.
fn finish_foreground(store: &Store, deps: Vec<&Entry>, id: &ResourceId, owner: &Value) -> usize {
    let (n, empty) = empty_out(store, deps.into_iter(), "Foreground");
    n + if empty {
        remove_finalizer(store, id, owner, FOREGROUND)
    } else {
        0
    }
}

/// A terminating namespace: delete its content, then remove it. The core group's objects
/// (pods, services, events) go first and the rest (custom objects such as TFJobs) once they
/// are gone: the real namespace controller deletes resource by resource in discovery order,
/// so a controller can see its children vanish and try to recreate them while their owner
/// still exists (and is refused: the namespace is terminating).
fn finish_namespace(store: &Store, all: &[Entry], id: &ResourceId, ns_obj: &Value) -> usize {
    let ns = meta::name(ns_obj);
    let content = || {
        all.iter()
            .filter(move |(rid, c)| rid != id && meta::namespace(c) == ns)
    };
    let (core, core_empty) = empty_out(
        store,
        content().filter(|(rid, _)| rid.group.is_empty()),
        "Background",
    );
    if !core_empty {
        return core;
    }
    let (n, empty) = empty_out(store, content(), "Background");
    let removed = match store.resource_type(id) {
        Some(rt) if empty => usize::from(store.finish_deletion(&rt, "", ns)),
        _ => 0,
    };
    n + removed
}

/// A deleted CRD: delete its custom objects, then drop the cleanup finalizer.
fn finish_crd(store: &Store, all: &[Entry], id: &ResourceId, crd: &Value) -> usize {
    let target = ResourceId::new(
        crd["spec"]["group"].as_str().unwrap_or(""),
        crd["spec"]["names"]["plural"].as_str().unwrap_or(""),
    );
    let (n, empty) = empty_out(
        store,
        all.iter().filter(|(rid, _)| *rid == target),
        "Background",
    );
    n + if empty {
        remove_finalizer(store, id, crd, CRD_CLEANUP)
    } else {
        0
    }
}

/// One collection pass; returns how many changes it made.
pub fn pass(store: &Store) -> usize {
    let all = store.snapshot_all();
    let uids: HashSet<&str> = all.iter().map(|(_, o)| meta::uid(o)).collect();
    let mut dependents: HashMap<&str, Vec<&Entry>> = HashMap::new();
    for entry in &all {
        for u in meta::owner_uids(&entry.1) {
            dependents.entry(u).or_default().push(entry);
        }
    }
    let namespaces = ResourceId::new("", "namespaces");
    let crds = ResourceId::new("apiextensions.k8s.io", "customresourcedefinitions");
    let mut actions = 0;
    for (id, o) in &all {
        let owners = meta::owner_uids(o);
        let deleting = meta::is_deleting(o);
        if !owners.is_empty() && !deleting && owners.iter().all(|u| !uids.contains(u)) {
            actions += delete(store, id, o, "Background");
            continue;
        }
        if !deleting {
            continue;
        }
        let fins = meta::finalizers(o);
        if fins.iter().any(|f| f == FOREGROUND) {
            let deps = dependents.get(meta::uid(o)).cloned().unwrap_or_default();
            actions += finish_foreground(store, deps, id, o);
        }
        if *id == namespaces {
            actions += finish_namespace(store, &all, id, o);
        }
        if *id == crds && fins.iter().any(|f| f == CRD_CLEANUP) {
            actions += finish_crd(store, &all, id, o);
        }
    }
    actions
}
