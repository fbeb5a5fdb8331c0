//! The restart engine (docs/behaviour.md §6.2, §6.4, §6.7): one decision per pass about the
//! job's failures, whatever the restart scope. `classify` says what happened to each replica
//! and what it asks for; `replica` restarts replicas one by one (Kubeflow's way) within the
//! restart budget; `job` restarts every pod together as the next attempt. `decide` puts them
//! together with the clocks the timers report, in one order, into one `Decision` that the
//! composer applies as it is. Pure.

pub mod classify;
pub mod describe;
pub mod job;
pub mod replica;

use jiff::Timestamp;

use crate::crd::ReplicaType;
use crate::crd::settings::MAX_JOB_RESTARTS;
use crate::crd::settings::{FAILURE_RULES, RuleAction};
use crate::crd::{ConditionType, TFJobStatus};
use crate::reconcile::plan::conditions::{self, Change};
use crate::reconcile::plan::model::{Deletion, EventNote};
use crate::reconcile::plan::replicas::Replicas;
use crate::reconcile::plan::replicas::{ChildPod, Key};
use crate::reconcile::plan::rules::counts::RestartBook;
use crate::reconcile::plan::rules::finish::Cause;
use crate::reconcile::plan::rules::timers::{Clocks, Late, Timer};
use crate::reconcile::plan::view::JobView;

/// Event reason naming a failed pod and its exit code.
pub const REASON_EXITED_WITH_CODE: &str = "ExitedWithCode";

/// What the restart engine decided for one pass of a running job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// The job fails, and why; then only `events` apply.
    pub fails: Option<Cause>,
    /// Pods to delete: those of restarted replicas, of the job restarted, of earlier attempts.
    pub delete: Vec<Deletion>,
    /// Whether the job runs on: missing children are created, surplus ones deleted, Running
    /// follows the pods. Not while a whole-job restart is under way.
    pub runs_on: bool,
    /// The restart counts after this pass.
    pub book: RestartBook,
    /// `ExitedWithCode` for the failed pods decided on.
    pub events: Vec<EventNote>,
    pub restarting: Option<Restarting>,
    /// The attempt a whole-job restart starts now (`restartTime` is now).
    pub next_attempt: Option<i32>,
    /// Come back then at the latest: a clock, or the end of a restart's delay.
    pub wake_at: Option<Timestamp>,
}

/// How the `Restarting` condition tells a restart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Restarting {
    /// Replicas restart: Kubeflow's words, announced when the condition turns True.
    Replicas(Change<'static>),
    /// The job restarts as a new attempt: the condition says which and why, and every such
    /// restart is announced, even while the condition is already True.
    Job(String),
}

/// What a failure asks of the restart engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The replica failed for good: the job fails. A failure rule's `FailJob` fails it at
    /// once; a permanent failure of the replica's restart policy unless a whole-job restart
    /// of the same pass takes it along (a peer exiting because of the fault).
    Fail,
    /// The replica's pod is deleted (if it is still there) and created again.
    RestartReplica,
    /// Every pod of the job restarts together, as the next attempt.
    RestartJob,
}

/// Whether a restart uses up the job's restart budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    Charged,
    /// A disruption, or a failure a rule restarts uncharged.
    Uncharged,
    /// A disrupted pod whose restart an earlier pass counted: it is only deleted (again) if
    /// it is still there.
    Counted,
}

/// One replica's failure in this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault<'a> {
    pub key: Key,
    /// The failed pod; none when it was deleted from outside.
    pub pod: Option<&'a ChildPod>,
    pub action: Action,
    pub charge: Charge,
    /// The failure rule that decided, by its index, and its action, if one did.
    pub rule: Option<(usize, RuleAction)>,
    /// A disruption ended the pod.
    pub disrupted: bool,
    /// What happened: `pod j-worker-1 exited with code 137 (OOMKilled)`, `pod j-worker-1
    /// was deleted`, `pod j-worker-1 was disrupted (EvictionByEvictionAPI)`.
    pub what: String,
}

impl Fault<'_> {
    pub fn t(&self) -> ReplicaType {
        self.key.0
    }

    /// `Pod: <ns>.<pod> exited with code <code>` for a failed pod whose `tensorflow` container
    /// exited; none when it never terminated.
    pub fn exited_event(&self, namespace: &str) -> Option<EventNote> {
        let pod = self.pod?;
        let code = pod.exit_code?;
        Some(EventNote::warning(
            REASON_EXITED_WITH_CODE,
            format!("Pod: {namespace}.{} exited with code {code}", pod.name),
        ))
    }

    /// Whether a rule's `FailJob` decided it.
    pub fn failed_by_rule(&self) -> bool {
        self.action == Action::Fail && self.rule.is_some()
    }

    /// What happened and, when it matters, what decided: `pod j-ps-0 exited with code 1
    /// (tfjob-operator.dev/failure-rules[0]: FailJob)`, `pod j-worker-1 failed (Evicted): a
    /// disruption, not charged`.
    pub fn words(&self) -> String {
        match self.rule {
            Some((i, action)) => {
                format!("{} ({FAILURE_RULES}[{i}]: {})", self.what, action.as_str())
            }
            None if self.disrupted => format!("{}: a disruption, not charged", self.what),
            None => self.what.clone(),
        }
    }
}

