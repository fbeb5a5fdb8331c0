//! A job's progress conditions (docs/behaviour.md §7.2): Created on the first pass, Restarting when
//! replicas are restarted, Running when the deciding replica runs. Pure.

use crate::crd::{ConditionType, REASON_CREATED, REASON_RESTARTING, REASON_RUNNING, ReplicaType};
use crate::reconcile::build::children as build;
use crate::reconcile::plan::conditions::{Change, Wanted};
use crate::reconcile::plan::model::{Deletion, EventNote};
use crate::reconcile::plan::replicas::{Phase, Replicas};
use crate::reconcile::plan::view::JobView;

/// Event reason: a template's own restartPolicy is overridden (once per job).
pub const REASON_SET_RESTART_POLICY: &str = "SetPodTemplateRestartPolicy";

/// Created=True, announced on the first pass together with the one warning about
/// overridden template restart policies (so that warning comes once per job).
pub fn created(view: &JobView<'_>) -> Change<'static> {
    let message = format!("TFJob {} is created.", view.name);
    let wanted = Wanted::new(
        ConditionType::Created,
        true,
        REASON_CREATED,
        message.clone(),
    );
    let change = Change::to(wanted).announcing(EventNote::normal(REASON_CREATED, message));
    if !build::template_sets_restart_policy(view.job) {
        return change;
    }
    let message =
        "Restart policy in pod template is overridden by the replica's restartPolicy".to_string();
    change.announcing(EventNote::warning(REASON_SET_RESTART_POLICY, message))
}

/// Restarting=True when this pass restarts replicas, naming the first restarted type `t` in
/// Kubeflow's wording (which dashboards match on). A pod deleted from outside is a restart
/// too: marking it Restarting is what keeps a recreate that keeps failing (e.g. quota) from
/// being counted again on every pass. The TFJobRestarting event comes with the flip.
pub fn restarting(view: &JobView<'_>, t: ReplicaType) -> Change<'static> {
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
    Change::to(wanted).announcing(EventNote::warning(REASON_RESTARTING, message))
}

/// The Restarting message (and event) of a whole-job restart: Kubeflow's words first (which
/// dashboards match on), then the attempt and the fault that caused it, of type `t`.
pub fn restarting_whole_job(
    view: &JobView<'_>,
    attempt: i32,
    t: ReplicaType,
    words: &str,
) -> String {
    format!(
        "job {} is restarting because {t} replica(s) failed: every pod restarts as attempt \
         {attempt}; {words}",
        view.name
    )
}

/// The first replica (in type and index order) whose pod cannot start, as the `Stuck`
/// condition tells it: (Kubernetes' reason, `pod j-worker-1: container tensorflow is
/// waiting: ImagePullBackOff: ...`). Pods going away, or deleted by this pass, are not.
pub fn stuck(children: &Replicas, deleting: &[Deletion]) -> Option<(String, String)> {
    children.pods.values().find_map(|p| {
        let going = p.terminating || deleting.iter().any(|d| d.name == p.name);
        let stuck = p.stuck.as_ref().filter(|_| !going)?;
        Some((
            stuck.reason.clone(),
            format!("pod {}: {}", p.name, stuck.words()),
        ))
    })
}

/// Running=True once the chief/master pod runs (when the job has one), else once any
/// worker runs. While Restarting (`restarting`) and a replica's pod is still missing or
/// going away, the job stays Restarting: flipping to Running early would make the next pass
/// take the pod this operator deleted for one deleted from outside, and count it twice.
pub fn running(
    view: &JobView<'_>,
    children: &Replicas,
    restarting: bool,
) -> Option<Change<'static>> {
    let incomplete = view
        .keys()
        .into_iter()
        .any(|k| children.live_pod(k).is_none());
    if restarting && incomplete {
        return None;
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
    is_running.then(|| {
        let message = format!("TFJob {}/{} is running.", view.namespace, view.name);
        Change::to(Wanted::new(
            ConditionType::Running,
            true,
            REASON_RUNNING,
            message,
        ))
    })
}
