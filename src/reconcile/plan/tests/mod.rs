//! Scenario tests of the decision core: one table of cases per group of rules of
//! docs/behaviour.md §6–§7, one file per group. Each group is two tests: every case checked
//! (a failing case is named, and none hides another), and the fixed-point property over the
//! same cases. `cargo test plan::tests::success` runs one group.

pub mod support;

mod backoff;
mod budget;
mod disruptions;
mod evaluator;
mod exit_codes;
mod failure;
mod finished;
mod first_pass;
mod gating;
mod kubelet_restarts;
mod kueue;
mod rules;
mod running;
mod scale;
mod startup;
mod success;
mod suspend;
mod timers;
mod whole_job;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::child::{ChildPod, ChildService};
use crate::crd::TFJobStatus;
use crate::crd::{
    CleanPodPolicy, ConditionStatus, ReplicaStatus, ReplicaType, RestartPolicy, RunPolicy,
    SuccessPolicy,
};
use crate::reconcile::plan::conditions::Wanted;
use crate::reconcile::plan::model::Deletion;
use crate::reconcile::plan::replicas::REASON_NOT_OWNED;
use ConditionType::{Created, Failed, Restarting, Running, Succeeded, Suspended};
use ReplicaType::{Chief, Evaluator, Master, Ps, Worker};
use RestartPolicy::{Always, ExitCode, Never, OnFailure};
use support::{NS, at, job, pod, service};

/// One scenario: a job (with the status it already has), what is observed, and `now`.
struct Case {
    name: String,
    job: TFJob,
    pods: Vec<ChildPod>,
    services: Vec<ChildService>,
    /// The last state of pods a disruption deleted (`Observed::departed`).
    departed: Vec<ChildPod>,
    now: Timestamp,
    expect: Expect,
}

/// (type, active, succeeded, failed, restarts) of one replica status.
type Counts = (
    ReplicaType,
    Option<i32>,
    Option<i32>,
    Option<i32>,
    Option<i32>,
);

