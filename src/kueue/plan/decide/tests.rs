//! The decision, scenario by scenario, as Kueue's job reconciler takes it.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde_json::json;

use super::*;
use crate::kueue::plan::conditions::{pods_ready, with_condition};
use crate::kueue::plan::workload::{
    ADMITTED, Admission, EVICTED, FINALIZER, PODS_READY, PriorityClassRef, QUOTA_RESERVED,
    WAIT_FOR_RECOVERY, WAIT_FOR_START,
};

fn podsets(workers: i32) -> Vec<PodSet> {
    vec![PodSet {
        name: "worker".into(),
        count: workers,
        template: json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}),
        ..PodSet::default()
    }]
}

fn job() -> JobFacts {
    JobFacts {
        name: "a".into(),
        namespace: "ns".into(),
        uid: "u".into(),
        queue: Some("q".into()),
        workload_priority_class: None,
        priority_class: String::new(),
        max_exec_seconds: None,
        workload_annotations: Default::default(),
        suspended: true,
        deleting: false,
        finished: None,
        active: false,
        running: false,
        pod_sets: podsets(2),
    }
}

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn workload(name: &str) -> Workload {
    let mut w = Workload::default();
    w.metadata.name = Some(name.into());
    w.metadata.finalizers = Some(vec![FINALIZER.into()]);
    w.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "kubeflow.org/v1".into(),
        kind: "TFJob".into(),
        name: "a".into(),
        uid: "u".into(),
        controller: Some(true),
        ..OwnerReference::default()
    }]);
    w.spec.queue_name = Some("q".into());
    w.spec.pod_sets = podsets(2);
    w
}

fn with(mut w: Workload, type_: &'static str, status: bool, reason: &str) -> Workload {
    let wanted = Wanted {
        type_,
        status,
        reason: reason.into(),
        message: format!("{type_} {reason}"),
    };
    w.status = with_condition(&w, &wanted, now());
    w
}

/// Admitted, with the quota reserved and `PodsReady` as Kueue would have it.
fn admitted(running: bool) -> Workload {
    let mut w = with(workload("w"), QUOTA_RESERVED, true, "QuotaReserved");
    w = with(w, ADMITTED, true, "Admitted");
    w.status.admission = Some(Admission::default());
    let ready = pods_ready(&w, running);
    w.status = with_condition(&w, &ready, now());
    w
}

fn names(acts: &[Act]) -> Vec<&'static str> {
    acts.iter()
        .map(|a| match a {
            Act::StopJob { .. } => "stop",
            Act::StartJob { .. } => "start",
            Act::CreateWorkload => "create",
            Act::UpdateWorkload { .. } => "update",
            Act::ChangeQueue { .. } => "queue",
            Act::UpdatePriority { .. } => "priority",
            Act::DeleteWorkload { .. } => "delete",
            Act::SetCondition { wanted, .. } => wanted.type_,
            Act::ReleaseQuota { .. } => "release",
            Act::RemoveFinalizer { .. } => "unfinalize",
        })
        .collect()
}

#[test]
fn a_job_without_the_queue_label_is_not_kueues() {
    let plain = JobFacts {
        queue: None,
        suspended: false,
        ..job()
    };
    assert!(decide(&plain, &[&workload("w")]).is_empty());
}

/// No webhook suspends a queued job for an external framework: the job's side does, then
/// makes the Workload (one pass, as Kueue's reconciler).
#[test]
fn a_queued_job_created_running_is_suspended_then_gets_its_workload() {
    let running = JobFacts {
        suspended: false,
        ..job()
    };
    let acts = decide(&running, &[]);
    assert_eq!(names(&acts), ["stop", "create"]);
    assert!(
        matches!(&acts[0], Act::StopJob { restore: None, message } if message.starts_with("Missing Workload"))
    );
    assert_eq!(names(&decide(&job(), &[])), ["create"]);
    // Pods still active: the Workload waits for them to go.
    let active = JobFacts {
        active: true,
        ..job()
    };
    assert!(decide(&active, &[]).is_empty());
}

#[test]
fn a_waiting_workload_says_not_ready_then_nothing_until_admitted() {
    let w = workload("w");
    let acts = decide(&job(), &[&w]);
    assert_eq!(names(&acts), [PODS_READY]);
    let Act::SetCondition { wanted, .. } = &acts[0] else {
        panic!()
    };
    assert_eq!(
        (wanted.status, wanted.reason.as_str()),
        (false, WAIT_FOR_START)
    );
    let w = with(w, PODS_READY, false, WAIT_FOR_START);
    assert!(decide(&job(), &[&w]).is_empty());
}

#[test]
fn admission_starts_the_job_and_running_makes_it_ready() {
    let w = admitted(false);
    assert_eq!(names(&decide(&job(), &[&w])), ["start"]);
    let started = JobFacts {
        suspended: false,
        ..job()
    };
    assert!(decide(&started, &[&w]).is_empty());
    let running = JobFacts {
        running: true,
        active: true,
        ..started
    };
    let acts = decide(&running, &[&w]);
    assert_eq!(names(&acts), [PODS_READY]);
    assert!(decide(&running, &[&admitted(true)]).is_empty());
}

