//! Whole-job restart (`tfjob-operator.dev/restart-scope: Job`, docs/behaviour.md §6.7). Under
//! synchronous training one replica's fault is every replica's: TensorFlow's own guide says
//! the failed worker and the others must restart together. So a retryable fault of any
//! replica deletes every pod of the job, waits until they are all gone (no new worker may
//! meet an old peer), then, after a backoff delay, creates them all again as the next
//! attempt. Pods of earlier attempts never count: a peer that exits because of the fault,
//! with any code, before or during the restart, belongs to that restart. Pure.

use crate::crd::{ReplicaType, TFJobStatus};
use crate::reconcile::plan::model::Deletion;
use crate::reconcile::plan::replicas::{ChildPod, Phase, Replicas};
use crate::reconcile::plan::rules::counts::RestartBook;
use crate::reconcile::plan::rules::finish;
use crate::reconcile::plan::rules::progress;
use crate::reconcile::plan::rules::restarts::Fault;
use crate::reconcile::plan::rules::restarts::{Decision, Restarting};
use crate::reconcile::plan::rules::timers::{attempt_starts, backoff};
use crate::reconcile::plan::view::JobView;

/// Why the job restarts: the replica type the fault hit, what happened, and whether the
/// restart is charged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    pub t: ReplicaType,
    pub words: String,
    pub charged: bool,
}

/// The job restarts as the next attempt for `cause`, unless it is charged and the charged
/// restarts already made use up the `budget` (limit, setting). Every failed pod of this pass
/// belongs to the restart: a peer exits because of the fault.
pub fn restart(
    view: &JobView<'_>,
    children: &Replicas,
    faults: &[Fault<'_>],
    cause: Cause,
    mut book: RestartBook,
    (limit, setting): (Option<i32>, &'static str),
) -> Decision {
    let events = faults
        .iter()
        .filter_map(|f| f.exited_event(view.namespace))
        .collect();
    let spent = limit.filter(|&l| cause.charged && book.charged() >= i64::from(l));
    if let Some(limit) = spent {
        let fails = finish::Cause::JobRestarts {
            limit,
            setting,
            fault: cause.words,
        };
        return Decision::failing(fails, events);
    }
    let (t, words) = (cause.t, cause.words);
    let attempt = view.attempt.saturating_add(1);
    book.count(t, cause.charged);
    let delay = backoff(attempt);
    let wake_at = (!delay.is_zero())
        .then(|| view.now.checked_add(delay).ok())
        .flatten();
    Decision {
        delete: pods_to_delete(children),
        book,
        events,
        restarting: Some(Restarting::Job(progress::restarting_whole_job(
            view, attempt, t, &words,
        ))),
        next_attempt: Some(attempt),
        wake_at,
        ..Decision::default()
    }
}

/// A restart still under way: pods of earlier attempts not gone yet (those not deleted yet
/// are deleted), or its delay not over. Nothing is created meanwhile, and no failure counts:
/// a peer exiting during the restart, with any code, belongs to it.
pub fn waiting(
    view: &JobView<'_>,
    children: &Replicas,
    status: &TFJobStatus,
    book: &RestartBook,
) -> Option<Decision> {
    let going: Vec<&ChildPod> = children
        .earlier_attempts
        .iter()
        .filter(|p| p.phase != Phase::Succeeded)
        .collect();
    let hold = |delete, wake_at| Decision {
        delete,
        book: book.clone(),
        wake_at,
        ..Decision::default()
    };
    if !going.is_empty() {
        let delete = going
            .iter()
            .filter(|p| !p.terminating)
            .map(|p| Deletion::from(*p))
            .collect();
        return Some(hold(delete, None));
    }
    let until = attempt_starts(view, status)?;
    (view.now < until).then(|| hold(Vec::new(), Some(until)))
}

/// The pods a restart deletes: every pod of the job that has not succeeded (finished work
/// stays finished) and is not already going.
pub fn pods_to_delete(children: &Replicas) -> Vec<Deletion> {
    children
        .pods
        .values()
        .chain(&children.earlier_attempts)
        .filter(|p| p.phase != Phase::Succeeded && !p.terminating)
        .map(Deletion::from)
        .collect()
}
