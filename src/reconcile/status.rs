//! Writing a job's status through the status subresource, only when it changed. I/O.

use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use serde_json::json;

use super::Shared;
use super::conditions;
use super::job::Job;
use crate::crd::{TFJob, TFJobStatus};
use crate::error::Error;

/// Whether a pass ends the job (its new status is Succeeded or Failed, the stored one not).
/// Such a status is written before the pass deletes anything: were it lost after the
/// cleanup's deletes, the next pass would take the deleted pods of a finished job for pods
/// of a running one that vanished, and recreate them. (Other passes write their status after
/// their children's deletions: a restart's count is stored only once its pod is gone.)
pub fn ends(old: Option<&TFJobStatus>, new: Option<&TFJobStatus>) -> bool {
    new.is_some_and(conditions::is_finished) && !old.is_some_and(conditions::is_finished)
}

/// Writes `new` when it differs from the stored status. The write carries the
/// resourceVersion the pass planned on, so a concurrent change answers 409 Conflict and the
/// job is planned again on the newer object instead of overwriting it. The status
/// subresource takes only `status` from the body, so the body carries nothing else.
pub async fn write(shared: &Shared, job: &Job<'_>, new: Option<&TFJobStatus>) -> Result<(), Error> {
    let Some(new) = new else { return Ok(()) };
    let old = job.status();
    if old == Some(new) || (old.is_none() && *new == TFJobStatus::default()) {
        return Ok(());
    }
    let resource = ApiResource::erase::<TFJob>(&());
    let body: DynamicObject = serde_json::from_value(json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "resourceVersion": job.resource_version,
        },
        "status": new,
    }))
    .map_err(|source| Error::Serialize {
        what: "status",
        source,
    })?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(shared.client.clone(), job.namespace, &resource);
    let written = api
        .replace_status(job.name, &PostParams::default(), &body)
        .await
        .map_err(|source| Error::WriteStatus {
            name: job.name.to_string(),
            source,
        })?;
    if let Some(after) = written.metadata.resource_version {
        let before = job.resource_version.to_string();
        shared
            .memory
            .with(job.uid, |m| m.wrote_status(before, after));
    }
    shared.metrics.count_transitions(job.namespace, old, new);
    Ok(())
}
