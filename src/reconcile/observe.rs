//! Observing a job from the controller's caches (reads only, no API calls): its pods (with the
//! controller's pending deletions laid over them) and services, its PodGroup, the refusal of
//! its last creates, and (Kueue mode) its Workload's queue.

use jiff::Timestamp;
use kube::Resource;
use kube::api::DynamicObject;

use crate::crd::TFJob;
use crate::crd::cached::CachedJob;
use crate::reconcile::context::Context;
use crate::reconcile::job::JobMeta;
use crate::reconcile::plan::model::{CacheState, GroupView, Observed, ObservedGroup};
use crate::runtime::podgroups::{GroupCache, GroupSync};

/// What the pass plans on: the job's children and PodGroup as the caches have them, with
/// what the controller remembers of its own writes.
pub fn observe(ctx: &Context, object: &CachedJob, job: &JobMeta<'_>, now: Timestamp) -> Observed {
    let cached_pods: Vec<_> = ctx
        .pods
        .of_job(job.namespace, job.name)
        .iter()
        .map(|p| (**p).clone())
        .collect();
    let cached_services: Vec<_> = ctx
        .services
        .of_job(job.namespace, job.name)
        .iter()
        .map(|s| (**s).clone())
        .collect();
    let group = ctx
        .podgroups
        .as_ref()
        .map(|cache| group_view(cache, object, job))
        .unwrap_or_default();
    ctx.shared.memory.with(job.uid, |m| {
        let mut pods = m.pending.overlay(cached_pods, now);
        let never_created = m.pending.never_created(&pods, now);
        pods.sort_by(|a, b| a.name.cmp(&b.name));
        let mut services = cached_services;
        services.sort_by(|a, b| a.name.cmp(&b.name));
        Observed {
            departed: ctx.departed.of_job(job.namespace, job.name, &pods),
            pods,
            services,
            never_created,
            group,
            refused: m.refused.clone(),
            workload_queue: ctx
                .workloads
                .as_ref()
                .and_then(|w| w.queue_of(job.namespace, job.name, job.uid)),
        }
    })
}

/// What the caches say about the job's PodGroup and its templates' PriorityClasses.
fn group_view(cache: &GroupCache, object: &CachedJob, job: &JobMeta<'_>) -> GroupView {
    let priorities = match &object.0 {
        Ok(tfjob) => tfjob
            .spec
            .tf_replica_specs
            .iter()
            .filter_map(|(_, s)| s.template.priority_class_name())
            .filter_map(|name| Some((name.to_string(), cache.priority(name)?)))
            .collect(),
        Err(_) => Default::default(),
    };
    GroupView {
        cache: match cache.state() {
            GroupSync::Syncing => CacheState::Syncing,
            GroupSync::Ready => CacheState::Ready,
            GroupSync::Missing => CacheState::Missing,
        },
        group: cache.group(job.namespace, job.name).map(|g| observed(&g)),
        priorities,
    }
}

/// A cached PodGroup reduced to what the decision reads.
fn observed(group: &DynamicObject) -> ObservedGroup {
    let meta = &group.metadata;
    let controller_uid = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == TFJob::kind(&()))
        .map(|o| o.uid.clone());
    ObservedGroup {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone(),
        controller_uid,
        terminating: meta.deletion_timestamp.is_some(),
        spec: group.data.get("spec").cloned().unwrap_or_default(),
        phase: group.data["status"]["phase"].as_str().map(str::to_string),
        created: meta.creation_timestamp.as_ref().map(|t| t.0),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_cached_podgroup_is_read_for_its_phase_and_controller() {
        let group: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "a", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "a", "uid": "u",
                 "controller": true}]},
            "spec": {"minMember": 2}, "status": {"phase": "Scheduling"}
        }))
        .unwrap();
        let seen = observed(&group);
        assert_eq!(
            (seen.phase.as_deref(), seen.controller_uid.as_deref()),
            (Some("Scheduling"), Some("u"))
        );
        assert_eq!(seen.spec, json!({"minMember": 2}));
    }
}
