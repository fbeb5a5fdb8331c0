//! The Kueue side's writes: each act of `plan::decide` against the API, with the reads it
//! needs (the job as stored, the admitted flavors, the priority classes) and Kueue's events.
//! Every write carries the resourceVersion it was computed from, so a concurrent change
//! (Kueue's own controllers write Workloads too) makes it fail and the pass come back. I/O.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::events::EventType;
use serde_json::{Value, json};

use super::lookups;
use super::plan::admission::{self, merge_patch};
use super::plan::build;
use super::plan::conditions;
use super::plan::decide::Act;
use super::plan::job::JobFacts;
use super::plan::workload::{
    FINALIZER, FINISHED_FAILED_TO_START, PodSet, Workload, WorkloadStatus,
};
use crate::crd::TFJob;
use crate::error::{Error, NOTE_LIMIT, bounded};
use crate::runtime::recorder::{EventRecorder, Note};

/// The Kueue side's identity: its client (its own User-Agent, so the API server's audit log
/// tells its writes from the TFJob controller's) and its event recorder.
pub struct KueueSide {
    pub client: Client,
    pub recorder: EventRecorder,
}

/// One job's acts, made in order; the first failure stops them.
pub struct Writer<'a> {
    pub side: &'a KueueSide,
    pub job: &'a JobFacts,
    /// The job's Workloads as the acts so far left them (a second write to one goes on its
    /// new resourceVersion).
    pub workloads: Vec<Workload>,
    pub job_ref: ObjectReference,
}

