//! DELETE: preconditions, propagation policy, finalizers, graceful pod deletion (no I/O).
use std::sync::Arc;

use serde_json::{Value, json};

use super::error::ApiError;
use super::objects::{EventType, Inner, Store, WatchEvent};
use super::resource::{ResourceId, ResourceType};
use super::{kinds, meta};

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
    if let Some(uid) = &opts.precondition_uid
        && uid != meta::uid(obj)
    {
        let why = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            meta::uid(obj)
        );
        return Err(ApiError::conflict(&rt.group, &rt.plural, name, &why));
    }
    if let Some(rv) = &opts.precondition_rv
        && rv != meta::resource_version(obj)
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            meta::resource_version(obj)
        );
        return Err(ApiError::conflict(&rt.group, &rt.plural, name, &why));
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
        tx: &tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
        owner_uid: &str,
    ) {
        let dependents: Vec<(ResourceId, Arc<Value>)> = self
            .objects
            .iter()
            .flat_map(|(id, m)| m.values().map(move |o| (id.clone(), o.clone())))
            .filter(|(_, o)| meta::owner_uids(o).contains(&owner_uid))
            .collect();
        for (id, dep) in dependents {
            let mut new = (*dep).clone();
            if let Some(refs) = new["metadata"]["ownerReferences"].as_array_mut() {
                refs.retain(|r| r["uid"].as_str() != Some(owner_uid));
                if refs.is_empty()
                    && let Some(m) = new["metadata"].as_object_mut()
                {
                    m.remove("ownerReferences");
                }
            }
            self.commit(tx, &id, EventType::Modified, new, Some(dep));
        }
    }

    /// DELETE as the generic registry does it (`Store.Delete`, `rest.BeforeDelete`): pods are
    /// always deleted gracefully, so even a zero grace period is an update that sets
    /// `deletionTimestamp` (MODIFIED) followed by the removal (DELETED); other kinds without
    /// finalizers go in one DELETED.
    fn delete(
        &mut self,
        tx: &tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
        rt: &ResourceType,
        cur: Arc<Value>,
        opts: &DeleteOptions,
    ) -> Deleted {
        let policy = opts.propagation.as_deref().unwrap_or("Background");
        if policy == "Orphan" {
            self.orphan_dependents(tx, meta::uid(&cur));
        }
        let is_pod = rt.group.is_empty() && rt.plural == "pods";
        if meta::is_deleting(&cur) {
            return self.delete_again(tx, rt, cur, opts, is_pod);
        }
        let grace = if is_pod {
            kinds::pod_grace_seconds(&cur, opts.grace_seconds)
        } else {
            0
        };
        let mut fins = meta::finalizers(&cur);
        if policy == "Foreground" && !fins.iter().any(|f| f == FOREGROUND) {
            fins.push(FOREGROUND.into());
        }
        let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
        if !is_pod && fins.is_empty() && !is_namespace {
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
        let marked = self.commit(tx, &rt.storage.clone(), EventType::Modified, new, Some(cur));
        if is_pod && grace == 0 && fins.is_empty() {
            // The registry's second step: the grace period is exhausted, remove it for good.
            return Deleted::Gone(self.remove(tx, rt, (*marked).clone(), Some(marked)));
        }
        Deleted::Pending(marked)
    }

    /// DELETE of an object whose deletion already started (`rest.BeforeDelete`): a pod's grace
    /// period may only be shortened, by a period given in the request (the kubelet's final
    /// delete sends 0: MODIFIED with the new period, then DELETED); an object whose period is
    /// already 0 and that no finalizer holds is removed; anything else is left as it is.
    fn delete_again(
        &mut self,
        tx: &tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
        rt: &ResourceType,
        cur: Arc<Value>,
        opts: &DeleteOptions,
        is_pod: bool,
    ) -> Deleted {
        let held = cur["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0);
        let no_finalizers = meta::finalizers(&cur).is_empty();
        let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
        if held <= 0 || !is_pod {
            if no_finalizers && !is_namespace {
                return Deleted::Gone(self.remove(tx, rt, (*cur).clone(), Some(cur)));
            }
            return Deleted::Pending(cur);
        }
        // Negative periods count as 1s on the delete path.
        let Some(grace) = opts.grace_seconds.map(|g| if g < 0 { 1 } else { g }) else {
            return Deleted::Pending(cur);
        };
        if grace >= held {
            return Deleted::Pending(cur);
        }
        let mut new = (*cur).clone();
        let deadline = cur["metadata"]["deletionTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .unwrap_or_else(jiff::Timestamp::now);
        let moved = deadline - jiff::SignedDuration::from_secs(held - grace);
        new["metadata"]["deletionTimestamp"] = json!(meta::format_time(moved));
        new["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        let marked = self.commit(tx, &rt.storage.clone(), EventType::Modified, new, Some(cur));
        if grace == 0 && no_finalizers {
            return Deleted::Gone(self.remove(tx, rt, (*marked).clone(), Some(marked)));
        }
        Deleted::Pending(marked)
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
