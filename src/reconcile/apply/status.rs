//! Writing a job's status through the status subresource, only when it changed. I/O.

use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use serde_json::json;

use crate::crd::{TFJob, TFJobStatus};
use crate::error::Error;
use crate::reconcile::context::Shared;
use crate::reconcile::job::JobMeta;

/// Writes `new` when it differs from the stored status. The write carries the
/// resourceVersion the pass planned on, so a concurrent change answers 409 Conflict and the
/// job is planned again on the newer object instead of overwriting it. The status
/// subresource takes only `status` from the body, so the body carries nothing else.
pub async fn write(
    shared: &Shared,
    job: &JobMeta<'_>,
    new: Option<&TFJobStatus>,
) -> Result<(), Error> {
    let Some(new) = new else { return Ok(()) };
    let old = job.status;
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
    shared
        .metrics
        .count_transitions(job.namespace, job.created, old, new);
    Ok(())
}
