//! The decision core: given a job, what was observed for it and `now`, decide the actions
//! and the new status. Pure: no I/O, no clock, no environment.
//!
//! `plan` only composes the rules, each in its own module and each returning its decision
//! as a value: `replicas` (what was observed), `restarts` (exit codes, restarts, backoff),
//! `finish` (success, failure, cleanup), `timers` (deadline, TTL), `suspend`, `progress`
//! (Created/Running/Restarting), `children` (create, scale down), `counts`
//! (replicaStatuses). The composer applies their condition changes (`conditions`) in the
//! order it consults them, which is visible below and is the order of the conditions list.
//!
//! Decisions beyond the wording of docs/behaviour.md (recorded there too):
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

use super::conditions::{self, Change};
use super::finish::{self, Cause, Verdict};
use super::model::{Deletion, EventNote, Observed, Plan, Settings};
use super::replicas::{self, Children};
use super::restarts::{self, Restart};
use super::timers::{self, Timer};
use super::view::JobView;
use super::{children, counts, gang, progress, suspend};
use crate::crd::validation::validate;
use crate::crd::{ConditionType, MANAGED_BY_MULTIKUEUE, TFJob, TFJobStatus};

pub use super::progress::REASON_SET_RESTART_POLICY;

/// Event reason: the TTL after finishing expired and the job is deleted.
pub const REASON_DELETE_JOB: &str = "SuccessfulDeleteJob";

/// Decide what to do for `job`: a composer of one rule per step (docs/behaviour.md §6, §7).
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
    let children = replicas::sort_children(job, observed);
    let mut pass = Pass {
        status: job.status.clone().unwrap_or_default(),
        plan: Plan {
            events: children.foreign_events(view.namespace, view.name),
            ..Plan::default()
        },
        now,
    };
    if !conditions::is_finished(&pass.status) {
        match invalid(job) {
            Some(errors) => pass.conclude(&view, Verdict::Failed(Cause::Validation(errors))),
            None => run(&view, &children, &mut pass),
        }
    }
    if conditions::is_finished(&pass.status) {
        finished(&view, &children, &mut pass);
    }
    gang_scheduling(&view, observed, settings, &mut pass);
    pass.plan.status = Some(pass.status);
    pass.plan
}

/// The job's PodGroup follows it (docs/behaviour.md §8): there while it runs, gone when it is
/// suspended or finished; its new pods join the gang.
fn gang_scheduling(view: &JobView<'_>, observed: &Observed, settings: &Settings, pass: &mut Pass) {
    let state = gang::rule::JobState {
        wants_no_group: conditions::is_finished(&pass.status) || view.suspended(),
        running: conditions::is_true(&pass.status.conditions, ConditionType::Running),
        now: pass.now,
    };
    let gang = settings.gang.as_ref();
    let decision = gang::rule::decide(
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

/// The pass being composed: the status as the rules decided so far, and the plan.
struct Pass {
    status: TFJobStatus,
    plan: Plan,
    now: Timestamp,
}

impl Pass {
    /// Applies condition changes in order, keeping the events of those that took effect.
    fn change<'a>(&mut self, changes: impl IntoIterator<Item = Change<'a>>) {
        let announced = conditions::apply(&mut self.status.conditions, changes, self.now);
        self.plan.events.extend(announced);
    }

    fn events(&mut self, notes: impl IntoIterator<Item = EventNote>) {
        self.plan.events.extend(notes);
    }

    fn delete(&mut self, pods: impl IntoIterator<Item = Deletion>, services: Vec<Deletion>) {
        self.plan.delete_pods.extend(pods);
        self.plan.delete_services.extend(services);
    }

    /// The job ends: terminal conditions, `completionTime`, and on success the counts settle.
    fn conclude(&mut self, view: &JobView<'_>, verdict: Verdict) {
        self.change(finish::conclude(view, &verdict));
        self.status.completion_time = Some(Time(self.now));
        // The counts are final (docs/behaviour.md §6.4): the per-pod record that kept them
        // from counting a kubelet restart twice has done its job and leaves the status.
        for counts in self.status.replica_statuses.values_mut() {
            counts.pod_restarts.clear();
        }
        if verdict == Verdict::Succeeded {
            let statuses = std::mem::take(&mut self.status.replica_statuses);
            self.status.replica_statuses = finish::settle_counts(statuses);
        }
    }
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

/// An unfinished, valid job: Created, then suspend, or resume and run to a verdict.
fn run(view: &JobView<'_>, children: &Children, pass: &mut Pass) {
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
    let restarting = conditions::is_true(&pass.status.conditions, ConditionType::Restarting);
    let scan = restarts::scan(view, children, &book.restarts, restarting, started);
    let deadline = timers::deadline(view, pass.status.start_time.as_ref());
    let verdict = if finish::succeeded(view, children) {
        Some(Verdict::Succeeded)
    } else if let Some(cause) = scan.failure.clone() {
        Some(Verdict::Failed(cause))
    } else {
        (deadline == Timer::Due).then_some(Verdict::Failed(Cause::Deadline))
    };
    let Some(verdict) = verdict else {
        let restarted: Vec<Deletion> = scan.restarts.iter().filter_map(|r| r.pod.clone()).collect();
        let book = counts::RestartBook {
            restarts: scan.counts,
            ..book
        };
        pass.status.replica_statuses = counts::replica_statuses(view, children, &book, &restarted);
        pass.events(scan.events);
        pass.events(children.stuck_events(view.namespace));
        return advance(view, children, &scan.restarts, restarted, deadline, pass);
    };
    pass.status.replica_statuses = counts::replica_statuses(view, children, &book, &[]);
    if scan.failure.is_some() && matches!(verdict, Verdict::Failed(_)) {
        pass.events(scan.events);
    }
    pass.conclude(view, verdict);
}

/// A job that keeps running: create what is missing, drop the surplus, restart failed
/// replicas (`restarted`: their pods), update Running/Restarting and wake up for the
/// deadline.
fn advance(
    view: &JobView<'_>,
    children: &Children,
    restarts: &[Restart],
    restarted: Vec<Deletion>,
    deadline: Timer,
    pass: &mut Pass,
) {
    (pass.plan.create_pods, pass.plan.create_services) = children::missing(view, children);
    let (pods, services) = children::surplus(view, children);
    pass.delete(pods.into_iter().chain(restarted), services);
    match progress::restarting(view, restarts) {
        Some(restarting) => pass.change([restarting]),
        None => {
            let restarting =
                conditions::is_true(&pass.status.conditions, ConditionType::Restarting);
            pass.change(progress::running(view, children, restarting));
        }
    }
    if let Timer::At(at) = deadline {
        pass.plan.requeue_at = Some(at);
    }
}

/// A finished job: clean up by policy and apply the TTL (delete now, or wake up then).
fn finished(view: &JobView<'_>, children: &Children, pass: &mut Pass) {
    let (pods, services) = finish::cleanup(view, &pass.status, children);
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

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
