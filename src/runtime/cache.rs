//! The child watches: kube's watcher decoding each pod and service event once, straight into
//! the flat `ChildPod`/`ChildService` the caches hold and the planner reads (`crate::child`).
//! I/O (the watch streams).
//!
//! kube's watcher wants a `Resource` whose `meta()` carries the object's resourceVersion (to
//! resume from the last event). The flat children have no `ObjectMeta`, so the watch decodes
//! into `Watched`, the child beside an `ObjectMeta` holding the resourceVersion alone (a
//! copy of the child's), and hands on the child: the `ObjectMeta` lives for one event.

use std::borrow::Cow;

use futures::{Stream, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::Resource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::{Deserialize, Deserializer};

use crate::child::{ChildPod, ChildService, Identity};

/// A child as kube's watcher carries it (see the module's comment).
#[derive(Clone, Debug)]
pub struct Watched<T> {
    meta: ObjectMeta,
    child: T,
}

impl<'de, T: Deserialize<'de> + Identity> Deserialize<'de> for Watched<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let child = T::deserialize(deserializer)?;
        let meta = ObjectMeta {
            resource_version: child.resource_version().map(str::to_string),
            ..ObjectMeta::default()
        };
        Ok(Self { meta, child })
    }
}

/// The kind a flat child stands for, for the `Resource` impl kube's watcher needs.
pub trait ChildKind {
    const KIND: &'static str;
    const PLURAL: &'static str;
}

impl ChildKind for ChildPod {
    const KIND: &'static str = "Pod";
    const PLURAL: &'static str = "pods";
}

impl ChildKind for ChildService {
    const KIND: &'static str = "Service";
    const PLURAL: &'static str = "services";
}

impl<T: ChildKind> Resource for Watched<T> {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        T::KIND.into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        T::PLURAL.into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

/// The events of a child watch (starting with a streaming list where served, `listing`; with
/// kube's default backoff), each child decoded once.
pub fn child_events<T>(
    api: Api<Watched<T>>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<Event<T>>> + Send
where
    T: ChildKind + Identity + for<'de> Deserialize<'de> + Clone + std::fmt::Debug + Send + 'static,
{
    super::listing::watch(api, config)
        .default_backoff()
        .map_ok(|event| match event {
            Event::Apply(w) => Event::Apply(w.child),
            Event::Delete(w) => Event::Delete(w.child),
            Event::InitApply(w) => Event::InitApply(w.child),
            Event::Init => Event::Init,
            Event::InitDone => Event::InitDone,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_watch_sees_the_childs_resource_version() {
        let watched: Watched<ChildPod> = serde_json::from_value(json!({
            "metadata": {"name": "a-worker-0", "namespace": "ns", "resourceVersion": "42"}
        }))
        .unwrap();
        assert_eq!(watched.meta().resource_version.as_deref(), Some("42"));
        assert_eq!(watched.child.name, "a-worker-0");
    }
}
