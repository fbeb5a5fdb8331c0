//! DELETE: preconditions, propagation policy, finalizers, graceful pod deletion (no I/O).
use std::sync::Arc;

use serde_json::{Value, json};

use super::{ApiError, EventType, Inner, ResourceType, Store, kinds, meta};

/// The parts of `DeleteOptions` (body or query) the store honours.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// "Background" (default), "Foreground" or "Orphan".
    pub propagation: Option<String>,
    pub grace_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Read a `DeleteOptions` body (may be empty or null).
    pub fn from_body(body: &Value) -> Self {
        Self {
            propagation: body["propagationPolicy"].as_str().map(String::from),
            grace_seconds: body["gracePeriodSeconds"].as_i64(),
            precondition_uid: body["preconditions"]["uid"].as_str().map(String::from),
            precondition_rv: body["preconditions"]["resourceVersion"]
                .as_str()
                .map(String::from),
            dry_run: body["dryRun"].as_array().is_some_and(|a| !a.is_empty()),
        }
    }
}

/// What a DELETE did.
#[derive(Clone, Debug)]
pub enum Deleted {
    /// The object is gone (this is its last state).
    Gone(Arc<Value>),
    /// Deletion started (deletionTimestamp set); finalizers or a grace period hold it.
    Pending(Arc<Value>),
}

pub const FOREGROUND: &str = "foregroundDeletion";

fn check_preconditions(
    rt: &ResourceType,
    obj: &Value,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let name = meta::name(obj);
    if let Some(uid) = &opts.precondition_uid {
        if uid != meta::uid(obj) {
            let why = format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta::uid(obj)
            );
            return Err(ApiError::conflict(&rt.group, &rt.plural, name, &why));
        }
    }
    if let Some(rv) = &opts.precondition_rv {
        if rv != meta::resource_version(obj) {
            let why = format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta::resource_version(obj)
            );
            return Err(ApiError::conflict(&rt.group, &rt.plural, name, &why));
        }
    }
    Ok(())
}

impl Store {
    pub fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let ns = if rt.namespaced { ns } else { "" };
        let mut inner = self.lock();
        let cur = inner
            .get(&rt.storage, ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        check_preconditions(rt, &cur, opts)?;
        if opts.dry_run {
            return Ok(Deleted::Pending(cur));
        }
        let out = inner.delete(&self.tx, rt, cur, opts);
        drop(inner);
        self.gc_wakeup.notify_one();
        Ok(out)
    }
}

impl Inner {
    fn orphan_dependents(
        &mut self,
        tx: &tokio::sync::broadcast::Sender<Arc<super::WatchEvent>>,
        owner_uid: &str,
    ) {
        let dependents: Vec<(super::ResourceId, Arc<Value>)> = self
            .objects
            .iter()
            .flat_map(|(id, m)| m.values().map(move |o| (id.clone(), o.clone())))
            .filter(|(_, o)| meta::owner_uids(o).contains(&owner_uid))
            .collect();
        for (id, dep) in dependents {
            let mut new = (*dep).clone();
            if let Some(refs) = new["metadata"]["ownerReferences"].as_array_mut() {
                refs.retain(|r| r["uid"].as_str() != Some(owner_uid));
                if refs.is_empty() {
                    if let Some(m) = new["metadata"].as_object_mut() {
                        m.remove("ownerReferences");
                    }
                }
            }
            self.commit(tx, &id, EventType::Modified, new, Some(dep));
        }
    }

    fn delete(
        &mut self,
        tx: &tokio::sync::broadcast::Sender<Arc<super::WatchEvent>>,
        rt: &ResourceType,
        cur: Arc<Value>,
        opts: &DeleteOptions,
    ) -> Deleted {
        let policy = opts.propagation.as_deref().unwrap_or("Background");
        if policy == "Orphan" {
            self.orphan_dependents(tx, meta::uid(&cur));
        }
        let is_pod = rt.group.is_empty() && rt.plural == "pods";
        let grace = if is_pod {
            kinds::pod_grace_seconds(&cur, opts.grace_seconds)
        } else {
            0
        };
        if meta::is_deleting(&cur) {
            // A repeated delete may only shorten a pod's grace period (force deletion).
            let held = cur["metadata"]["deletionGracePeriodSeconds"]
                .as_i64()
                .unwrap_or(0);
            if grace < held {
                let mut new = (*cur).clone();
                new["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
                if grace == 0 && meta::finalizers(&new).is_empty() {
                    return Deleted::Gone(self.remove(tx, rt, new, Some(cur)));
                }
                return Deleted::Pending(self.commit(
                    tx,
                    &rt.storage.clone(),
                    EventType::Modified,
                    new,
                    Some(cur),
                ));
            }
            return Deleted::Pending(cur);
        }
        let mut fins = meta::finalizers(&cur);
        if policy == "Foreground" && !fins.iter().any(|f| f == FOREGROUND) {
            fins.push(FOREGROUND.into());
        }
        let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
        if fins.is_empty() && grace == 0 && !is_namespace {
            return Deleted::Gone(self.remove(tx, rt, (*cur).clone(), Some(cur)));
        }
        let mut new = (*cur).clone();
        let now = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace);
        new["metadata"]["deletionTimestamp"] = json!(meta::format_time(now));
        new["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        if !fins.is_empty() {
            new["metadata"]["finalizers"] = json!(fins);
        }
        if let Some(g) = new["metadata"]["generation"].as_i64() {
            new["metadata"]["generation"] = json!(g + 1);
        }
        if is_namespace {
            new["status"]["phase"] = json!("Terminating");
        }
        Deleted::Pending(self.commit(tx, &rt.storage.clone(), EventType::Modified, new, Some(cur)))
    }
}

impl Store {
    /// Remove an object whose deletion has started and that no finalizer holds (namespaces
    /// after their content is gone). Returns whether it was removed.
    pub fn finish_deletion(&self, rt: &ResourceType, ns: &str, name: &str) -> bool {
        let mut inner = self.lock();
        let Some(cur) = inner.get(&rt.storage, ns, name).cloned() else {
            return false;
        };
        if !meta::is_deleting(&cur) || !meta::finalizers(&cur).is_empty() {
            return false;
        }
        inner.remove(&self.tx, rt, (*cur).clone(), Some(cur));
        true
    }
}
