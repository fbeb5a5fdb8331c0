//! Observing a job's children from the controller's caches (reads only, no API calls), with
//! the controller's own pending writes laid over them, and trimming cached objects to what the
//! decision core reads.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodStatus, Service};
use kube::ResourceExt;

use super::Context;
use super::job::Job;
use super::labels::LABEL_JOB_NAME;
use super::model::Observed;

/// The pods and services in the job's namespace labelled with its name, from the caches,
/// with the controller's own pending writes laid over them.
pub fn observe_children(ctx: &Context, job: &Job<'_>, now: Timestamp) -> Observed {
    let of_job = |labels: &BTreeMap<String, String>, ns: Option<String>| {
        ns.as_deref() == Some(job.namespace)
            && labels.get(LABEL_JOB_NAME).map(String::as_str) == Some(job.name)
    };
    let cached_pods: Vec<Pod> = ctx
        .pods
        .state()
        .into_iter()
        .filter(|p| of_job(p.labels(), p.namespace()))
        .map(|p| (*p).clone())
        .collect();
    let cached_services: Vec<Service> = ctx
        .services
        .state()
        .into_iter()
        .filter(|s| of_job(s.labels(), s.namespace()))
        .map(|s| (*s).clone())
        .collect();
    ctx.shared.memory.with(job.uid, |m| {
        let mut pods = m.pending.overlay(cached_pods, now);
        let never_created = m.pending.never_created(&pods, now);
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut services = m.pending.overlay_services(cached_services, now);
        services.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Observed {
            pods,
            services,
            never_created,
            group: super::gang::cache::view(ctx.podgroups.as_ref(), job),
        }
    })
}

/// Keep in the pod cache only what the decision core reads: identity, labels, owners,
/// deletion, phase and container states. Pod specs are the bulk of a pod and never read.
pub fn trim_pod(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    pod.metadata.annotations = None;
    pod.spec = None;
    if let Some(status) = pod.status.take() {
        pod.status = Some(PodStatus {
            phase: status.phase,
            reason: status.reason,
            message: status.message,
            container_statuses: status.container_statuses,
            ..Default::default()
        });
    }
}

/// Services are only checked for existence and ownership.
pub fn trim_service(service: &mut Service) {
    service.metadata.managed_fields = None;
    service.metadata.annotations = None;
    service.spec = None;
    service.status = None;
}
