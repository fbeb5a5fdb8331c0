//! Replicas restarted one by one (docs/behaviour.md §6.2, §6.4): which failures fail the job,
//! which replicas are restarted, the operator's share of the durable restart counts (kubelet
//! restarts are counted in `counts`) and the restart budget (`backoffLimit`). Pure.

use std::collections::BTreeMap;

use crate::crd::ReplicaType;
use crate::reconcile::plan::model::Deletion;
use crate::reconcile::plan::model::EventNote;
use crate::reconcile::plan::rules::counts::RestartBook;
use crate::reconcile::plan::rules::finish::Cause;
use crate::reconcile::plan::rules::progress;
use crate::reconcile::plan::rules::restarts::{Action, Charge, Fault};
use crate::reconcile::plan::rules::restarts::{Decision, Restarting};
use crate::reconcile::plan::view::JobView;

/// Event reason: a replica restarted without counting against the restart budget.
pub const REASON_UNCHARGED_RESTART: &str = "RestartNotCharged";

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
/// OnFailure/Always). Uncharged restarts (disruptions, failure rules) are counted apart and
/// never fail the job; a disrupted pod restarted is remembered by uid while it goes away, so
/// it is counted once.
pub fn decide(
    view: &JobView<'_>,
    faults: &[Fault<'_>],
    book: RestartBook,
    limit: Option<i32>,
) -> Decision {
    let over_limit = |n: i64| limit.is_some_and(|l| n > i64::from(l));
    let mut after = book.clone();
    let mut permanent = BTreeMap::<ReplicaType, i32>::new();
    let mut first_failure: Option<Option<ReplicaType>> = None; // Some(None) = the budget
    let mut events = Vec::new();
    let (mut restarted, mut again) = (Vec::new(), Vec::new());
    for fault in faults {
        let t = fault.t();
        match (fault.action, fault.charge) {
            (Action::Fail, _) => {
                *permanent.entry(t).or_default() += 1;
                first_failure.get_or_insert(Some(t));
                events.extend(fault.exited_event(view.namespace));
            }
            (Action::RestartJob, _) => {}
            (Action::RestartReplica, Charge::Counted) => again.push(fault),
            (Action::RestartReplica, _) if first_failure.is_some() => {}
            (Action::RestartReplica, Charge::Charged) if over_limit(after.charged() + 1) => {
                first_failure = Some(None);
            }
            (Action::RestartReplica, charge) => {
                after.count(t, charge == Charge::Charged);
                restarted.push(fault);
            }
        }
    }
    if first_failure.is_none() && over_limit(after.charged()) {
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
    for fault in &restarted {
        events.extend(fault.exited_event(view.namespace));
        if fault.charge == Charge::Uncharged {
            events.push(EventNote::warning(REASON_UNCHARGED_RESTART, fault.words()));
        }
        // A disrupted pod is still seen, going away, after this pass: it is not counted twice.
        if let Some(uid) = fault
            .pod
            .filter(|_| fault.disrupted)
            .and_then(|p| p.uid.clone())
        {
            after.disrupted.entry(fault.t()).or_default().insert(uid);
        }
    }
    Decision {
        delete: restarted
            .iter()
            .chain(&again)
            .filter_map(|f| f.pod.filter(|p| !p.terminating).map(Deletion::from))
            .collect(),
        runs_on: true,
        book: after,
        events,
        // Restarting stays while a pod is deleted again: Running now would let the next pass
        // take its absence for a deletion from outside.
        restarting: restarted
            .first()
            .or(again.first())
            .map(|f| Restarting::Replicas(progress::restarting(view, f.t()))),
        ..Decision::default()
    }
}
