//! The decision core: given a job, what was observed for it and `now`, decide the actions
//! and the new status. Pure: no I/O, no clock, no environment, no API client.
//!
//! `plan` only composes the rules (`rules/`), each in its own module and each returning its
//! decision as a value: `restarts` (the restart engine: every failure classified, then one
//! decision for the pass, per replica or for the whole job), `finish` (success,
//! failure, cleanup), `timers` (deadline, TTL), `suspend`, `progress`
//! (Created/Running/Restarting), `scale` (create, scale down), `counts` (replicaStatuses),
//! `gang` (the PodGroup), `unreadable` (a spec that does not parse). They read the job through
//! `view` and its observed children through `replicas`. The composer applies their condition
//! changes (`conditions`) in the order it consults them, which is visible below and is the
//! order of the conditions list.
//!
//! The plan's status is the status the pass writes, whole: it includes the refusal of the
//! job's last creates (`ReplicaFailure`), which the pass observes like any other fact.
//!
//! Decisions beyond the wording of docs/behaviour.md (recorded there too):
//! - A job is cleaned up (children deleted by cleanPodPolicy, PodGroup deleted, TTL) only
//!   once its Succeeded or Failed status is stored: the pass that concludes a job writes the
//!   status and deletes nothing, so a lost status write can never leave a running job whose
//!   pods this operator deleted (the next pass would take them for vanished pods).
//! - Restart counting (DECIDED by the lead): `replicaStatuses[T].restarts` is the durable
//!   count of every restart. Kubelet restarts are added incrementally each pass, per pod
//!   uid, with `replicaStatuses[T].podRestarts` recording what was already counted
//!   (`counts`); a restarted failed pod then adds exactly 1, and so does a pod deleted from
//!   outside (its service still there, the job started and not Restarting) when recreated.
//!   The pass that concludes the job still counts the kubelet restarts it observes (they
//!   happened), not restarts it decides against; after that the counts are frozen.
//! - A pod deleted from outside also sets Restarting, exactly like a failed pod: so a
//!   recreate that keeps failing (quota) after its service was created counts once, and an
//!   outside deletion while Restarting is not counted at all (it cannot be told apart from
//!   the pod this operator deleted).
//! - Restarting stays until every replica has a live pod again, then Running may replace it.
//! - Pods this pass deletes (restart, suspension) count nowhere in `replicaStatuses`, like
//!   terminating ones, so the status does not flicker between two passes.
//! - Validation errors are joined with "; " (one line in events and `kubectl get`).
//! - Succeeding or failing turns a True Running or Restarting False, with the terminal
//!   reason and message; Suspension likewise turns a True Restarting False.
//! - ExitedWithCode is emitted only for pods whose `tensorflow` container has an exit code.
//! - Objects with the job's labels but another (or no) owner: a Warning `ChildNotOwned`
//!   on every pass (the controller deduplicates), never touched.
//! - Failure and restart events are Warnings; created, running, success, suspend, resume
//!   and TTL deletion are Normal.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub mod conditions;
pub mod model;
mod pass;
pub mod replicas;
pub mod rules;
#[cfg(test)]
pub(crate) mod tests;
pub mod view;

use crate::crd::cached::Unreadable;
use crate::crd::settings::JobSettings;
use crate::crd::validation::validate;
use crate::crd::{ConditionType, MANAGED_BY_MULTIKUEUE, REASON_RESTARTING, TFJob};
use model::{EventNote, Observed, Plan, Settings};
use pass::Pass;
use replicas::Replicas;
use rules::finish::{self, Cause, Verdict};
use rules::restarts::{self, Decision, Restarting};
use rules::success::{self, Success};
use rules::timers::{self, Timer};
use rules::{counts, gang, progress, scale, suspend, unreadable};
use view::JobView;

/// Event reason: the TTL after finishing expired and the job is deleted.
pub const REASON_DELETE_JOB: &str = "SuccessfulDeleteJob";

/// Decide what to do for the job named `name`: the rules for a spec that parses, a
/// validation failure for one that does not.
pub fn plan(
    spec: Result<&TFJob, &Unreadable>,
    name: &str,
    observed: &Observed,
    now: Timestamp,
    settings: &Settings,
) -> Plan {
    match spec {
        Ok(job) => plan_job(job, observed, now, settings),
        Err(bad) => unreadable::plan(bad, name, now),
    }
}

