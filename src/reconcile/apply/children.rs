//! Creating and deleting a job's pods and services, concurrently (bounded): each child created
//! is filed in its cache at once (`runtime::store`), each pod deleted remembered until the
//! cache shows it going (`memory::pending`). I/O.

use futures::{StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use tokio::time::Instant;

use super::events::{children_event, record, record_children};
use super::{Deleted, Target, refused};
use crate::child::{ChildPod, ChildService};
use crate::error::Error;
use crate::reconcile::plan::model::{Deletion, EventNote};

/// Children created (or deleted) at once for one job.
pub const CREATE_CONCURRENCY: usize = 16;

/// Create pods and services, all concurrently (bounded), and add the events they call for to
/// `told` (recorded with the pass's other events, at once). The error returned is that of the
/// first refused child in the plan's order (so the job's condition names the same child
/// pass after pass), unless the namespace is being deleted, which says more.
pub async fn create(
    t: &Target<'_>,
    pods: &[Pod],
    services: &[Service],
    told: &mut Vec<EventNote>,
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
    for (kind, reason) in [
        (Kind::Pod, "SuccessfulCreatePod"),
        (Kind::Service, "SuccessfulCreateService"),
    ] {
        let made: Vec<String> = results
            .iter()
            .filter_map(|r| match r {
                Ok(Made::New(k, name)) if *k == kind => Some(name.clone()),
                _ => None,
            })
            .collect();
        told.extend(children_event(reason, "Created", kind.word(), &made));
    }
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

async fn create_pod(t: &Target<'_>, pod: Pod) -> Result<Made, Error> {
    let name = pod.name_any();
    match t.create::<Pod, ChildPod>(&pod).await {
        Ok(created) => {
            t.pod_cache.created(created, Instant::now());
            Ok(Made::New(Kind::Pod, name))
        }
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            adopt_check(
                t,
                t.pods().get_opt(&name).await.ok().flatten(),
                "pod",
                &name,
            )
            .await;
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
    match t.create::<Service, ChildService>(&service).await {
        Ok(created) => {
            t.service_cache.created(created, Instant::now());
            Ok(Made::New(Kind::Service, name))
        }
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            adopt_check(
                t,
                t.services().get_opt(&name).await.ok().flatten(),
                "service",
                &name,
            )
            .await;
            Ok(Made::Existing)
        }
        Err(source) => Err(refused(t, Error::CreateService { name, source }).await),
    }
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
        record(t, EventType::Warning, "ChildNotOwned", note).await;
    }
}

/// Delete pods and services, all concurrently (bounded); a child already gone is fine.
pub async fn delete(t: &Target<'_>, pods: &[Deletion], services: &[Deletion]) -> Result<(), Error> {
    let children: Vec<(Kind, Deletion)> = pods
        .iter()
        .map(|d| (Kind::Pod, d.clone()))
        .chain(services.iter().map(|d| (Kind::Service, d.clone())))
        .collect();
    let results: Vec<Result<(Kind, String), Error>> = stream::iter(children)
        .map(|(kind, d)| async move { delete_one(t, kind, &d).await.map(|()| (kind, d.name)) })
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
        record_children(t, reason, "Deleted", kind.word(), &names).await;
    }
    results.into_iter().try_for_each(|r| r.map(|_| ()))
}

/// Deletes one child. One that changed since the pass saw it is left for the next pass
/// (`ChildChanged`); a pod's deletion is remembered until the cache shows it.
async fn delete_one(t: &Target<'_>, kind: Kind, d: &Deletion) -> Result<(), Error> {
    let deleted = match kind {
        Kind::Pod => super::delete_exactly(&t.pods(), d).await,
        Kind::Service => super::delete_exactly(&t.services(), d).await,
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
