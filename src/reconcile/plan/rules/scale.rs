//! Scaling a running job (docs/behaviour.md §4, §6.2): the missing pods and services to create,
//! and the surplus ones (index ≥ replicas after a scale-down) to delete. Pure.

use k8s_openapi::api::core::v1::{Pod, Service};

use crate::crd::labels::child_name;
use crate::reconcile::build::children as build;
use crate::reconcile::plan::model::Deletion;
use crate::reconcile::plan::replicas::Replicas;
use crate::reconcile::plan::view::JobView;

/// Pods and services the spec asks for that do not exist. A pod still going away is not
/// recreated until it is gone (same name); a name held by an object the job does not own
/// is never taken over (the foreign-object warning tells why nothing happens); a replica
/// that succeeded is never run again, whatever became of its pod.
pub fn missing(view: &JobView<'_>, children: &Replicas) -> (Vec<Pod>, Vec<Service>) {
    let mut pods = Vec::new();
    let mut services = Vec::new();
    let unfinished = view
        .keys()
        .into_iter()
        .filter(|k| !children.completed.contains(k));
    for (t, i) in unfinished {
        let name = child_name(view.name, t, i);
        if !children.pods.contains_key(&(t, i)) && !children.foreign_pods.contains(&name) {
            pods.push(build::pod(
                view.job,
                t,
                i,
                view.cluster_domain,
                &view.settings,
            ));
        }
        if !children.services.contains_key(&(t, i)) && !children.foreign_services.contains(&name) {
            services.push(build::service(view.job, t, i));
        }
    }
    (pods, services)
}

/// Owned pods and services of replicas the spec no longer asks for. Deleting them is a
/// scale-down, never a failure: they are not counted anywhere.
pub fn surplus(view: &JobView<'_>, children: &Replicas) -> (Vec<Deletion>, Vec<Deletion>) {
    let pods = children
        .pods
        .iter()
        .filter(|(k, p)| !view.wants(**k) && !p.terminating);
    let services = children
        .services
        .iter()
        .filter(|(k, s)| !view.wants(**k) && !s.terminating);
    (
        pods.map(|(_, p)| Deletion::from(p)).collect(),
        services.map(|(_, s)| Deletion::from(s)).collect(),
    )
}