impl Writer<'_> {
    pub async fn make(&mut self, act: &Act) -> Result<(), Error> {
        if let Some(done) = workload_act(&self.side.client, &mut self.workloads, act).await {
            done?;
            if let Act::SetCondition {
                event: Some((reason, note)),
                ..
            } = act
            {
                self.event(reason, note.clone()).await;
            }
            return Ok(());
        }
        match act {
            Act::StopJob { restore, message } => self.stop_job(restore.as_deref(), message).await,
            Act::StartJob { workload } => self.start_job(workload).await,
            Act::CreateWorkload => self.create().await,
            Act::UpdateWorkload { workload } => self.update(workload).await,
            Act::ChangeQueue { workload, queue } => {
                let patch = json!({"spec": {"queueName": queue}});
                self.patch_workload(workload, patch, "changing the queue of Workload")
                    .await
            }
            Act::UpdatePriority { workload } => {
                let priority = lookups::priority(&self.side.client, self.job).await?;
                let patch = build::priority_patch(&priority);
                self.patch_workload(workload, patch, "updating the priority of Workload")
                    .await?;
                let note = format!(
                    "Updated workload priority class: {}/{workload}",
                    self.job.namespace
                );
                self.event("UpdatedWorkload", note).await;
                Ok(())
            }
            Act::DeleteWorkload { workload } => self.delete(workload).await,
            Act::SetCondition { .. } | Act::ReleaseQuota { .. } | Act::RemoveFinalizer { .. } => {
                Ok(())
            }
        }
    }

    fn workload(&self, name: &str) -> Result<&Workload, Error> {
        find(&self.workloads, name)
    }

    fn jobs(&self) -> Api<DynamicObject> {
        let resource = ApiResource::erase::<TFJob>(&());
        Api::namespaced_with(self.side.client.clone(), &self.job.namespace, &resource)
    }

    /// The job as stored (its replica types as spelled there), as JSON.
    async fn stored_job(&self) -> Result<Value, Error> {
        let job = self
            .jobs()
            .get(&self.job.name)
            .await
            .map_err(|source| self.failed("reading TFJob", source))?;
        serde_json::to_value(job).map_err(|source| Error::Serialize {
            what: "TFJob",
            source,
        })
    }

    /// Patches the job from `old` to `new` (nothing when equal), on `old`'s resourceVersion.
    async fn patch_job(&self, old: &Value, new: &Value, what: &'static str) -> Result<(), Error> {
        let mut patch = merge_patch(old, new);
        if patch.as_object().is_some_and(|p| p.is_empty()) {
            return Ok(());
        }
        patch["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        self.jobs()
            .patch(
                &self.job.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|source| self.failed(what, source))?;
        Ok(())
    }

    async fn stop_job(&self, restore: Option<&[PodSet]>, message: &str) -> Result<(), Error> {
        let stored = self.stored_job().await?;
        if stored["spec"]["runPolicy"]["suspend"] == json!(true) {
            return Ok(());
        }
        let stopped = admission::stopped(&stored, restore);
        self.patch_job(&stored, &stopped, "suspending TFJob")
            .await?;
        self.event("Stopped", message.to_string()).await;
        Ok(())
    }

    /// Resumes the job with its admission; a start that can never work (a conflict with an
    /// admission check's update) finishes the Workload instead, as Kueue does.
    async fn start_job(&mut self, name: &str) -> Result<(), Error> {
        let w = self.workload(name)?;
        let flavors = lookups::flavors(&self.side.client, w).await?;
        let stored = self.stored_job().await?;
        let infos = admission::infos(w, &flavors);
        match infos.and_then(|infos| admission::started(&stored, &infos)) {
            Ok(started) => {
                self.patch_job(&stored, &started, "resuming TFJob").await?;
                let admission = w.status.admission.as_ref();
                let queue = admission
                    .map(|a| a.cluster_queue.as_str())
                    .unwrap_or_default();
                let note = format!("Admitted by clusterQueue {queue}");
                self.event("Started", note).await;
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, workload = name, "the job cannot start with its admission");
                let wanted = conditions::finished(FINISHED_FAILED_TO_START, &e.to_string());
                let act = Act::SetCondition {
                    workload: name.to_string(),
                    wanted,
                    event: None,
                };
                let client = self.side.client.clone();
                workload_act(&client, &mut self.workloads, &act)
                    .await
                    .unwrap_or(Ok(()))
            }
        }
    }

    async fn create(&self) -> Result<(), Error> {
        let priority = lookups::priority(&self.side.client, self.job).await?;
        let w = build::workload(self.job, &priority);
        let api: Api<Workload> = Api::namespaced(self.side.client.clone(), &self.job.namespace);
        api.create(&PostParams::default(), &w)
            .await
            .map_err(|source| self.failed("creating Workload", source))?;
        let note = format!("Created Workload: {}/{}", self.job.namespace, w.name());
        self.event("CreatedWorkload", note).await;
        Ok(())
    }

    async fn update(&self, name: &str) -> Result<(), Error> {
        let w = self.workload(name)?;
        let priority = lookups::priority(&self.side.client, self.job).await?;
        let spec = build::spec(self.job, &priority, w.spec.active);
        let patch = merge_patch(&json!({"spec": w.spec}), &json!({"spec": spec}));
        self.patch_workload(name, patch, "updating Workload")
            .await?;
        let note = format!(
            "Updated not matching Workload for suspended job: {}/{name}",
            self.job.namespace
        );
        self.event("UpdatedWorkload", note).await;
        Ok(())
    }

    async fn patch_workload(
        &self,
        name: &str,
        mut patch: Value,
        what: &'static str,
    ) -> Result<(), Error> {
        let w = self.workload(name)?;
        patch["metadata"]["resourceVersion"] = json!(w.metadata.resource_version);
        workloads(&self.side.client, w)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| self.failed(what, source))?;
        Ok(())
    }

    /// `workload.Delete`: the finalizer goes first, then the Workload (unless already going).
    async fn delete(&self, name: &str) -> Result<(), Error> {
        let w = self.workload(name)?;
        remove_finalizer(&self.side.client, w).await?;
        if w.deleting() {
            return Ok(());
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: w.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        match workloads(&self.side.client, w).delete(name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(source) => return Err(self.failed("deleting Workload", source)),
        }
        let note = format!(
            "Deleted not matching Workload: {}/{name}",
            self.job.namespace
        );
        self.event("DeletedWorkload", note).await;
        Ok(())
    }

    /// An event about the job, as Kueue's reconciler records it; failing to record one never
    /// fails the pass.
    async fn event(&self, reason: &str, note: String) {
        let action: String = note.chars().take(128).collect();
        let event = Note {
            type_: EventType::Normal,
            reason,
            action: &action,
            note: bounded(note, NOTE_LIMIT),
        };
        if let Err(e) = self.side.recorder.publish(&event, &self.job_ref).await {
            tracing::debug!(error = %e, reason, "event not recorded");
        }
    }

    fn failed(&self, action: &'static str, source: kube::Error) -> Error {
        Error::Kueue {
            action,
            name: self.job.name.clone(),
            source,
        }
    }
}

