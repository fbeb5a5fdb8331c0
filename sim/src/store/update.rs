//! Update and removal: merging a write into the stored object (status isolation, server-owned
//! metadata), generation, optimistic concurrency, no-op detection, finalizer-driven removal (no
//! I/O).
use std::sync::Arc;

use serde_json::{Value, json};

use super::error::ApiError;
use super::objects::{EventType, Inner, WatchEvent};
use super::options::{Sub, WriteOptions};
use super::resource::ResourceType;
use super::write::{admit, version_of};
use super::{builtin, crd, kinds, meta};

impl Inner {
    fn merge_update(
        &self,
        rt: &ResourceType,
        cur: &Value,
        new: Value,
        opts: &WriteOptions,
    ) -> Value {
        if opts.sub == Sub::Status {
            let mut out = cur.clone();
            out["status"] = new.get("status").cloned().unwrap_or(Value::Null);
            if let Some(mf) = new["metadata"].get("managedFields") {
                out["metadata"]["managedFields"] = mf.clone();
            }
            if out["status"].is_null()
                && let Some(m) = out.as_object_mut()
            {
                m.remove("status");
            }
            return out;
        }
        let mut out = new;
        for k in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
            "generation",
        ] {
            match cur["metadata"].get(k) {
                Some(v) => out["metadata"][k] = v.clone(),
                None => {
                    if let Some(m) = out["metadata"].as_object_mut() {
                        m.remove(k);
                    }
                }
            }
        }
        if rt.has_status && !opts.internal {
            match cur.get("status") {
                Some(s) => out["status"] = s.clone(),
                None => {
                    if let Some(m) = out.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        out
    }

    pub(super) fn update(
        &mut self,
        tx: &tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
        rt: &ResourceType,
        cur: Arc<Value>,
        new: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let name = meta::name(&cur).to_string();
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request is not a valid object",
            ));
        }
        if meta::name(&new) != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta::name(&new)
            )));
        }
        let rv = meta::resource_version(&new);
        if !rv.is_empty() && rv != meta::resource_version(&cur) {
            return Err(ApiError::stale(&rt.group, &rt.plural, &name));
        }
        if rv.is_empty() && rt.requires_rv_on_update && !opts.unconditional && !opts.internal {
            let cause = (
                "metadata.resourceVersion".into(),
                "FieldValueInvalid".into(),
                "Invalid value: 0x0: must be specified for an update".into(),
            );
            return Err(ApiError::invalid(&rt.group, &rt.kind, &name, &[cause]));
        }
        let version = version_of(rt, opts);
        let mut out = self.merge_update(rt, &cur, new, opts);
        kinds::on_update(rt, &mut out);
        out["apiVersion"] = json!(rt.api_version(&version));
        out["kind"] = json!(rt.kind);
        out["metadata"]["name"] = json!(name);
        out["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"].clone();
        if rt.has_generation && !opts.internal && meta::spec_part(&out) != meta::spec_part(&cur) {
            let g = cur["metadata"]["generation"].as_i64().unwrap_or(0);
            out["metadata"]["generation"] = json!(g + 1);
        }
        if !opts.internal {
            builtin::validate(rt, &out, Some(&cur), opts.sub)?;
        }
        admit(rt, &version, &mut out, Some(&cur))?;
        let new_type = crd::on_write(&mut out, rt)?;
        if meta::same_content(&cur, &out) || opts.dry_run {
            return Ok(if opts.dry_run { Arc::new(out) } else { cur });
        }
        let grace = out["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0);
        if meta::is_deleting(&out) && meta::finalizers(&out).is_empty() && grace == 0 {
            // `ShouldDeleteDuringUpdate`: the update is not stored; the object is deleted and
            // watchers get its last stored state (finalizers included, as etcd's previous
            // value), while the client gets the object it sent.
            let removed = self.remove(tx, rt, (*cur).clone(), Some(cur));
            out["metadata"]["resourceVersion"] = removed["metadata"]["resourceVersion"].clone();
            return Ok(Arc::new(out));
        }
        if let Some(t) = new_type {
            self.registry.insert(t);
        }
        Ok(self.commit(tx, &rt.storage.clone(), EventType::Modified, out, Some(cur)))
    }

    /// Remove an object for good, with the side effects of its kind.
    pub(super) fn remove(
        &mut self,
        tx: &tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
        rt: &ResourceType,
        obj: Value,
        old: Option<Arc<Value>>,
    ) -> Arc<Value> {
        let removed = self.commit(tx, &rt.storage.clone(), EventType::Deleted, obj, old);
        if rt.kind == "CustomResourceDefinition" {
            crd::on_removed(self, tx, &removed);
        }
        removed
    }
}
