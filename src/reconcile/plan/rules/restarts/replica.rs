//! Replicas restarted one by one (docs/behaviour.md §6.2, §6.4): which failures fail the job,
//! which replicas are restarted, the operator's share of the durable restart counts (kubelet
//! restarts are counted in `counts`) and the restart budget (`backoffLimit`). Pure.

use std::collections::BTreeMap;

use crate::crd::ReplicaType;
use crate::reconcile::plan::rules::counts::RestartBook;
use crate::reconcile::plan::rules::finish::Cause;
use crate::reconcile::plan::rules::progress;
use crate::reconcile::plan::rules::restarts::classify::{Action, Fault};
use crate::reconcile::plan::rules::restarts::{Decision, Restarting};
use crate::reconcile::plan::view::JobView;

/// Decides every failure in (type, index) order; the first one that fails the job gives the
/// cause. `book` holds the durable restart counts with this pass's kubelet restarts already
/// added (`counts::RestartBook::with_kubelet_restarts`).
///
/// Restart counting (DECIDED by the lead, see `counts`): each restart decided here adds
/// exactly 1 to its type's count, whether a failed pod is deleted and recreated or a pod
/// deleted from outside is recreated; the failed pod's kubelet restarts are already in
/// the book. The job's count is the sum over its types; a restart that would take it past
/// the `limit` fails the job instead (Kubernetes Job semantics: limit 2 = two restarts, the
/// third failure fails), and so does a count already past the limit (kubelet restarts under
/// OnFailure/Always).
pub fn decide(
    view: &JobView<'_>,
    faults: &[Fault<'_>],
    book: RestartBook,
    limit: Option<i32>,
) -> Decision {
    let over_limit = |n: i64| limit.is_some_and(|l| n > i64::from(l));
    let mut job_restarts = book.restarts.values().map(|&c| i64::from(c)).sum::<i64>();
    let mut counts = book.restarts.clone();
    let mut permanent = BTreeMap::<ReplicaType, i32>::new();
    let mut first_failure: Option<Option<ReplicaType>> = None; // Some(None) = the budget
    let mut events = Vec::new();
    let mut restarted = Vec::new();
    for fault in faults {
        let t = fault.t();
        match fault.action {
            Action::Fail => {
                *permanent.entry(t).or_default() += 1;
                first_failure.get_or_insert(Some(t));
                events.extend(fault.exited_event(view.namespace));
            }
            Action::RestartJob => {}
            Action::RestartReplica if first_failure.is_some() => {}
            Action::RestartReplica if over_limit(job_restarts + 1) => first_failure = Some(None),
            Action::RestartReplica => {
                job_restarts += 1;
                let count = counts.entry(t).or_default();
                *count = count.saturating_add(1);
                restarted.push(fault);
            }
        }
    }
    if first_failure.is_none() && over_limit(job_restarts) {
        first_failure = Some(None);
    }
    if let Some(failure) = first_failure {
        // The job fails instead: nothing is restarted, nothing more counted.
        let cause = match failure {
            Some(t) => Cause::Replicas {
                t,
                n: permanent.get(&t).copied().unwrap_or(0),
            },
            None => Cause::BackoffLimit,
        };
        return Decision::failing(cause, events);
    }
    events.extend(
        restarted
            .iter()
            .filter_map(|f| f.exited_event(view.namespace)),
    );
    Decision {
        delete: restarted
            .iter()
            .filter_map(|f| f.pod.map(|p| p.deletion()))
            .collect(),
        runs_on: true,
        book: RestartBook {
            restarts: counts,
            ..book
        },
        events,
        restarting: restarted
            .first()
            .map(|f| Restarting::Replicas(progress::restarting(view, f.t()))),
        ..Decision::default()
    }
}
