//! A child made from a k8s object: the pods and services this controller just created (the
//! create's answer, filed in the cache before the watch shows them) and the test builders.
//! The same rules as the watch's decode (`facts`). Pure.

use k8s_openapi::api::core::v1::{ContainerState, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::facts::{self, ConditionView, ContainerView, EndView};
use super::intern::intern;
use super::wire::{Meta, attempt, owner, replica};
use super::{ChildPod, ChildService};
use crate::crd::labels::{
    LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, LABEL_RESTART_ATTEMPT,
};

fn meta(m: &ObjectMeta) -> Meta {
    let label = |key: &str| m.labels.as_ref()?.get(key).map(String::as_str);
    let controller = m.owner_references.iter().flatten();
    let controller = controller
        .filter(|o| o.controller == Some(true))
        .map(|o| owner(&o.api_version, &o.kind, &o.name, &o.uid))
        .next();
    Meta {
        name: m.name.clone().unwrap_or_default(),
        namespace: intern(m.namespace.as_deref().unwrap_or_default()),
        job: intern(label(LABEL_JOB_NAME).unwrap_or_default()),
        uid: m.uid.clone(),
        resource_version: m.resource_version.clone(),
        replica: replica(label(LABEL_REPLICA_TYPE), label(LABEL_REPLICA_INDEX)),
        attempt: attempt(label(LABEL_RESTART_ATTEMPT)),
        owner: controller,
        terminating: m.deletion_timestamp.is_some(),
        created: m.creation_timestamp.as_ref().map(|t| t.0),
    }
}

fn end(state: Option<&ContainerState>) -> Option<EndView<'_>> {
    let t = state?.terminated.as_ref()?;
    Some(EndView {
        exit_code: t.exit_code,
        reason: t.reason.as_deref(),
        finished: t.finished_at.as_ref().map(|t| t.0),
    })
}

impl From<&Pod> for ChildPod {
    fn from(pod: &Pod) -> Self {
        let facts = pod.status.as_ref().map(|s| {
            let conditions = s.conditions.iter().flatten().map(|c| ConditionView {
                type_: &c.type_,
                status: &c.status,
                reason: c.reason.as_deref(),
                message: c.message.as_deref(),
            });
            let containers = s.container_statuses.iter().flatten().map(|c| {
                let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
                ContainerView {
                    name: &c.name,
                    restart_count: c.restart_count,
                    waiting: waiting.map(|w| (w.reason.as_deref(), w.message.as_deref())),
                    terminated: end(c.state.as_ref()),
                    last_terminated: end(c.last_state.as_ref()),
                }
            });
            let (phase, reason) = (s.phase.as_deref(), s.reason.as_deref());
            facts::status_facts(phase, reason, conditions, containers)
        });
        ChildPod::of(meta(&pod.metadata), facts.unwrap_or_default())
    }
}

impl From<&Service> for ChildService {
    fn from(service: &Service) -> Self {
        ChildService::of(meta(&service.metadata))
    }
}
