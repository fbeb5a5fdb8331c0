//! The no-cluster demo: `cargo run --example local -- examples/tf_job_mnist.yaml`.
//!
//! Starts the in-memory Kubernetes API server and pod simulator (`sim/`), installs the CRD,
//! runs the real controller in process, applies the given TFJob(s), and prints their progress
//! the way `kubectl get tfjobs,pods -w` would, until every job has finished.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::Value;
use tfjob_operator::cli::{Cli, Command};
use tfjob_operator::crd::{ConditionStatus, TFJob};
use tfjob_operator::http::Probes;
use tfjob_sim::{Options, Sim, SimHandle};

/// Run TFJobs on a simulated cluster and watch them.
#[derive(Parser)]
struct Args {
    /// TFJob manifests (YAML; several documents per file allowed; other kinds are skipped).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Script a replica's outcome: `REPLICA=KEY:VALUE`, e.g. `worker-0=exit-code:1` (every job's
    /// worker 0); keys are the simulator's: run-seconds, exit-code, oom, evict, never-start,
    /// fail-times. Repeatable.
    #[arg(long = "script", value_name = "REPLICA=KEY:VALUE")]
    scripts: Vec<String>,
    /// How long every pod runs unless scripted otherwise.
    #[arg(long, default_value_t = 2.0)]
    run_seconds: f64,
    /// Port of the simulated API server (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Keep the cluster up after the jobs finish, for a look around with kubectl (Ctrl-C ends).
    #[arg(long)]
    keep: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let docs = read_jobs(&args.files)?;
    let sim = Sim::start(Options {
        port: args.port,
        ..Options::default()
    })
    .await?;
    let kubeconfig =
        std::env::temp_dir().join(format!("tfjob-sim-{}.kubeconfig", sim.addr().port()));
    sim.write_kubeconfig(&kubeconfig)?;
    println!("simulated cluster at {}; look around with:", sim.url());
    println!(
        "  kubectl --kubeconfig {} get tfjobs,pods,services -A",
        kubeconfig.display()
    );
    let client = Client::try_from(kube::Config::new(sim.url().parse()?))?;
    install_crd(&client).await?;
    start_operator(client.clone());

    let mut jobs = Vec::new();
    for doc in docs {
        jobs.push(submit(&client, &sim, doc, &args).await?);
    }
    watch(&client, &jobs).await?;
    if args.keep {
        println!("jobs finished; the cluster stays up (Ctrl-C to stop)");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}

fn read_jobs(files: &[PathBuf]) -> anyhow::Result<Vec<Value>> {
    let mut jobs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).with_context(|| file.display().to_string())?;
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).with_context(|| file.display().to_string())?;
        jobs.extend(docs.into_iter().filter(|d| d["kind"] == "TFJob"));
    }
    if jobs.is_empty() {
        bail!("no TFJob in {files:?}");
    }
    Ok(jobs)
}

async fn install_crd(client: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &tfjob_operator::crd::schema::crd())
        .await?;
    Ok(())
}

fn start_operator(client: Client) {
    let Command::Run(args) = Cli::parse_from(["tfjob-operator", "run"]).command else {
        unreachable!()
    };
    tokio::spawn(async move {
        let forever = futures::future::pending::<()>();
        if let Err(e) =
            tfjob_operator::operator::run_with(client, *args, Probes::default(), forever).await
        {
            eprintln!("operator stopped: {e:#}");
        }
    });
}

/// Create one TFJob (in its namespace, `default` if none), with the demo's pod scripts.
async fn submit(
    client: &Client,
    sim: &SimHandle,
    mut doc: Value,
    args: &Args,
) -> anyhow::Result<(String, String)> {
    doc["apiVersion"] = "kubeflow.org/v1".into(); // manifests written for v1beta1 run as v1
    let ns = doc["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(&ns).await?.is_none() {
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(serde_json::json!({"metadata": {"name": ns}}))?,
            )
            .await?;
    }
    let job: TFJob = serde_json::from_value(doc)?;
    let jobs = Api::<TFJob>::namespaced(client.clone(), &ns);
    // Scripts go in before the pods exist when the name is known (generateName: right after).
    let known = job.metadata.name.clone();
    if let Some(name) = &known {
        script(sim, &ns, name, &job, args)?;
    }
    let created = jobs.create(&PostParams::default(), &job).await?;
    let name = created.name_any();
    if known.is_none() {
        script(sim, &ns, &name, &created, args)?;
    }
    println!("tfjob.kubeflow.org/{name} created in namespace {ns}");
    Ok((ns, name))
}

