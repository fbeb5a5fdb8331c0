//! Observing a job's children from the controller's caches (reads only, no API calls), with
//! the controller's own pending writes laid over them.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};

use super::Context;
use super::job::Job;
use super::model::Observed;

/// The pods and services in the job's namespace labelled with its name, from the caches,
/// with the controller's own pending writes laid over them.
pub fn observe_children(ctx: &Context, job: &Job<'_>, now: Timestamp) -> Observed {
    let cached_pods: Vec<Pod> = ctx
        .pods
        .of_job(job.namespace, job.name)
        .iter()
        .map(|p| p.to_pod())
        .collect();
    let cached_services: Vec<Service> = ctx
        .services
        .of_job(job.namespace, job.name)
        .iter()
        .map(|s| s.to_service())
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
