//! A simulated cluster for the benchmarks: the simulator with the TFJob CRD and Kueue's Workload
//! CRD (what `--kueue` watches; the simulator serves any CRD) installed, a client whose
//! requests are told apart from the operator's, job manifests, and reads of the simulator's
//! store (which bypass HTTP, so measuring never adds requests). I/O.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt, stream};
use http::{HeaderName, HeaderValue};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use tfjob_operator::cli::{Cli, Command};
use tfjob_operator::crd::TFJob;
use tfjob_operator::http::Probes;
use tfjob_sim::{Options, RequestCounts, Sim, SimHandle};
use tokio::sync::oneshot;

/// User agent of the benchmark's own requests; the operator's client sends none.
pub const BENCH_AGENT: &str = "tfjob-bench";
/// The label every child carries with its job's name.
const JOB_NAME_LABEL: &str = "training.kubeflow.org/job-name";
/// Simulated run time of a pod that should outlive the measurement.
pub const LONG_RUN: f64 = 3600.0;

/// One simulator with the TFJob CRD, and the benchmark's client for it.
pub struct Cluster {
    pub sim: SimHandle,
    pub client: Client,
}

impl Cluster {
    /// With `TFJOB_BENCH_PAGED_LISTS` set, the simulator refuses streaming lists, as Kubernetes
    /// 1.33 does, and every watch starts with paged lists.
    pub async fn start() -> anyhow::Result<Self> {
        let options = Options {
            streaming_lists: std::env::var_os("TFJOB_BENCH_PAGED_LISTS").is_none(),
            ..Options::default()
        };
        let sim = Sim::start(options).await?;
        let mut config = kube::Config::new(sim.url().parse()?);
        config.headers.push((
            HeaderName::from_static("user-agent"),
            HeaderValue::from_static(BENCH_AGENT),
        ));
        let client = Client::try_from(config)?;
        let cluster = Self { sim, client };
        cluster.install_crd().await?;
        Ok(cluster)
    }

    /// A separate client for an in-process operator (its own connections, no user agent).
    pub fn operator_client(&self) -> anyhow::Result<Client> {
        Ok(Client::try_from(kube::Config::new(
            self.sim.url().parse()?,
        ))?)
    }

    async fn install_crd(&self) -> anyhow::Result<()> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        crds.create(&PostParams::default(), &tfjob_operator::crd::schema::crd())
            .await
            .context("installing the CRD")?;
        crds.create(&PostParams::default(), &workload_crd()?)
            .await
            .context("installing Kueue's Workload CRD")?;
        Ok(())
    }

    pub async fn namespace(&self, name: &str) -> anyhow::Result<()> {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        Ok(())
    }

    pub fn jobs(&self, ns: &str) -> Api<TFJob> {
        Api::namespaced(self.client.clone(), ns)
    }

    pub async fn create_job(&self, ns: &str, job: Value) -> anyhow::Result<TFJob> {
        let job: TFJob = serde_json::from_value(job)?;
        Ok(self.jobs(ns).create(&PostParams::default(), &job).await?)
    }

    /// Create many jobs, 16 requests at a time (as a user's script or kubectl apply might).
    pub async fn create_jobs(&self, ns: &str, jobs: Vec<Value>) -> anyhow::Result<()> {
        stream::iter(jobs)
            .map(|job| self.create_job(ns, job))
            .buffer_unordered(16)
            .try_collect::<Vec<_>>()
            .await?;
        Ok(())
    }

    /// Stored objects (`pods`, `services`) of job `job` in `ns`, terminating ones included.
    pub fn children(&self, plural: &str, ns: &str, job: &str) -> Vec<Value> {
        let Some(rt) = self.sim.store().lookup("", "v1", plural) else {
            return Vec::new();
        };
        let (items, _) = self.sim.store().list(&rt, Some(ns), |o| {
            o["metadata"]["labels"][JOB_NAME_LABEL].as_str() == Some(job)
        });
        items.iter().map(|o| (**o).clone()).collect()
    }

    pub fn child_count(&self, plural: &str, ns: &str, job: &str) -> usize {
        self.count(plural, ns, |o| {
            o["metadata"]["labels"][JOB_NAME_LABEL].as_str() == Some(job)
        })
    }

    /// Stored objects (`pods`, `services`) in `ns` for which `keep` holds, without copying them.
    pub fn count(&self, plural: &str, ns: &str, keep: impl Fn(&Value) -> bool) -> usize {
        let Some(rt) = self.sim.store().lookup("", "v1", plural) else {
            return 0;
        };
        self.sim.store().list(&rt, Some(ns), keep).0.len()
    }

    /// Whether the stored job has condition `Succeeded=True`.
    pub fn succeeded(&self, ns: &str, name: &str) -> bool {
        self.sim
            .object("kubeflow.org/v1", "tfjobs", ns, name)
            .is_some_and(|job| {
                job["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Succeeded" && c["status"] == "True")
                })
            })
    }

    /// Requests not made by the benchmark itself.
    pub fn operator_requests(&self) -> RequestCounts {
        let all = self.sim.requests();
        RequestCounts(
            all.0
                .into_iter()
                .filter(|(k, _)| k.user_agent != BENCH_AGENT)
                .collect(),
        )
    }

    /// Wait until the operator has made no write for `quiet`; returns when it went quiet.
    pub async fn until_quiet(&self, quiet: Duration, timeout: Duration) -> anyhow::Result<()> {
        let start = Instant::now();
        let (mut writes, mut last_change) = (self.operator_requests().writes(), Instant::now());
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = self.operator_requests().writes();
            if now != writes {
                (writes, last_change) = (now, Instant::now());
            } else if last_change.elapsed() >= quiet {
                return Ok(());
            }
            if start.elapsed() > timeout {
                bail!("the operator kept writing for {timeout:?}");
            }
        }
    }

    /// Poll the store every `every` until `done` holds; returns the time since `start`.
    pub async fn until(
        &self,
        what: &str,
        start: Instant,
        every: Duration,
        timeout: Duration,
        done: impl Fn(&Self) -> bool,
    ) -> anyhow::Result<Duration> {
        loop {
            if done(self) {
                return Ok(start.elapsed());
            }
            if start.elapsed() > timeout {
                bail!("timed out after {timeout:?} waiting for {what}");
            }
            tokio::time::sleep(every).await;
        }
    }
}