/// Every pod of the job runs `--run-seconds`, plus its `--script` keys.
fn script(sim: &SimHandle, ns: &str, name: &str, job: &TFJob, args: &Args) -> anyhow::Result<()> {
    let mut scripts: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (t, spec) in job.spec.tf_replica_specs.iter() {
        for i in 0..spec.replicas.unwrap_or(1) {
            let pod = tfjob_operator::reconcile::labels::child_name(name, t, i);
            scripts
                .entry(pod)
                .or_default()
                .insert("run-seconds".into(), args.run_seconds.to_string());
        }
    }
    for script in &args.scripts {
        let usage = "--script takes REPLICA=KEY:VALUE, e.g. worker-0=exit-code:1";
        let (replica, kv) = script.split_once('=').context(usage)?;
        let (k, v) = kv.split_once(':').context(usage)?;
        scripts
            .entry(format!("{name}-{replica}"))
            .or_default()
            .insert(k.into(), v.into());
    }
    for (pod, keys) in scripts {
        sim.script_pod(ns, &pod, keys);
    }
    Ok(())
}

/// Print a line whenever a job's state or a pod's status changes, like `kubectl get -w`.
async fn watch(client: &Client, jobs: &[(String, String)]) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    println!("{:<8} {:<40} {:<12} RESTARTS", "AGE", "NAME", "STATUS");
    loop {
        let mut finished = 0;
        for (ns, name) in jobs {
            let job = Api::<TFJob>::namespaced(client.clone(), ns)
                .get(name)
                .await?;
            let state = state(&job);
            if matches!(state.as_str(), "Succeeded" | "Failed") {
                finished += 1;
            }
            let restarts: i32 = job
                .status
                .iter()
                .flat_map(|s| s.replica_statuses.values())
                .filter_map(|r| r.restarts)
                .sum();
            show(
                &mut shown,
                started,
                format!("tfjob/{name}"),
                format!("{state:<12} {restarts}"),
            );
            let lp =
                ListParams::default().labels(&format!("training.kubeflow.org/job-name={name}"));
            for pod in Api::<Pod>::namespaced(client.clone(), ns)
                .list(&lp)
                .await?
                .items
            {
                show(
                    &mut shown,
                    started,
                    format!("pod/{}", pod.name_any()),
                    pod_line(&pod),
                );
            }
        }
        if finished == jobs.len() {
            tokio::time::sleep(Duration::from_millis(500)).await; // let cleanup show
            for (ns, name) in jobs {
                let job = Api::<TFJob>::namespaced(client.clone(), ns)
                    .get(name)
                    .await?;
                if let Some(c) = job.status.as_ref().and_then(|s| s.conditions.last()) {
                    println!(
                        "tfjob/{name}: {:?} ({}): {}",
                        c.type_,
                        c.reason.as_deref().unwrap_or(""),
                        c.message.as_deref().unwrap_or("")
                    );
                }
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn show(shown: &mut BTreeMap<String, String>, started: Instant, name: String, line: String) {
    let deleted = shown.get(&name).is_some_and(|l| l == "Deleted");
    if shown.get(&name) != Some(&line) && !(deleted && line == "Deleted") {
        let age = format!("{:.1}s", started.elapsed().as_secs_f64());
        println!("{age:<8} {name:<40} {line}");
        shown.insert(name, line);
    }
}

fn state(job: &TFJob) -> String {
    job.status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .rev()
                .find(|c| c.status == ConditionStatus::True)
        })
        .map(|c| format!("{:?}", c.type_))
        .unwrap_or_else(|| "Pending".into())
}

fn pod_line(pod: &Pod) -> String {
    let status = pod.status.clone().unwrap_or_default();
    let terminated = status.container_statuses.iter().flatten().find_map(|c| {
        c.state
            .as_ref()?
            .terminated
            .as_ref()
            .map(|t| t.reason.clone().unwrap_or_default())
    });
    let waiting = status.container_statuses.iter().flatten().find_map(|c| {
        c.state
            .as_ref()?
            .waiting
            .as_ref()
            .and_then(|w| w.reason.clone())
    });
    let restarts: i32 = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.restart_count)
        .sum();
    let phase = if pod.metadata.deletion_timestamp.is_some() {
        "Terminating".to_string()
    } else {
        waiting
            .or(terminated)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| status.phase.clone().unwrap_or_else(|| "Pending".into()))
    };
    format!("{phase:<12} {restarts}")
}
