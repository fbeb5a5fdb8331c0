//! Scenario tests of the decision core: one table case per rule of docs/behaviour.md §6–§7, the
//! success/failure matrix, and the fixed-point property over every case.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::crd::{
    CleanPodPolicy, ConditionStatus, ReplicaStatus, ReplicaType, RestartPolicy, RunPolicy,
    SuccessPolicy,
};
use crate::reconcile::conditions::Wanted;
use crate::reconcile::model::Deletion;
use crate::reconcile::replicas::REASON_NOT_OWNED;
use crate::reconcile::testing::{NS, at, job, pod, service};
use ConditionType::{Created, Failed, Restarting, Running, Succeeded, Suspended};
use ReplicaType::{Chief, Evaluator, Master, Ps, Worker};
use RestartPolicy::{Always, ExitCode, Never, OnFailure};

/// One scenario: a job (with the status it already has), what is observed, and `now`.
struct Case {
    name: String,
    job: TFJob,
    pods: Vec<Pod>,
    services: Vec<Service>,
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
    start_time: Option<Option<Timestamp>>,
    completion_time: Option<Option<Timestamp>>,
}

fn case(
    name: impl Into<String>,
    job: TFJob,
    pods: Vec<Pod>,
    now: Timestamp,
    expect: Expect,
) -> Case {
    let services = services_for(&job, &pods);
    Case {
        name: name.into(),
        job,
        pods,
        services,
        now,
        expect,
    }
}

/// The owned service of every owned pod (a running job has both).
fn services_for(job: &TFJob, pods: &[Pod]) -> Vec<Service> {
    let children = replicas::sort_children(
        job,
        &Observed {
            pods: pods.to_vec(),
            services: vec![],
            ..Observed::default()
        },
    );
    children
        .pods
        .keys()
        .map(|&(t, i)| service(job, t, i))
        .collect()
}

fn names(n: &str, list: &[(ReplicaType, i32)]) -> Vec<String> {
    list.iter()
        .map(|&(t, i)| crate::reconcile::labels::child_name(n, t, i))
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
        ..Observed::default()
    };
    plan(&c.job, &observed, c.now, &Settings::default())
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
}

/// What the controller's cache shows after applying a plan (minus creations, which it may
/// not show yet): deleted pods and services going away, a deleted job being deleted.
fn applied(c: &Case, p: &Plan) -> Case {
    let mut job = c.job.clone();
    job.status = p.status.clone().or(job.status);
    if p.delete_job {
        job.metadata.deletion_timestamp = Some(Time(c.now));
    }
    let gone = |meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                list: &[Deletion]| {
        if list
            .iter()
            .any(|d| Some(&d.name) == meta.name.as_ref() && d.uid == meta.uid)
        {
            meta.deletion_timestamp.get_or_insert(Time(c.now));
        }
    };
    let mut pods = c.pods.clone();
    pods.iter_mut()
        .for_each(|x| gone(&mut x.metadata, &p.delete_pods));
    let mut services = c.services.clone();
    services
        .iter_mut()
        .for_each(|x| gone(&mut x.metadata, &p.delete_services));
    Case {
        name: c.name.clone(),
        job,
        pods,
        services,
        now: c.now,
        expect: Expect::default(),
    }
}

#[test]
fn every_rule() {
    for c in all_cases() {
        check(&c);
    }
}

