//! Pods that cannot start (docs/behaviour.md §6.7, §7.2): the `Stuck` condition names them,
//! and `tfjob-operator.dev/startup-deadline-seconds` ends the wait.

use super::*;
use crate::crd::settings::{RESTART_SCOPE, STARTUP_DEADLINE_SECONDS};

scenario_group!(cases);

const PULL: &str = "Back-off pulling image \"nope:1\"";
const STUCK_PULL: (ConditionType, bool, &str) = (ConditionType::Stuck, true, "ImagePullBackOff");

/// PS 1 + Worker 1, created, the PS running and the worker as `worker` builds it.
fn waiting_job(
    pairs: &[(&str, &str)],
    worker: impl FnOnce(&TFJob) -> ChildPod,
) -> (TFJob, Vec<ChildPod>) {
    let j = annotated(
        with_status(
            job("j", &[(Ps, 1, Never), (Worker, 1, Never)]),
            status(&[CREATED], true),
        ),
        pairs,
    );
    let pods = vec![pod(&j, Ps, 0).running().created(0).build(), worker(&j)];
    (j, pods)
}

fn cases() -> Vec<Case> {
    let pulling = |j: &TFJob| {
        pod(j, Worker, 0)
            .waiting("ImagePullBackOff", PULL)
            .created(0)
            .build()
    };
    let pull_words =
        format!("pod j-worker-0: container tensorflow is waiting: ImagePullBackOff: {PULL}");
    let (j, pods) = waiting_job(&[], pulling);
    let stuck = case(
        "an image that cannot be pulled is named in Stuck",
        j,
        pods,
        at(5),
        Expect {
            conditions: Some(vec![CREATED, STUCK_PULL]),
            last_message: Some(pull_words.clone()),
            events: Some(vec!["ImagePullBackOff"]),
            requeue_at: Some(None),
            ..Default::default()
        },
    );
    let (j, pods) = waiting_job(&[], |j| {
        pod(j, Worker, 0)
            .unschedulable("0/1 nodes are available: 1 Insufficient cpu.")
            .build()
    });
    let unschedulable = case(
        "a pod no node fits is named in Stuck with the scheduler's words",
        j,
        pods,
        at(5),
        Expect {
            conditions: Some(vec![CREATED, (ConditionType::Stuck, true, "Unschedulable")]),
            last_message: Some(
                "pod j-worker-0: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."
                    .into(),
            ),
            events: Some(vec![]),
            ..Default::default()
        },
    );
    let mut stuck_before = status(&[CREATED], true);
    conditions::present_while(
        &mut stuck_before.conditions,
        ConditionType::Stuck,
        Some(("ImagePullBackOff", pull_words.clone())),
        at(1),
    );
    let j = with_status(
        job("j", &[(Ps, 1, Never), (Worker, 1, Never)]),
        stuck_before,
    );
    let pods = vec![
        pod(&j, Ps, 0).running().build(),
        pod(&j, Worker, 0).running().build(),
    ];
    let cleared = case(
        "Stuck goes once the pod runs",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RUNNING]),
            ..Default::default()
        },
    );
    let deadline = [(STARTUP_DEADLINE_SECONDS, "60")];
    let (j, pods) = waiting_job(&deadline, pulling);
    let not_yet = case(
        "the startup deadline wakes the job when it falls due",
        j,
        pods,
        at(30),
        Expect {
            conditions: Some(vec![CREATED, STUCK_PULL]),
            requeue_at: Some(Some(at(60))),
            ..Default::default()
        },
    );
    let (j, pods) = waiting_job(&deadline, pulling);
    let failed = case(
        "past the startup deadline a job fails, naming the late pod",
        j,
        pods,
        at(60),
        Expect {
            conditions: Some(vec![CREATED, (Failed, true, "TFJobFailed")]),
            last_message: Some(format!(
                "Job j has failed because not every replica was running within 60 s of its \
                 (re)start (tfjob-operator.dev/startup-deadline-seconds): pod j-worker-0 is not \
                 running: container tensorflow is waiting: ImagePullBackOff: {PULL}"
            )),
            delete_pods: Some(vec![]),
            cleanup_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
            ..Default::default()
        },
    );
    let (j, pods) = waiting_job(&[deadline[0], (RESTART_SCOPE, "Job")], pulling);
    let restarted = case(
        "under restart-scope Job the startup deadline restarts the job instead",
        j,
        pods,
        at(60),
        Expect {
            conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
            last_message: Some(format!(
                "job j is restarting because Worker replica(s) failed: every pod restarts as \
                 attempt 1; pod j-worker-0 is not running: container tensorflow is waiting: \
                 ImagePullBackOff: {PULL}"
            )),
            delete_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
            restart_attempt: Some(Some(1)),
            restarts: vec![(Worker, Some(1))],
            ..Default::default()
        },
    );
    vec![stuck, unschedulable, cleared, not_yet, failed, restarted]
}
