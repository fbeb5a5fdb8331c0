//! The Workload conditions the job's side writes (Kueue v0.19.2: `generatePodsReadyCondition`,
//! `workloadfinish.Finish`, the eviction branch of `ReconcileGenericJob` with
//! `SetRequeuedCondition`, `UnsetQuotaReservationWithCondition` and `SyncAdmittedCondition`),
//! each as the Workload status it leads to. Pure.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::workload::{
    ADMITTED, EVICTED_BY_PREEMPTION, EVICTED_DUE_TO_NODE_FAILURES, FINISHED, NO_RESERVATION,
    PENDING, PODS_READY, QUOTA_RESERVED, RECOVERED, REQUEUED, STARTED, WAIT_FOR_RECOVERY,
    WAIT_FOR_START, Workload, WorkloadStatus,
};

/// The longest condition message Kueue writes.
const MAX_MESSAGE: usize = 32 * 1024;

const NOT_READY: &str = "Not all pods are ready or succeeded";
const WAITING_FOR_RECOVERY: &str = "At least one pod has failed, waiting for recovery";
const READY: &str = "All pods reached readiness and the workload is running";

/// A condition to set: type, status, reason, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub type_: &'static str,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

impl Wanted {
    fn new(type_: &'static str, status: bool, reason: &str, message: &str) -> Self {
        Self {
            type_,
            status,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// `PodsReady` as Kueue derives it from the job's `Running` (`running`): False
/// `WaitForStart` until admitted and running; True `Started` (`Recovered` after a loss);
/// after a loss False `WaitForRecovery` until the job runs again.
pub fn pods_ready(workload: &Workload, running: bool) -> Wanted {
    let current = workload.condition(PODS_READY);
    if !workload.admitted() {
        return Wanted::new(PODS_READY, false, WAIT_FOR_START, NOT_READY);
    }
    if running {
        let recovering =
            current.is_some_and(|c| c.reason == WAIT_FOR_RECOVERY || c.reason == RECOVERED);
        let reason = if recovering { RECOVERED } else { STARTED };
        return Wanted::new(PODS_READY, true, reason, READY);
    }
    match current {
        Some(c) if c.status == "True" || c.reason == WAIT_FOR_RECOVERY => {
            Wanted::new(PODS_READY, false, WAIT_FOR_RECOVERY, WAITING_FOR_RECOVERY)
        }
        _ => Wanted::new(PODS_READY, false, WAIT_FOR_START, NOT_READY),
    }
}

/// Whether the Workload already has this condition with the same status and reason (Kueue
/// writes `PodsReady` only when one of them changes).
pub fn has(workload: &Workload, wanted: &Wanted) -> bool {
    workload
        .condition(wanted.type_)
        .is_some_and(|c| c.status == status_word(wanted.status) && c.reason == wanted.reason)
}

/// The Workload's status with `wanted` set (`meta.SetStatusCondition`: a new status moves
/// the transition time; reason, message and generation always follow).
pub fn with_condition(workload: &Workload, wanted: &Wanted, now: Timestamp) -> WorkloadStatus {
    let mut status = workload.status.clone();
    set(
        &mut status.conditions,
        wanted,
        workload.metadata.generation,
        now,
    );
    status
}

/// `Finished` True with the job's outcome.
pub fn finished(reason: &str, message: &str) -> Wanted {
    Wanted::new(FINISHED, true, reason, message)
}

/// The quota given back once an evicted job has no active pod: `Requeued` (True only after
/// a preemption or a node failure), `QuotaReserved` False, no admission, and `Admitted` False
/// with the admitted time added to the past execution time.
pub fn released(
    workload: &Workload,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> WorkloadStatus {
    let generation = workload.metadata.generation;
    let mut status = workload.status.clone();
    let requeued = reason == EVICTED_BY_PREEMPTION || reason == EVICTED_DUE_TO_NODE_FAILURES;
    let requeue = Wanted::new(REQUEUED, requeued, reason, message);
    set(&mut status.conditions, &requeue, generation, now);
    let unreserved = Wanted::new(QUOTA_RESERVED, false, PENDING, message);
    set(&mut status.conditions, &unreserved, generation, now);
    status.admission = None;
    if let Some(admitted) = status
        .conditions
        .iter()
        .find(|c| c.type_ == ADMITTED && c.status == "True")
    {
        let seconds = now
            .duration_since(admitted.last_transition_time.0)
            .as_secs();
        let seconds = i32::try_from(seconds).unwrap_or(i32::MAX);
        let past = status.accumulated_past_execution_time_seconds.unwrap_or(0);
        status.accumulated_past_execution_time_seconds = Some(past.saturating_add(seconds));
        let checks_ready = status.admission_checks.iter().all(|c| c.state == "Ready");
        let (reason, message) = if checks_ready {
            (NO_RESERVATION, "The workload has no reservation")
        } else {
            (
                "NoReservationUnsatisfiedChecks",
                "The workload has no reservation and not all checks ready",
            )
        };
        let not_admitted = Wanted::new(ADMITTED, false, reason, message);
        set(&mut status.conditions, &not_admitted, generation, now);
    }
    status
}

fn set(conditions: &mut Vec<Condition>, wanted: &Wanted, generation: Option<i64>, now: Timestamp) {
    let status = status_word(wanted.status);
    let message = truncate(&wanted.message);
    match conditions.iter_mut().find(|c| c.type_ == wanted.type_) {
        Some(c) => {
            if c.status != status {
                c.status = status.into();
                c.last_transition_time = Time(now);
            }
            c.reason = wanted.reason.clone();
            c.message = message;
            c.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: wanted.type_.into(),
            status: status.into(),
            reason: wanted.reason.clone(),
            message,
            observed_generation: generation,
            last_transition_time: Time(now),
        }),
    }
}

fn status_word(status: bool) -> &'static str {
    if status { "True" } else { "False" }
}

fn truncate(message: &str) -> String {
    if message.len() <= MAX_MESSAGE {
        return message.to_string();
    }
    let mut end = MAX_MESSAGE - 3;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kueue::plan::workload::Admission;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn admitted_at(seconds: i64) -> Workload {
        let mut w = Workload::default();
        for t in [QUOTA_RESERVED, ADMITTED] {
            set(
                &mut w.status.conditions,
                &Wanted::new(t, true, t, ""),
                None,
                at(seconds),
            );
        }
        w.status.admission = Some(Admission::default());
        w
    }

    fn apply(w: &mut Workload, wanted: &Wanted) {
        w.status = with_condition(w, wanted, at(100));
    }

    /// Readiness, then a whole-job restart: the loss, then the recovery, with Kueue's
    /// reasons.
    #[test]
    fn pods_ready_follows_running_through_a_loss_and_a_recovery() {
        let queued = Workload::default();
        assert_eq!(pods_ready(&queued, true).reason, WAIT_FOR_START);
        let mut w = admitted_at(0);
        let steps = [
            (false, false, WAIT_FOR_START),
            (true, true, STARTED),
            (false, false, WAIT_FOR_RECOVERY),
            (false, false, WAIT_FOR_RECOVERY),
            (true, true, RECOVERED),
            (false, false, WAIT_FOR_RECOVERY),
            (true, true, RECOVERED),
        ];
        for (running, status, reason) in steps {
            let wanted = pods_ready(&w, running);
            assert_eq!((wanted.status, wanted.reason.as_str()), (status, reason));
            apply(&mut w, &wanted);
            assert!(has(&w, &wanted));
        }
    }

    #[test]
    fn releasing_the_quota_clears_the_admission_and_counts_the_time_admitted() {
        let w = admitted_at(0);
        let status = released(
            &w,
            EVICTED_BY_PREEMPTION,
            "Preempted to accommodate a workload",
            at(42),
        );
        assert_eq!(status.admission, None);
        let find = |t: &str| status.conditions.iter().find(|c| c.type_ == t).unwrap();
        assert_eq!(
            (
                find(QUOTA_RESERVED).status.as_str(),
                find(QUOTA_RESERVED).reason.as_str()
            ),
            ("False", PENDING)
        );
        assert_eq!(
            (
                find(ADMITTED).status.as_str(),
                find(ADMITTED).reason.as_str()
            ),
            ("False", NO_RESERVATION)
        );
        assert_eq!(find(REQUEUED).status, "True");
        assert_eq!(status.accumulated_past_execution_time_seconds, Some(42));
        // A deactivation does not requeue.
        let status = released(&w, "Deactivated", "", at(1));
        assert_eq!(
            status
                .conditions
                .iter()
                .find(|c| c.type_ == REQUEUED)
                .unwrap()
                .status,
            "False"
        );
    }
}