/// Kueue's Workload resource, schema left open: all the Kueue mode (`--kueue`) lists and
/// watches at start, so its jobs without a queue label run as they would on a cluster with
/// Kueue installed. No Workload is made in these benchmarks.
fn workload_crd() -> anyhow::Result<CustomResourceDefinition> {
    use tfjob_operator::kueue::plan::workload::{GROUP, VERSION};
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("workloads.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "workloads", "singular": "workload", "kind": "Workload", "listKind": "WorkloadList"},
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))?)
}

/// A TFJob manifest: `replicas` lists (type, count, simulated run seconds of each pod).
pub fn job(name: &str, replicas: &[(&str, i32, f64)]) -> Value {
    let specs: BTreeMap<&str, Value> = replicas
        .iter()
        .map(|(t, n, seconds)| {
            let spec = json!({
                "replicas": n,
                "template": {
                    "metadata": {"annotations": {"sim.tfjob.dev/run-seconds": seconds.to_string()}},
                    "spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.36"}]}
                }
            });
            (*t, spec)
        })
        .collect();
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": specs}
    })
}

/// The operator running in this process (as the demo and the end-to-end tests run it).
pub struct InProcess {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl InProcess {
    /// Start `tfjob-operator run <flags>` against the cluster and wait until its caches synced.
    pub async fn start(cluster: &Cluster, flags: &[&str]) -> anyhow::Result<Self> {
        let argv = ["tfjob-operator", "run"].iter().chain(flags);
        let Command::Run(args) = Cli::try_parse_from(argv)?.command else {
            bail!("`run` did not parse as the run command");
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let (client, probes) = (cluster.operator_client()?, Probes::default());
        let for_task = probes.clone();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            let run = tfjob_operator::operator::run_with(client, *args, for_task, shutdown);
            if let Err(e) = run.await {
                eprintln!("operator stopped: {e:#}");
            }
        });
        let ready = probes.ready.clone();
        cluster
            .until(
                "operator caches synced",
                Instant::now(),
                Duration::from_millis(10),
                Duration::from_secs(30),
                move |_| ready.load(std::sync::atomic::Ordering::Relaxed),
            )
            .await?;
        Ok(Self {
            stop: Some(stop),
            task,
        })
    }

    /// Stop it and wait for in-flight reconciles to drain.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.task).await;
    }
}
