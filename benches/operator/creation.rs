//! Benchmark 1: time to create every child of a 100- and a 500-worker job, the operator against
//! a plain client creating the operator's exact objects with the operator's concurrency. I/O.

use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Resource;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tfjob_operator::crd::defaults::with_defaults;
use tfjob_operator::crd::{ReplicaType, TFJob};
use tfjob_operator::reconcile::apply::children::CREATE_CONCURRENCY;
use tfjob_operator::reconcile::build::children as desired;

use super::cluster::{Cluster, InProcess, LONG_RUN, job};
use super::process::Operator;

/// Job sizes measured.
pub const WORKERS: [i32; 2] = [100, 500];
/// The operator watches only this namespace; the baseline writes into the other one, where
/// its TFJob exists (so the children's owner references are valid) but nobody reconciles it.
const OPERATOR_NS: &str = "bench-op";
const BASELINE_NS: &str = "bench-base";
const POLL: Duration = Duration::from_millis(1);
const TIMEOUT: Duration = Duration::from_secs(60);

/// Times of each repetition: the operator, the bare creates, and the creates each followed
/// by its event (docs/behaviour.md §9 asks for one per created child), as the operator does them.
pub struct Creation {
    pub workers: i32,
    pub operator: Vec<Duration>,
    pub baseline: Vec<Duration>,
    pub with_events: Vec<Duration>,
}

/// How the operator runs: in this process, or the binary spawned with extra flags.
pub enum Run<'a> {
    InProcess,
    Spawned(&'a [&'a str]),
}

/// The operator of a measurement, stopped when it ends.
enum Running {
    InProcess(InProcess),
    Spawned(Operator),
}

pub async fn measure(reps: usize, workers: i32, how: Run<'_>) -> anyhow::Result<Creation> {
    let cluster = Cluster::start().await?;
    cluster.namespace(OPERATOR_NS).await?;
    cluster.namespace(BASELINE_NS).await?;
    let scope = ["--namespace", OPERATOR_NS];
    let operator = match how {
        Run::InProcess => Running::InProcess(InProcess::start(&cluster, &scope).await?),
        Run::Spawned(extra) => {
            let flags: Vec<&str> = scope.iter().chain(extra).copied().collect();
            let mut operator = Operator::spawn(&cluster, &flags)?;
            operator.until_synced(&cluster).await?;
            Running::Spawned(operator)
        }
    };
    let mut out = Creation {
        workers,
        operator: Vec::new(),
        baseline: Vec::new(),
        with_events: Vec::new(),
    };
    for rep in 0..reps {
        // Alternate, so drift in machine load hits both sides alike.
        let op = format!("op-{rep}");
        out.operator
            .push(by_operator(&cluster, OPERATOR_NS, &op, workers).await?);
        let bl = format!("bl-{rep}");
        out.baseline
            .push(by_client(&cluster, BASELINE_NS, &bl, workers, false).await?);
        let ev = format!("ev-{rep}");
        out.with_events
            .push(by_client(&cluster, BASELINE_NS, &ev, workers, true).await?);
    }
    match operator {
        Running::InProcess(operator) => operator.stop().await,
        Running::Spawned(operator) => drop(operator),
    }
    Ok(out)
}

/// From the TFJob create call returning to all its children stored (`ns` is watched by the
/// operator).
pub async fn by_operator(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    workers: i32,
) -> anyhow::Result<Duration> {
    cluster
        .create_job(ns, job(name, &[("Worker", workers, LONG_RUN)]))
        .await?;
    let start = Instant::now();
    let took = until_all_children(cluster, ns, name, workers, start).await?;
    remove(cluster, ns, name).await?;
    Ok(took)
}

/// The minimum possible: the same objects, created by a client that does nothing else
/// (and, with `events`, records the same event after each create), in `ns`, which no
/// operator watches.
pub async fn by_client(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    workers: i32,
    events: bool,
) -> anyhow::Result<Duration> {
    let mut tfjob = cluster
        .create_job(ns, job(name, &[("Worker", workers, LONG_RUN)]))
        .await?;
    tfjob.spec = with_defaults(&tfjob.spec);
    let start = Instant::now();
    create_children(cluster, ns, &tfjob, workers, events).await?;
    let took = until_all_children(cluster, ns, name, workers, start).await?;
    remove(cluster, ns, name).await?;
    Ok(took)
}

/// Pods then services, `CREATE_CONCURRENCY` children in flight, as `apply` does.
async fn create_children(
    cluster: &Cluster,
    ns: &str,
    tfjob: &TFJob,
    workers: i32,
    events: bool,
) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), ns);
    let pp = PostParams::default();
    let reporter = Reporter {
        controller: "tfjob-bench".into(),
        instance: None,
    };
    let recorder = Recorder::new(cluster.client.clone(), reporter);
    let job_ref = tfjob.object_ref(&());
    let creates = (0..workers)
        .map(|i| {
            Child::Pod(Box::new(desired::pod(
                tfjob,
                ReplicaType::Worker,
                i,
                None,
                &Default::default(),
            )))
        })
        .chain(
            (0..workers)
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
    workers: i32,
    start: Instant,
) -> anyhow::Result<Duration> {
    let n = workers as usize;
    let what = format!("all children of {ns}/{name}");
    cluster
        .until(&what, start, POLL, TIMEOUT, |c| {
            c.child_count("pods", ns, name) >= n && c.child_count("services", ns, name) >= n
        })
        .await
}

/// Delete the job and wait until garbage collection removed its children, so the next
/// repetition starts from an empty namespace.
pub async fn remove(cluster: &Cluster, ns: &str, name: &str) -> anyhow::Result<()> {
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
