//! R14: a pass holds its turn (`--concurrency`) while it plans and writes the job's children,
//! not through its status write (docs/behaviour.md §6.1): with one turn and every status write
//! slowed down, a second job gets its pod while the first job's status write is unanswered.

use std::time::Duration;

use tfjob_sim::FaultRule;

use super::common::spec;
use crate::support::faults::{cluster, seed, shared};

/// How long the simulator takes to answer each status write.
const SLOW: Duration = Duration::from_secs(8);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_in_flight_holds_no_turn() {
    let _shared = shared().await;
    let c = cluster("turns", seed("turns")).await;
    if !c.simulated() {
        return eprintln!("skipped: slows status writes (simulator only)");
    }
    c.sim().set_fault(FaultRule::latency(
        Some("update"),
        Some("tfjobs/status"),
        SLOW,
    ));
    let operator = c.operator(&["--concurrency", "1"]).await;
    operator.until_ready().await;

    c.create(spec("first", &[("Worker", 1, "Never")], 60.0))
        .await;
    c.until_pods_are("first", &["first-worker-0"]).await;
    // `first`'s pass now waits for its status write; the one turn must be free for `second`.
    c.create(spec("second", &[("Worker", 1, "Never")], 60.0))
        .await;
    c.until_pods_are("second", &["second-worker-0"]).await;
    let first = c
        .test_jobs()
        .await
        .get("first")
        .await
        .expect("reading first");
    assert!(
        first.status.is_none(),
        "second's pod came only after first's status write was answered \
         (the turn was held through it): {:?}",
        first.status
    );
}
