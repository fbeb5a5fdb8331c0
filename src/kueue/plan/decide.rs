//! What Kueue's job reconciler would do next for one TFJob (Kueue v0.19.2,
//! `JobReconciler.ReconcileGenericJob` with `ensureOneWorkload`, for a top-level job with
//! `manageJobsWithoutQueueName` off), in its order, as a list of acts. Pure.

use super::conditions::{self, Wanted};
use super::job::JobFacts;
use super::matching::equivalent;
use super::workload::{
    EVICTED, FINISHED_FAILED, FINISHED_OWNER_NOT_FOUND, FINISHED_SUCCEEDED, PodSet, Workload,
};

/// One write of the job's side, in the order to make them.
#[derive(Clone, Debug, PartialEq)]
pub enum Act {
    /// Suspend the job, giving back the templates of `restore` (`stopJob`); told in a
    /// `Stopped` event with `message`.
    StopJob {
        restore: Option<Vec<PodSet>>,
        message: String,
    },
    /// Resume the job with the Workload's admission merged into its templates (`startJob`).
    StartJob { workload: String },
    /// Make the job's Workload (`handleJobWithNoWorkload`).
    CreateWorkload,
    /// Bring a Workload that reserved no quota in line with the suspended job
    /// (`updateWorkloadToMatchJob`).
    UpdateWorkload { workload: String },
    /// The job's queue label changed while it waits: the Workload follows (`QueueNameChange`).
    ChangeQueue { workload: String, queue: String },
    /// The job's priority label changed: the Workload's priority follows
    /// (`UpdateWorkloadPriority`).
    UpdatePriority { workload: String },
    /// Drop the finalizer, then delete (`workload.Delete`): a Workload that no longer
    /// describes the job.
    DeleteWorkload { workload: String },
    /// Set a condition on the Workload (`PodsReady`, `Finished`), with the event to tell.
    SetCondition {
        workload: String,
        wanted: Wanted,
        event: Option<(&'static str, String)>,
    },
    /// Give the evicted Workload's quota back.
    ReleaseQuota {
        workload: String,
        reason: String,
        message: String,
    },
    /// Drop `kueue.x-k8s.io/resource-in-use`.
    RemoveFinalizer { workload: String },
}

impl Act {
    /// Whether the act writes the job itself (its pass then ends: the next one sees it).
    pub fn writes_job(&self) -> bool {
        matches!(self, Act::StopJob { .. } | Act::StartJob { .. })
    }
}

/// The acts for `job` given the Workloads its name controls (`owned`), in Kueue's order.
pub fn decide(job: &JobFacts, owned: &[&Workload]) -> Vec<Act> {
    if job.deleting {
        return finalize(owned, true);
    }
    if job.queue.is_none() {
        return Vec::new();
    }
    let (mut acts, workload, done) = ensure_one(job, owned);
    if done {
        return acts;
    }
    acts.extend(follow(job, workload));
    acts
}

/// The Workloads of a job that is gone or being deleted (`finalize`,
/// `FinalizeOrphanedWorkload`): one still alive and controlled is finished (`OwnerNotFound`)
/// so its quota is freed; each loses its finalizer.
pub fn finalize(owned: &[&Workload], controlled: bool) -> Vec<Act> {
    let mut acts = Vec::new();
    for w in owned {
        if controlled && !w.deleting() && !w.finished() {
            let message = "The workload's owner no longer exists".to_string();
            acts.push(Act::SetCondition {
                workload: w.name().into(),
                wanted: conditions::finished(FINISHED_OWNER_NOT_FOUND, &message),
                event: None,
            });
        }
        if w.has_finalizer() {
            acts.push(Act::RemoveFinalizer {
                workload: w.name().into(),
            });
        }
    }
    acts
}

/// `ensureOneWorkload`: the Workload that matches the job, the others deleted, a running job
/// without one suspended, a suspended job's stale Workload updated. `done` when the pass
/// must stop there (Kueue returns an error after deleting, to come back).
fn ensure_one<'a>(
    job: &JobFacts,
    owned: &[&'a Workload],
) -> (Vec<Act>, Option<&'a Workload>, bool) {
    let mut acts = Vec::new();
    let matching = owned.iter().copied().find(|w| equivalent(job, w));
    let mut others: Vec<&Workload> = owned
        .iter()
        .copied()
        .filter(|w| Some(w.name()) != matching.map(|m| m.name()))
        .collect();
    let to_update = match (matching, others.first()) {
        (None, Some(first)) if job.suspended && !first.quota_reserved() => Some(others.remove(0)),
        _ => None,
    };
    if matching.is_none() && to_update.is_none() && !job.suspended && job.finished.is_none() {
        let only = (others.len() == 1).then(|| others[0]);
        let message = match only {
            None => "Missing Workload; unable to restore pod templates",
            Some(_) => {
                "No matching Workload; restoring pod templates according to existent Workload"
            }
        };
        acts.push(Act::StopJob {
            restore: only.map(|w| w.spec.pod_sets.clone()),
            message: message.into(),
        });
    }
    // A Workload already being deleted only loses its finalizer (`workload.Delete`).
    let mut deleting = false;
    for w in &others {
        if !w.deleting() {
            deleting = true;
            acts.push(Act::DeleteWorkload {
                workload: w.name().into(),
            });
        } else if w.has_finalizer() {
            acts.push(Act::RemoveFinalizer {
                workload: w.name().into(),
            });
        }
    }
    if deleting {
        return (acts, None, true);
    }
    if let Some(w) = to_update {
        acts.push(Act::UpdateWorkload {
            workload: w.name().into(),
        });
        return (acts, None, true);
    }
    if let Some(w) = matching
        && priority_follows_label(job, w)
    {
        acts.push(Act::UpdatePriority {
            workload: w.name().into(),
        });
        return (acts, None, true);
    }
    (acts, matching, false)
}

/// Whether the priority label names another class than the Workload's (a Workload of a pod
/// PriorityClass does not follow the label, nor one that reserved quota without a class).
fn priority_follows_label(job: &JobFacts, w: &Workload) -> bool {
    let reference = w.spec.priority_class_ref.as_ref();
    if reference.is_some_and(|r| !r.is_workload_class()) {
        return false;
    }
    if reference.is_none() && w.quota_reserved() {
        return false;
    }
    let current = reference.map(|r| r.name.as_str()).unwrap_or_default();
    current != job.workload_priority_class.as_deref().unwrap_or_default()
}

/// The rest of `ReconcileGenericJob`, with the job's one Workload (if any).
fn follow(job: &JobFacts, workload: Option<&Workload>) -> Vec<Act> {
    let name = workload.map(|w| w.name().to_string()).unwrap_or_default();
    if let Some(w) = workload.filter(|w| w.finished()) {
        return finalize_finished(w);
    }
    if let Some(w) = workload.filter(|w| w.deleting()) {
        return [stop(job, Some(w), "Workload is deleted")]
            .into_iter()
            .flatten()
            .chain(finalize_finished(w))
            .collect();
    }
    if let Some((success, message)) = &job.finished {
        if workload.is_none() {
            return Vec::new();
        }
        let reason = if *success {
            FINISHED_SUCCEEDED
        } else {
            FINISHED_FAILED
        };
        let event = format!("Workload '{}/{name}' is declared finished", job.namespace);
        return vec![Act::SetCondition {
            workload: name,
            wanted: conditions::finished(reason, message),
            event: Some(("FinishedWorkload", event)),
        }];
    }
    let Some(w) = workload else {
        // A job with active pods waits for them to go before it gets a Workload.
        return if job.active {
            Vec::new()
        } else {
            vec![Act::CreateWorkload]
        };
    };
    let ready = conditions::pods_ready(w, job.running);
    if !conditions::has(w, &ready) {
        return vec![Act::SetCondition {
            workload: name,
            wanted: ready,
            event: None,
        }];
    }
    if let Some(evicted) = w.condition(EVICTED).filter(|c| c.status == "True") {
        let mut acts: Vec<Act> = stop(job, Some(w), &evicted.message).into_iter().collect();
        if w.quota_reserved() && !job.active {
            acts.push(Act::ReleaseQuota {
                workload: name,
                reason: evicted.reason.clone(),
                message: evicted.message.clone(),
            });
        }
        return acts;
    }
    if job.suspended {
        if w.admitted() {
            return vec![Act::StartJob { workload: name }];
        }
        return match &job.queue {
            Some(queue) if w.spec.queue_name.as_ref() != Some(queue) => vec![Act::ChangeQueue {
                workload: name,
                queue: queue.clone(),
            }],
            _ => Vec::new(),
        };
    }
    if !w.admitted() {
        return stop(job, Some(w), "Not admitted by cluster queue")
            .into_iter()
            .collect();
    }
    Vec::new()
}

/// `stopJob`: nothing when the job is already suspended.
fn stop(job: &JobFacts, w: Option<&Workload>, message: &str) -> Option<Act> {
    (!job.suspended).then(|| Act::StopJob {
        restore: w.map(|w| w.spec.pod_sets.clone()),
        message: message.into(),
    })
}

fn finalize_finished(w: &Workload) -> Vec<Act> {
    if !w.has_finalizer() {
        return Vec::new();
    }
    vec![Act::RemoveFinalizer {
        workload: w.name().into(),
    }]
}

#[cfg(test)]
mod tests;
