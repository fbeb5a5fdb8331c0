//! The decision core: given a job, what was observed for it and `now`, decide the actions
//! and the new status. Pure: no I/O, no clock, no environment.
//!
//! `plan` only composes the rules, each in its own module: `replicas` (what was observed),
//! `restarts` (exit codes, restarts, backoff), `finish` (success, failure, cleanup),
//! `timers` (deadline, TTL), `suspend`, `progress` (Running/Restarting), `children`
//! (create, scale down), `counts` (replicaStatuses), `conditions` (the flip rule).
//!
//! Decisions beyond the contract's wording:
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

use super::conditions::{self, Wanted};
use super::finish::{self, Cause, Verdict};
use super::model::{EventNote, Observed, Plan, Settings};
use super::replicas::{self, Children};
use super::timers::{self, Timer};
use super::view::JobView;
use super::{children, counts, desired, progress, restarts, suspend};
use crate::crd::validation::validate;
use crate::crd::{ConditionType, MANAGED_BY_MULTIKUEUE, REASON_CREATED, TFJob, TFJobStatus};

/// Event reason: a template's own restartPolicy is overridden (once per job).
pub const REASON_SET_RESTART_POLICY: &str = "SetPodTemplateRestartPolicy";
/// Event reason: the TTL after finishing expired and the job is deleted.
pub const REASON_DELETE_JOB: &str = "SuccessfulDeleteJob";

/// Decide what to do for `job`: a composer of one rule per step (contract §6, §7).
///
/// Jobs handed to MultiKueue (`managedBy: kueue.x-k8s.io/multikueue`) and jobs being
/// deleted get an empty plan and no status: the first are someone else's, the second are
/// left to garbage collection. A finished job only cleans up and waits for its TTL.
pub fn plan(job: &TFJob, observed: &Observed, now: Timestamp, settings: &Settings) -> Plan {
    let managed_elsewhere = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.managed_by.as_deref())
        == Some(MANAGED_BY_MULTIKUEUE);
    if managed_elsewhere || job.metadata.deletion_timestamp.is_some() {
        return Plan::default();
    }
    let view = JobView::new(job, now, settings);
    let children = replicas::observe(job, observed);
    let mut status = job.status.clone().unwrap_or_default();
    let mut out = Plan {
        events: children.foreign_events(view.namespace, view.name),
        ..Plan::default()
    };
    if !conditions::is_finished(&status) {
        match invalid(job) {
            Some(errors) => {
                let verdict = Verdict::Failed(Cause::Validation(errors));
                out.events
                    .push(finish::conclude(&view, &mut status, &verdict));
            }
            None => run(&view, &children, &mut status, &mut out),
        }
    }
    if conditions::is_finished(&status) {
        finished(&view, &children, &status, &mut out);
    }
    out.status = Some(status);
    out
}

/// Every validation problem, joined by "; " so the message stays one line in
/// `kubectl get -o wide` and in events. Keys of `tfReplicaSpecs` that name no type are
/// validation's to report; they are checked here too so such a job can never run even if
/// validation let it through.
fn invalid(job: &TFJob) -> Option<String> {
    let errors: Vec<String> = match validate(job) {
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
        Ok(()) => job
            .spec
            .tf_replica_specs
            .rejected_keys
            .iter()
            .map(|k| format!("spec.tfReplicaSpecs[{k}]: Unsupported value: {k:?}"))
            .collect(),
    };
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// An unfinished, valid job: first-reconcile conditions, then suspend, or resume and run.
fn run(view: &JobView<'_>, children: &Children, status: &mut TFJobStatus, out: &mut Plan) {
    created(view, status, out);
    // Kubelet restarts are facts whatever this pass decides: counted first, on every pass
    // of a running job (suspending, concluding or not).
    let book =
        counts::RestartBook::recorded(&status.replica_statuses).with_kubelet_restarts(children);
    if view.suspended() {
        suspend::suspend(view, children, status, out);
        status.replica_statuses = counts::replica_statuses(view, children, &book, &out.delete_pods);
        return;
    }
    let started = status.start_time.is_some() && !suspend::resume(view, status, out);
    status.start_time.get_or_insert(Time(view.now));
    let restarting = conditions::is_true(&status.conditions, ConditionType::Restarting);
    let scan = restarts::scan(view, children, &book.restarts, restarting, started);
    let verdict = if finish::succeeded(view, children) {
        Some(Verdict::Succeeded)
    } else if let Some(cause) = scan.failure.clone() {
        Some(Verdict::Failed(cause))
    } else {
        (timers::deadline(view, status) == Timer::Due).then_some(Verdict::Failed(Cause::Deadline))
    };
    let Some(verdict) = verdict else {
        let restarted: Vec<_> = scan.restarts.iter().filter_map(|r| r.pod.clone()).collect();
        let book = counts::RestartBook {
            restarts: scan.counts,
            ..book
        };
        status.replica_statuses = counts::replica_statuses(view, children, &book, &restarted);
        out.events.extend(scan.events);
        out.events.extend(children.stuck_events(view.namespace));
        return advance(view, children, &scan.restarts, status, out);
    };
    status.replica_statuses = counts::replica_statuses(view, children, &book, &[]);
    if scan.failure.is_some() && matches!(verdict, Verdict::Failed(_)) {
        out.events.extend(scan.events);
    }
    out.events.push(finish::conclude(view, status, &verdict));
}

/// First reconcile: Created=True, and the one warning about overridden template restart
/// policies (emitted with the condition, so once per job).
fn created(view: &JobView<'_>, status: &mut TFJobStatus, out: &mut Plan) {
    let message = format!("TFJob {} is created.", view.name);
    let wanted = Wanted::new(
        ConditionType::Created,
        true,
        REASON_CREATED,
        message.clone(),
    );
    if !conditions::set(&mut status.conditions, wanted, view.now) {
        return;
    }
    out.events.push(EventNote::normal(REASON_CREATED, message));
    if desired::template_sets_restart_policy(view.job) {
        let message = "Restart policy in pod template is overridden by the replica's \
                       restartPolicy"
            .to_string();
        out.events
            .push(EventNote::warning(REASON_SET_RESTART_POLICY, message));
    }
}

/// A job that keeps running: create what is missing, drop the surplus, restart failed
/// replicas, update Running/Restarting and wake up for the deadline.
fn advance(
    view: &JobView<'_>,
    children: &Children,
    restarts: &[restarts::Restart],
    status: &mut TFJobStatus,
    out: &mut Plan,
) {
    (out.create_pods, out.create_services) = children::missing(view, children);
    let (pods, services) = children::surplus(view, children);
    out.delete_pods.extend(pods);
    out.delete_services.extend(services);
    progress::restart(view, restarts, status, out);
    if restarts.is_empty() {
        progress::update_running(view, children, status);
    }
    if let Timer::At(at) = timers::deadline(view, status) {
        out.requeue_at = Some(at);
    }
}

/// A finished job: clean up by policy and apply the TTL (delete now, or wake up then).
fn finished(view: &JobView<'_>, children: &Children, status: &TFJobStatus, out: &mut Plan) {
    let (pods, services) = finish::cleanup(view, status, children);
    out.delete_pods.extend(pods);
    out.delete_services.extend(services);
    match timers::ttl(view, status) {
        Timer::Due => {
            out.delete_job = true;
            let message = format!(
                "Deleted TFJob {}/{}: ttlSecondsAfterFinished expired",
                view.namespace, view.name
            );
            out.events
                .push(EventNote::normal(REASON_DELETE_JOB, message));
        }
        Timer::At(at) => out.requeue_at = Some(at),
        Timer::Off => {}
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