/// What a case checks; `None`/empty fields are not checked.
#[derive(Default)]
struct Expect {
    /// The full condition list, in order: (type, status, reason).
    conditions: Option<Vec<(ConditionType, bool, &'static str)>>,
    /// The message of the last condition.
    last_message: Option<String>,
    /// Event reasons, in order (foreign-object warnings included).
    events: Option<Vec<&'static str>>,
    /// Messages that must be among the events.
    event_messages: Vec<String>,
    create_pods: Option<Vec<String>>,
    create_services: Option<Vec<String>>,
    delete_pods: Option<Vec<String>>,
    delete_services: Option<Vec<String>>,
    delete_job: bool,
    requeue_at: Option<Option<Timestamp>>,
    /// (type, active, succeeded, failed, restarts), as Options like the status.
    counts: Vec<Counts>,
    /// (type, restarts) alone.
    restarts: Vec<(ReplicaType, Option<i32>)>,
    /// (type, podRestarts as (uid, kubelet restarts counted)).
    pod_restarts: Vec<(ReplicaType, Vec<(&'static str, i32)>)>,
    no_status: bool,
    /// The pass after this one, once its status is stored (a concluding pass deletes
    /// nothing; the next one cleans up): its pod and service deletions, and whether it
    /// deletes the job.
    cleanup_pods: Option<Vec<String>>,
    cleanup_services: Option<Vec<String>>,
    cleanup_job: bool,
    start_time: Option<Option<Timestamp>>,
    /// `status.restartAttempt`.
    restart_attempt: Option<Option<i32>>,
    /// `replicaStatuses[T].completedIndexes`.
    completed: Vec<(ReplicaType, Option<&'static str>)>,
    /// Any further check of the plan.
    extra: Option<fn(&Plan)>,
    /// The plan's status is the job's stored status, unchanged.
    status_kept: bool,
    completion_time: Option<Option<Timestamp>>,
}

fn case(
    name: impl Into<String>,
    job: TFJob,
    pods: Vec<ChildPod>,
    now: Timestamp,
    expect: Expect,
) -> Case {
    let services = services_for(&job, &pods);
    Case {
        name: name.into(),
        job,
        pods,
        services,
        departed: Vec::new(),
        now,
        expect,
    }
}

/// The owned service of every owned pod (a running job has both).
fn services_for(job: &TFJob, pods: &[ChildPod]) -> Vec<ChildService> {
    let children = replicas::sort(
        job,
        &Observed {
            pods: pods.to_vec(),
            services: vec![],
            ..Observed::default()
        },
        None,
    );
    children
        .pods
        .keys()
        .map(|&(t, i)| service(job, t, i))
        .collect()
}

fn names(n: &str, list: &[(ReplicaType, i32)]) -> Vec<String> {
    list.iter()
        .map(|&(t, i)| crate::crd::labels::child_name(n, t, i))
        .collect()
}

/// A status as earlier passes left it: the conditions set in order at `at(0)`,
/// startTime `at(0)` unless `started` is false.
fn status(conds: &[(ConditionType, bool, &str)], started: bool) -> TFJobStatus {
    let mut status = TFJobStatus::default();
    for (t, s, reason) in conds {
        let wanted = Wanted::new(*t, *s, reason, format!("{t:?} earlier"));
        conditions::set(&mut status.conditions, wanted, at(0));
    }
    status.start_time = started.then(|| Time(at(0)));
    status
}

fn running_status() -> TFJobStatus {
    status(
        &[
            (Created, true, "TFJobCreated"),
            (Running, true, "TFJobRunning"),
        ],
        true,
    )
}

/// The job with these annotations (its recovery settings).
fn annotated(mut j: TFJob, pairs: &[(&str, &str)]) -> TFJob {
    let annotations = j.metadata.annotations.get_or_insert_with(Default::default);
    for (k, v) in pairs {
        annotations.insert(k.to_string(), v.to_string());
    }
    j
}

fn with_status(mut j: TFJob, s: TFJobStatus) -> TFJob {
    j.status = Some(s);
    j
}

fn with_policy(mut j: TFJob, f: impl FnOnce(&mut RunPolicy)) -> TFJob {
    f(j.spec.run_policy.get_or_insert_with(RunPolicy::default));
    j
}

fn with_restarts(mut j: TFJob, t: ReplicaType, n: i32) -> TFJob {
    let s = j.status.get_or_insert_with(TFJobStatus::default);
    s.replica_statuses.entry(t).or_default().restarts = Some(n);
    j
}

/// A status that already counted `counted` kubelet restarts, by pod uid, in `restarts[t]`.
fn with_pod_restarts(mut j: TFJob, t: ReplicaType, n: i32, counted: &[(&str, i32)]) -> TFJob {
    let s = j.status.get_or_insert_with(TFJobStatus::default);
    let rs = s.replica_statuses.entry(t).or_default();
    rs.restarts = Some(n);
    rs.pod_restarts = counted.iter().map(|&(u, r)| (u.to_string(), r)).collect();
    j
}

fn run_case(c: &Case) -> Plan {
    let observed = Observed {
        pods: c.pods.clone(),
        services: c.services.clone(),
        departed: c.departed.clone(),
        ..Observed::default()
    };
    plan_job(&c.job, &observed, c.now, &Settings::default())
}

fn check(c: &Case) {
    let p = run_case(c);
    let n = &c.name;
    let e = &c.expect;
    if e.no_status {
        assert_eq!(p, Plan::default(), "{n}: empty plan");
        return;
    }
    let s = p
        .status
        .clone()
        .unwrap_or_else(|| panic!("{n}: status expected"));
    if let Some(want) = &e.conditions {
        let got: Vec<_> = s
            .conditions
            .iter()
            .map(|c| {
                (
                    c.type_,
                    c.status == ConditionStatus::True,
                    c.reason.clone().unwrap_or_default(),
                )
            })
            .collect();
        let want: Vec<_> = want
            .iter()
            .map(|(t, b, r)| (*t, *b, r.to_string()))
            .collect();
        assert_eq!(got, want, "{n}: conditions");
    }
    if let Some(m) = &e.last_message {
        assert_eq!(
            s.conditions.last().and_then(|c| c.message.clone()).as_ref(),
            Some(m),
            "{n}"
        );
    }
    if let Some(want) = &e.events {
        let got: Vec<_> = p.events.iter().map(|e| e.reason.as_str()).collect();
        assert_eq!(&got, want, "{n}: events {:?}", p.events);
    }
    for m in &e.event_messages {
        assert!(
            p.events.iter().any(|ev| &ev.message == m),
            "{n}: event {m:?} in {:?}",
            p.events
        );
    }
    let pod_names = |v: &[Pod]| {
        v.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect::<Vec<_>>()
    };
    let svc_names = |v: &[Service]| {
        v.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect::<Vec<_>>()
    };
    let del_names = |v: &[Deletion]| v.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
    if let Some(w) = &e.create_pods {
        assert_eq!(&pod_names(&p.create_pods), w, "{n}: create_pods");
    }
    if let Some(w) = &e.create_services {
        assert_eq!(&svc_names(&p.create_services), w, "{n}: create_services");
    }
    if let Some(w) = &e.delete_pods {
        assert_eq!(&del_names(&p.delete_pods), w, "{n}: delete_pods");
    }
    if let Some(w) = &e.delete_services {
        assert_eq!(&del_names(&p.delete_services), w, "{n}: delete_services");
    }
    assert_eq!(p.delete_job, e.delete_job, "{n}: delete_job");
    if let Some(w) = e.requeue_at {
        assert_eq!(p.requeue_at, w, "{n}: requeue_at");
    }
    for (t, active, succeeded, failed, restarts) in &e.counts {
        let rs = s.replica_statuses.get(t).cloned().unwrap_or_default();
        assert_eq!(
            (rs.active, rs.succeeded, rs.failed, rs.restarts),
            (*active, *succeeded, *failed, *restarts),
            "{n}: counts of {t}"
        );
    }
    for (t, restarts) in &e.restarts {
        let got = s.replica_statuses.get(t).and_then(|r| r.restarts);
        assert_eq!(got, *restarts, "{n}: restarts of {t}");
    }
    for (t, want) in &e.pod_restarts {
        let got = s
            .replica_statuses
            .get(t)
            .map(|r| r.pod_restarts.clone())
            .unwrap_or_default();
        let want: BTreeMap<String, i32> = want.iter().map(|&(u, r)| (u.to_string(), r)).collect();
        assert_eq!(got, want, "{n}: podRestarts of {t}");
    }
    if let Some(w) = e.start_time {
        assert_eq!(s.start_time, w.map(Time), "{n}: startTime");
    }
    if let Some(w) = e.completion_time {
        assert_eq!(s.completion_time, w.map(Time), "{n}: completionTime");
    }
    if let Some(w) = e.restart_attempt {
        assert_eq!(s.restart_attempt, w, "{n}: restartAttempt");
    }
    for (t, want) in &e.completed {
        let got = s
            .replica_statuses
            .get(t)
            .and_then(|r| r.completed_indexes.clone());
        assert_eq!(got.as_deref(), *want, "{n}: completedIndexes of {t}");
    }
    if let Some(extra) = e.extra {
        extra(&p);
    }
    if e.status_kept {
        assert_eq!(p.status, c.job.status, "{n}: the stored status");
    }
    if e.cleanup_pods.is_some() || e.cleanup_services.is_some() || e.cleanup_job {
        let next = run_case(&applied(c, &p));
        if let Some(w) = &e.cleanup_pods {
            assert_eq!(&del_names(&next.delete_pods), w, "{n}: cleanup pods");
        }
        if let Some(w) = &e.cleanup_services {
            assert_eq!(
                &del_names(&next.delete_services),
                w,
                "{n}: cleanup services"
            );
        }
        assert_eq!(
            next.delete_job, e.cleanup_job,
            "{n}: cleanup deletes the job"
        );
    }
}

/// What the controller's cache shows after applying a plan (minus creations, which it may
/// not show yet): deleted pods and services going away, a deleted job being deleted.
fn applied(c: &Case, p: &Plan) -> Case {
    let mut job = c.job.clone();
    job.status = p.status.clone().or(job.status);
    if p.delete_job {
        job.metadata.deletion_timestamp = Some(Time(c.now));
    }
    let gone = |name: &str, uid: &Option<String>, list: &[Deletion]| {
        list.iter().any(|d| d.name == name && d.uid == *uid)
    };
    let mut pods = c.pods.clone();
    pods.iter_mut()
        .for_each(|x| x.terminating |= gone(&x.name, &x.uid, &p.delete_pods));
    let mut services = c.services.clone();
    services
        .iter_mut()
        .for_each(|x| x.terminating |= gone(&x.name, &x.uid, &p.delete_services));
    Case {
        name: c.name.clone(),
        job,
        pods,
        services,
        departed: c.departed.clone(),
        now: c.now,
        expect: Expect::default(),
    }
}

#[test]
fn status_without_changes_is_the_input_status() {
    // A running job whose pods all run: the status is returned untouched.
    let j = job("j", &[(Ps, 1, Never), (Worker, 1, Never)]);
    let pods = vec![
        pod(&j, Ps, 0).running().build(),
        pod(&j, Worker, 0).running().build(),
    ];
    let mut s = running_status();
    s.replica_statuses = IntoIterator::into_iter([
        (
            Ps,
            ReplicaStatus {
                active: Some(1),
                selector: Some(sel("j", Ps)),
                ..Default::default()
            },
        ),
        (
            Worker,
            ReplicaStatus {
                active: Some(1),
                selector: Some(sel("j", Worker)),
                ..Default::default()
            },
        ),
    ])
    .map(|(t, status)| (t, Box::new(status)))
    .collect();
    let j = with_status(j, s.clone());
    let c = case("steady", j, pods, at(10), Expect::default());
    let p = run_case(&c);
    assert_eq!(p.status, Some(s));
    assert!(p.events.is_empty() && p.create_pods.is_empty() && p.delete_pods.is_empty());
}

/// `f` over every case of a group; the failures of all, each named, in one panic (so no
/// case hides another).
fn every(cases: &[Case], f: fn(&Case)) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(c)))
                .err()
                .map(|e| format!("case {:?}: {}", c.name, panic_message(&e)))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn panic_message(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Byte-stability: planning again on what a plan left (its status stored, its deletions seen
/// as going away) changes nothing and emits nothing new; warnings about a state that lasts
/// (a foreign object, a stuck pod) repeat as they were, which the controller records once. A pass that concludes the job
/// is followed by one cleanup pass (docs/behaviour.md §6.3), which may delete children and,
/// when the TTL is due, the job; the pass after that is still.
fn fixed_point(c: &Case) {
    let first = run_case(c);
    let mut settled = applied(c, &first);
    let mut previous = first;
    let concluded = |p: &Plan| {
        let finished = |s: Option<&TFJobStatus>| s.is_some_and(conditions::is_finished);
        finished(p.status.as_ref()) && !finished(c.job.status.as_ref())
    };
    if concluded(&previous) {
        let cleanup = run_case(&settled);
        assert_eq!(
            cleanup.status, previous.status,
            "{}: the cleanup pass moved the status",
            c.name
        );
        let unexpected: Vec<_> = cleanup
            .events
            .iter()
            .filter(|e| e.reason != REASON_NOT_OWNED && e.reason != REASON_DELETE_JOB)
            .collect();
        assert!(
            unexpected.is_empty(),
            "{}: events of the cleanup pass: {unexpected:?}",
            c.name
        );
        settled = applied(&settled, &cleanup);
        previous = cleanup;
    }
    let again = run_case(&settled);
    let expected = if settled.job.metadata.deletion_timestamp.is_some() {
        None
    } else {
        previous.status.clone()
    };
    assert_eq!(
        again.status, expected,
        "{}: status moved on the next pass",
        c.name
    );
    let new_events: Vec<_> = again
        .events
        .iter()
        .filter(|e| !previous.events.contains(e))
        .collect();
    assert!(
        new_events.is_empty(),
        "{}: events on the next pass: {new_events:?}",
        c.name
    );
    if let (Some(s), Some(before)) = (&again.status, &previous.status) {
        assert_eq!(
            serde_json::to_string(s).unwrap(),
            serde_json::to_string(before).unwrap(),
            "{}",
            c.name
        );
    }
}

/// The two tests of a scenario group, over its `cases()`.
macro_rules! scenario_group {
    ($cases:ident) => {
        #[test]
        fn every_case() {
            super::every(&$cases(), super::check);
        }

        #[test]
        fn one_pass_reaches_a_fixed_point() {
            super::every(&$cases(), super::fixed_point);
        }
    };
}
use scenario_group;

fn sel(job: &str, t: ReplicaType) -> String {
    crate::crd::labels::selector_string(job, t)
}

const CREATED: (ConditionType, bool, &str) = (Created, true, "TFJobCreated");
const RUNNING: (ConditionType, bool, &str) = (Running, true, "TFJobRunning");

/// A running job: chief (if any) and every replica's pod, with `overrides` replacing the
/// default running pod of their replica.
fn running_job(
    specs: &[(ReplicaType, i32, RestartPolicy)],
    overrides: impl FnOnce(&TFJob) -> Vec<ChildPod>,
) -> (TFJob, Vec<ChildPod>) {
    let j = with_status(job("j", specs), running_status());
    let special = overrides(&j);
    let taken = replicas::sort(
        &j,
        &Observed {
            pods: special.clone(),
            services: vec![],
            ..Observed::default()
        },
        None,
    );
    let mut pods = special;
    for (t, i) in JobView::new(&j, at(0), &Settings::default(), Default::default()).keys() {
        if !taken.pods.contains_key(&(t, i)) {
            pods.push(pod(&j, t, i).running().build());
        }
    }
    (j, pods)
}

fn ended(verdict: ConditionType, reason: &'static str) -> Vec<(ConditionType, bool, &'static str)> {
    vec![CREATED, (Running, false, reason), (verdict, true, reason)]
}

#[test]
fn deletions_carry_the_uid_and_resource_version_preconditions() {
    let (j, pods) = running_job(&[(Worker, 1, OnFailure)], |j| {
        vec![pod(j, Worker, 0).failed(Some(1)).build()]
    });
    let c = case("restart", j, pods, at(1), Expect::default());
    let p = run_case(&c);
    assert_eq!(
        p.delete_pods,
        vec![Deletion {
            name: "j-worker-0".into(),
            uid: Some("uid-j-worker-0".into()),
            resource_version: Some("7".into()),
        }]
    );
}
