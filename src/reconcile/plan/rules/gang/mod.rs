//! The gang rule of a pass (docs/behaviour.md §8): what to do about the job's PodGroup, what
//! its new pods carry, and what the job is told (a waiting gang, a foreign PodGroup, a
//! template naming another scheduler). Pure.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;

mod diff;
mod group;

use crate::crd::TFJob;
use crate::crd::labels::replica_of;
use crate::reconcile::build::gang::podgroup::min_member;
use crate::reconcile::build::gang::{Gang, pods};
use crate::reconcile::plan::model::{EventNote, GroupAction, GroupView, ObservedGroup};
use group::{Want, group_action};

/// Event reason: the gang has waited `WAIT_REPORTED_AFTER` without being placed.
pub const REASON_WAITING: &str = "GangWaiting";
/// Event reason (Kubeflow's): a template names a scheduler other than the gang's.
pub const REASON_OTHER_SCHEDULER: &str = "PodTemplateSchedulerNameAlreadySet";

/// A gang still unplaced this long after its PodGroup was created is reported: placing a
/// gang that fits takes a fraction of a second, and every gang passes through the waiting
/// phases on its way, so reporting at once would tell of every job.
pub const WAIT_REPORTED_AFTER: SignedDuration = SignedDuration::from_secs(10);

/// Phases in which a PodGroup's pods are not placed yet: scheduler-plugins' `Pending` and
/// `Scheduling`, Volcano's `Pending` and `Inqueue`.
const WAITING_PHASES: [&str; 3] = ["Pending", "Scheduling", "Inqueue"];

/// The job's state as the gang rule needs it.
#[derive(Clone, Copy, Debug)]
pub struct JobState {
    /// Suspended or finished: no PodGroup.
    pub wants_no_group: bool,
    /// Some replica is running (the Running condition is True).
    pub running: bool,
    pub now: Timestamp,
}

/// What the gang rule decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GangDecision {
    pub action: GroupAction,
    pub events: Vec<EventNote>,
    /// Look again then (to report a gang still waiting).
    pub requeue_at: Option<Timestamp>,
}

/// Decides about the PodGroup and marks `new_pods` as members of the gang.
pub fn decide(
    job: &TFJob,
    gang: Option<&Gang>,
    group: &GroupView,
    state: JobState,
    new_pods: &mut [Pod],
) -> GangDecision {
    let Some(gang) = gang else {
        return GangDecision::default();
    };
    let want = if state.wants_no_group {
        Want::Absent
    } else {
        Want::Present
    };
    let action = group_action(job, gang, group, want);
    let mut decision = GangDecision {
        action,
        ..GangDecision::default()
    };
    if want == Want::Absent {
        return decision;
    }
    for pod in new_pods.iter_mut() {
        if let Some((t, _)) = pod.metadata.labels.as_ref().and_then(replica_of) {
            pods::decorate(pod, gang, job, t);
        }
    }
    for (t, name) in pods::foreign_schedulers(job, gang) {
        let message = format!(
            "{t} pods keep their template's schedulerName {name}: they are not gang-scheduled by {}",
            gang.scheduler_name(),
            t = t.as_str()
        );
        decision
            .events
            .push(EventNote::warning(REASON_OTHER_SCHEDULER, message));
    }
    let uid = job.metadata.uid.as_deref();
    if let Some(g) = &group.group {
        if g.controller_uid.is_none() || g.controller_uid.as_deref() != uid {
            let message = format!(
                "PodGroup {} already exists and is not owned by this TFJob; it is left alone",
                g.name
            );
            decision
                .events
                .push(EventNote::warning("ChildNotOwned", message));
        }
        waiting(
            g,
            state,
            new_pods.is_empty(),
            &mut decision,
            min_member(job),
        );
    }
    decision
}