/// Byte-stability: planning again on what the first plan left (its status, its deletions
/// seen as going away) changes nothing and emits nothing new; only the per-pass warnings
/// about foreign objects repeat (the controller deduplicates those).
#[test]
fn one_pass_reaches_a_fixed_point() {
    for c in all_cases() {
        let first = run_case(&c);
        let again = applied(&c, &first);
        let second = run_case(&again);
        let expected = if again.job.metadata.deletion_timestamp.is_some() {
            None
        } else {
            first.status.clone()
        };
        assert_eq!(
            second.status, expected,
            "{}: status moved on the second pass",
            c.name
        );
        let new_events: Vec<_> = second
            .events
            .iter()
            .filter(|e| e.reason != REASON_NOT_OWNED)
            .collect();
        assert!(
            new_events.is_empty(),
            "{}: events on the second pass: {new_events:?}",
            c.name
        );
        if let Some(s) = &second.status {
            let json = serde_json::to_string(s).unwrap();
            assert_eq!(
                json,
                serde_json::to_string(&first.status.unwrap()).unwrap(),
                "{}",
                c.name
            );
        }
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
    s.replica_statuses = BTreeMap::from([
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
    ]);
    let j = with_status(j, s.clone());
    let c = case("steady", j, pods, at(10), Expect::default());
    let p = run_case(&c);
    assert_eq!(p.status, Some(s));
    assert!(p.events.is_empty() && p.create_pods.is_empty() && p.delete_pods.is_empty());
}

fn sel(job: &str, t: ReplicaType) -> String {
    crate::reconcile::labels::selector_string(job, t)
}

fn all_cases() -> Vec<Case> {
    [
        gating(),
        first_reconcile(),
        children_cases(),
        running_cases(),
        success_matrix(),
        failure_matrix(),
        exit_code_matrix(),
        kubelet_restart_cases(),
        backoff_cases(),
        timer_cases(),
        finished_cases(),
        suspend_cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

const CREATED: (ConditionType, bool, &str) = (Created, true, "TFJobCreated");
const RUNNING: (ConditionType, bool, &str) = (Running, true, "TFJobRunning");

/// managedBy, deletion and validation.
fn gating() -> Vec<Case> {
    let failing = |j: &TFJob| vec![pod(j, Worker, 0).failed(Some(1)).build()];
    let kueue = with_policy(job("j", &[(Worker, 1, Never)]), |r| {
        r.managed_by = Some(crate::crd::MANAGED_BY_MULTIKUEUE.into())
    });
    let ours = with_policy(job("j", &[(Worker, 1, Never)]), |r| {
        r.managed_by = Some(crate::crd::MANAGED_BY_TRAINING_OPERATOR.into())
    });
    let mut deleted = job("j", &[(Worker, 1, Never)]);
    deleted.metadata.deletion_timestamp = Some(Time(at(0)));
    let mut no_image = job("j", &[(Worker, 1, Never)]);
    let spec = no_image
        .spec
        .tf_replica_specs
        .specs
        .get_mut(&Worker)
        .unwrap();
    spec.template.spec.as_mut().unwrap().containers[0].image = None;
    let mut bad_key = job("j", &[(Worker, 1, Never)]);
    bad_key
        .spec
        .tf_replica_specs
        .rejected_keys
        .push("Launcher".into());
    let invalid = |name: &str, j: TFJob, needle: &str| {
        let message = validation_message(&j);
        assert!(message.contains(needle), "{name}: {message}");
        case(
            name,
            j,
            vec![],
            at(5),
            Expect {
                conditions: Some(vec![(Failed, true, "TFJobFailedValidation")]),
                last_message: Some(message),
                events: Some(vec!["TFJobFailedValidation"]),
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                completion_time: Some(Some(at(5))),
                ..Default::default()
            },
        )
    };
    vec![
        case(
            "managedBy multikueue: left alone",
            kueue.clone(),
            failing(&kueue),
            at(1),
            Expect {
                no_status: true,
                ..Default::default()
            },
        ),
        case(
            "managedBy training-operator: ours",
            ours.clone(),
            vec![],
            at(1),
            Expect {
                conditions: Some(vec![CREATED]),
                create_pods: Some(names("j", &[(Worker, 0)])),
                ..Default::default()
            },
        ),
        case(
            "being deleted: left to GC",
            deleted.clone(),
            failing(&deleted),
            at(1),
            Expect {
                no_status: true,
                ..Default::default()
            },
        ),
        invalid(
            "validation: missing image",
            no_image,
            "spec.tfReplicaSpecs[Worker]",
        ),
        invalid("validation: unknown replica type key", bad_key, "Launcher"),
    ]
}

/// The message the plan must carry for an invalid job: every error, "; "-joined.
fn validation_message(j: &TFJob) -> String {
    match crate::crd::validation::validate(j) {
        Err(errors) => errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
        Ok(()) => j
            .spec
            .tf_replica_specs
            .rejected_keys
            .iter()
            .map(|k| format!("spec.tfReplicaSpecs[{k}]: Unsupported value: {k:?}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn first_reconcile() -> Vec<Case> {
    let dist = job("j", &[(Ps, 2, Never), (Worker, 2, Never)]);
    let all = names("j", &[(Ps, 0), (Ps, 1), (Worker, 0), (Worker, 1)]);
    let mut own_policy = job("j", &[(Worker, 1, OnFailure)]);
    let spec = own_policy
        .spec
        .tf_replica_specs
        .specs
        .get_mut(&Worker)
        .unwrap();
    spec.template.spec.as_mut().unwrap().restart_policy = Some("Always".into());
    let suspended = with_policy(job("j", &[(Worker, 1, Never)]), |r| r.suspend = Some(true));
    vec![
        case(
            "first pass: Created, startTime, every child",
            dist,
            vec![],
            at(3),
            Expect {
                conditions: Some(vec![CREATED]),
                last_message: Some("TFJob j is created.".into()),
                events: Some(vec!["TFJobCreated"]),
                create_pods: Some(all.clone()),
                create_services: Some(all),
                start_time: Some(Some(at(3))),
                counts: vec![
                    (Ps, None, None, None, None),
                    (Worker, None, None, None, None),
                ],
                ..Default::default()
            },
        ),
        case(
            "template restartPolicy overridden: one warning",
            own_policy,
            vec![],
            at(0),
            Expect {
                events: Some(vec!["TFJobCreated", "SetPodTemplateRestartPolicy"]),
                ..Default::default()
            },
        ),
        case(
            "created suspended: no children, no startTime",
            suspended,
            vec![],
            at(0),
            Expect {
                conditions: Some(vec![CREATED, (Suspended, true, "TFJobSuspended")]),
                last_message: Some("TFJob j is suspended.".into()),
                events: Some(vec!["TFJobCreated", "TFJobSuspended"]),
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                start_time: Some(None),
                ..Default::default()
            },
        ),
    ]
}

fn children_cases() -> Vec<Case> {
    let two = || {
        with_status(
            job("j", &[(Ps, 1, Never), (Worker, 2, Never)]),
            running_status(),
        )
    };
    let j = two();
    let ps_w0 = vec![
        pod(&j, Ps, 0).running().build(),
        pod(&j, Worker, 0).running().build(),
    ];
    let mut vanished = case(
        "pod deleted from outside: recreated, one restart",
        j.clone(),
        ps_w0.clone(),
        at(5),
        Expect {
            conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
            last_message: Some("job j is restarting because Worker replica(s) failed.".into()),
            events: Some(vec!["TFJobRestarting"]),
            create_pods: Some(names("j", &[(Worker, 1)])),
            create_services: Some(vec![]),
            delete_pods: Some(vec![]),
            counts: vec![
                (Worker, Some(1), None, None, Some(1)),
                (Ps, Some(1), None, None, None),
            ],
            ..Default::default()
        },
    );
    vanished.services.push(service(&j, Worker, 1));
    let restarting = with_status(
        job("j", &[(Ps, 1, Never), (Worker, 2, Never)]),
        status(&[CREATED, (Restarting, true, "TFJobRestarting")], true),
    );
    let mut not_counted = case(
        "vanished during Restarting: recreated, not counted",
        restarting.clone(),
        ps_w0.clone(),
        at(5),
        Expect {
            conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
            events: Some(vec![]),
            create_pods: Some(names("j", &[(Worker, 1)])),
            counts: vec![(Worker, Some(1), None, None, None)],
            ..Default::default()
        },
    );
    not_counted.services.push(service(&restarting, Worker, 1));
    let mut terminating = ps_w0.clone();
    terminating.push(pod(&j, Worker, 1).failed(Some(137)).terminating().build());
    let scaled = with_status(job("j", &[(Worker, 1, Never)]), running_status());
    let scale_pods = vec![
        pod(&scaled, Worker, 0).running().build(),
        pod(&scaled, Worker, 1).running().build(),
    ];
    let mut foreign = ps_w0.clone();
    foreign.push(
        pod(&j, Worker, 1)
            .failed(Some(1))
            .owner_uid(Some("other"))
            .build(),
    );
    let mut unowned = case(
        "foreign pod with a child's name: not taken, not counted, warned",
        j.clone(),
        foreign,
        at(5),
        Expect {
            conditions: Some(vec![CREATED, RUNNING]),
            events: Some(vec![REASON_NOT_OWNED]),
            event_messages: vec![format!(
                "Pod {NS}/j-worker-1 carries the labels of TFJob j but is not owned by it; it is left alone"
            )],
            create_pods: Some(vec![]),
            create_services: Some(names("j", &[(Worker, 1)])),
            counts: vec![(Worker, Some(1), None, None, None)],
            ..Default::default()
        },
    );
    unowned
        .services
        .retain(|s| s.metadata.name.as_deref() != Some("j-worker-1"));
    vec![
        case(
            "missing pod and service on a started job: created, no restart",
            j.clone(),
            ps_w0.clone(),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                events: Some(vec![]),
                create_pods: Some(names("j", &[(Worker, 1)])),
                create_services: Some(names("j", &[(Worker, 1)])),
                counts: vec![(Worker, Some(1), None, None, None)],
                ..Default::default()
            },
        ),
        vanished,
        not_counted,
        case(
            "terminating pod: not recreated, not active, not failed",
            j.clone(),
            terminating,
            at(5),
            Expect {
                create_pods: Some(vec![]),
                delete_pods: Some(vec![]),
                events: Some(vec![]),
                counts: vec![(Worker, Some(1), None, None, None)],
                ..Default::default()
            },
        ),
        case(
            "scale down: surplus deleted, never a failure",
            scaled,
            scale_pods,
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                delete_pods: Some(names("j", &[(Worker, 1)])),
                delete_services: Some(names("j", &[(Worker, 1)])),
                counts: vec![(Worker, Some(1), None, None, None)],
                events: Some(vec![]),
                ..Default::default()
            },
        ),
        unowned,
    ]
}

fn running_cases() -> Vec<Case> {
    let fresh = |specs: &[(ReplicaType, i32, RestartPolicy)]| {
        with_status(job("j", specs), status(&[CREATED], true))
    };
    let chief = fresh(&[(Chief, 1, Never), (Worker, 2, Never)]);
    let master = fresh(&[(Master, 1, Never), (Worker, 1, Never)]);
    let workers = fresh(&[(Ps, 1, Never), (Worker, 2, Never)]);
    let running_msg = format!("TFJob {NS}/j is running.");
    let all_children = |j: &TFJob, pods: Vec<Pod>| {
        let c = replicas::sort_children(
            j,
            &Observed {
                pods: pods.clone(),
                services: vec![],
                ..Observed::default()
            },
        );
        let view_keys: Vec<_> = JobView::new(j, at(0), &Settings::default()).keys();
        let mut pods = pods;
        for (t, i) in view_keys {
            if !c.pods.contains_key(&(t, i)) {
                pods.push(pod(j, t, i).pending().build());
            }
        }
        pods
    };
    let restarting = with_status(
        job("j", &[(Chief, 1, Never), (Worker, 1, OnFailure)]),
        status(&[CREATED, (Restarting, true, "TFJobRestarting")], true),
    );
    vec![
        case(
            "chief running: Running",
            chief.clone(),
            all_children(&chief, vec![pod(&chief, Chief, 0).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                last_message: Some(running_msg.clone()),
                counts: vec![(Chief, Some(1), None, None, None)],
                ..Default::default()
            },
        ),
        case(
            "master running: Running",
            master.clone(),
            all_children(&master, vec![pod(&master, Master, 0).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                ..Default::default()
            },
        ),
        case(
            "chief pending, worker running: not Running",
            chief.clone(),
            all_children(&chief, vec![pod(&chief, Worker, 1).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED]),
                ..Default::default()
            },
        ),
        case(
            "no chief, worker 1 running: Running",
            workers.clone(),
            all_children(&workers, vec![pod(&workers, Worker, 1).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                last_message: Some(running_msg),
                ..Default::default()
            },
        ),
        case(
            "no chief, only PS running: not Running",
            workers.clone(),
            all_children(&workers, vec![pod(&workers, Ps, 0).running().build()]),
            at(5),
            Expect {
                conditions: Some(vec![CREATED]),
                ..Default::default()
            },
        ),
        case(
            "Restarting, all pods back, chief running: Running replaces Restarting",
            restarting.clone(),
            all_children(
                &restarting,
                vec![pod(&restarting, Chief, 0).running().build()],
            ),
            at(5),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                ..Default::default()
            },
        ),
        case(
            "Restarting, a pod still going away: stays Restarting",
            restarting.clone(),
            vec![
                pod(&restarting, Chief, 0).running().build(),
                pod(&restarting, Worker, 0)
                    .failed(Some(1))
                    .terminating()
                    .build(),
            ],
            at(5),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                create_pods: Some(vec![]),
                ..Default::default()
            },
        ),
    ]
}

/// A running job: chief (if any) and every replica's pod, with `overrides` replacing the
/// default running pod of their replica.
fn running_job(
    specs: &[(ReplicaType, i32, RestartPolicy)],
    overrides: impl FnOnce(&TFJob) -> Vec<Pod>,
) -> (TFJob, Vec<Pod>) {
    let j = with_status(job("j", specs), running_status());
    let special = overrides(&j);
    let taken = replicas::sort_children(
        &j,
        &Observed {
            pods: special.clone(),
            services: vec![],
            ..Observed::default()
        },
    );
    let mut pods = special;
    for (t, i) in JobView::new(&j, at(0), &Settings::default()).keys() {
        if !taken.pods.contains_key(&(t, i)) {
            pods.push(pod(&j, t, i).running().build());
        }
    }
    (j, pods)
}

fn ended(verdict: ConditionType, reason: &'static str) -> Vec<(ConditionType, bool, &'static str)> {
    vec![CREATED, (Running, false, reason), (verdict, true, reason)]
}

fn success_matrix() -> Vec<Case> {
    let done = format!("TFJob {NS}/j successfully completed.");
    let yes = |name: &str,
               specs: &[(ReplicaType, i32, RestartPolicy)],
               winners: &[(ReplicaType, i32)],
               deleted: &[(ReplicaType, i32)]| {
        let winners = winners.to_vec();
        let (j, pods) = running_job(specs, |j| {
            winners
                .iter()
                .map(|&(t, i)| pod(j, t, i).succeeded().build())
                .collect()
        });
        case(
            format!("success: {name}"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Succeeded, "TFJobSucceeded")),
                last_message: Some(done.clone()),
                events: Some(vec!["TFJobSucceeded"]),
                create_pods: Some(vec![]),
                delete_pods: Some(names("j", deleted)),
                delete_services: Some(names("j", deleted)),
                completion_time: Some(Some(at(9))),
                ..Default::default()
            },
        )
    };
    let no = |name: &str,
              specs: &[(ReplicaType, i32, RestartPolicy)],
              winners: &[(ReplicaType, i32)]| {
        let winners = winners.to_vec();
        let (j, pods) = running_job(specs, |j| {
            winners
                .iter()
                .map(|&(t, i)| pod(j, t, i).succeeded().build())
                .collect()
        });
        case(
            format!("no success yet: {name}"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                events: Some(vec![]),
                completion_time: Some(None),
                ..Default::default()
            },
        )
    };
    let cw = [(Chief, 1, Never), (Ps, 1, Never), (Worker, 2, Never)];
    let mw = [(Master, 1, Never), (Worker, 1, Never)];
    let pw = [(Ps, 1, Never), (Worker, 2, Never), (Evaluator, 1, Never)];
    let mut all_workers = job("j", &pw);
    all_workers.spec.success_policy = Some(SuccessPolicy::AllWorkers);
    let aw = |winners: &[(ReplicaType, i32)], ok: bool| {
        let mut j = all_workers.clone();
        j.status = Some(running_status());
        let mut pods: Vec<Pod> = winners
            .iter()
            .map(|&(t, i)| pod(&j, t, i).succeeded().build())
            .collect();
        for (t, i) in [(Ps, 0), (Worker, 0), (Worker, 1), (Evaluator, 0)] {
            if !winners.contains(&(t, i)) {
                pods.push(pod(&j, t, i).running().build());
            }
        }
        let expect = if ok {
            Expect {
                conditions: Some(ended(Succeeded, "TFJobSucceeded")),
                ..Default::default()
            }
        } else {
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                ..Default::default()
            }
        };
        case(
            format!("AllWorkers {winners:?}: success={ok}"),
            j,
            pods,
            at(9),
            expect,
        )
    };
    // On success the active pods move to succeeded and are then cleaned up (Running policy).
    let (j, pods) = running_job(&cw, |j| vec![pod(j, Chief, 0).succeeded().build()]);
    let moved = case(
        "success: active counts move to succeeded",
        j,
        pods,
        at(9),
        Expect {
            counts: vec![
                (Chief, None, Some(1), None, None),
                (Ps, None, Some(1), None, None),
                (Worker, None, Some(2), None, None),
            ],
            ..Default::default()
        },
    );
    vec![
        yes(
            "chief succeeded",
            &cw,
            &[(Chief, 0)],
            &[(Ps, 0), (Worker, 0), (Worker, 1)],
        ),
        yes("master succeeded", &mw, &[(Master, 0)], &[(Worker, 0)]),
        yes(
            "no chief, worker 0 succeeded",
            &pw,
            &[(Worker, 0)],
            &[(Ps, 0), (Worker, 1), (Evaluator, 0)],
        ),
        no("chief running, worker 0 succeeded", &cw, &[(Worker, 0)]),
        no("no chief, worker 1 succeeded", &pw, &[(Worker, 1)]),
        no("PS succeeded", &pw, &[(Ps, 0)]),
        no("evaluator succeeded", &pw, &[(Evaluator, 0)]),
        aw(&[(Worker, 0)], false),
        aw(&[(Worker, 0), (Worker, 1)], true),
        moved,
    ]
}

fn failure_matrix() -> Vec<Case> {
    let fails = |specs: &[(ReplicaType, i32, RestartPolicy)],
                 losers: &[(ReplicaType, i32)],
                 t: ReplicaType,
                 n: i32| {
        let losers = losers.to_vec();
        let (j, pods) = running_job(specs, |j| {
            losers
                .iter()
                .map(|&(t, i)| pod(j, t, i).failed(Some(1)).build())
                .collect()
        });
        let mut events = vec!["ExitedWithCode"; losers.len()];
        events.push("TFJobFailed");
        case(
            format!("{n} {t} failing (Never): job fails"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Failed, "TFJobFailed")),
                last_message: Some(format!(
                    "TFJob {NS}/j has failed because {n} {t} replica(s) failed."
                )),
                events: Some(events),
                event_messages: losers
                    .iter()
                    .map(|&(t, i)| {
                        format!("Pod: {NS}.{} exited with code 1", names("j", &[(t, i)])[0])
                    })
                    .collect(),
                create_pods: Some(vec![]),
                completion_time: Some(Some(at(9))),
                ..Default::default()
            },
        )
    };
    let cw = [
        (Chief, 1, Never),
        (Ps, 1, Never),
        (Worker, 2, Never),
        (Evaluator, 1, Never),
    ];
    let mw = [(Master, 1, Never), (Worker, 1, Never)];
    let mut dynamic = job("j", &[(Ps, 1, Never), (Worker, 2, Never)]);
    dynamic.spec.enable_dynamic_worker = Some(true);
    dynamic.status = Some(running_status());
    let dyn_pods = vec![
        pod(&dynamic, Ps, 0).running().build(),
        pod(&dynamic, Worker, 0).running().build(),
        pod(&dynamic, Worker, 1).failed(Some(1)).build(),
    ];
    let (mut r, r_pods) = running_job(&[(Ps, 1, Never), (Worker, 2, ExitCode)], |j| {
        vec![pod(j, Ps, 0).failed(Some(1)).build()]
    });
    r.status = Some(status(
        &[CREATED, (Restarting, true, "TFJobRestarting")],
        true,
    ));
    vec![
        fails(&cw, &[(Chief, 0)], Chief, 1),
        fails(&mw, &[(Master, 0)], Master, 1),
        fails(&cw, &[(Ps, 0)], Ps, 1),
        fails(&cw, &[(Worker, 1)], Worker, 1),
        fails(&cw, &[(Evaluator, 0)], Evaluator, 1),
        fails(&cw, &[(Worker, 0), (Worker, 1)], Worker, 2),
        // (type, index) order: the PS decides the message, both pods are named.
        fails(&cw, &[(Ps, 0), (Worker, 1)], Ps, 1),
        case(
            "enableDynamicWorker: a failed worker does not fail the job",
            dynamic,
            dyn_pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                events: Some(vec![]),
                create_pods: Some(vec![]),
                delete_pods: Some(vec![]),
                counts: vec![(Worker, Some(1), None, Some(1), None)],
                ..Default::default()
            },
        ),
        case(
            "Restarting never blocks a permanent failure",
            r,
            r_pods,
            at(9),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Restarting, false, "TFJobFailed"),
                    (Failed, true, "TFJobFailed"),
                ]),
                ..Default::default()
            },
        ),
    ]
}

