//! When a job has succeeded (docs/behaviour.md §7.3): which replica decides, and, with
//! `tfjob-operator.dev/wait-for-evaluator-seconds`, the wait for the evaluator to finish its
//! last evaluation after that replica succeeded. Pure.

use jiff::{SignedDuration, Timestamp};

use crate::crd::settings::WAIT_FOR_EVALUATOR_SECONDS;
use crate::crd::{ReplicaType, SuccessPolicy};
use crate::reconcile::plan::model::EventNote;
use crate::reconcile::plan::replicas::{Key, Phase, Replicas};
use crate::reconcile::plan::view::JobView;

/// Event reason: the evaluator still ran when the wait for it ended.
pub const REASON_EVALUATOR_OVERRAN: &str = "EvaluatorOverran";

/// How far a running job is from success.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Success {
    /// The replica that decides success has not succeeded.
    No,
    /// It has, and the job waits for its evaluator: until `until` at the latest (none when
    /// the deciding pod's end is not known; the evaluator's end decides then).
    Evaluating { until: Option<Timestamp> },
    /// The job has succeeded; `overran` tells of an evaluator still running when the wait
    /// for it ended.
    Yes { overran: Option<EventNote> },
}

/// Success as Kubeflow decides it (`succeeded`); then, with the opt-in, only once every
/// evaluator succeeded, or the wait is over: the evaluator evaluates the last checkpoint
/// after the chief wrote it, so it would otherwise be cut short by `cleanPodPolicy`.
pub fn success(view: &JobView<'_>, children: &Replicas) -> Success {
    let Some(deciding) = succeeded(view, children) else {
        return Success::No;
    };
    let mut evaluators = view
        .replicas()
        .filter(|(t, _)| *t == ReplicaType::Evaluator)
        .flat_map(|(t, n)| (0..n).map(move |i| (t, i)));
    let waiting = evaluators.find(|k| !children.completed.contains(k));
    let (Some(seconds), Some(evaluator)) = (view.settings.wait_for_evaluator_seconds, waiting)
    else {
        return Success::Yes { overran: None };
    };
    let ended = deciding
        .iter()
        .filter_map(|k| children.pods.get(k)?.finished)
        .max();
    let until = ended.and_then(|at| at.checked_add(SignedDuration::from_secs(seconds)).ok());
    match until {
        Some(until) if until <= view.now => {
            let name = crate::crd::labels::child_name(view.name, evaluator.0, evaluator.1);
            let message = format!(
                "pod {name} still ran {seconds} s after the job's training succeeded \
                 ({WAIT_FOR_EVALUATOR_SECONDS}): the job succeeds without waiting more"
            );
            let overran = Some(EventNote::warning(REASON_EVALUATOR_OVERRAN, message));
            Success::Yes { overran }
        }
        until => Success::Evaluating { until },
    }
}

/// Contract §7.3: the chief/master pod Succeeded; without one, worker 0 Succeeded with
/// exit code 0 (a Succeeded phase already implies it; a missing container status is not
/// held against the pod), or under AllWorkers every worker Succeeded. A pod that is being
/// deleted still counts: it did succeed. Returns the replicas that decided.
pub fn succeeded(view: &JobView<'_>, children: &Replicas) -> Option<Vec<Key>> {
    let done = |key| {
        children
            .pods
            .get(&key)
            .is_some_and(|p| p.phase == Phase::Succeeded)
    };
    let chief = view
        .replicas()
        .find(|(t, _)| t.is_chief())
        .filter(|(_, n)| *n > 0);
    if let Some((t, _)) = chief {
        return done((t, 0)).then(|| vec![(t, 0)]);
    }
    let workers = view
        .replicas()
        .find(|(t, _)| *t == ReplicaType::Worker)
        .map_or(0, |(_, n)| n);
    if workers == 0 {
        return None;
    }
    let worker = |i| (ReplicaType::Worker, i);
    match view.spec.success_policy.unwrap_or_default() {
        SuccessPolicy::AllWorkers => (0..workers)
            .all(|i| done(worker(i)))
            .then(|| (0..workers).map(worker).collect()),
        SuccessPolicy::Default => {
            let worker0 = children.pods.get(&worker(0));
            let exited_0 = worker0.is_some_and(|p| p.exit_code.unwrap_or(0) == 0);
            (done(worker(0)) && exited_0).then(|| vec![worker(0)])
        }
    }
}