/// A gang whose pods all exist, none running, its PodGroup still in a waiting phase
/// `WAIT_REPORTED_AFTER` after its creation: the job is told, naming the PodGroup and phase.
fn waiting(
    g: &ObservedGroup,
    state: JobState,
    all_pods_exist: bool,
    decision: &mut GangDecision,
    min_member: i32,
) {
    let (Some(phase), Some(created)) = (g.phase.as_deref(), g.created) else {
        return;
    };
    if state.running || !all_pods_exist || !WAITING_PHASES.contains(&phase) {
        return;
    }
    let due = created
        .saturating_add(WAIT_REPORTED_AFTER)
        .unwrap_or(created);
    if state.now < due {
        decision.requeue_at = Some(due);
        return;
    }
    let message = format!(
        "PodGroup {} is {phase}: the gang scheduler has not placed the job's pods, which start \
         only together ({min_member} at least)",
        g.name
    );
    decision
        .events
        .push(EventNote::normal(REASON_WAITING, message));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::plan::model::CacheState;
    use serde_json::json;

    fn job() -> TFJob {
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "dist", "namespace": "ns", "uid": "u1"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4, "template": {"spec": {
                "containers": [{"name": "tensorflow", "image": "tf"}]}}}}}
        }))
        .unwrap()
    }

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn group(phase: &str) -> GroupView {
        GroupView {
            cache: CacheState::Ready,
            group: Some(ObservedGroup {
                name: "dist".into(),
                uid: Some("g".into()),
                controller_uid: Some("u1".into()),
                terminating: false,
                spec: json!({"minMember": 4}),
                phase: Some(phase.into()),
                created: Some(at(100)),
            }),
            priorities: Default::default(),
        }
    }

    fn state(now: i64, running: bool) -> JobState {
        JobState {
            wants_no_group: false,
            running,
            now: at(now),
        }
    }

    #[test]
    fn a_gang_still_waiting_after_a_while_is_reported_naming_its_podgroup_and_phase() {
        let gang = Gang::Volcano;
        let early = decide(
            &job(),
            Some(&gang),
            &group("Inqueue"),
            state(105, false),
            &mut [],
        );
        assert!(early.events.is_empty());
        assert_eq!(
            early.requeue_at,
            Some(at(110)),
            "looks again when it is due"
        );
        let late = decide(
            &job(),
            Some(&gang),
            &group("Inqueue"),
            state(110, false),
            &mut [],
        );
        assert_eq!(late.events.len(), 1);
        assert_eq!(late.events[0].reason, REASON_WAITING);
        assert!(
            late.events[0]
                .message
                .starts_with("PodGroup dist is Inqueue: "),
            "{}",
            late.events[0].message
        );
        for (phase, running) in [("Running", false), ("Scheduling", true)] {
            let d = decide(
                &job(),
                Some(&gang),
                &group(phase),
                state(200, running),
                &mut [],
            );
            assert!(
                d.events.is_empty() && d.requeue_at.is_none(),
                "{phase} {running}"
            );
        }
    }

    #[test]
    fn new_pods_join_the_gang_and_a_foreign_podgroup_is_reported_once_per_pass() {
        let j = job();
        let gang = Gang::SchedulerPlugins {
            scheduler_name: "sp".into(),
        };
        let mut pods = vec![crate::reconcile::build::children::pod(
            &j,
            crate::crd::ReplicaType::Worker,
            3,
            None,
            &Default::default(),
        )];
        let mut foreign = group("Running");
        if let Some(g) = foreign.group.as_mut() {
            g.controller_uid = Some("someone-else".into());
        }
        let d = decide(&j, Some(&gang), &foreign, state(200, true), &mut pods);
        assert_eq!(d.action, GroupAction::None, "left alone");
        assert_eq!(
            d.events,
            [EventNote::warning(
                "ChildNotOwned",
                "PodGroup dist already exists and is not owned by this TFJob; it is left alone"
                    .into()
            )]
        );
        let pod = &pods[0];
        assert_eq!(
            pod.metadata.labels.as_ref().unwrap()[pods::LABEL_POD_GROUP],
            "dist"
        );
        assert_eq!(
            pod.spec.as_ref().unwrap().scheduler_name.as_deref(),
            Some("sp")
        );
    }

    #[test]
    fn a_suspended_or_finished_job_s_podgroup_goes_and_its_pods_are_not_touched() {
        let absent = JobState {
            wants_no_group: true,
            ..state(200, false)
        };
        let d = decide(
            &job(),
            Some(&Gang::Volcano),
            &group("Inqueue"),
            absent,
            &mut [],
        );
        assert!(matches!(d.action, GroupAction::Delete(ref del) if del.name == "dist"));
        assert!(
            d.events.is_empty(),
            "no waiting note for a job that wants no gang"
        );
    }

    #[test]
    fn gang_off_decides_nothing() {
        let d = decide(&job(), None, &group("Pending"), state(200, false), &mut []);
        assert_eq!(d, GangDecision::default());
    }
}
