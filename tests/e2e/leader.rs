//! End to end: leader election on a coordination.k8s.io/v1 Lease (issue "The controller"
//! item 2): of two operators only the holder acts; when it stops, the standby takes over.

use crate::support::{Operator, TestCluster, job, until};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tfjob_operator::crd::ConditionType;

fn holder(lease: Option<&Lease>) -> Option<String> {
    lease?
        .spec
        .as_ref()?
        .holder_identity
        .clone()
        .filter(|h| !h.is_empty())
}

#[tokio::test]
async fn a_standby_operator_takes_over_when_the_leader_stops() {
    let mut c = TestCluster::without_operator("leader").await;
    let flags = c.leader_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (lease_namespace, lease) = c.lease();
    c.start_operator_with(&flags);
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), &lease_namespace);
    let first = until(&leases, &lease, "a leader", holder).await;

    // A second operator, started later, stands by.
    let standby = Operator::start(&c, &flags);

    c.create(job("before", &[("Worker", 1, "Never")])).await;
    c.until_condition("before", ConditionType::Succeeded).await;
    assert_eq!(
        holder(leases.get(&lease).await.ok().as_ref()),
        Some(first.clone())
    );

    // The leader stops and gives the lease up; the standby acquires it and acts.
    c.stop_operator().await;
    let second = until(&leases, &lease, "a new leader", |l| {
        holder(l).filter(|h| *h != first)
    })
    .await;
    assert_ne!(second, first);
    c.create(job("after", &[("Worker", 1, "Never")])).await;
    c.until_condition("after", ConditionType::Succeeded).await;
    assert_eq!(
        reporters(&c, "after").await,
        std::slice::from_ref(&second),
        "only the new leader acted"
    );
    assert!(standby.stop().await, "standby operator ran cleanly");
}

/// The operator instances that recorded events about job `name`.
async fn reporters(c: &TestCluster, name: &str) -> Vec<String> {
    let events = c.events_about(name).await.into_iter();
    let mut instances: Vec<String> = events.filter_map(|e| e.reporting_instance).collect();
    instances.sort();
    instances.dedup();
    instances
}
