//! Benchmark 1: time to create every child of a 100-worker job, the operator against a plain
//! client creating the operator's exact objects with the operator's concurrency. I/O.

use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Resource;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tfjob_operator::crd::defaults::with_defaults;
use tfjob_operator::crd::{ReplicaType, TFJob};
use tfjob_operator::reconcile::apply::CREATE_CONCURRENCY;
use tfjob_operator::reconcile::desired;

use super::cluster::{Cluster, InProcess, LONG_RUN, job};

pub const WORKERS: i32 = 100;
/// The operator watches only this namespace; the baseline writes into the other one, where
/// its TFJob exists (so the children's owner references are valid) but nobody reconciles it.
const OPERATOR_NS: &str = "bench-op";
const BASELINE_NS: &str = "bench-base";
const POLL: Duration = Duration::from_millis(1);
const TIMEOUT: Duration = Duration::from_secs(60);

/// Times of each repetition: the operator, the bare creates, and the creates each followed
/// by its event (docs/behaviour.md §9 asks for one per created child), as the operator does them.
pub struct Creation {
    pub operator: Vec<Duration>,
    pub baseline: Vec<Duration>,
    pub with_events: Vec<Duration>,
}

pub async fn measure(reps: usize) -> anyhow::Result<Creation> {
    let cluster = Cluster::start().await?;
    cluster.namespace(OPERATOR_NS).await?;
    cluster.namespace(BASELINE_NS).await?;
    let operator = InProcess::start(&cluster, &["--namespace", OPERATOR_NS]).await?;
    let mut out = Creation {
        operator: Vec::new(),
        baseline: Vec::new(),
        with_events: Vec::new(),
    };
    for rep in 0..reps {
        // Alternate, so drift in machine load hits both sides alike.
        out.operator.push(by_operator(&cluster, rep).await?);
        out.baseline.push(by_client(&cluster, rep, false).await?);
        out.with_events.push(by_client(&cluster, rep, true).await?);
    }
    operator.stop().await;
    Ok(out)
}

/// From the TFJob create call returning to all 200 children stored.
async fn by_operator(cluster: &Cluster, rep: usize) -> anyhow::Result<Duration> {
    let name = format!("op-{rep}");
    cluster
        .create_job(OPERATOR_NS, job(&name, &[("Worker", WORKERS, LONG_RUN)]))
        .await?;
    let start = Instant::now();
    let took = until_all_children(cluster, OPERATOR_NS, &name, start).await?;
    remove(cluster, OPERATOR_NS, &name).await?;
    Ok(took)
}

/// The minimum possible: the same objects, created by a client that does nothing else
/// (and, with `events`, records the same event after each create).
async fn by_client(cluster: &Cluster, rep: usize, events: bool) -> anyhow::Result<Duration> {
    let name = format!("{}-{rep}", if events { "ev" } else { "bl" });
    let mut tfjob = cluster
        .create_job(BASELINE_NS, job(&name, &[("Worker", WORKERS, LONG_RUN)]))
        .await?;
    tfjob.spec = with_defaults(&tfjob.spec);
    let start = Instant::now();
    create_children(cluster, &tfjob, events).await?;
    let took = until_all_children(cluster, BASELINE_NS, &name, start).await?;
    remove(cluster, BASELINE_NS, &name).await?;
    Ok(took)
}

/// Pods then services, `CREATE_CONCURRENCY` children in flight, as `apply` does.
async fn create_children(cluster: &Cluster, tfjob: &TFJob, events: bool) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), BASELINE_NS);
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), BASELINE_NS);
    let pp = PostParams::default();
    let reporter = Reporter {
        controller: "tfjob-bench".into(),
        instance: None,
    };
    let recorder = Recorder::new(cluster.client.clone(), reporter);
    let job_ref = tfjob.object_ref(&());
    let creates = (0..WORKERS)
        .map(|i| Child::Pod(Box::new(desired::pod(tfjob, ReplicaType::Worker, i, None))))
        .chain(
            (0..WORKERS)
                .map(|i| Child::Service(Box::new(desired::service(tfjob, ReplicaType::Worker, i)))),
        )
        .map(|child| {
            let (pods, services, pp) = (&pods, &services, &pp);
            let (recorder, job_ref) = (&recorder, &job_ref);
            async move {
                let (reason, related) = match child {
                    Child::Pod(p) => (
                        "SuccessfulCreatePod",
                        pods.create(pp, &p).await?.object_ref(&()),
                    ),
                    Child::Service(s) => (
                        "SuccessfulCreateService",
                        services.create(pp, &s).await?.object_ref(&()),
                    ),
                };
                if events {
                    let name = related.name.clone().unwrap_or_default();
                    let event = Event {
                        type_: EventType::Normal,
                        reason: reason.into(),
                        note: Some(format!("Created {name}")),
                        action: reason.into(),
                        secondary: Some(related),
                    };
                    recorder.publish(&event, job_ref).await?;
                }
                Ok::<(), kube::Error>(())
            }
        });
    let results: Vec<Result<(), kube::Error>> = stream::iter(creates)
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect::<Result<(), _>>()?;
    Ok(())
}

enum Child {
    Pod(Box<Pod>),
    Service(Box<Service>),
}

async fn until_all_children(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    start: Instant,
) -> anyhow::Result<Duration> {
    let n = WORKERS as usize;
    let what = format!("all children of {ns}/{name}");
    cluster
        .until(&what, start, POLL, TIMEOUT, |c| {
            c.child_count("pods", ns, name) >= n && c.child_count("services", ns, name) >= n
        })
        .await
}

/// Delete the job and wait until garbage collection removed its children, so the next
/// repetition starts from an empty namespace.
async fn remove(cluster: &Cluster, ns: &str, name: &str) -> anyhow::Result<()> {
    cluster
        .jobs(ns)
        .delete(name, &DeleteParams::background())
        .await?;
    let what = format!("children of {ns}/{name} to be collected");
    cluster
        .until(
            &what,
            Instant::now(),
            Duration::from_millis(20),
            TIMEOUT,
            |c| c.child_count("pods", ns, name) == 0 && c.child_count("services", ns, name) == 0,
        )
        .await?;
    Ok(())
}
