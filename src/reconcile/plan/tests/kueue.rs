//! The Kueue mode's rule in the TFJob controller (docs/kueue.md): a running job's new queue name
//! is refused (`ChangeRefused`) while it stands.

use super::*;
use crate::reconcile::plan::model::{Observed, Settings};

const QUEUE: &str = "kueue.x-k8s.io/queue-name";

fn queued(suspend: bool) -> TFJob {
    let mut j = job("j", &[(Worker, 2, Never)]);
    j.metadata.labels = Some([(QUEUE.to_string(), "q".to_string())].into());
    j.spec.run_policy.get_or_insert_default().suspend = Some(suspend);
    j
}

fn types(plan: &Plan) -> Vec<(ConditionType, ConditionStatus)> {
    let status = plan.status.as_ref().unwrap();
    status
        .conditions
        .iter()
        .map(|c| (c.type_, c.status))
        .collect()
}

#[test]
fn a_running_jobs_new_queue_is_refused_while_it_stands() {
    let mut observed = Observed {
        workload_queue: Some("old".into()),
        ..Observed::default()
    };
    let job = queued(false);
    let refused = plan(Ok(&job), "j", &observed, at(1), &Settings::default());
    let status = refused.status.as_ref().unwrap();
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::ChangeRefused)
        .expect("ChangeRefused");
    assert_eq!(c.reason.as_deref(), Some("QueueNameImmutable"));
    assert_eq!(
        c.message.as_deref(),
        Some(
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"q\": field is immutable while the job is not suspended; it stays in LocalQueue \"old\""
        )
    );
    assert!(
        refused
            .events
            .iter()
            .any(|e| e.reason == "QueueNameImmutable")
    );
    // The label put back: gone.
    observed.workload_queue = Some("q".into());
    let mut again = job.clone();
    again.status = refused.status.clone();
    let back = plan(Ok(&again), "j", &observed, at(2), &Settings::default());
    assert!(
        !types(&back)
            .iter()
            .any(|(t, _)| *t == ConditionType::ChangeRefused)
    );
    // A suspended job (waiting for admission) may change queue.
    observed.workload_queue = Some("old".into());
    let waiting = plan(
        Ok(&queued(true)),
        "j",
        &observed,
        at(1),
        &Settings::default(),
    );
    assert!(
        !types(&waiting)
            .iter()
            .any(|(t, _)| *t == ConditionType::ChangeRefused)
    );
}
