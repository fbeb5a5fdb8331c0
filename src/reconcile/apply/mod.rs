//! The pass's writes, in its order (docs/behaviour.md §6): the job's children (`children`:
//! deletions, then the PodGroup, then creations, then the events they call for), its status
//! (`status`), and the job itself once its TTL is due (`job`). I/O.
//!
//! Every write of a step is independent; one failure does not stop the others, and the first
//! error is returned so the job is retried with backoff.

pub mod children;
pub mod events;
pub mod job;
pub mod podgroup;
pub mod status;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service};
use kube::api::{DeleteParams, DynamicObject, PostParams, Preconditions};
use kube::runtime::events::EventType;
use kube::{Api, Client, Resource};

use crate::child::{ChildPod, ChildService};
use crate::error::{Error, is_namespace_terminating};
use crate::reconcile::build::gang::Gang;
use crate::reconcile::context::Context;
use crate::reconcile::job::JobMeta;
use crate::reconcile::memory::Memory;
use crate::reconcile::plan::model::{Deletion, Plan, Refusal};
use crate::runtime::publisher::EventQueue;
use crate::runtime::store::ChildCache;

/// What apply needs to act for one job.
pub struct Target<'a> {
    client: &'a Client,
    /// The job's namespace, where its children are.
    namespace: &'a str,
    /// The job's PodGroups, when gang scheduling is on.
    pub podgroups: Option<Api<DynamicObject>>,
    pub gang: Option<&'a Gang>,
    pub job_uid: &'a str,
    pub job_ref: ObjectReference,
    pub events: &'a EventQueue,
    pub memory: &'a Memory,
    /// Where created children are filed at once (`runtime::store`), so the next pass sees them.
    pub pod_cache: &'a ChildCache<ChildPod>,
    pub service_cache: &'a ChildCache<ChildService>,
}

impl<'a> Target<'a> {
    pub fn new(ctx: &'a Context, job: &JobMeta<'a>) -> Self {
        let shared = &*ctx.shared;
        Self {
            client: &shared.client,
            namespace: job.namespace,
            podgroups: shared.settings.gang.as_ref().map(|g| {
                Api::namespaced_with(shared.client.clone(), job.namespace, &g.api_resource())
            }),
            gang: shared.settings.gang.as_ref(),
            job_uid: job.uid,
            job_ref: job.reference.clone(),
            events: &shared.events,
            memory: &shared.memory,
            pod_cache: &ctx.pods,
            service_cache: &ctx.services,
        }
    }
}

impl Target<'_> {
    /// The job's pods, made when a pass writes one (most passes write none).
    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), self.namespace)
    }

    /// The job's services, made when a pass writes one.
    pub fn services(&self) -> Api<Service> {
        Api::namespaced(self.client.clone(), self.namespace)
    }

    /// Creates `object` in the job's namespace, as `Api::create` does, the answer read
    /// straight into `C`: for a child, only what the cache keeps (`child::wire`).
    pub async fn create<K, C>(&self, object: &K) -> Result<C, kube::Error>
    where
        K: Resource<DynamicType = ()> + serde::Serialize,
        C: serde::de::DeserializeOwned,
    {
        let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
        let mut request = kube::core::Request::new(K::url_path(&(), Some(self.namespace)))
            .create(&PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        // As kube's `Api::create` marks it (the client's trace span is named after it).
        request.extensions_mut().insert("create");
        self.client.request(request).await
    }
}

/// The plan's children and events: deletions first (a restarted pod must be gone before its
/// successor, of the same name, can be created), then the PodGroup (before any pod of its
/// gang), then creations, then the events that are new since the job's previous pass.
///
/// A failed deletion fails the step: the status must not count a restart whose pod may still
/// be there. A refused create is remembered for the next plan (`ReplicaFailure`) and returned
/// as `Ok(Some(_))`, so the status is still written before the job is retried with backoff.
/// In a terminating namespace nothing is created and nothing more is told (docs/behaviour.md
/// §13): the job goes with its namespace.
pub async fn children(t: &Target<'_>, plan: &Plan) -> Result<Option<Error>, Error> {
    let deleted = children::delete(t, &plan.delete_pods, &plan.delete_services).await;
    if t.memory.with(t.job_uid, |m| m.namespace_terminating) {
        return deleted.map(|()| None);
    }
    let mut told = Vec::new();
    let created = match podgroup::write(t, &plan.podgroup).await {
        Ok(()) => {
            let (pods, services) = (&plan.create_pods, &plan.create_services);
            children::create(t, pods, services, &mut told).await
        }
        Err(e) => Err(e),
    };
    if let Err(Error::NamespaceTerminating { .. }) = created {
        tracing::debug!("namespace is being deleted; the job is left to go with it");
        return deleted.map(|()| None);
    }
    told.extend(t.memory.with(t.job_uid, |m| m.events.fresh(&plan.events)));
    events::record_all(t, &told).await;
    let tried = plan.podgroup.allows_pods()
        || !plan.create_pods.is_empty()
        || !plan.create_services.is_empty();
    if tried {
        let refusal = created.as_ref().err().and_then(Error::create_failure);
        let refusal = refusal.map(|(reason, message)| Refusal {
            reason: reason.to_string(),
            message,
        });
        t.memory.with(t.job_uid, |m| m.refused = refusal);
    }
    deleted.map(|()| created.err())
}

/// A create refused (by the API server, or by the operator for a PodGroup it cannot make):
/// told in a warning event (one series while the same refusal repeats: same reason and
/// note), or, when the namespace is being deleted, not told at all (docs/behaviour.md §13):
/// the job is left alone from then on. Returns the error to fail the pass with.
async fn refused(t: &Target<'_>, error: Error) -> Error {
    let terminating = match &error {
        Error::CreatePod { source, .. }
        | Error::CreateService { source, .. }
        | Error::CreatePodGroup { source, .. } => is_namespace_terminating(source),
        _ => false,
    };
    if terminating {
        t.memory.with(t.job_uid, |m| m.namespace_terminating = true);
        return Error::NamespaceTerminating {
            namespace: t.job_ref.namespace.clone().unwrap_or_default(),
        };
    }
    if let Some((reason, note)) = error.create_failure() {
        events::record(t, EventType::Warning, reason, note).await;
    }
    error
}

/// What a delete with preconditions came to.
pub enum Deleted {
    /// Deleted now, or already gone.
    Yes,
    /// The object changed since the pass saw it, or was replaced by a newer one of the same
    /// name (409 on a precondition): left alone; its change wakes the job for another look.
    Changed,
}

/// Deletes `d` with its preconditions (uid, resourceVersion).
async fn delete_exactly<K>(api: &Api<K>, d: &Deletion) -> Result<Deleted, kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: d.uid.clone(),
            resource_version: d.resource_version.clone(),
        }),
        ..DeleteParams::background()
    };
    match api.delete(&d.name, &params).await {
        Ok(_) => Ok(Deleted::Yes),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Deleted::Yes),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(Deleted::Changed),
        Err(e) => Err(e),
    }
}