/// Eviction: the job is suspended with its templates given back; the quota goes back only
/// once no pod is active.
#[test]
fn an_eviction_stops_the_job_then_releases_the_quota_when_nothing_runs() {
    let evicted = with(admitted(false), EVICTED, true, "Preempted");
    let running = JobFacts {
        suspended: false,
        active: true,
        ..job()
    };
    let acts = decide(&running, &[&evicted]);
    assert_eq!(names(&acts), ["stop"]);
    assert!(
        matches!(&acts[0], Act::StopJob { restore: Some(p), message } if p == &podsets(2) && message == "Evicted Preempted")
    );
    let stopping = JobFacts {
        active: true,
        ..job()
    };
    assert!(decide(&stopping, &[&evicted]).is_empty());
    let acts = decide(&job(), &[&evicted]);
    assert!(matches!(&acts[..], [Act::ReleaseQuota { reason, .. }] if reason == "Preempted"));
}

/// A whole-job restart: `Running` lost while admitted reads as a loss of readiness.
#[test]
fn losing_running_while_admitted_waits_for_recovery() {
    let w = admitted(true);
    let restarting = JobFacts {
        suspended: false,
        active: true,
        ..job()
    };
    let acts = decide(&restarting, &[&w]);
    let [Act::SetCondition { wanted, .. }] = &acts[..] else {
        panic!("{acts:?}")
    };
    assert_eq!(
        (wanted.status, wanted.reason.as_str()),
        (false, WAIT_FOR_RECOVERY)
    );
}

#[test]
fn a_finished_job_finishes_its_workload_then_drops_the_finalizer() {
    let done = JobFacts {
        suspended: false,
        finished: Some((false, "boom".into())),
        ..job()
    };
    let w = admitted(true);
    let acts = decide(&done, &[&w]);
    let [
        Act::SetCondition {
            wanted,
            event: Some((reason, _)),
            ..
        },
    ] = &acts[..]
    else {
        panic!("{acts:?}")
    };
    assert_eq!(
        (
            wanted.type_,
            wanted.reason.as_str(),
            wanted.message.as_str()
        ),
        ("Finished", "Failed", "boom")
    );
    assert_eq!(*reason, "FinishedWorkload");
    let finished = with(w, "Finished", true, "Failed");
    assert_eq!(names(&decide(&done, &[&finished])), ["unfinalize"]);
    let mut gone = finished;
    gone.metadata.finalizers = None;
    assert!(decide(&done, &[&gone]).is_empty());
}

#[test]
fn a_job_being_deleted_finishes_and_releases_its_workloads() {
    let deleting = JobFacts {
        deleting: true,
        ..job()
    };
    assert_eq!(
        names(&decide(&deleting, &[&admitted(true)])),
        ["Finished", "unfinalize"]
    );
    let mut marked = admitted(true);
    marked.metadata.deletion_timestamp = Some(Time(now()));
    assert_eq!(names(&decide(&deleting, &[&marked])), ["unfinalize"]);
}

/// The Workload deleted while the job runs: suspended, and given back its templates.
#[test]
fn a_running_job_whose_workload_goes_is_suspended() {
    let running = JobFacts {
        suspended: false,
        active: true,
        running: true,
        ..job()
    };
    let mut marked = admitted(true);
    marked.metadata.deletion_timestamp = Some(Time(now()));
    let acts = decide(&running, &[&marked]);
    assert_eq!(names(&acts), ["stop", "unfinalize"]);
    assert!(matches!(&acts[0], Act::StopJob { message, .. } if message == "Workload is deleted"));
    assert_eq!(names(&decide(&running, &[])), ["stop"]);
}

/// The queue label of a waiting job moves its Workload; of an admitted one, nothing.
#[test]
fn a_queue_change_moves_a_waiting_workload_only() {
    let moved = JobFacts {
        queue: Some("other".into()),
        ..job()
    };
    let waiting = with(workload("w"), PODS_READY, false, WAIT_FOR_START);
    assert!(
        matches!(&decide(&moved, &[&waiting])[..], [Act::ChangeQueue { queue, .. }] if queue == "other")
    );
    let running = JobFacts {
        suspended: false,
        running: true,
        ..moved
    };
    assert!(decide(&running, &[&admitted(true)]).is_empty());
}

#[test]
fn a_changed_job_updates_a_waiting_workload_or_replaces_a_running_ones() {
    let scaled = JobFacts {
        pod_sets: podsets(3),
        ..job()
    };
    let waiting = workload("w");
    assert_eq!(names(&decide(&scaled, &[&waiting])), ["update"]);
    let running = JobFacts {
        suspended: false,
        ..scaled
    };
    let acts = decide(&running, &[&admitted(true)]);
    assert_eq!(names(&acts), ["stop", "delete"]);
    assert!(matches!(
        &acts[0],
        Act::StopJob {
            restore: Some(_),
            ..
        }
    ));
}

#[test]
fn two_workloads_keep_the_matching_one() {
    let mut extra = workload("x");
    extra.spec.pod_sets = podsets(5);
    let w = with(workload("w"), PODS_READY, false, WAIT_FOR_START);
    assert!(
        matches!(&decide(&job(), &[&extra, &w])[..], [Act::DeleteWorkload { workload }] if workload == "x")
    );
}

#[test]
fn a_new_priority_label_updates_the_priority() {
    let labelled = JobFacts {
        workload_priority_class: Some("high".into()),
        ..job()
    };
    let w = with(workload("w"), PODS_READY, false, WAIT_FOR_START);
    assert_eq!(names(&decide(&labelled, &[&w])), ["priority"]);
    let mut same = w.clone();
    same.spec.priority_class_ref = Some(PriorityClassRef::workload("high"));
    assert!(decide(&labelled, &[&same]).is_empty());
    let mut pod_class = w;
    pod_class.spec.priority_class_ref = Some(PriorityClassRef::pod("p"));
    assert!(decide(&labelled, &[&pod_class]).is_empty());
}
