//! Whole-job restart (`tfjob-operator.dev/restart-scope: Job`, docs/behaviour.md §6.7). Under
//! synchronous training one replica's fault is every replica's: TensorFlow's own guide says
//! the failed worker and the others must restart together. So a retryable fault of any
//! replica deletes every pod of the job, waits until they are all gone (no new worker may
//! meet an old peer), then, after a backoff delay, creates them all again as the next
//! attempt. Pods of earlier attempts never count: a peer that exits because of the fault,
//! with any code, before or during the restart, belongs to that restart. Pure.

use jiff::{SignedDuration, Timestamp};

use crate::crd::labels::child_name;
use crate::crd::recovery::{MAX_JOB_RESTARTS, RestartOn};
use crate::crd::{ReplicaType, TFJobStatus};
use crate::reconcile::plan::model::{Deletion, EventNote};
use crate::reconcile::plan::replicas::{ChildPod, Key, Phase, Replicas};
use crate::reconcile::plan::rules::finish::Cause;
use crate::reconcile::plan::rules::restarts::{FailureClass, classify, exited_event};
use crate::reconcile::plan::view::JobView;

/// The delay before the second attempt's pods are created, doubling per restart.
pub const FIRST_BACKOFF: SignedDuration = SignedDuration::from_secs(10);
/// The longest delay between attempts.
pub const MAX_BACKOFF: SignedDuration = SignedDuration::from_secs(300);

/// The wait before creating the pods of `attempt`: none for the first restart (one fault, an
/// OOM kill or an eviction, is worth an immediate retry), then 10 s doubling to 5 min, the
/// kubelet's CrashLoopBackOff: a job that keeps failing must not hold the scheduler and its
/// accelerators in a tight loop, and these are the numbers its users already know.
pub fn backoff(attempt: i32) -> SignedDuration {
    if attempt <= 1 {
        return SignedDuration::ZERO;
    }
    let doublings = (attempt - 2).min(10);
    (FIRST_BACKOFF * (1 << doublings)).min(MAX_BACKOFF)
}

/// A fault that restarts the job: the replica type it hit and what happened, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub t: ReplicaType,
    /// `pod j-worker-1 exited with code 137 (OOMKilled)`.
    pub words: String,
}

/// What a `restart-scope: Job` job does about faults in this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobRestart {
    /// No fault and no restart under way: the job runs on.
    Steady,
    /// A fault restarts the job now.
    Now(Fault),
    /// A restart under way: pods of earlier attempts are still going (`delete`: those not
    /// deleted yet), or its backoff delay lasts `until`. No pod is created meanwhile.
    Waiting {
        delete: Vec<Deletion>,
        until: Option<Timestamp>,
    },
    /// The job fails: only permanent failures, or its restarts are used up.
    Fails(Cause),
}

/// Decides for this pass; `late` is the replica the startup deadline found late (and why),
/// if it is due.
pub fn decide(
    view: &JobView<'_>,
    children: &Replicas,
    status: &TFJobStatus,
    restarting: bool,
    started: bool,
    late: Option<(Key, String)>,
) -> (JobRestart, Vec<EventNote>) {
    if let Some(waiting) = waiting(view, children, status) {
        return (waiting, Vec::new());
    }
    let mut retryable: Option<Fault> = None;
    let mut permanent: Option<(ReplicaType, i32)> = None;
    let mut events = Vec::new();
    for (t, i) in view.keys() {
        match children.pods.get(&(t, i)) {
            Some(pod) if pod.phase == Phase::Failed && !pod.terminating => {
                events.extend(exited_event(view.namespace, pod));
                let fault = Fault {
                    t,
                    words: format!("pod {} {}", pod.name, pod.failure_words()),
                };
                if retries(view, t, pod) {
                    retryable.get_or_insert(fault);
                } else {
                    let (first, n) = permanent.get_or_insert((t, 0));
                    if *first == t {
                        *n += 1;
                    }
                }
            }
            Some(_) => {}
            None if vanished(view, children, (t, i), restarting, started) => {
                let name = child_name(view.name, t, i);
                retryable.get_or_insert(Fault {
                    t,
                    words: format!("pod {name} was deleted"),
                });
            }
            None => {}
        }
    }
    if retryable.is_none()
        && let Some(((t, _), words)) = late
    {
        retryable = Some(Fault { t, words });
    }
    let decision = match (retryable, permanent) {
        (Some(fault), _) => restart_or_fail(view, fault),
        (None, Some((t, n))) => JobRestart::Fails(Cause::Replicas { t, n }),
        (None, None) => JobRestart::Steady,
    };
    (decision, events)
}