fn exit_code_matrix() -> Vec<Case> {
    let specs = [(Ps, 1, Never), (Worker, 2, ExitCode)];
    let mut cases = Vec::new();
    for code in [0, 1, 2, 126, 127, 128, 139] {
        let (j, pods) = running_job(&specs, |j| {
            vec![pod(j, Worker, 1).failed(Some(code)).build()]
        });
        cases.push(case(
            format!("ExitCode {code}: permanent"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Failed, "TFJobFailed")),
                last_message: Some(format!(
                    "TFJob {NS}/j has failed because 1 Worker replica(s) failed."
                )),
                events: Some(vec!["ExitedWithCode", "TFJobFailed"]),
                event_messages: vec![format!("Pod: {NS}.j-worker-1 exited with code {code}")],
                delete_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
                ..Default::default()
            },
        ));
    }
    for code in [Some(130), Some(137), Some(138), Some(143), Some(255), None] {
        let (j, pods) = running_job(&specs, |j| vec![pod(j, Worker, 1).failed(code).build()]);
        let events = if code.is_some() {
            vec!["ExitedWithCode", "TFJobRestarting"]
        } else {
            vec!["TFJobRestarting"]
        };
        cases.push(case(
            format!("ExitCode {code:?}: retried"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                last_message: Some("job j is restarting because Worker replica(s) failed.".into()),
                events: Some(events),
                create_pods: Some(vec![]),
                delete_pods: Some(names("j", &[(Worker, 1)])),
                delete_services: Some(vec![]),
                counts: vec![(Worker, Some(1), None, None, Some(1))],
                ..Default::default()
            },
        ));
    }
    for policy in [OnFailure, Always] {
        let (j, pods) = running_job(&[(Worker, 2, policy)], |j| {
            vec![pod(j, Worker, 0).failed(Some(1)).restarts(2).build()]
        });
        cases.push(case(
            format!("{policy:?}: failed pod restarted: its 2 kubelet restarts, plus 1"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                delete_pods: Some(names("j", &[(Worker, 0)])),
                counts: vec![(Worker, Some(1), None, None, Some(3))],
                pod_restarts: vec![(Worker, vec![("uid-j-worker-0", 2)])],
                ..Default::default()
            },
        ));
    }
    let (j, pods) = running_job(&[(Worker, 1, OnFailure)], |j| {
        vec![pod(j, Worker, 0).succeeded().restarts(2).build()]
    });
    cases.push(case(
        "the concluding pass counts the last kubelet restarts and drops podRestarts",
        with_pod_restarts(j, Worker, 1, &[("uid-j-worker-0", 1)]),
        pods,
        at(9),
        Expect {
            conditions: Some(ended(Succeeded, "TFJobSucceeded")),
            restarts: vec![(Worker, Some(2))],
            pod_restarts: vec![(Worker, vec![])],
            ..Default::default()
        },
    ));
    cases
}

