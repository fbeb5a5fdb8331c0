//! Suspend and resume (contract §6.6, the Kueue contract). Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::conditions::{self, Wanted};
use super::model::{EventNote, Plan};
use super::replicas::Children;
use super::view::JobView;
use crate::crd::{ConditionType, REASON_RESUMED, REASON_SUSPENDED, TFJobStatus};

/// A suspended unfinished job: every pod and service it owns goes (Kueue takes the
/// resources back), Running or Restarting (if True) turns False and Suspended turns True,
/// all with reason TFJobSuspended. `startTime` is kept (a job created suspended has none);
/// resuming resets it. One event per transition: only when Suspended flips.
pub fn suspend(view: &JobView<'_>, children: &Children, status: &mut TFJobStatus, out: &mut Plan) {
    out.delete_pods.extend(
        children
            .pods
            .values()
            .filter(|p| !p.terminating)
            .map(|p| p.deletion()),
    );
    out.delete_services.extend(
        children
            .services
            .values()
            .filter(|s| !s.terminating)
            .map(|s| s.deletion()),
    );
    let message = format!("TFJob {} is suspended.", view.name);
    for t in [ConditionType::Running, ConditionType::Restarting] {
        if conditions::is_true(&status.conditions, t) {
            let wanted = Wanted::new(t, false, REASON_SUSPENDED, message.clone());
            conditions::set(&mut status.conditions, wanted, view.now);
        }
    }
    let wanted = Wanted::new(
        ConditionType::Suspended,
        true,
        REASON_SUSPENDED,
        message.clone(),
    );
    if conditions::set(&mut status.conditions, wanted, view.now) {
        out.events
            .push(EventNote::normal(REASON_SUSPENDED, message));
    }
}

/// A job that was suspended and no longer is: Suspended turns False (TFJobResumed) and the
/// deadline clock restarts (`startTime` = now); the caller then recreates the children from
/// the templates as they are now (Kueue edits them while the job is suspended). Returns
/// whether the job resumed in this pass.
pub fn resume(view: &JobView<'_>, status: &mut TFJobStatus, out: &mut Plan) -> bool {
    if !conditions::is_true(&status.conditions, ConditionType::Suspended) {
        return false;
    }
    let message = format!("TFJob {} is resumed.", view.name);
    let wanted = Wanted::new(
        ConditionType::Suspended,
        false,
        REASON_RESUMED,
        message.clone(),
    );
    conditions::set(&mut status.conditions, wanted, view.now);
    status.start_time = Some(Time(view.now));
    out.events.push(EventNote::normal(REASON_RESUMED, message));
    true
}
