//! The Kueue side's step in a job's pass, before the TFJob controller plans: the job and the
//! Workloads it controls (from the cache) in, Kueue's acts made. I/O.

use kube::Resource;

use super::cache::WorkloadCache;
use super::plan::decide::decide;
use super::plan::job::JobFacts;
use super::writes::{KueueSide, Writer};
use crate::crd::cached::CachedJob;
use crate::error::Error;

/// Makes the acts Kueue's reconciler would for this job. True when one of them wrote the
/// job itself: the pass ends there, and the next one sees the new version.
pub async fn step(
    side: &KueueSide,
    cache: &WorkloadCache,
    object: &CachedJob,
) -> Result<bool, Error> {
    // A job that does not parse cannot be queued (Kueue could not decode it either).
    let Ok(job) = &object.0 else {
        return Ok(false);
    };
    let facts = JobFacts::of(job);
    if facts.queue.is_none() && !facts.deleting {
        return Ok(false);
    }
    let owned = cache.index().of_job(&facts.namespace, &facts.name);
    let refs: Vec<_> = owned.iter().map(|w| w.as_ref()).collect();
    let acts = decide(&facts, &refs);
    if acts.is_empty() {
        return Ok(false);
    }
    tracing::debug!(?acts, "Kueue side");
    let mut writer = Writer {
        side,
        job: &facts,
        workloads: owned.iter().map(|w| w.as_ref().clone()).collect(),
        job_ref: job.object_ref(&()),
    };
    let mut wrote_job = false;
    for act in &acts {
        writer.make(act).await?;
        wrote_job |= act.writes_job();
    }
    Ok(wrote_job)
}