/// A composer of one rule per step (docs/behaviour.md §6, §7).
///
/// Jobs handed to MultiKueue (`managedBy: kueue.x-k8s.io/multikueue`) and jobs being
/// deleted get an empty plan and no status: the first are someone else's, the second are
/// left to garbage collection. A finished job only cleans up and waits for its TTL.
fn plan_job(job: &TFJob, observed: &Observed, now: Timestamp, settings: &Settings) -> Plan {
    let managed_elsewhere = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.managed_by.as_deref())
        == Some(MANAGED_BY_MULTIKUEUE);
    if managed_elsewhere || job.metadata.deletion_timestamp.is_some() {
        return Plan::default();
    }
    // The job's settings of ours are read once, by validation. A job whose settings do not
    // read fails before any rule looks at them, and a finished job reads none: both get the
    // defaults.
    let validated = validated(job);
    let job_settings = validated.clone().unwrap_or_default();
    let view = JobView::new(job, now, settings, job_settings);
    let children = replicas::sort(job, observed, Some(view.attempt));
    let stored_finished = job.status.as_ref().is_some_and(conditions::is_finished);
    let mut pass = Pass {
        status: job.status.clone().unwrap_or_default(),
        plan: Plan {
            events: children.foreign_events(view.namespace, view.name),
            ..Plan::default()
        },
        now,
    };
    if stored_finished {
        finished(&view, &children, &mut pass);
    } else {
        match validated {
            Err(errors) => pass.conclude(&view, Verdict::Failed(Cause::Validation(errors))),
            Ok(_) => run(&view, &children, &mut pass),
        }
    }
    let concluded = !stored_finished && conditions::is_finished(&pass.status);
    if !concluded {
        gang_scheduling(&view, observed, settings, &mut pass);
    }
    refused_creates(observed, &mut pass);
    stuck_pods(&children, &mut pass);
    refused_queue_change(&view, observed, &mut pass);
    pass.plan.status = Some(pass.status);
    pass.plan
}

/// `ReplicaFailure` tells why children the job still needs are missing: the API server
/// refused the job's last creates (a quota, a webhook, a PodGroup that cannot be made). It
/// goes once the pass has nothing left to create.
fn refused_creates(observed: &Observed, pass: &mut Pass) {
    let missing = !pass.plan.create_pods.is_empty() || !pass.plan.create_services.is_empty();
    let failure = observed.refused.as_ref().filter(|_| missing);
    let failure = failure.map(|r| (r.reason.as_str(), r.message.clone()));
    conditions::replica_failure(&mut pass.status.conditions, failure, pass.now);
}

/// `Stuck` names a replica whose pod cannot start (docs/behaviour.md §7.2), in Kubernetes'
/// words, while that lasts; a finished job has none.
fn stuck_pods(children: &Replicas, pass: &mut Pass) {
    let stuck = match conditions::is_finished(&pass.status) {
        true => None,
        false => progress::stuck(children, &pass.plan.delete_pods),
    };
    let stuck = stuck
        .as_ref()
        .map(|(reason, message)| (reason.as_str(), message.clone()));
    conditions::present_while(
        &mut pass.status.conditions,
        ConditionType::Stuck,
        stuck,
        pass.now,
    );
}

/// `ChangeRefused` while a running queued job's label names another queue than its
/// Workload's (the Kueue mode; Kueue's webhook refuses that change, docs/kueue.md): the job
/// stays in its queue. Told in a Warning event when it starts.
fn refused_queue_change(view: &JobView<'_>, observed: &Observed, pass: &mut Pass) {
    let running = !view.suspended() && !conditions::is_finished(&pass.status);
    let refusal = observed
        .workload_queue
        .as_deref()
        .filter(|_| running)
        .and_then(|queue| crate::kueue::plan::queue_refusal(view.job, queue));
    if let Some((reason, message)) = &refusal
        && !conditions::is_true(&pass.status.conditions, ConditionType::ChangeRefused)
    {
        pass.events([EventNote::warning(reason, message.clone())]);
    }
    conditions::present_while(
        &mut pass.status.conditions,
        ConditionType::ChangeRefused,
        refusal,
        pass.now,
    );
}

/// The job's PodGroup follows it (docs/behaviour.md §8): there while it runs, gone when it is
/// suspended or finished (and that is stored); its new pods join the gang.
fn gang_scheduling(view: &JobView<'_>, observed: &Observed, settings: &Settings, pass: &mut Pass) {
    let state = gang::JobState {
        wants_no_group: conditions::is_finished(&pass.status) || view.suspended(),
        running: conditions::is_true(&pass.status.conditions, ConditionType::Running),
        now: pass.now,
    };
    let gang = settings.gang.as_ref();
    let decision = gang::decide(
        view.job,
        gang,
        &observed.group,
        state,
        &mut pass.plan.create_pods,
    );
    pass.plan.podgroup = decision.action;
    pass.events(decision.events);
    pass.plan.requeue_at = match (pass.plan.requeue_at, decision.requeue_at) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
}

/// The job's settings of ours, or every validation problem, joined by "; " so the message
/// stays one line in `kubectl get -o wide` and in events. Keys of `tfReplicaSpecs` that name
/// no type are validation's to report; they are checked here too so such a job can never run
/// even if validation let it through.
fn validated(job: &TFJob) -> Result<JobSettings, String> {
    let errors: Vec<String> = match validate(job) {
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
        Ok(settings) if job.spec.tf_replica_specs.rejected_keys.is_empty() => return Ok(settings),
        Ok(_) => job
            .spec
            .tf_replica_specs
            .rejected_keys
            .iter()
            .map(|k| format!("spec.tfReplicaSpecs[{k}]: Unsupported value: {k:?}"))
            .collect(),
    };
    Err(errors.join("; "))
}