/// A restart still under way: pods of earlier attempts not gone yet, or its delay not over.
fn waiting(view: &JobView<'_>, children: &Replicas, status: &TFJobStatus) -> Option<JobRestart> {
    let going: Vec<&ChildPod> = children
        .earlier_attempts
        .iter()
        .filter(|p| p.phase != Phase::Succeeded)
        .collect();
    if !going.is_empty() {
        let delete = going
            .iter()
            .filter(|p| !p.terminating)
            .map(|p| p.deletion())
            .collect();
        return Some(JobRestart::Waiting {
            delete,
            until: None,
        });
    }
    let decided = status.restart_time.as_ref()?.0;
    let until = decided.checked_add(backoff(view.attempt)).ok()?;
    (view.now < until).then_some(JobRestart::Waiting {
        delete: Vec::new(),
        until: Some(until),
    })
}

/// Whether a failed pod restarts the job: per its replica's restart policy and the
/// ExitCode classes; always when it never exited by itself (evicted, its node lost) or
/// under `restart-on: Any`.
fn retries(view: &JobView<'_>, t: ReplicaType, pod: &ChildPod) -> bool {
    view.recovery.restart_on == RestartOn::Any
        || pod.exit_code.is_none()
        || classify(view.restart_policy(t), pod.exit_code) == FailureClass::Retryable
}

/// A replica whose pod is gone while its service stays: deleted from outside (preemption,
/// node loss), after the job started and outside a restart. Finished replicas are not
/// missed, nor pods whose create failed.
fn vanished(
    view: &JobView<'_>,
    children: &Replicas,
    key: (ReplicaType, i32),
    restarting: bool,
    started: bool,
) -> bool {
    let name = child_name(view.name, key.0, key.1);
    started
        && !restarting
        && !children.completed.contains(&key)
        && children.live_service(key).is_some()
        && !children.foreign_pods.contains(&name)
        && !children.never_created.contains(&name)
}

/// The next attempt, unless the restarts allowed (`max-job-restarts`, else `backoffLimit`)
/// are used up.
fn restart_or_fail(view: &JobView<'_>, fault: Fault) -> JobRestart {
    let (limit, setting) = match view.recovery.max_job_restarts {
        Some(n) => (Some(n), MAX_JOB_RESTARTS),
        None => (view.run_policy.backoff_limit, "spec.runPolicy.backoffLimit"),
    };
    match limit {
        Some(limit) if view.attempt >= limit => JobRestart::Fails(Cause::JobRestarts {
            limit,
            setting,
            fault: fault.words,
        }),
        _ => JobRestart::Now(fault),
    }
}

/// The pods a restart deletes: every pod of the job that has not succeeded (finished work
/// stays finished) and is not already going.
pub fn pods_to_delete(children: &Replicas) -> Vec<Deletion> {
    children
        .pods
        .values()
        .chain(&children.earlier_attempts)
        .filter(|p| p.phase != Phase::Succeeded && !p.terminating)
        .map(ChildPod::deletion)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_restart_is_immediate_then_the_delay_doubles_to_five_minutes() {
        let secs: Vec<i64> = (1..=8).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(secs, [0, 10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(backoff(i32::MAX), MAX_BACKOFF);
    }
}