/// Kubelet restarts (OnFailure/Always) counted in `restarts` per pod uid (docs/behaviour.md §6.4).
fn kubelet_restart_cases() -> Vec<Case> {
    let specs = [(Worker, 2, OnFailure)];
    let w0 = "uid-j-worker-0";
    let steady = |rc: i32| Expect {
        conditions: Some(vec![CREATED, RUNNING]),
        events: Some(vec![]),
        create_pods: Some(vec![]),
        delete_pods: Some(vec![]),
        counts: vec![(Worker, Some(2), None, None, Some(rc))],
        pod_restarts: vec![(Worker, vec![(w0, rc)])],
        ..Default::default()
    };
    let w0_running =
        |rc: i32| move |j: &TFJob| vec![pod(j, Worker, 0).running().restarts(rc).build()];
    let (fresh, fresh_pods) = running_job(&specs, w0_running(2));
    let (seen, seen_pods) = running_job(&specs, w0_running(2));
    let (rising, rising_pods) = running_job(&specs, w0_running(3));
    let (gone, gone_pods) = running_job(&specs, |_| vec![]);
    let (failing, failing_pods) = running_job(&specs, |j| {
        vec![pod(j, Worker, 0).failed(Some(1)).restarts(2).build()]
    });
    let (leaving, leaving_pods) = running_job(&specs, |j| {
        vec![
            pod(j, Worker, 1)
                .running()
                .restarts(3)
                .terminating()
                .build(),
        ]
    });
    let restarting = |c: Option<i32>| Expect {
        conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
        delete_pods: Some(names("j", &[(Worker, 0)])),
        counts: vec![(Worker, Some(1), None, None, c)],
        pod_restarts: vec![(Worker, vec![(w0, 2)])],
        ..Default::default()
    };
    vec![
        case(
            "kubelet restarted a live pod twice: 2 restarts, recorded for its uid",
            fresh,
            fresh_pods,
            at(9),
            steady(2),
        ),
        case(
            "kubelet restarts already counted: nothing added",
            with_pod_restarts(seen, Worker, 2, &[(w0, 2)]),
            seen_pods,
            at(9),
            steady(2),
        ),
        case(
            "restartCount from 1 to 3: adds 2",
            with_pod_restarts(rising, Worker, 1, &[(w0, 1)]),
            rising_pods,
            at(9),
            steady(3),
        ),
        case(
            "counted pod gone (replaced by a new uid): entry dropped, restarts kept",
            with_pod_restarts(gone, Worker, 2, &[("uid-of-a-gone-pod", 2)]),
            gone_pods,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, RUNNING]),
                counts: vec![(Worker, Some(2), None, None, Some(2))],
                pod_restarts: vec![(Worker, vec![])],
                ..Default::default()
            },
        ),
        case(
            "failed pod whose 2 kubelet restarts were counted earlier: deleted, 3 in all",
            with_pod_restarts(failing, Worker, 2, &[(w0, 2)]),
            failing_pods,
            at(9),
            restarting(Some(3)),
        ),
        case(
            "terminating pod: its new kubelet restarts not counted, its entry kept",
            with_pod_restarts(leaving, Worker, 1, &[("uid-j-worker-1", 1)]),
            leaving_pods,
            at(9),
            Expect {
                counts: vec![(Worker, Some(1), None, None, Some(1))],
                pod_restarts: vec![(Worker, vec![("uid-j-worker-1", 1)])],
                ..Default::default()
            },
        ),
    ]
}