impl Decision {
    fn failing(cause: Cause, events: Vec<EventNote>) -> Self {
        Self {
            fails: Some(cause),
            events,
            ..Self::default()
        }
    }

    fn wake(&mut self, at: Timestamp) {
        self.wake_at = Some(self.wake_at.map_or(at, |t| t.min(at)));
    }
}

/// Decides about the job's failures in this pass. `started`: the job had a startTime before
/// this pass; `book`: the restart counts with this pass's kubelet restarts; `clocks`: what the
/// timers report. In order: a whole-job restart still under way waits; then the failures
/// (`classify`): one that restarts the job restarts it (and takes every other failure of the
/// pass along), else the replicas' failures and restarts are decided one by one; then, if
/// nothing failed the job, `activeDeadlineSeconds`, then the startup deadline, which fails a
/// job whose replicas restart alone and restarts one whose pods restart together.
pub fn decide(
    view: &JobView<'_>,
    children: &Replicas,
    status: &TFJobStatus,
    started: bool,
    book: RestartBook,
    clocks: Clocks,
) -> Decision {
    let restarting = conditions::is_true(&status.conditions, ConditionType::Restarting);
    let late = clocks.late.clone();
    let mut decision = match job::waiting(view, children, status, &book) {
        Some(waiting) => waiting,
        None => {
            let faults = classify::faults(view, children, &book, restarting, started);
            on_faults(view, children, &faults, book, late.clone())
        }
    };
    if decision.fails.is_none() {
        if clocks.deadline == Timer::Due {
            return Decision::failing(Cause::Deadline, Vec::new());
        }
        if let Some(late) = late.filter(|_| !view.whole_job_restarts()) {
            let (seconds, late) = (late.seconds, late.words);
            return Decision::failing(Cause::StartupDeadline { seconds, late }, Vec::new());
        }
    }
    for timer in [clocks.deadline, clocks.startup] {
        if let Timer::At(at) = timer {
            decision.wake(at);
        }
    }
    decision
}

/// The failures in order of precedence: a failure rule's `FailJob` fails the job at once;
/// else a failure that restarts the job restarts it, taking every other failure of the pass
/// along (uncharged if any of those that ask for it is: a disruption explains its peers'
/// failures); else the replicas' failures and restarts are decided one by one.
fn on_faults(
    view: &JobView<'_>,
    children: &Replicas,
    faults: &[Fault<'_>],
    book: RestartBook,
    late: Option<Late>,
) -> Decision {
    if let Some(fault) = faults.iter().find(|f| f.failed_by_rule()) {
        let cause = Cause::Rule {
            t: fault.t(),
            fault: fault.words(),
        };
        let events = faults.iter().filter(|f| f.action == Action::Fail);
        let events = events
            .filter_map(|f| f.exited_event(view.namespace))
            .collect();
        return Decision::failing(cause, events);
    }
    let restarting: Vec<&Fault> = faults
        .iter()
        .filter(|f| f.action == Action::RestartJob)
        .collect();
    let uncharged = restarting.iter().find(|f| f.charge == Charge::Uncharged);
    let cause = match (uncharged, restarting.first()) {
        (Some(f), _) | (None, Some(f)) => Some(job::Cause {
            t: f.t(),
            words: f.words(),
            charged: uncharged.is_none(),
        }),
        (None, None) => late
            .filter(|_| view.whole_job_restarts())
            .map(|late| job::Cause {
                t: late.key.0,
                words: late.words,
                charged: true,
            }),
    };
    match cause {
        Some(cause) => job::restart(view, children, faults, cause, book, budget(view)),
        None => replica::decide(view, faults, book, budget(view).0),
    }
}

/// The job's restart budget: how many charged restarts it may make (none: no limit), and the
/// setting that says so: `max-job-restarts` under `restart-scope: Job`, else `backoffLimit`.
pub fn budget(view: &JobView<'_>) -> (Option<i32>, &'static str) {
    let whole_job = view.settings.max_job_restarts;
    match whole_job.filter(|_| view.whole_job_restarts()) {
        Some(n) => (Some(n), MAX_JOB_RESTARTS),
        None => (view.run_policy.backoff_limit, "spec.runPolicy.backoffLimit"),
    }
}
