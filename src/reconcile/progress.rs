//! A running job's progress conditions (contract §7.2): Restarting when replicas are
//! restarted, Running when the deciding replica runs. Pure.

use super::conditions::{self, Wanted};
use super::model::{EventNote, Plan};
use super::replicas::{Children, Phase};
use super::restarts::Restart;
use super::view::JobView;
use crate::crd::{ConditionType, REASON_RESTARTING, REASON_RUNNING, ReplicaType, TFJobStatus};

/// Deletes the failed pods being restarted (recreated next pass, once gone) and sets
/// Restarting=True, naming the first restarted type.
/// A pod deleted from outside is a restart too: marking it Restarting is what keeps a
/// recreate that keeps failing (e.g. quota) from being counted again on every pass.
/// The TFJobRestarting event is emitted when the condition flips.
pub fn restart(view: &JobView<'_>, restarts: &[Restart], status: &mut TFJobStatus, out: &mut Plan) {
    let Some(first) = restarts.first() else {
        return;
    };
    let t = first.key.0;
    out.delete_pods
        .extend(restarts.iter().filter_map(|r| r.pod.clone()));
    // Kubeflow's wording, which dashboards match on: the type, not how many.
    let message = format!(
        "job {} is restarting because {t} replica(s) failed.",
        view.name
    );
    let wanted = Wanted::new(
        ConditionType::Restarting,
        true,
        REASON_RESTARTING,
        message.clone(),
    );
    if conditions::set(&mut status.conditions, wanted, view.now) {
        out.events
            .push(EventNote::warning(REASON_RESTARTING, message));
    }
}

/// Running=True once the chief/master pod runs (when the job has one), else once any
/// worker runs. While Restarting and a replica's pod is still missing or going away, the
/// job stays Restarting: flipping to Running early would make the next pass take the pod
/// this operator deleted for one deleted from outside, and count it twice.
pub fn update_running(view: &JobView<'_>, children: &Children, status: &mut TFJobStatus) {
    let restarting = conditions::is_true(&status.conditions, ConditionType::Restarting);
    let incomplete = view
        .keys()
        .into_iter()
        .any(|k| children.live_pod(k).is_none());
    if restarting && incomplete {
        return;
    }
    let running = |k| {
        children
            .live_pod(k)
            .is_some_and(|p| p.phase == Phase::Running)
    };
    let chief = view.replicas().find(|(t, n)| t.is_chief() && *n > 0);
    let is_running = match chief {
        Some((t, _)) => running((t, 0)),
        None => view
            .replicas()
            .filter(|(t, _)| *t == ReplicaType::Worker)
            .any(|(t, n)| (0..n).any(|i| running((t, i)))),
    };
    if is_running {
        let message = format!("TFJob {}/{} is running.", view.namespace, view.name);
        let wanted = Wanted::new(ConditionType::Running, true, REASON_RUNNING, message);
        conditions::set(&mut status.conditions, wanted, view.now);
    }
}
