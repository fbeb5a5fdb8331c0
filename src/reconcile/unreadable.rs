//! The status of a TFJob whose spec cannot be read at all (a value of the wrong type that the
//! CRD schema did not catch, e.g. an object stored under an older CRD). Pure.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::DynamicObject;

use super::model::{EventNote, EventType};
use crate::crd::{
    ConditionStatus, ConditionType, JobCondition, REASON_FAILED_VALIDATION, TFJobStatus,
};

/// The object's current status, if it can be read.
pub fn current_status(obj: &DynamicObject) -> Option<TFJobStatus> {
    obj.data
        .get("status")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
}

/// `Failed=True` with reason `TFJobFailedValidation` and the problem as message, added once;
/// a job already failed keeps its status.
pub fn failed_status(
    current: Option<&TFJobStatus>,
    name: &str,
    problem: &str,
    now: Timestamp,
) -> (TFJobStatus, EventNote) {
    let message = format!("TFJob {name} is invalid: {problem}");
    let note = EventNote {
        type_: EventType::Warning,
        reason: REASON_FAILED_VALIDATION.into(),
        message: message.clone(),
    };
    let mut status = current.cloned().unwrap_or_default();
    let failed = status
        .conditions
        .iter()
        .any(|c| c.type_ == ConditionType::Failed && c.status == ConditionStatus::True);
    if !failed {
        status.conditions.push(JobCondition {
            type_: ConditionType::Failed,
            status: ConditionStatus::True,
            reason: Some(REASON_FAILED_VALIDATION.into()),
            message: Some(message),
            last_update_time: Some(Time(now)),
            last_transition_time: Some(Time(now)),
        });
        status.completion_time.get_or_insert(Time(now));
    }
    (status, note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_job_fails_once_with_the_problem() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let problem =
            "spec.tfReplicaSpecs.Worker.replicas: invalid type: string \"two\", expected i32";
        let (status, note) = failed_status(None, "bad", problem, now);
        assert_eq!(status.conditions.len(), 1);
        let c = &status.conditions[0];
        assert_eq!(
            (c.type_, c.status),
            (ConditionType::Failed, ConditionStatus::True)
        );
        assert_eq!(c.reason.as_deref(), Some("TFJobFailedValidation"));
        assert!(
            c.message
                .as_deref()
                .unwrap()
                .contains("spec.tfReplicaSpecs.Worker.replicas")
        );
        assert_eq!(note.reason, "TFJobFailedValidation");
        // Applying it again changes nothing: no write, no new condition.
        let later = now + jiff::SignedDuration::from_secs(60);
        let (again, _) = failed_status(Some(&status), "bad", problem, later);
        assert_eq!(again, status);
    }
}
