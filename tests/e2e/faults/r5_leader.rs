//! R5: two operators with leader election; the leader is killed (its lease is not released):
//! the standby takes over within 15 s and finishes a job, and while it stood by it wrote
//! nothing but the Lease. A leader the API server stops answering stops before its lease ends.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tfjob_operator::crd::ConditionType;
use tokio::time::Instant;

use super::common::spec;
use crate::support::faults::{breakdown, cluster, seed, shared, writes_of};
use crate::support::until;

const LEASE: &str = "faults-leader";
const FAILOVER: Duration = Duration::from_secs(15);
/// How long a lease lasts from its last renewal (docs/behaviour.md §9).
const LEASE_DURATION: Duration = Duration::from_secs(10);

fn holder(lease: Option<&Lease>) -> Option<String> {
    lease?
        .spec
        .as_ref()?
        .holder_identity
        .clone()
        .filter(|h| !h.is_empty())
}

fn renewed(lease: &Lease) -> Option<String> {
    let t = lease.spec.as_ref()?.renew_time.as_ref()?;
    Some(format!("{:?}", t.0))
}

/// Leader A and standby B (`--leader-elect`, same lease). A runs a job; B, standing by, makes
/// no write but to the Lease. A is killed right after it renewed its lease (the worst case: the
/// whole lease duration must pass) and a job is created: B holds the lease within 15 s of the
/// kill, and B alone finishes the job.
#[tokio::test]
async fn a_killed_leader_is_replaced_within_15s_by_a_standby_that_wrote_only_its_lease() {
    let _shared = shared().await;
    let c = cluster("leader-kill", seed("leader-kill")).await;
    if !c.simulated() {
        return eprintln!("skipped: counts the standby's requests (simulator only)");
    }
    let sim = c.sim();
    let ns = c.namespace.clone();
    let flags = [
        "--leader-elect",
        "--leader-election-namespace",
        ns.as_str(),
        "--leader-election-id",
        LEASE,
    ];
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), &ns);
    let leader = c.operator(&flags).await;
    let first = until(&leases, LEASE, "a leader", holder).await;
    let standby = c.operator(&flags).await;
    standby.until_ready().await;

    c.create(spec("before", &[("Worker", 1, "Never")], 0.5))
        .await;
    c.until_condition("before", ConditionType::Succeeded).await;

    // Kill the leader right after a renewal.
    let seen = leases.get(LEASE).await.unwrap();
    let last = renewed(&seen);
    until(&leases, LEASE, "a renewal", |l| {
        l.filter(|l| renewed(l) != last && holder(Some(l)).as_deref() == Some(&first))
            .map(|_| ())
    })
    .await;
    leader.kill().await;
    let killed = Instant::now();
    c.create(spec("after", &[("Worker", 1, "Never")], 0.5))
        .await;

    let mut standing_by = sim.requests();
    let second = loop {
        let counts = sim.requests();
        let lease = leases.get_opt(LEASE).await.unwrap();
        match holder(lease.as_ref()) {
            Some(h) if h != first => break h,
            _ => standing_by = counts,
        }
        if killed.elapsed() > Duration::from_secs(40) {
            panic!("no new leader 40 s after the leader was killed");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let failover = killed.elapsed();
    let wrote: tfjob_sim::RequestCounts = {
        let mut w = writes_of(&standing_by, standby.agent());
        w.0.retain(|k, _| k.resource != "leases");
        w
    };
    let done = c.until_condition("after", ConditionType::Succeeded).await;
    let reporters: Vec<String> = {
        let mut r: Vec<String> = c
            .events_about("after")
            .await
            .into_iter()
            .filter_map(|e| e.reporting_instance)
            .collect();
        r.sort();
        r.dedup();
        r
    };
    eprintln!("failover after {failover:?}");
    assert!(
        wrote.0.is_empty(),
        "the standby wrote while standing by: {}",
        breakdown(&wrote)
    );
    assert_eq!(
        reporters,
        std::slice::from_ref(&second),
        "only the new leader acted on 'after'"
    );
    assert!(done.status.is_some());
    assert!(
        failover <= FAILOVER,
        "the standby took over {failover:?} after the leader was killed (at most {FAILOVER:?})"
    );
}

/// A leader whose requests the API server stops answering (a hung connection, a partitioned
/// node) stops acting within the renew deadline, before its lease could pass to a standby:
/// `run_with` returns the lost-lease error within 10 s. Before, its renewal waited for an answer
/// for good (kube's client has no read timeout), and it would have gone on acting beside the
/// replica that took the lease once it expired.
#[tokio::test]
async fn a_leader_whose_renewals_go_unanswered_stops_before_its_lease_expires() {
    let _shared = shared().await;
    let c = cluster("leader-unanswered", seed("leader-unanswered")).await;
    if !c.simulated() {
        return eprintln!("skipped: freezes the operator's client (simulator only)");
    }
    let ns = c.namespace.clone();
    let lease = "leader-unanswered";
    let flags = [
        "--leader-elect",
        "--leader-election-namespace",
        ns.as_str(),
        "--leader-election-id",
        lease,
    ];
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), &ns);
    let leader = c.operator(&flags).await;
    until(&leases, lease, "a leader", holder).await;
    leader.until_ready().await;

    c.sim().freeze_after_writes(leader.agent(), 0);
    let frozen = Instant::now();
    while !leader.exited() && frozen.elapsed() < 2 * LEASE_DURATION {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = frozen.elapsed();
    c.sim().unfreeze();
    assert!(
        leader.exited() && took < LEASE_DURATION,
        "the leader still acted {took:?} after the API server stopped answering it (its lease \
         lasts {LEASE_DURATION:?} from its last renewal)"
    );
    match leader.stop(Duration::from_secs(1)).await {
        Ok((Err(e), _)) => assert!(
            format!("{e:#}").contains("lost the leader lease"),
            "it stopped for another reason: {e:#}"
        ),
        Ok((Ok(()), _)) => panic!("it stopped as if asked to, not for its lost lease"),
        Err(e) => panic!("{e}"),
    }
}