fn backoff_cases() -> Vec<Case> {
    let limited =
        |limit: i32, recorded: i32, policy: RestartPolicy, special: fn(&TFJob) -> Vec<Pod>| {
            let (j, pods) = running_job(&[(Ps, 1, Never), (Worker, 2, policy)], special);
            let j = with_policy(j, |r| {
                r.backoff_limit = Some(limit);
                r.clean_pod_policy = Some(CleanPodPolicy::None);
            });
            let j = if recorded > 0 {
                with_restarts(j, Worker, recorded)
            } else {
                j
            };
            (j, pods)
        };
    let backoff = "Job j has failed because it has reached the specified backoff limit".to_string();
    let fail = |name: &str,
                (j, pods): (TFJob, Vec<Pod>),
                deleted: &[(ReplicaType, i32)],
                restarts: Option<i32>| {
        case(
            format!("backoff: {name}"),
            j,
            pods,
            at(9),
            Expect {
                conditions: Some(ended(Failed, "TFJobFailed")),
                last_message: Some(backoff.clone()),
                events: Some(vec!["TFJobFailed"]),
                create_pods: Some(vec![]),
                // Unfinished pods go whatever the clean policy (None here).
                delete_pods: Some(names("j", deleted)),
                delete_services: Some(names("j", deleted)),
                restarts: vec![(Worker, restarts)],
                completion_time: Some(Some(at(9))),
                ..Default::default()
            },
        )
    };
    let w1_137 = |j: &TFJob| vec![pod(j, Worker, 1).failed(Some(137)).build()];
    let both_137 = |j: &TFJob| {
        vec![
            pod(j, Worker, 0).failed(Some(137)).build(),
            pod(j, Worker, 1).failed(Some(137)).build(),
        ]
    };
    let w0_rc1 = |j: &TFJob| {
        vec![
            pod(j, Worker, 0).running().restarts(1).build(),
            pod(j, Worker, 1).failed(Some(137)).build(),
        ]
    };
    let w0_rc3 = |j: &TFJob| vec![pod(j, Worker, 0).running().restarts(3).build()];
    vec![
        fail(
            "limit 2, two restarts recorded, a third failure",
            limited(2, 2, ExitCode, w1_137),
            &[(Ps, 0), (Worker, 0)],
            Some(2),
        ),
        case(
            "backoff: limit 2, one restart recorded, one more allowed",
            limited(2, 1, ExitCode, w1_137).0,
            limited(2, 1, ExitCode, w1_137).1,
            at(9),
            Expect {
                conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
                delete_pods: Some(names("j", &[(Worker, 1)])),
                counts: vec![(Worker, Some(1), None, None, Some(2))],
                ..Default::default()
            },
        ),
        fail(
            "recreated pod's kubelet restarts count too",
            limited(2, 1, OnFailure, w0_rc1),
            &[(Ps, 0), (Worker, 0)],
            Some(2),
        ),
        fail(
            "kubelet restarted beyond the limit",
            limited(2, 0, OnFailure, w0_rc3),
            &[(Ps, 0), (Worker, 0), (Worker, 1)],
            Some(3),
        ),
        fail(
            "limit 1, two failures in one pass: nothing restarted",
            limited(1, 0, ExitCode, both_137),
            &[(Ps, 0)],
            None,
        ),
        fail(
            "limit 0: the first failure",
            limited(0, 0, ExitCode, w1_137),
            &[(Ps, 0), (Worker, 0)],
            None,
        ),
    ]
}

