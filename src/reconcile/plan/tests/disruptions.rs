//! Disruptions (docs/behaviour.md §6.8): a pod the Eviction API, the scheduler's preemption,
//! the taint manager, pod GC or the kubelet ends is restarted within the job's restart scope
//! without using up `backoffLimit` or `max-job-restarts`, counted apart, and once.

use super::*;
use crate::crd::settings::{FAILURE_RULES, MAX_JOB_RESTARTS, RESTART_SCOPE};

scenario_group!(cases);

const RESTARTING: (ConditionType, bool, &str) = (Restarting, true, "TFJobRestarting");

/// (type, restarts, unchargedRestarts, disruptedPods) of the plan's status.
fn uncharged(p: &Plan, t: ReplicaType) -> (Option<i32>, Option<i32>, Vec<String>) {
    let s = p.status.as_ref().unwrap().replica_statuses[&t].clone();
    (s.restarts, s.uncharged_restarts, s.disrupted_pods)
}

/// Two workers under `policy` with `backoffLimit: 0`, worker 1 as `w1` builds it.
fn limit_zero(policy: RestartPolicy, w1: fn(&TFJob) -> ChildPod) -> (TFJob, Vec<ChildPod>) {
    let (j, pods) = running_job(&[(Worker, 2, policy)], |j| vec![w1(j)]);
    (with_policy(j, |r| r.backoff_limit = Some(0)), pods)
}

