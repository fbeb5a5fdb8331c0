//! The Kueue mode's two rules in the TFJob controller (docs/kueue.md): a queued job is held as
//! suspended until admitted, and a running job's new queue name is refused (`ChangeRefused`).

use super::*;
use crate::reconcile::plan::model::{Observed, Settings};

const QUEUE: &str = "kueue.x-k8s.io/queue-name";

fn queued(admitted: bool) -> TFJob {
    let mut j = job("j", &[(Worker, 2, Never)]);
    j.metadata.labels = Some([(QUEUE.to_string(), "q".to_string())].into());
    if admitted {
        for spec in j.spec.tf_replica_specs.specs.values_mut() {
            let meta = spec.template.metadata.get_or_insert_default();
            meta.labels = Some([("kueue.x-k8s.io/podset".to_string(), "worker".to_string())].into());
        }
    }
    j
}

fn kueue_mode() -> Settings {
    Settings {
        kueue: true,
        ..Settings::default()
    }
}

fn types(plan: &Plan) -> Vec<(ConditionType, ConditionStatus)> {
    let status = plan.status.as_ref().unwrap();
    status.conditions.iter().map(|c| (c.type_, c.status)).collect()
}

/// Created without `suspend`, not admitted: no pod, `Suspended`; admitted: the pods.
#[test]
fn a_queued_job_is_held_until_admitted() {
    let observed = Observed::default();
    let held = plan(Ok(&queued(false)), "j", &observed, at(1), &kueue_mode());
    assert!(held.create_pods.is_empty());
    assert_eq!(
        types(&held),
        [(Created, ConditionStatus::True), (Suspended, ConditionStatus::True)]
    );
    let admitted = plan(Ok(&queued(true)), "j", &observed, at(1), &kueue_mode());
    assert_eq!(admitted.create_pods.len(), 2);
    // Without the Kueue mode the label means nothing to the operator.
    let plain = plan(Ok(&queued(false)), "j", &observed, at(1), &Settings::default());
    assert_eq!(plain.create_pods.len(), 2);
}

#[test]
fn a_running_jobs_new_queue_is_refused_while_it_stands() {
    let mut observed = Observed {
        workload_queue: Some("old".into()),
        ..Observed::default()
    };
    let job = queued(true);
    let refused = plan(Ok(&job), "j", &observed, at(1), &kueue_mode());
    let status = refused.status.as_ref().unwrap();
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::ChangeRefused)
        .expect("ChangeRefused");
    assert_eq!(c.reason.as_deref(), Some("QueueNameImmutable"));
    assert_eq!(
        c.message.as_deref(),
        Some("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"q\": field is immutable while the job is not suspended; it stays in LocalQueue \"old\"")
    );
    assert!(refused.events.iter().any(|e| e.reason == "QueueNameImmutable"));
    // The label put back: gone.
    observed.workload_queue = Some("q".into());
    let mut again = job.clone();
    again.status = refused.status.clone();
    let back = plan(Ok(&again), "j", &observed, at(2), &kueue_mode());
    assert!(!types(&back).iter().any(|(t, _)| *t == ConditionType::ChangeRefused));
    // A job waiting for admission may change queue.
    observed.workload_queue = Some("old".into());
    let waiting = plan(Ok(&queued(false)), "j", &observed, at(1), &kueue_mode());
    assert!(!types(&waiting).iter().any(|(t, _)| *t == ConditionType::ChangeRefused));
}
