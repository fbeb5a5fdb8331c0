//! Applying a plan: delete and create children, record events, delete the job. I/O.
//! Every write is independent; one failure does not stop the others, and the first error is
//! returned so the job is retried with backoff.

use futures::{StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service};
use kube::api::{DeleteParams, DynamicObject, PostParams, Preconditions};
use kube::runtime::events::EventType as KubeEventType;
use kube::{Api, Resource, ResourceExt};

use super::gang::{self, Gang};
use super::job::Job;
use super::memory::Memory;
use super::model::{Deletion, EventNote, EventType, Plan};
use super::recorder::{EventRecorder, Note};
use super::{Shared, summary};
use crate::crd::object::JobObject;
use crate::error::{Error, NOTE_LIMIT, api_words, bounded, is_namespace_terminating};

/// Children created (or deleted) at once for one job.
pub const CREATE_CONCURRENCY: usize = 16;

/// What apply needs to act for one job.
pub struct Target<'a> {
    pub pods: Api<Pod>,
    pub services: Api<Service>,
    /// The job's PodGroups, when gang scheduling is on.
    pub podgroups: Option<Api<DynamicObject>>,
    pub gang: Option<&'a Gang>,
    pub job_uid: &'a str,
    pub job_ref: ObjectReference,
    pub recorder: &'a EventRecorder,
    pub memory: &'a Memory,
}

impl<'a> Target<'a> {
    pub fn new(shared: &'a Shared, job: &Job<'a>) -> Self {
        Self {
            pods: Api::namespaced(shared.client.clone(), job.namespace),
            services: Api::namespaced(shared.client.clone(), job.namespace),
            podgroups: shared.settings.gang.as_ref().map(|g| {
                Api::namespaced_with(shared.client.clone(), job.namespace, &g.api_resource())
            }),
            gang: shared.settings.gang.as_ref(),
            job_uid: job.uid,
            job_ref: job.reference(),
            recorder: &shared.recorder,
            memory: &shared.memory,
        }
    }
}

/// What applying a plan's children did: each kind of write can fail on its own.
#[must_use]
pub struct Applied {
    pub deleted: Result<(), Error>,
    pub created: Result<(), Error>,
}

/// The plan's children and events: deletions first (a restarted pod must be gone before its
/// successor, of the same name, can be created), then the PodGroup (before any pod of its
/// gang), then creations, then the events that are new since the job's previous pass.
pub async fn apply_plan(t: &Target<'_>, plan: &Plan) -> Applied {
    let deleted = delete_children(t, &plan.delete_pods, &plan.delete_services).await;
    // In a terminating namespace every create (events too) would be refused: not tried.
    if t.memory.with(t.job_uid, |m| m.namespace_terminating) {
        return Applied {
            deleted,
            created: Ok(()),
        };
    }
    let created = match gang::apply::apply(t, &plan.podgroup).await {
        Ok(()) => create_children(t, &plan.create_pods, &plan.create_services).await,
        Err(e) => Err(e),
    };
    if let Err(Error::NamespaceTerminating { .. }) = created {
        return Applied { deleted, created };
    }
    let fresh = t.memory.with(t.job_uid, |m| m.notes.fresh(&plan.events));
    for note in &fresh {
        record_note(t, note).await;
    }
    Applied { deleted, created }
}

/// Deletes the TFJob itself (its TTL expired); children follow by garbage collection. The
/// uid precondition keeps a re-created job of the same name safe.
pub async fn delete_job(shared: &Shared, job: &Job<'_>) -> Result<(), Error> {
    let api: Api<JobObject> = Api::namespaced(shared.client.clone(), job.namespace);
    let this_job = Deletion {
        name: job.name.to_string(),
        uid: Some(job.uid.to_string()),
        resource_version: None,
    };
    delete(&api, &this_job)
        .await
        .map_err(|source| Error::DeleteJob {
            name: job.name.to_string(),
            source,
        })?;
    shared
        .metrics
        .jobs_deleted
        .get_or_create(&crate::metrics::Metrics::job(job.namespace))
        .inc();
    Ok(())
}

