//! Workloads whose TFJob is gone: finished (`OwnerNotFound`, so the quota is freed at once)
//! and released from Kueue's finalizer, as Kueue's reconciler does when a job it manages is
//! deleted (`finalize`, `FinalizeOrphanedWorkload`). No pass runs for a job that is no longer
//! there, so this runs beside the controller, on the Workload watch's word and on the TFJob
//! watch's. I/O.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};

use super::cache::{Index, JobKey};
use super::plan::decide::finalize;
use super::plan::workload::Workload;
use super::writes::{KueueSide, workload_act};
use crate::crd::TFJob;
use crate::crd::cached::CachedJob;
use crate::error::Error;

/// How soon a failed clean-up is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// Cleans up after the jobs named on `keys` while the scope runs; a Workload whose job the
/// TFJob cache does not hold (yet) is checked against the API server first.
pub async fn run(
    side: Arc<KueueSide>,
    index: Index,
    jobs: Store<CachedJob>,
    mut keys: UnboundedReceiver<JobKey>,
    again: UnboundedSender<JobKey>,
) {
    // Not `jobs.wait_until_ready()`: in kube-runtime 5 the store's readiness wakes one waiter
    // only (a oneshot), and the controller already waits on it. A job the cache does not hold
    // yet is asked of the API server before anything is done (`clean`).
    while let Some(key) = keys.next().await {
        let orphans = orphans(&index, &jobs, &key);
        if orphans.is_empty() {
            continue;
        }
        let names: Vec<&str> = orphans.iter().map(|w| w.name()).collect();
        tracing::debug!(job = key.1, namespace = key.0, workloads = ?names, "Workloads of a job that may be gone");
        if let Err(e) = clean(&side, &key, &orphans).await {
            tracing::warn!(error = %e, job = key.1, namespace = key.0, "releasing the Workloads of a deleted TFJob");
            let again = again.clone();
            tokio::spawn(async move {
                tokio::time::sleep(RETRY).await;
                let _ = again.unbounded_send(key);
            });
        }
    }
}

/// The job's Workloads whose controller is not the job the cache has under that name.
fn orphans(
    index: &Index,
    jobs: &Store<CachedJob>,
    (namespace, name): &JobKey,
) -> Vec<Arc<Workload>> {
    let job = jobs.get(&ObjectRef::new(name).within(namespace));
    let uid = job
        .as_ref()
        .and_then(|j| kube::Resource::meta(j.as_ref()).uid.clone());
    index
        .of_job(namespace, name)
        .into_iter()
        .filter(|w| w.controller().map(|(u, _)| u) != uid.as_deref())
        .filter(|w| w.has_finalizer() || !(w.finished() || w.deleting()))
        .collect()
}

/// Confirms with the API server that the job is gone (the TFJob watch may lag behind the
/// Workload watch), then finishes and releases each Workload.
async fn clean(
    side: &KueueSide,
    (namespace, name): &JobKey,
    orphans: &[Arc<Workload>],
) -> Result<(), Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        side.client.clone(),
        namespace,
        &ApiResource::erase::<TFJob>(&()),
    );
    let live = api
        .get_metadata_opt(name)
        .await
        .map_err(|source| Error::Kueue {
            action: "reading TFJob",
            name: name.clone(),
            source,
        })?;
    let live_uid = live.and_then(|j| j.metadata.uid);
    let mut gone: Vec<Workload> = orphans
        .iter()
        .filter(|w| w.controller().map(|(u, _)| u) != live_uid.as_deref())
        .map(|w| w.as_ref().clone())
        .collect();
    let acts = finalize(&gone.iter().collect::<Vec<_>>(), true);
    for act in &acts {
        if let Some(done) = workload_act(&side.client, &mut gone, act).await {
            done?;
        }
    }
    Ok(())
}
