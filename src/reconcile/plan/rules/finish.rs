//! The end of a job (docs/behaviour.md §6.3, §7.3, §7.4): which replica decides success, the
//! terminal conditions and messages, and what a finished job deletes. Pure.

use crate::crd::{
    CleanPodPolicy, ConditionType, REASON_FAILED, REASON_FAILED_VALIDATION, REASON_SUCCEEDED,
    ReplicaStatuses, ReplicaType, RestartPolicy,
};
use crate::reconcile::plan::conditions::{Change, Wanted};
use crate::reconcile::plan::model::{Deletion, EventNote};
use crate::reconcile::plan::replicas::Replicas;
use crate::reconcile::plan::view::JobView;

/// Why a job failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// `n` replicas of type `t` failed permanently.
    Replicas {
        t: ReplicaType,
        n: i32,
    },
    BackoffLimit,
    Deadline,
    /// Not every replica ran within `seconds` of the job's (re)start: `late` names a replica's
    /// pod and why.
    StartupDeadline {
        seconds: i64,
        late: String,
    },
    /// Whole-job restarts are used up (`restart-scope: Job`): `limit` from `setting`, and the
    /// fault that would have needed one more.
    JobRestarts {
        limit: i32,
        setting: &'static str,
        fault: String,
    },
    /// A failure rule's `FailJob` matched a type-`t` replica's failure, told in `fault`.
    Rule {
        t: ReplicaType,
        fault: String,
    },
    /// The spec can never run; the message lists every problem.
    Validation(String),
}

/// How a job ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Succeeded,
    Failed(Cause),
}

impl Verdict {
    fn reason(&self) -> &'static str {
        match self {
            Verdict::Succeeded => REASON_SUCCEEDED,
            Verdict::Failed(Cause::Validation(_)) => REASON_FAILED_VALIDATION,
            Verdict::Failed(_) => REASON_FAILED,
        }
    }

    fn message(&self, view: &JobView<'_>) -> String {
        let (ns, name) = (view.namespace, view.name);
        match self {
            Verdict::Succeeded => format!("TFJob {ns}/{name} successfully completed."),
            // Kubeflow's words for each path: a permanent exit code under ExitCode is judged
            // where pods are examined (its common/pod.go, Go `%q` quoting and all), any
            // other permanent failure where the status is computed.
            Verdict::Failed(Cause::Replicas { t, .. })
                if view.restart_policy(*t) == RestartPolicy::ExitCode =>
            {
                format!("job \"{name}\" is failing because \"{t}\" replica(s) failed.")
            }
            Verdict::Failed(Cause::Replicas { t, n }) => {
                format!("TFJob {ns}/{name} has failed because {n} {t} replica(s) failed.")
            }
            Verdict::Failed(Cause::BackoffLimit) => backoff_message(name),
            Verdict::Failed(Cause::Deadline) => deadline_message(name),
            Verdict::Failed(Cause::StartupDeadline { seconds, late }) => {
                format!("{}: {late}", startup_message(name, *seconds))
            }
            Verdict::Failed(Cause::JobRestarts {
                limit,
                setting,
                fault,
            }) => format!(
                "{} ({setting}: {limit} whole-job restarts); the last fault: {fault}",
                backoff_message(name)
            ),
            Verdict::Failed(Cause::Rule { t, fault }) => {
                format!("TFJob {ns}/{name} has failed because {t} replica(s) failed: {fault}")
            }
            Verdict::Failed(Cause::Validation(errors)) => errors.clone(),
        }
    }
}

fn backoff_message(name: &str) -> String {
    format!("Job {name} has failed because it has reached the specified backoff limit")
}

fn deadline_message(name: &str) -> String {
    format!("Job {name} has failed because it was active longer than specified deadline")
}

fn startup_message(name: &str, seconds: i64) -> String {
    format!(
        "Job {name} has failed because not every replica was running within {seconds} s of its \
         (re)start (tfjob-operator.dev/startup-deadline-seconds)"
    )
}

/// The conditions that make the job terminal: Running/Restarting (if True) turn False with
/// the verdict's reason and message, then the terminal condition is added last, announced
/// by an event (Normal on success, Warning on failure). The caller sets `completionTime`
/// and, on success, settles the counts (`settle_counts`).
pub fn conclude(view: &JobView<'_>, verdict: &Verdict) -> Vec<Change<'static>> {
    let (reason, message) = (verdict.reason(), verdict.message(view));
    let (terminal, note) = match verdict {
        Verdict::Succeeded => (
            ConditionType::Succeeded,
            EventNote::normal(reason, message.clone()),
        ),
        Verdict::Failed(_) => (
            ConditionType::Failed,
            EventNote::warning(reason, message.clone()),
        ),
    };
    vec![
        Change::clear(ConditionType::Running, reason, message.clone()),
        Change::clear(ConditionType::Restarting, reason, message.clone()),
        Change::to(Wanted::new(terminal, true, reason, message)).announcing(note),
    ]
}

/// On success the pods still active count as succeeded; the counts freeze from here on.
pub fn settle_counts(mut statuses: ReplicaStatuses) -> ReplicaStatuses {
    for counts in statuses.values_mut() {
        let moved = counts.active.take().unwrap_or(0) + counts.succeeded.unwrap_or(0);
        counts.succeeded = (moved > 0).then_some(moved);
    }
    statuses
}

/// Pods and services a finished job deletes (docs/behaviour.md §6.3): All → every one; Running →
/// pods still Pending/Running (or Unknown) and the services of every replica without a
/// finished pod, keeping finished pods, their logs and their services; None → nothing, however
/// the job ended (the backoff limit and the deadlines included, as Kubeflow v1.9.4 does: the
/// pods stay for debugging). Objects already going away are left to finish. Services are
/// decided on their own, not only beside their pod, so a service whose pod went first (a pass
/// cut short between the two deletes) is still cleaned up.
pub fn cleanup(view: &JobView<'_>, children: &Replicas) -> (Vec<Deletion>, Vec<Deletion>) {
    let policy = view.run_policy().clean_pod_policy.unwrap_or_default();
    let unfinished_only = match policy {
        CleanPodPolicy::All => false,
        CleanPodPolicy::Running => true,
        CleanPodPolicy::None => return (Vec::new(), Vec::new()),
    };
    let finished = |key| {
        children
            .pods
            .get(key)
            .is_some_and(|p| p.phase.is_finished())
    };
    let pods = children
        .pods
        .values()
        .filter(|p| !p.terminating)
        .filter(|p| !(unfinished_only && p.phase.is_finished()))
        .map(Deletion::from)
        .collect();
    let services = children
        .services
        .iter()
        .filter(|(_, s)| !s.terminating)
        .filter(|(key, _)| !(unfinished_only && finished(*key)))
        .map(|(_, s)| Deletion::from(s))
        .collect();
    (pods, services)
}