fn timer_cases() -> Vec<Case> {
    let deadline = |now: i64, suspended: bool| {
        let (j, pods) = running_job(&[(Worker, 1, Never)], |_| vec![]);
        let mut j = with_policy(j, |r| {
            r.active_deadline_seconds = Some(100);
            r.clean_pod_policy = Some(CleanPodPolicy::None);
            r.suspend = Some(suspended);
        });
        if suspended {
            j.status = Some(status(
                &[
                    CREATED,
                    (Running, false, "TFJobSuspended"),
                    (Suspended, true, "TFJobSuspended"),
                ],
                true,
            ));
        }
        let pods = if suspended { vec![] } else { pods };
        (j, pods, at(now))
    };
    let (j, p, now) = deadline(50, false);
    let before = case(
        "deadline ahead: requeue at the exact moment",
        j,
        p,
        now,
        Expect {
            conditions: Some(vec![CREATED, RUNNING]),
            requeue_at: Some(Some(at(100))),
            ..Default::default()
        },
    );
    let (j, p, now) = deadline(100, false);
    let reached = case(
        "deadline reached: failed, unfinished pods deleted whatever the policy",
        j,
        p,
        now,
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some(
                "Job j has failed because it was active longer than specified deadline".into(),
            ),
            events: Some(vec!["TFJobFailed"]),
            delete_pods: Some(names("j", &[(Worker, 0)])),
            delete_services: Some(names("j", &[(Worker, 0)])),
            requeue_at: Some(None),
            completion_time: Some(Some(at(100))),
            ..Default::default()
        },
    );
    let (j, p, now) = deadline(500, true);
    let suspended = case(
        "deadline does not run while suspended",
        j,
        p,
        now,
        Expect {
            conditions: Some(vec![
                CREATED,
                (Running, false, "TFJobSuspended"),
                (Suspended, true, "TFJobSuspended"),
            ]),
            requeue_at: Some(None),
            events: Some(vec![]),
            ..Default::default()
        },
    );
    let (j, p, now) = deadline(80, false);
    let mut resumed_clock = j.clone();
    resumed_clock.status.as_mut().unwrap().start_time = Some(Time(at(60)));
    let restarted = case(
        "deadline counts from the (reset) startTime",
        resumed_clock,
        p,
        now,
        Expect {
            requeue_at: Some(Some(at(160))),
            ..Default::default()
        },
    );
    vec![before, reached, suspended, restarted]
}