fn find<'w>(workloads: &'w [Workload], name: &str) -> Result<&'w Workload, Error> {
    workloads
        .iter()
        .find(|w| w.name() == name)
        .ok_or(Error::WorkloadsNotSynced)
}

/// Makes an act that writes only a Workload (a condition, the quota, the finalizer) and keeps
/// the Workload as written in `workloads`; None for the other acts.
pub async fn workload_act(
    client: &Client,
    workloads: &mut [Workload],
    act: &Act,
) -> Option<Result<(), Error>> {
    let name = match act {
        Act::SetCondition { workload, .. }
        | Act::ReleaseQuota { workload, .. }
        | Act::RemoveFinalizer { workload } => workload,
        _ => return None,
    };
    let Some(w) = workloads.iter_mut().find(|w| w.name() == name.as_str()) else {
        return Some(Err(Error::WorkloadsNotSynced));
    };
    let written = match act {
        Act::SetCondition { wanted, .. } => {
            let status = conditions::with_condition(w, wanted, Timestamp::now());
            write_status(client, w, &status).await
        }
        Act::ReleaseQuota {
            reason, message, ..
        } => {
            let status = conditions::released(w, reason, message, Timestamp::now());
            write_status(client, w, &status).await
        }
        _ => remove_finalizer(client, w).await,
    };
    Some(written.map(|new| {
        if let Some(new) = new {
            *w = new;
        }
    }))
}

fn workloads(client: &Client, w: &Workload) -> Api<Workload> {
    let namespace = w.metadata.namespace.as_deref().unwrap_or_default();
    Api::namespaced(client.clone(), namespace)
}

/// Writes the changed part of `status` (a merge patch on the status subresource, on the
/// Workload's resourceVersion); the Workload as written, if anything was.
async fn write_status(
    client: &Client,
    w: &Workload,
    status: &WorkloadStatus,
) -> Result<Option<Workload>, Error> {
    let serialize = |s: &WorkloadStatus| {
        serde_json::to_value(s).map_err(|source| Error::Serialize {
            what: "Workload status",
            source,
        })
    };
    let diff = merge_patch(&serialize(&w.status)?, &serialize(status)?);
    if diff.as_object().is_some_and(|d| d.is_empty()) {
        return Ok(None);
    }
    let rv = &w.metadata.resource_version;
    let patch = json!({"metadata": {"resourceVersion": rv}, "status": diff});
    let written = workloads(client, w)
        .patch_status(w.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| Error::Kueue {
            action: "writing the status of Workload",
            name: w.name().into(),
            source,
        })?;
    Ok(Some(written))
}

/// Drops Kueue's finalizer (`workload.RemoveFinalizer`); a Workload already gone is fine.
async fn remove_finalizer(client: &Client, w: &Workload) -> Result<Option<Workload>, Error> {
    if !w.has_finalizer() {
        return Ok(None);
    }
    let finalizers = w.metadata.finalizers.iter().flatten();
    let rest: Vec<&String> = finalizers.filter(|f| *f != FINALIZER).collect();
    let finalizers = if rest.is_empty() {
        Value::Null
    } else {
        json!(rest)
    };
    let rv = &w.metadata.resource_version;
    let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": finalizers}});
    let patched = workloads(client, w)
        .patch(w.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await;
    match patched {
        Ok(written) => Ok(Some(written)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(source) => Err(Error::Kueue {
            action: "removing the finalizer of Workload",
            name: w.name().into(),
            source,
        }),
    }
}
