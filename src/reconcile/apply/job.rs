//! Deleting the job itself once its TTL after finishing is due; its children follow by
//! garbage collection. I/O.

use kube::Api;

use super::delete_exactly;
use crate::crd::cached::CachedJob;
use crate::error::Error;
use crate::reconcile::context::Shared;
use crate::reconcile::job::JobMeta;
use crate::reconcile::plan::model::Deletion;

/// Deletes the TFJob itself (its TTL expired); children follow by garbage collection. The
/// uid precondition keeps a re-created job of the same name safe.
pub async fn delete(shared: &Shared, job: &JobMeta<'_>) -> Result<(), Error> {
    let api: Api<CachedJob> = Api::namespaced(shared.client.clone(), job.namespace);
    let this_job = Deletion {
        name: job.name.to_string(),
        uid: Some(job.uid.to_string()),
        resource_version: None,
    };
    delete_exactly(&api, &this_job)
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