/// Create pods and services, all concurrently (bounded). The error returned is that of the
/// first refused child in the plan's order (so the job's condition names the same child
/// pass after pass), unless the namespace is being deleted, which says more.
pub async fn create_children(
    t: &Target<'_>,
    pods: &[Pod],
    services: &[Service],
) -> Result<(), Error> {
    let children: Vec<Child> = pods
        .iter()
        .cloned()
        .map(|p| Child::Pod(Box::new(p)))
        .chain(
            services
                .iter()
                .cloned()
                .map(|s| Child::Service(Box::new(s))),
        )
        .collect();
    let results: Vec<Result<Made, Error>> = stream::iter(children)
        .map(|child| async move {
            match child {
                Child::Pod(p) => create_pod(t, *p).await,
                Child::Service(s) => create_service(t, *s).await,
            }
        })
        .buffered(CREATE_CONCURRENCY)
        .collect()
        .await;
    let made = |kind: Kind| -> Vec<String> {
        results
            .iter()
            .filter_map(|r| match r {
                Ok(Made::New(k, name)) if *k == kind => Some(name.clone()),
                _ => None,
            })
            .collect()
    };
    record_children(
        t,
        "SuccessfulCreatePod",
        "Created",
        Kind::Pod,
        &made(Kind::Pod),
    )
    .await;
    let services = made(Kind::Service);
    record_children(
        t,
        "SuccessfulCreateService",
        "Created",
        Kind::Service,
        &services,
    )
    .await;
    let mut errors: Vec<Error> = results.into_iter().filter_map(Result::err).collect();
    match errors
        .iter()
        .position(|e| matches!(e, Error::NamespaceTerminating { .. }))
    {
        Some(i) => Err(errors.swap_remove(i)),
        None if errors.is_empty() => Ok(()),
        None => Err(errors.swap_remove(0)),
    }
}

enum Child {
    Pod(Box<Pod>),
    Service(Box<Service>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Pod,
    Service,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Pod => "pod",
            Kind::Service => "service",
        }
    }
}

/// What a create came to: a new child, or one of ours that existed already.
enum Made {
    New(Kind, String),
    Existing,
}

/// One event for what a pass did to children of one kind (docs/behaviour.md §9): none for no
/// child, Kubeflow's `Created pod: <pod>` for one, `Created <n> pods: <names>` for more.
async fn record_children(t: &Target<'_>, reason: &str, verb: &str, kind: Kind, names: &[String]) {
    if names.is_empty() {
        return;
    }
    let note = summary::children_note(verb, kind.word(), names);
    record(t, KubeEventType::Normal, reason, note).await;
}

async fn create_pod(t: &Target<'_>, pod: Pod) -> Result<Made, Error> {
    let name = pod.name_any();
    match t.pods.create(&PostParams::default(), &pod).await {
        Ok(created) => {
            t.memory
                .with(t.job_uid, |m| m.pending.created(&created, Timestamp::now()));
            Ok(Made::New(Kind::Pod, name))
        }
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            adopt_check(t, t.pods.get_opt(&name).await.ok().flatten(), "pod", &name).await;
            Ok(Made::Existing)
        }
        Err(source) => {
            t.memory.with(t.job_uid, |m| {
                m.pending.create_failed(&name, Timestamp::now())
            });
            Err(refused(t, Error::CreatePod { name, source }).await)
        }
    }
}

async fn create_service(t: &Target<'_>, service: Service) -> Result<Made, Error> {
    let name = service.name_any();
    match t.services.create(&PostParams::default(), &service).await {
        Ok(created) => {
            t.memory.with(t.job_uid, |m| {
                m.pending.service_created(&created, Timestamp::now())
            });
            Ok(Made::New(Kind::Service, name))
        }
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            adopt_check(
                t,
                t.services.get_opt(&name).await.ok().flatten(),
                "service",
                &name,
            )
            .await;
            Ok(Made::Existing)
        }
        Err(source) => Err(refused(t, Error::CreateService { name, source }).await),
    }
}

/// A create refused (by the API server, or by the operator for a PodGroup it cannot make):
/// told in a warning event (one series while the same refusal repeats: same reason and
/// note), or, when the namespace is being deleted, not told at all (docs/behaviour.md §13):
/// the job is left alone from then on. Returns the error to fail the pass with.
pub(super) async fn refused(t: &Target<'_>, error: Error) -> Error {
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
        record(t, KubeEventType::Warning, reason, note).await;
    }
    error
}