/// A job that succeeded at `at(0)`, with frozen counts and the given run policy.
fn succeeded_job(f: impl FnOnce(&mut RunPolicy)) -> TFJob {
    let j = with_policy(job("j", &[(Ps, 1, Never), (Worker, 2, Never)]), f);
    let mut s = status(
        &[
            CREATED,
            (Running, false, "TFJobSucceeded"),
            (Succeeded, true, "TFJobSucceeded"),
        ],
        true,
    );
    s.completion_time = Some(Time(at(0)));
    s.replica_statuses = BTreeMap::from([
        (
            Ps,
            ReplicaStatus {
                succeeded: Some(1),
                selector: Some(sel("j", Ps)),
                ..Default::default()
            },
        ),
        (
            Worker,
            ReplicaStatus {
                succeeded: Some(2),
                restarts: Some(4),
                selector: Some(sel("j", Worker)),
                ..Default::default()
            },
        ),
    ]);
    with_status(j, s)
}

fn finished_cases() -> Vec<Case> {
    let mixed = |j: &TFJob| {
        vec![
            pod(j, Ps, 0).running().build(),
            pod(j, Worker, 0).succeeded().build(),
            pod(j, Worker, 1).failed(Some(1)).build(),
        ]
    };
    let policy = |p: CleanPodPolicy, deleted: &[(ReplicaType, i32)]| {
        let j = succeeded_job(|r| r.clean_pod_policy = Some(p));
        let pods = mixed(&j);
        case(
            format!("finished, cleanPodPolicy {p:?}"),
            j.clone(),
            pods,
            at(5),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Running, false, "TFJobSucceeded"),
                    (Succeeded, true, "TFJobSucceeded"),
                ]),
                events: Some(vec![]),
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                delete_pods: Some(names("j", deleted)),
                delete_services: Some(names("j", deleted)),
                // Frozen: not recounted from the pods seen now.
                counts: vec![
                    (Ps, None, Some(1), None, None),
                    (Worker, None, Some(2), None, Some(4)),
                ],
                ..Default::default()
            },
        )
    };
    let ttl = |suspended: bool| {
        succeeded_job(|r| {
            r.ttl_seconds_after_finished = Some(60);
            r.suspend = Some(suspended);
        })
    };
    let mut deadline_failed = with_policy(job("j", &[(Worker, 2, Never)]), |r| {
        r.clean_pod_policy = Some(CleanPodPolicy::None)
    });
    let mut s = status(&[CREATED, (Failed, true, "TFJobFailed")], true);
    s.conditions[1].message =
        Some("Job j has failed because it was active longer than specified deadline".into());
    deadline_failed.status = Some(s);
    let leftover = vec![
        pod(&deadline_failed, Worker, 0).running().build(),
        pod(&deadline_failed, Worker, 1).failed(Some(1)).build(),
    ];
    vec![
        policy(CleanPodPolicy::All, &[(Ps, 0), (Worker, 0), (Worker, 1)]),
        policy(CleanPodPolicy::Running, &[(Ps, 0)]),
        policy(CleanPodPolicy::None, &[]),
        {
            // A pass cut short between deleting the PS pod and its service (operator killed,
            // or the service delete failed): the service still goes.
            let j = succeeded_job(|_| {});
            let pods = vec![
                pod(&j, Worker, 0).succeeded().build(),
                pod(&j, Worker, 1).succeeded().build(),
            ];
            let services = vec![
                service(&j, Ps, 0),
                service(&j, Worker, 0),
                service(&j, Worker, 1),
            ];
            Case {
                services,
                ..case(
                    "finished, policy Running: a service whose pod is gone is deleted",
                    j,
                    pods,
                    at(5),
                    Expect {
                        delete_pods: Some(vec![]),
                        delete_services: Some(names("j", &[(Ps, 0)])),
                        ..Default::default()
                    },
                )
            }
        },
        case(
            "finished: nothing recreated",
            succeeded_job(|_| {}),
            vec![],
            at(5),
            Expect {
                create_pods: Some(vec![]),
                create_services: Some(vec![]),
                events: Some(vec![]),
                ..Default::default()
            },
        ),
        case(
            "TTL ahead: requeue at completion + ttl",
            ttl(false),
            vec![],
            at(10),
            Expect {
                requeue_at: Some(Some(at(60))),
                ..Default::default()
            },
        ),
        case(
            "TTL due: delete the job",
            ttl(false),
            vec![],
            at(60),
            Expect {
                delete_job: true,
                events: Some(vec!["SuccessfulDeleteJob"]),
                event_messages: vec![format!(
                    "Deleted TFJob {NS}/j: ttlSecondsAfterFinished expired"
                )],
                ..Default::default()
            },
        ),
        case(
            "TTL never runs while suspended",
            ttl(true),
            vec![],
            at(600),
            Expect {
                requeue_at: Some(None),
                events: Some(vec![]),
                ..Default::default()
            },
        ),
        case(
            "failed on deadline, policy None: leftover unfinished pods still go",
            deadline_failed,
            leftover,
            at(5),
            Expect {
                delete_pods: Some(names("j", &[(Worker, 0)])),
                delete_services: Some(names("j", &[(Worker, 0)])),
                ..Default::default()
            },
        ),
    ]
}

