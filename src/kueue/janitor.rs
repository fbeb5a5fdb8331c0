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
/// How many times one Workload is read again after a 409 Conflict before the clean-up is left
/// to `RETRY`.
const CONFLICT_REREADS: usize = 3;

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
    let gone = orphans
        .iter()
        .filter(|w| w.controller().map(|(u, _)| u) != live_uid.as_deref());
    for w in gone {
        release(side, w.as_ref().clone()).await?;
    }
    Ok(())
}

/// Finishes and releases one Workload. The cache's copy may be older than the API server's:
/// the job's deletion that woke the janitor also has the garbage collector mark the Workload
/// deleted (and Kueue reacts to it), so a write on the cached resourceVersion gets 409
/// Conflict. Then the Workload is read again and decided anew, at once.
async fn release(side: &KueueSide, mut current: Workload) -> Result<(), Error> {
    for rereads in 0.. {
        let acts = finalize(&[&current], true);
        let mut written = vec![current.clone()];
        let mut result = Ok(());
        for act in &acts {
            if let Some(Err(e)) = workload_act(&side.client, &mut written, act).await {
                result = Err(e);
                break;
            }
        }
        if next(&result, rereads) == Next::Done {
            return result;
        }
        tracing::debug!(
            workload = current.name(),
            "Workload changed under the janitor; read again"
        );
        match reread(side, &current).await? {
            Some(fresh) if fresh.metadata.uid == current.metadata.uid => current = fresh,
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// What follows one Workload's writes.
#[derive(Debug, PartialEq)]
enum Next {
    /// Done, or failed in a way a fresh read does not mend (retried after `RETRY`).
    Done,
    /// Written on a stale resourceVersion: read the Workload again and decide anew.
    Reread,
}

fn next(result: &Result<(), Error>, rereads: usize) -> Next {
    match result {
        Err(e) if is_conflict(e) && rereads < CONFLICT_REREADS => Next::Reread,
        _ => Next::Done,
    }
}

fn is_conflict(e: &Error) -> bool {
    matches!(e, Error::Kueue { source: kube::Error::Api(s), .. } if s.code == 409)
}

/// The Workload as the API server has it now; None once it is gone (one of the same name
/// and another uid is not it either: the caller checks).
async fn reread(side: &KueueSide, w: &Workload) -> Result<Option<Workload>, Error> {
    let namespace = w.metadata.namespace.as_deref().unwrap_or_default();
    let api: Api<Workload> = Api::namespaced(side.client.clone(), namespace);
    api.get_opt(w.name()).await.map_err(|source| Error::Kueue {
        action: "reading Workload",
        name: w.name().into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: u16) -> Result<(), Error> {
        Err(Error::Kueue {
            action: "writing the status of Workload",
            name: "tfjob-a-12345".into(),
            source: kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..kube::core::Status::failure("refused", "Conflict")
            })),
        })
    }

    #[test]
    fn a_conflict_reads_the_workload_again_at_once_a_bounded_number_of_times() {
        assert_eq!(next(&refused(409), 0), Next::Reread);
        assert_eq!(next(&refused(409), CONFLICT_REREADS - 1), Next::Reread);
        assert_eq!(next(&refused(409), CONFLICT_REREADS), Next::Done);
    }

    #[test]
    fn success_and_other_errors_end_the_release() {
        assert_eq!(next(&Ok(()), 0), Next::Done);
        assert_eq!(next(&refused(403), 0), Next::Done);
        assert_eq!(next(&refused(500), 0), Next::Done);
        assert_eq!(next(&Err(Error::WorkloadsNotSynced), 0), Next::Done);
    }
}
