//! The plan for a TFJob whose spec cannot be read at all (a value of the wrong type that the
//! CRD schema did not catch, e.g. an object stored under an older CRD): it fails with reason
//! `TFJobFailedValidation`, the field named, and nothing is created. Pure.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::crd::cached::Unreadable;
use crate::crd::{ConditionStatus, ConditionType, JobCondition, REASON_FAILED_VALIDATION};
use crate::reconcile::plan::model::{EventNote, Plan};

/// `Failed=True` with reason `TFJobFailedValidation` and the problem as message, added once;
/// a job already failed keeps its status.
pub fn plan(job: &Unreadable, name: &str, now: Timestamp) -> Plan {
    let message = format!("TFJob {name} is invalid: {}", job.problem);
    let mut status = job.status.clone().unwrap_or_default();
    let failed = status
        .conditions
        .iter()
        .any(|c| c.type_ == ConditionType::Failed && c.status == ConditionStatus::True);
    if !failed {
        status.conditions.push(JobCondition {
            type_: ConditionType::Failed,
            status: ConditionStatus::True,
            reason: Some(REASON_FAILED_VALIDATION.into()),
            message: Some(message.clone()),
            last_update_time: Some(Time(now)),
            last_transition_time: Some(Time(now)),
        });
        status.completion_time.get_or_insert(Time(now));
    }
    Plan {
        status: Some(status),
        events: vec![EventNote::warning(REASON_FAILED_VALIDATION, message)],
        ..Plan::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_job_fails_once_with_the_problem() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let mut job = Unreadable {
            metadata: Default::default(),
            status: None,
            problem: "spec.tfReplicaSpecs.Worker.replicas: invalid type: string \"two\", \
                      expected i32"
                .into(),
        };
        let plan1 = plan(&job, "bad", now);
        let status = plan1.status.clone().unwrap();
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
        assert_eq!(plan1.events[0].reason, "TFJobFailedValidation");
        assert!(plan1.create_pods.is_empty() && plan1.create_services.is_empty());
        // Planning again on the written status changes nothing: no write, no new condition.
        job.status = Some(status.clone());
        let later = now + jiff::SignedDuration::from_secs(60);
        assert_eq!(plan(&job, "bad", later).status, Some(status));
    }
}