/// An existing object with a child's name is fine when it is ours; otherwise it is never
/// adopted, and the user is told.
async fn adopt_check<K: Resource<DynamicType = ()>>(
    t: &Target<'_>,
    existing: Option<K>,
    kind: &str,
    name: &str,
) {
    let ours = existing
        .as_ref()
        .map(|o| {
            o.owner_references()
                .iter()
                .any(|r| r.uid == t.job_uid && r.controller == Some(true))
        })
        .unwrap_or(false);
    if !ours {
        let note = format!(
            "{kind} {name} already exists and is not owned by this TFJob; it is left alone"
        );
        record(t, KubeEventType::Warning, "ChildNotOwned", note).await;
    }
}

/// Delete pods and services, all concurrently (bounded); a child already gone is fine.
pub async fn delete_children(
    t: &Target<'_>,
    pods: &[Deletion],
    services: &[Deletion],
) -> Result<(), Error> {
    let children: Vec<(Kind, Deletion)> = pods
        .iter()
        .map(|d| (Kind::Pod, d.clone()))
        .chain(services.iter().map(|d| (Kind::Service, d.clone())))
        .collect();
    let results: Vec<Result<(Kind, String), Error>> = stream::iter(children)
        .map(|(kind, d)| async move { delete_child(t, kind, &d).await.map(|()| (kind, d.name)) })
        .buffered(CREATE_CONCURRENCY)
        .collect()
        .await;
    for (kind, reason) in [
        (Kind::Pod, "SuccessfulDeletePod"),
        (Kind::Service, "SuccessfulDeleteService"),
    ] {
        let names: Vec<String> = results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .filter(|(k, _)| *k == kind)
            .map(|(_, name)| name.clone())
            .collect();
        record_children(t, reason, "Deleted", kind, &names).await;
    }
    results.into_iter().try_for_each(|r| r.map(|_| ()))
}

/// Deletes one child. One that changed since the pass saw it is left for the next pass
/// (`ChildChanged`); a pod's deletion is remembered until the cache shows it.
async fn delete_child(t: &Target<'_>, kind: Kind, d: &Deletion) -> Result<(), Error> {
    let deleted = match kind {
        Kind::Pod => delete(&t.pods, d).await,
        Kind::Service => delete(&t.services, d).await,
    };
    let name = d.name.clone();
    match deleted {
        Err(source) => Err(match kind {
            Kind::Pod => Error::DeletePod { name, source },
            Kind::Service => Error::DeleteService { name, source },
        }),
        Ok(Deleted::Changed) => Err(Error::ChildChanged { name }),
        Ok(Deleted::Yes) => {
            if let (Kind::Pod, Some(uid)) = (kind, &d.uid) {
                t.memory
                    .with(t.job_uid, |m| m.pending.deleted(uid, Timestamp::now()));
            }
            Ok(())
        }
    }
}

/// What a delete with preconditions came to.
pub(super) enum Deleted {
    /// Deleted now, or already gone.
    Yes,
    /// The object changed since the pass saw it, or was replaced by a newer one of the same
    /// name (409 on a precondition): left alone; its change wakes the job for another look.
    Changed,
}

pub(super) async fn delete<K>(api: &Api<K>, d: &Deletion) -> Result<Deleted, kube::Error>
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

/// Record an event the plan decided on.
pub async fn record_note(t: &Target<'_>, note: &EventNote) {
    let type_ = match note.type_ {
        EventType::Normal => KubeEventType::Normal,
        EventType::Warning => KubeEventType::Warning,
    };
    record(t, type_, &note.reason, note.message.clone()).await;
}

/// Publish an event about the job. Failing to record an event never fails the reconcile.
pub(super) async fn record(t: &Target<'_>, type_: KubeEventType, reason: &str, note: String) {
    // The recorder folds events with the same (reason, action) into one series, keeping the
    // first note: the note is the action, so distinct occurrences (two pods exiting) stay
    // distinct events and a repeated one (the same refusal) is one series.
    let action: String = note.chars().take(128).collect();
    let event = Note {
        type_,
        reason,
        action: &action,
        note: bounded(note, NOTE_LIMIT),
    };
    match t.recorder.publish(&event, &t.job_ref).await {
        Ok(()) => {}
        // (expected while the namespace goes; the job goes with it)
        Err(e) if is_namespace_terminating(&e) => {
            tracing::debug!(reason, "event not recorded: the namespace is being deleted");
        }
        Err(e) => tracing::warn!(error = %api_words(&e), reason, "event not recorded"),
    }
}
