//! R13: event writes slowed to 3 s each hold no pass (docs/behaviour.md §9): the job's status
//! moves on before its events exist, the events carry the times they happened, and an operator
//! that stops publishes what it had queued before it returns.

use std::time::Duration;

use jiff::Timestamp;
use tfjob_operator::crd::ConditionType;
use tfjob_sim::FaultRule;

use super::common::spec;
use crate::support::faults::{cluster, seed, shared};

/// How long the simulator takes to answer each event create.
const SLOW: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_event_writes_hold_no_pass_and_a_stopping_operator_publishes_its_queue() {
    let _shared = shared().await;
    let c = cluster("slow-events", seed("slow-events")).await;
    if !c.simulated() {
        return eprintln!("skipped: slows event writes (simulator only)");
    }
    c.sim()
        .set_fault(FaultRule::latency(Some("create"), Some("events"), SLOW));
    let operator = c.operator(&[]).await;
    operator.until_ready().await;
    c.create(spec("slow", &[("Worker", 1, "Never")], 0.2)).await;

    // The pass that concludes the job queues `TFJobSucceeded` and writes the status at once:
    // the status shows first. (Recorded inside the pass, the event came before the status.)
    c.until_condition("slow", ConditionType::Succeeded).await;
    let seen = Timestamp::now();
    let early = c.events_of("slow").await;
    assert!(
        !early.iter().any(|(reason, _)| reason == "TFJobSucceeded"),
        "the event was published before the status it follows: {early:?}"
    );

    // Stopping publishes the queue before returning: every event is there at once.
    let agent = operator.agent().to_string();
    operator.stop_cleanly().await;
    let events = c.events_about("slow").await;
    let mut reasons: Vec<&str> = events.iter().filter_map(|e| e.reason.as_deref()).collect();
    reasons.sort();
    assert_eq!(
        reasons,
        [
            "SuccessfulCreatePod",
            "SuccessfulCreateService",
            "TFJobCreated",
            "TFJobSucceeded"
        ],
        "the events of {agent} once it stopped"
    );
    // Each carries the time it happened, not the time it was published (3 s later).
    let succeeded = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("TFJobSucceeded"))
        .and_then(|e| e.event_time.as_ref())
        .map(|t| t.0);
    assert!(
        succeeded.is_some_and(|t| t <= seen),
        "TFJobSucceeded's eventTime {succeeded:?} is after the status was seen ({seen})"
    );
}