fn cases() -> Vec<Case> {
    let evicted = |j: &TFJob| {
        pod(j, Worker, 1)
            .running()
            .terminating()
            .disrupted("EvictionByEvictionAPI")
            .build()
    };
    let (j, pods) = limit_zero(Never, evicted);
    let eviction_api = case(
        "the Eviction API under Never and backoffLimit 0: restarted, not charged, counted once",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            events: Some(vec!["RestartNotCharged", "TFJobRestarting"]),
            event_messages: vec![
                "pod j-worker-1 was disrupted (EvictionByEvictionAPI): a disruption, not charged"
                    .into(),
            ],
            create_pods: Some(vec![]),
            delete_pods: Some(vec![]),
            extra: Some(|p: &Plan| {
                let want = (None, Some(1), vec!["uid-j-worker-1".to_string()]);
                assert_eq!(uncharged(p, Worker), want);
            }),
            ..Default::default()
        },
    );
    let (j, pods) = limit_zero(Never, |j| {
        pod(j, Worker, 1)
            .failed(None)
            .reason("Evicted")
            .disrupted("TerminationByKubelet")
            .build()
    });
    let kubelet = case(
        "the kubelet's eviction: the failed pod is deleted and recreated, not charged",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            delete_pods: Some(names("j", &[(Worker, 1)])),
            extra: Some(|p: &Plan| {
                let want = (None, Some(1), vec!["uid-j-worker-1".to_string()]);
                assert_eq!(uncharged(p, Worker), want);
            }),
            ..Default::default()
        },
    );
    let (j, pods) = limit_zero(ExitCode, |j| {
        pod(j, Worker, 1)
            .running()
            .disrupted("PreemptionByScheduler")
            .build()
    });
    let preempted = case(
        "preemption marked before the delete: the pod is deleted now, not charged",
        j,
        pods,
        at(9),
        Expect {
            delete_pods: Some(names("j", &[(Worker, 1)])),
            events: Some(vec!["RestartNotCharged", "TFJobRestarting"]),
            ..Default::default()
        },
    );
    let (j, pods) = limit_zero(ExitCode, |j| {
        pod(j, Worker, 1).failed(None).reason("NodeLost").build()
    });
    let node_lost = case(
        "a pod failed with its node (NodeLost) is a disruption",
        j,
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            delete_pods: Some(names("j", &[(Worker, 1)])),
            ..Default::default()
        },
    );
    // An earlier pass counted worker 1's eviction; the pod is still going away.
    let counted = |j: TFJob| {
        let mut s = status(&[CREATED, RESTARTING], true);
        let w = s.replica_statuses.entry(Worker).or_default();
        w.uncharged_restarts = Some(1);
        w.disrupted_pods = vec!["uid-j-worker-1".into()];
        with_status(j, s)
    };
    let (j, pods) = limit_zero(Never, evicted);
    let still_going = case(
        "a disrupted pod counted already and still going: nothing more",
        counted(j),
        pods,
        at(10),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            events: Some(vec![]),
            delete_pods: Some(vec![]),
            create_pods: Some(vec![]),
            extra: Some(|p: &Plan| {
                let want = (None, Some(1), vec!["uid-j-worker-1".to_string()]);
                assert_eq!(uncharged(p, Worker), want);
            }),
            ..Default::default()
        },
    );
    let (j, pods) = limit_zero(Never, |j| {
        pod(j, Worker, 1)
            .failed(None)
            .reason("Evicted")
            .disrupted("TerminationByKubelet")
            .build()
    });
    let delete_lost = case(
        "a disrupted pod counted already whose delete was lost: deleted again, not counted",
        counted(j),
        pods,
        at(10),
        Expect {
            delete_pods: Some(names("j", &[(Worker, 1)])),
            events: Some(vec![]),
            extra: Some(|p: &Plan| assert_eq!(uncharged(p, Worker).1, Some(1))),
            ..Default::default()
        },
    );
    let (j, mut pods) = limit_zero(Never, evicted);
    pods.retain(|p| p.name != "j-worker-1");
    let gone = case(
        "once gone it is recreated: not counted again, its record dropped",
        counted(j),
        pods,
        at(11),
        Expect {
            create_pods: Some(names("j", &[(Worker, 1)])),
            extra: Some(|p: &Plan| {
                assert_eq!(uncharged(p, Worker), (None, Some(1), vec![]));
            }),
            ..Default::default()
        },
    );
    let rule = (
        FAILURE_RULES,
        "- {disruption: true, action: RestartReplica}",
    );
    let (j, pods) = limit_zero(Never, evicted);
    let opted_out = case(
        "a rule opts out: the eviction is charged, and backoffLimit 0 fails the job",
        annotated(j, &[rule]),
        pods,
        at(9),
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some(
                "Job j has failed because it has reached the specified backoff limit".into(),
            ),
            ..Default::default()
        },
    );
    let whole = [(RESTART_SCOPE, "Job"), (MAX_JOB_RESTARTS, "0")];
    let (j, pods) = running_job(&[(Worker, 2, ExitCode)], |j| {
        vec![
            pod(j, Worker, 0).failed(Some(1)).build(),
            evicted(&annotated(j.clone(), &whole)),
        ]
    });
    let whole_job = case(
        "restart-scope Job, max-job-restarts 0: an eviction and its peer's exit 1 are one \
         uncharged restart",
        annotated(j, &whole),
        pods,
        at(9),
        Expect {
            conditions: Some(vec![CREATED, RESTARTING]),
            last_message: Some(
                "job j is restarting because Worker replica(s) failed: every pod restarts as \
                 attempt 1; pod j-worker-1 was disrupted (EvictionByEvictionAPI): a \
                 disruption, not charged"
                    .into(),
            ),
            delete_pods: Some(names("j", &[(Worker, 0)])),
            restart_attempt: Some(Some(1)),
            extra: Some(|p: &Plan| assert_eq!(uncharged(p, Worker), (None, Some(1), vec![]))),
            ..Default::default()
        },
    );
    let (j, mut pods) = limit_zero(Never, |j| pod(j, Worker, 1).running().build());
    let services = services_for(&j, &pods);
    let last = pods.iter().find(|p| p.name == "j-worker-1");
    let last = last.cloned().unwrap();
    let last = ChildPod {
        uid: last.uid,
        resource_version: last.resource_version,
        ..pod(&j, Worker, 1)
            .failed(None)
            .disrupted("DeletionByPodGC")
            .build()
    };
    pods.retain(|p| p.name != "j-worker-1");
    let pod_gc = Case {
        services,
        departed: vec![last],
        ..case(
            "deleted at once by pod GC, known by its last state: recreated, not charged",
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RESTARTING]),
                events: Some(vec!["RestartNotCharged", "TFJobRestarting"]),
                event_messages: vec![
                    "pod j-worker-1 was deleted by a disruption (DeletionByPodGC): a \
                     disruption, not charged"
                        .into(),
                ],
                create_pods: Some(names("j", &[(Worker, 1)])),
                extra: Some(|p: &Plan| assert_eq!(uncharged(p, Worker), (None, Some(1), vec![]))),
                ..Default::default()
            },
        )
    };
    vec![
        pod_gc,
        eviction_api,
        kubelet,
        preempted,
        node_lost,
        still_going,
        delete_lost,
        gone,
        opted_out,
        whole_job,
    ]
}
