//! Suspend and resume (docs/behaviour.md §6.6, the Kueue contract). Pure.

use crate::crd::{ConditionType, JobCondition, REASON_RESUMED, REASON_SUSPENDED};
use crate::reconcile::plan::conditions::{self, Change, Wanted};
use crate::reconcile::plan::model::{Deletion, EventNote};
use crate::reconcile::plan::replicas::Replicas;
use crate::reconcile::plan::view::JobView;

/// What suspending an unfinished job decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Suspension {
    pub delete_pods: Vec<Deletion>,
    pub delete_services: Vec<Deletion>,
    pub changes: Vec<Change<'static>>,
}

/// A suspended unfinished job: every pod and service it owns goes (Kueue takes the
/// resources back), Running or Restarting (if True) turns False and Suspended turns True,
/// all with reason TFJobSuspended. `startTime` is kept (a job created suspended has none);
/// resuming resets it. One event per transition: only when Suspended flips.
pub fn suspend(view: &JobView<'_>, children: &Replicas) -> Suspension {
    let message = format!("TFJob {} is suspended.", view.name);
    let mut changes: Vec<Change<'static>> = [ConditionType::Running, ConditionType::Restarting]
        .into_iter()
        .map(|t| Change::clear(t, REASON_SUSPENDED, message.clone()))
        .collect();
    let wanted = Wanted::new(
        ConditionType::Suspended,
        true,
        REASON_SUSPENDED,
        message.clone(),
    );
    changes.push(Change::to(wanted).announcing(EventNote::normal(REASON_SUSPENDED, message)));
    Suspension {
        delete_pods: children
            .pods
            .values()
            .filter(|p| !p.terminating)
            .map(Deletion::from)
            .collect(),
        delete_services: children
            .services
            .values()
            .filter(|s| !s.terminating)
            .map(Deletion::from)
            .collect(),
        changes,
    }
}

/// A job that was suspended and no longer is: Suspended turns False (TFJobResumed). The
/// caller restarts the deadline clock (`startTime` = now) and recreates the children from
/// the templates as they are now (Kueue edits them while the job is suspended). None when
/// the job was not suspended.
pub fn resume(view: &JobView<'_>, conditions: &[JobCondition]) -> Option<Change<'static>> {
    if !conditions::is_true(conditions, ConditionType::Suspended) {
        return None;
    }
    let message = format!("TFJob {} is resumed.", view.name);
    let wanted = Wanted::new(
        ConditionType::Suspended,
        false,
        REASON_RESUMED,
        message.clone(),
    );
    Some(Change::to(wanted).announcing(EventNote::normal(REASON_RESUMED, message)))
}
