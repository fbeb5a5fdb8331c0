//! Create and update: the metadata the server owns, generation, status isolation, optimistic
//! concurrency, schema admission and finalizer-driven removal (no I/O).
use std::sync::Arc;

use serde_json::{Value, json};

use super::error::{self, ApiError};
use super::objects::{EventType, Inner, Store, WatchEvent};
use super::options::WriteOptions;
use super::resource::{ResourceId, ResourceType};
use super::{builtin, crd, kinds, meta};

impl Store {
    /// POST: create `obj` in `ns`.
    pub fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let mut inner = self.lock();
        inner.create(&self.tx, rt, ns, obj, opts)
    }

    /// PUT / PATCH / apply: `f` maps the stored object (None if absent) to the new one; on None
    /// the result is created (apply), otherwise `f` should answer 404.
    pub fn write(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &WriteOptions,
        f: impl FnOnce(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        let mut inner = self.lock();
        let current = inner.get(&rt.storage, ns, name).cloned();
        let new = f(current.as_deref())?;
        let result = match current {
            None => inner.create(&self.tx, rt, ns, new, opts),
            Some(cur) => inner.update(&self.tx, rt, cur, new, opts),
        };
        drop(inner);
        if result
            .as_ref()
            .is_ok_and(|o| !meta::owner_uids(o).is_empty() || meta::is_deleting(o))
        {
            self.gc_wakeup.notify_one();
        }
        result
    }
}

pub(super) fn version_of(rt: &ResourceType, opts: &WriteOptions) -> String {
    if opts.version.is_empty() {
        rt.preferred_version().to_string()
    } else {
        opts.version.clone()
    }
}

pub(super) fn admit(
    rt: &ResourceType,
    version: &str,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(schema) = rt.schemas.get(version) else {
        return Ok(());
    };
    schema.admit(obj, old).map_err(|causes| {
        let causes: Vec<_> = causes
            .into_iter()
            .map(|c| (c.field, c.reason, c.message))
            .collect();
        ApiError::invalid(&rt.group, &rt.kind, meta::name(obj), &causes)
    })
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

impl Inner {
    /// The namespace lifecycle admission: no new objects in a missing or terminating namespace.
    /// The refusal is the real one: 403 naming the object, with a `NamespaceTerminating` cause
    /// that controllers test for.
    fn check_namespace(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
        if !rt.namespaced {
            return Ok(());
        }
        let nss = ResourceId::new("", "namespaces");
        match self.get(&nss, "", ns) {
            None => Err(ApiError::not_found("", "namespaces", ns)),
            Some(n) if meta::is_deleting(n) => {
                let what = error::qualified(&rt.group, &rt.plural);
                let mut e = ApiError::new(
                    403,
                    "Forbidden",
                    format!(
                        "{what} \"{name}\" is forbidden: unable to create new content in namespace \
                         {ns} because it is being terminated"
                    ),
                );
                e.details = Some(json!({
                    "name": name,
                    "kind": rt.plural,
                    "causes": [{
                        "reason": "NamespaceTerminating",
                        "message": format!("namespace {ns} is being terminated"),
                        "field": "metadata.namespace"
                    }]
                }));
                Err(e)
            }
            Some(_) => Ok(()),
        }
    }

    fn assign_name(
        &self,
        rt: &ResourceType,
        ns: &str,
        obj: &mut Value,
    ) -> Result<String, ApiError> {
        let mut name = meta::name(obj).to_string();
        if name.is_empty() {
            let Some(prefix) = obj["metadata"]["generateName"].as_str().map(String::from) else {
                let cause = (
                    "metadata.name".into(),
                    "FieldValueRequired".into(),
                    "Required value: name or generateName is required".into(),
                );
                return Err(ApiError::invalid(&rt.group, &rt.kind, "", &[cause]));
            };
            name = format!("{prefix}{}", meta::name_suffix());
            while self.get(&rt.storage, ns, &name).is_some() {
                name = format!("{prefix}{}", meta::name_suffix());
            }
        }
        if !is_dns_subdomain(&name) {
            let msg = format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            );
            let cause = ("metadata.name".into(), "FieldValueInvalid".into(), msg);
            return Err(ApiError::invalid(&rt.group, &rt.kind, &name, &[cause]));
        }
        Ok(name)
    }

    pub(super) fn create(
        &mut self,
        tx: &tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
        rt: &ResourceType,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        if !obj.is_object() || !obj["metadata"].is_object() && !obj["metadata"].is_null() {
            return Err(ApiError::bad_request(
                "the body of the request is not a valid object",
            ));
        }
        let body_ns = meta::namespace(&obj).to_string();
        if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        self.check_namespace(rt, ns, meta::name(&obj))?;
        let name = self.assign_name(rt, ns, &mut obj)?;
        let ns = if rt.namespaced { ns } else { "" };
        if self.get(&rt.storage, ns, &name).is_some() {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        let version = version_of(rt, opts);
        obj["apiVersion"] = json!(rt.api_version(&version));
        obj["kind"] = json!(rt.kind);
        let md = &mut obj["metadata"];
        md["name"] = json!(name);
        if rt.namespaced {
            md["namespace"] = json!(ns);
        } else if let Some(m) = md.as_object_mut() {
            m.remove("namespace");
        }
        md["uid"] = json!(meta::new_uid());
        md["creationTimestamp"] = json!(meta::now_string());
        if let Some(m) = md.as_object_mut() {
            for k in [
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "resourceVersion",
                "selfLink",
            ] {
                m.remove(k);
            }
            if rt.has_generation {
                m.insert("generation".into(), json!(1));
            } else {
                m.remove("generation");
            }
        }
        if rt.has_status
            && !opts.internal
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        kinds::on_create(self, rt, &mut obj);
        if !opts.internal {
            builtin::validate(rt, &obj, None, opts.sub)?;
        }
        admit(rt, &version, &mut obj, None)?;
        if rt.group.is_empty() && rt.plural == "pods" && !opts.internal {
            self.admit_pod(ns, &obj)?;
        }
        let new_type = crd::on_write(&mut obj, rt)?;
        if opts.dry_run {
            return Ok(Arc::new(obj));
        }
        if let Some(t) = new_type {
            self.registry.insert(t);
        }
        Ok(self.commit(tx, &rt.storage.clone(), EventType::Added, obj, None))
    }
}