fn suspend_cases() -> Vec<Case> {
    let (j, pods) = running_job(&[(Ps, 1, Never), (Worker, 1, Never)], |_| vec![]);
    let all = names("j", &[(Ps, 0), (Worker, 0)]);
    let suspending = with_policy(j.clone(), |r| r.suspend = Some(true));
    let mut restarting = suspending.clone();
    restarting.status = Some(status(
        &[CREATED, (Restarting, true, "TFJobRestarting")],
        true,
    ));
    let mut resumed = with_policy(j.clone(), |r| r.suspend = Some(false));
    resumed.status = Some(status(
        &[
            CREATED,
            (Running, false, "TFJobSuspended"),
            (Suspended, true, "TFJobSuspended"),
        ],
        true,
    ));
    vec![
        case(
            "suspend: every child deleted, Running off, Suspended on",
            suspending,
            pods.clone(),
            at(7),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Running, false, "TFJobSuspended"),
                    (Suspended, true, "TFJobSuspended"),
                ]),
                last_message: Some("TFJob j is suspended.".into()),
                events: Some(vec!["TFJobSuspended"]),
                create_pods: Some(vec![]),
                delete_pods: Some(all.clone()),
                delete_services: Some(all.clone()),
                counts: vec![
                    (Ps, None, None, None, None),
                    (Worker, None, None, None, None),
                ],
                start_time: Some(Some(at(0))),
                ..Default::default()
            },
        ),
        case(
            "suspend while Restarting: Restarting off",
            restarting,
            pods,
            at(7),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Restarting, false, "TFJobSuspended"),
                    (Suspended, true, "TFJobSuspended"),
                ]),
                ..Default::default()
            },
        ),
        case(
            "resume: Suspended off, clock restarts, children recreated",
            resumed,
            vec![],
            at(20),
            Expect {
                conditions: Some(vec![
                    CREATED,
                    (Running, false, "TFJobSuspended"),
                    (Suspended, false, "TFJobResumed"),
                ]),
                last_message: Some("TFJob j is resumed.".into()),
                events: Some(vec!["TFJobResumed"]),
                create_pods: Some(all.clone()),
                create_services: Some(all),
                start_time: Some(Some(at(20))),
                ..Default::default()
            },
        ),
    ]
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