/// An unfinished, valid job: Created, then suspend, or resume and run to a verdict.
fn run(view: &JobView<'_>, children: &Replicas, pass: &mut Pass) {
    pass.change([progress::created(view)]);
    // Kubelet restarts are facts whatever this pass decides: counted first, on every pass
    // of a running job (suspending, concluding or not).
    let book = counts::RestartBook::recorded(&pass.status.replica_statuses)
        .with_kubelet_restarts(children);
    if view.suspended() {
        let suspension = suspend::suspend(view, children);
        pass.status.replica_statuses =
            counts::replica_statuses(view, children, &book, &suspension.delete_pods);
        pass.delete(suspension.delete_pods, suspension.delete_services);
        return pass.change(suspension.changes);
    }
    let resumed = suspend::resume(view, &pass.status.conditions);
    let started = pass.status.start_time.is_some() && resumed.is_none();
    if !started {
        pass.status.start_time = Some(Time(view.now));
    }
    pass.change(resumed);
    // Once the training succeeded, a job that waits for its evaluator runs on for it alone.
    let success = success::success(view, children);
    let evaluating = view.evaluating();
    let view = match success {
        Success::Evaluating { .. } => &evaluating,
        _ => view,
    };
    let clocks = timers::clocks(view, children, &pass.status);
    let decision = restarts::decide(view, children, &pass.status, started, book.clone(), clocks);
    let evaluator_wait = match success {
        Success::Evaluating { until } => until,
        _ => None,
    };
    let (verdict, mut events) = match success {
        Success::Yes { overran } => (Some(Verdict::Succeeded), Vec::from_iter(overran)),
        _ => (decision.fails.clone().map(Verdict::Failed), Vec::new()),
    };
    let Some(verdict) = verdict else {
        if let Some(at) = evaluator_wait {
            pass.wake_at(at);
        }
        return advance(view, children, decision, pass);
    };
    // The pass that concludes counts the kubelet restarts it saw, not restarts it decided
    // against.
    pass.status.replica_statuses = counts::replica_statuses(view, children, &book, &[]);
    if matches!(verdict, Verdict::Failed(_)) {
        events = decision.events;
    }
    pass.events(events);
    pass.conclude(view, verdict);
}

/// A job that keeps running applies the restart engine's decision as it is: a whole-job
/// restart's new attempt, the counts, the deletions; then, while the job runs on, the
/// missing children are created and the surplus deleted (docs/behaviour.md §6.2); and
/// Restarting, else Running, follows.
fn advance(view: &JobView<'_>, children: &Replicas, decision: Decision, pass: &mut Pass) {
    if let Some(attempt) = decision.next_attempt {
        pass.status.restart_attempt = Some(attempt);
        pass.status.restart_time = Some(Time(view.now));
    }
    pass.status.replica_statuses =
        counts::replica_statuses(view, children, &decision.book, &decision.delete);
    pass.events(decision.events);
    pass.events(children.stuck_events(view.namespace));
    let (mut pods, mut services) = (Vec::new(), Vec::new());
    if decision.runs_on {
        (pass.plan.create_pods, pass.plan.create_services) = scale::missing(view, children);
        (pods, services) = scale::surplus(view, children);
    }
    pass.delete(pods.into_iter().chain(decision.delete), services);
    match decision.restarting {
        Some(Restarting::Replicas(change)) => pass.change([change]),
        Some(Restarting::Job(message)) => {
            let restarting = Some((REASON_RESTARTING, message.clone()));
            let conditions = &mut pass.status.conditions;
            conditions::present_while(conditions, ConditionType::Restarting, restarting, view.now);
            pass.events([EventNote::warning(REASON_RESTARTING, message)]);
        }
        None if decision.runs_on => progress_running(view, children, pass),
        None => {}
    }
    if let Some(at) = decision.wake_at {
        pass.wake_at(at);
    }
}

/// Running once the deciding replica runs (Restarting until every replica has a pod again).
fn progress_running(view: &JobView<'_>, children: &Replicas, pass: &mut Pass) {
    let restarting = conditions::is_true(&pass.status.conditions, ConditionType::Restarting);
    pass.change(progress::running(view, children, restarting));
}

/// A finished job: clean up by policy and apply the TTL (delete now, or wake up then).
fn finished(view: &JobView<'_>, children: &Replicas, pass: &mut Pass) {
    let (pods, services) = finish::cleanup(view, children);
    pass.delete(pods, services);
    match timers::ttl(view, pass.status.completion_time.as_ref()) {
        Timer::Due => {
            pass.plan.delete_job = true;
            let message = format!(
                "Deleted TFJob {}/{}: ttlSecondsAfterFinished expired",
                view.namespace, view.name
            );
            pass.events([EventNote::normal(REASON_DELETE_JOB, message)]);
        }
        Timer::At(at) => pass.plan.requeue_at = Some(at),
        Timer::Off => {}
    }
}
