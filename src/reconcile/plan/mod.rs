//! The decision core: given a job, what was observed for it and `now`, decide the actions
//! and the new status. Pure: no I/O, no clock, no environment, no API client.
//!
//! `plan` only composes the rules (`rules/`), each in its own module and each returning its
//! decision as a value: `restarts` (exit codes, restarts, backoff), `finish` (success,
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
pub mod replicas;
pub mod rules;
#[cfg(test)]
pub(crate) mod tests;
pub mod view;

use crate::crd::cached::Unreadable;
use crate::crd::validation::validate;
use crate::crd::{ConditionType, MANAGED_BY_MULTIKUEUE, REASON_RESTARTING, TFJob, TFJobStatus};
use conditions::Change;
use model::{Deletion, EventNote, Observed, Plan, Settings};
use replicas::Replicas;
use rules::finish::{self, Cause, Verdict};
use rules::job_restart::{self, JobRestart};
use rules::restarts;
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
    let view = JobView::new(job, now, settings);
    let children = replicas::sort(job, observed, view.counted_attempt());
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
        match invalid(job) {
            Some(errors) => pass.conclude(&view, Verdict::Failed(Cause::Validation(errors))),
            None => run(&view, &children, &mut pass),
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

/// The pass being composed: the status as the rules decided so far, and the plan.
struct Pass {
    status: TFJobStatus,
    plan: Plan,
    now: Timestamp,
}

impl Pass {
    /// Applies condition changes in order, keeping the events of those that took effect.
    fn change<'a>(&mut self, changes: impl IntoIterator<Item = Change<'a>>) {
        let announced = conditions::change_all(&mut self.status.conditions, changes, self.now);
        self.plan.events.extend(announced);
    }

    fn events(&mut self, notes: impl IntoIterator<Item = EventNote>) {
        self.plan.events.extend(notes);
    }

    /// Come back at `at` at the latest.
    fn wake_at(&mut self, at: Timestamp) {
        self.plan.requeue_at = Some(self.plan.requeue_at.map_or(at, |t| t.min(at)));
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
    let restarting = conditions::is_true(&pass.status.conditions, ConditionType::Restarting);
    let since = startup_since(view, &pass.status);
    let (startup, late) = timers::startup(view, children, since);
    let faults = if view.whole_job_restarts() {
        let (decision, events) = job_restart::decide(
            view,
            children,
            &pass.status,
            restarting,
            started,
            late.clone(),
        );
        Faults::WholeJob(decision, events)
    } else {
        Faults::Replicas(restarts::scan(
            view,
            children,
            &book.restarts,
            restarting,
            started,
        ))
    };
    let deadline = timers::deadline(view, pass.status.start_time.as_ref());
    let verdict = if finish::succeeded(view, children) {
        Some(Verdict::Succeeded)
    } else if let Some(cause) = faults.failure() {
        Some(Verdict::Failed(cause))
    } else if deadline == Timer::Due {
        Some(Verdict::Failed(Cause::Deadline))
    } else {
        let seconds = view.recovery.startup_deadline_seconds.unwrap_or_default();
        late.filter(|_| !view.whole_job_restarts())
            .map(|(_, late)| Verdict::Failed(Cause::StartupDeadline { seconds, late }))
    };
    if let Some(verdict) = verdict {
        pass.status.replica_statuses = counts::replica_statuses(view, children, &book, &[]);
        if faults.failure().is_some() && matches!(verdict, Verdict::Failed(_)) {
            pass.events(faults.into_events());
        }
        return pass.conclude(view, verdict);
    }
    for timer in [deadline, startup] {
        if let Timer::At(at) = timer {
            pass.wake_at(at);
        }
    }
    match faults {
        Faults::Replicas(scan) => advance(view, children, scan, book, pass),
        Faults::WholeJob(decision, events) => {
            pass.events(events);
            pass.events(children.stuck_events(view.namespace));
            advance_whole_job(view, children, decision, book, pass);
        }
    }
}

/// The failures of a pass, decided per replica (Kubeflow's way) or for the whole job.
enum Faults {
    Replicas(restarts::FailureScan),
    WholeJob(JobRestart, Vec<EventNote>),
}

impl Faults {
    fn failure(&self) -> Option<Cause> {
        match self {
            Faults::Replicas(scan) => scan.failure.clone(),
            Faults::WholeJob(JobRestart::Fails(cause), _) => Some(cause.clone()),
            Faults::WholeJob(..) => None,
        }
    }

    fn into_events(self) -> Vec<EventNote> {
        match self {
            Faults::Replicas(scan) => scan.events,
            Faults::WholeJob(_, events) => events,
        }
    }
}

/// Where the startup deadline counts from for replicas without a pod: the job's start, or
/// the moment the latest whole-job restart's pods may be created.
fn startup_since(view: &JobView<'_>, status: &TFJobStatus) -> Option<Timestamp> {
    let start = status.start_time.as_ref().map(|t| t.0);
    let restarted = status
        .restart_time
        .as_ref()
        .filter(|_| view.whole_job_restarts())
        .and_then(|t| t.0.checked_add(job_restart::backoff(view.attempt)).ok());
    start.into_iter().chain(restarted).max()
}

/// A job that keeps running, per replica: create what is missing, drop the surplus,
/// restart failed replicas (delete their pods), update Running/Restarting.
fn advance(
    view: &JobView<'_>,
    children: &Replicas,
    scan: restarts::FailureScan,
    book: counts::RestartBook,
    pass: &mut Pass,
) {
    let restarted: Vec<Deletion> = scan.restarts.iter().filter_map(|r| r.pod.clone()).collect();
    let book = counts::RestartBook {
        restarts: scan.counts,
        ..book
    };
    pass.status.replica_statuses = counts::replica_statuses(view, children, &book, &restarted);
    pass.events(scan.events);
    pass.events(children.stuck_events(view.namespace));
    (pass.plan.create_pods, pass.plan.create_services) = scale::missing(view, children);
    let (pods, services) = scale::surplus(view, children);
    pass.delete(pods.into_iter().chain(restarted), services);
    match progress::restarting(view, &scan.restarts) {
        Some(restarting) => pass.change([restarting]),
        None => progress_running(view, children, pass),
    }
}

/// A `restart-scope: Job` job that keeps running (docs/behaviour.md §6.7): a fault restarts
/// every pod as the next attempt; while a restart is under way nothing is created; else it
/// runs on like any job.
fn advance_whole_job(
    view: &JobView<'_>,
    children: &Replicas,
    decision: JobRestart,
    mut book: counts::RestartBook,
    pass: &mut Pass,
) {
    match decision {
        JobRestart::Now(fault) => {
            let attempt = view.attempt.saturating_add(1);
            pass.status.restart_attempt = Some(attempt);
            pass.status.restart_time = Some(Time(view.now));
            let count = book.restarts.entry(fault.t).or_default();
            *count = count.saturating_add(1);
            let deleted = job_restart::pods_to_delete(children);
            pass.status.replica_statuses =
                counts::replica_statuses(view, children, &book, &deleted);
            pass.delete(deleted, Vec::new());
            let (message, event) = progress::restarting_whole_job(view, attempt, &fault);
            let restarting = Some((REASON_RESTARTING, message));
            let conditions = &mut pass.status.conditions;
            conditions::present_while(conditions, ConditionType::Restarting, restarting, view.now);
            pass.events([event]);
            let delay = job_restart::backoff(attempt);
            if !delay.is_zero()
                && let Ok(at) = view.now.checked_add(delay)
            {
                pass.wake_at(at);
            }
        }
        JobRestart::Waiting { delete, until } => {
            pass.status.replica_statuses = counts::replica_statuses(view, children, &book, &[]);
            pass.delete(delete, Vec::new());
            if let Some(at) = until {
                pass.wake_at(at);
            }
        }
        JobRestart::Steady => {
            pass.status.replica_statuses = counts::replica_statuses(view, children, &book, &[]);
            (pass.plan.create_pods, pass.plan.create_services) = scale::missing(view, children);
            let (pods, services) = scale::surplus(view, children);
            pass.delete(pods, services);
            progress_running(view, children, pass);
        }
        JobRestart::Fails(_) => unreachable!("a failing job concludes before it advances"),
    }
}

/// Running once the deciding replica runs (Restarting until every replica has a pod again).
fn progress_running(view: &JobView<'_>, children: &Replicas, pass: &mut Pass) {
    let restarting = conditions::is_true(&pass.status.conditions, ConditionType::Restarting);
    pass.change(progress::running(view, children, restarting));
}

/// A finished job: clean up by policy and apply the TTL (delete now, or wake up then).
fn finished(view: &JobView<'_>, children: &Replicas, pass: &mut Pass) {
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
