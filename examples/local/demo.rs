//! The demo's logic: a simulated cluster, the real controller in process, the given TFJobs
//! applied (older forms converted as `tfjob-operator convert` does, with a pointer at it) and
//! watched until they finish. Output goes to a writer, so `tests/offline/demo_table.rs` can run every
//! command the README shows and check the outcome it promises.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tfjob_operator::cli::{Cli, Command};
use tfjob_operator::convert::{Form, convert_document, form};
use tfjob_operator::crd::{ReplicaType, TFJob};
use tfjob_operator::http::Probes;
use tfjob_sim::{Options, Sim, SimHandle};

/// Run TFJobs on a simulated cluster and watch them.
#[derive(Parser, Debug)]
#[command(name = "local")]
pub struct Args {
    /// TFJob manifests (YAML; several documents per file allowed; other kinds are skipped;
    /// older TFJob forms are converted as `tfjob-operator convert` does).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Script a replica's outcome: `REPLICA=KEY:VALUE`, e.g. `worker-0=exit-code:1` (every job's
    /// worker 0); keys are the simulator's: run-seconds, exit-code, oom, evict, never-start,
    /// fail-times. Repeatable.
    #[arg(long = "script", value_name = "REPLICA=KEY:VALUE")]
    pub scripts: Vec<String>,
    /// How long every pod runs unless scripted otherwise.
    #[arg(long, default_value_t = 2.0)]
    pub run_seconds: f64,
    /// Set `spec.runPolicy.backoffLimit` of every job, as if its manifest said so.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..))]
    pub backoff_limit: Option<i32>,
    /// The simulated kubelet's restart back-off, `INITIAL,MAX` in seconds: a tenth of the real
    /// kubelet's CrashLoopBackOff (10 s doubling to 300 s), so crash loops show in seconds.
    #[arg(long, value_name = "INITIAL,MAX", default_value = "1,30", value_parser = backoff)]
    pub crash_loop_backoff: (Duration, Duration),
    /// Port of the simulated API server (0 = any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Keep the cluster up after the jobs finish, for a look around with kubectl (Ctrl-C ends).
    #[arg(long)]
    pub keep: bool,
}

fn backoff(s: &str) -> Result<(Duration, Duration), String> {
    let seconds = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|f| *f >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("{x:?} is not a number of seconds"))
    };
    match s.split_once(',') {
        Some((a, b)) => Ok((seconds(a)?, seconds(b)?)),
        None => seconds(s).map(|d| (d, d * 30)),
    }
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(dead_code)] // tests/offline/demo_table.rs reads every field; the demo binary prints them
pub struct JobOutcome {
    pub name: String,
    /// The latest condition with status True: `Succeeded` or `Failed`.
    pub state: String,
    pub reason: String,
    pub message: String,
    /// `status.replicaStatuses[*].restarts`, added up.
    pub restarts: i32,
}

/// Runs the demo; with `--keep`, waits for `keep` (Ctrl-C) before stopping.
pub async fn run(
    args: &Args,
    out: &mut dyn Write,
    keep: impl Future<Output = ()>,
) -> anyhow::Result<Vec<JobOutcome>> {
    let docs = read_jobs(&args.files, out)?;
    // Bad input stops the demo here, before anything starts.
    let docs = checked(docs, args)?;
    let sim = Sim::start(Options {
        port: args.port,
        crash_loop_backoff: args.crash_loop_backoff,
        ..Options::default()
    })
    .await?;
    let (initial, max) = args.crash_loop_backoff;
    writeln!(
        out,
        "simulated cluster at {}; container restarts back off {initial:?} doubling to {max:?} \
         (the kubelet's 10s to 5m0s, scaled down)",
        sim.url()
    )?;
    let client = Client::try_from(kube::Config::new(sim.url().parse()?))?;
    install_crd(&client).await?;
    start_operator(client.clone());

    let mut jobs = Vec::new();
    for doc in docs {
        jobs.push(submit(&client, &sim, doc, args, out).await?);
    }
    let outcomes = crate::watch::watch(&client, &jobs, out).await?;
    if args.keep {
        let kubeconfig =
            std::env::temp_dir().join(format!("tfjob-demo-{}.kubeconfig", sim.addr().port()));
        sim.write_kubeconfig(&kubeconfig)?;
        writeln!(
            out,
            "jobs finished; the cluster stays up until Ctrl-C. Look around with:\n  \
             kubectl --kubeconfig {} get tfjobs,pods,services -A",
            kubeconfig.display()
        )?;
        out.flush()?;
        keep.await;
        // The kubeconfig names a port that is about to close: leave nothing behind.
        let _ = std::fs::remove_file(&kubeconfig);
    }
    Ok(outcomes)
}

/// Every TFJob document of the files, with where it came from (`FILE`, or `FILE: document N`
/// in a file of several, as `render` numbers them): current ones as they are, older forms
/// converted.
fn read_jobs(files: &[PathBuf], out: &mut dyn Write) -> anyhow::Result<Vec<(String, Value)>> {
    let mut jobs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).with_context(|| file.display().to_string())?;
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).with_context(|| file.display().to_string())?;
        let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
        let several = docs.len() > 1;
        for (n, doc) in docs.into_iter().enumerate() {
            let place = if several {
                format!("{}: document {}", file.display(), n + 1)
            } else {
                file.display().to_string()
            };
            let f = form(&doc);
            match f {
                Form::Other => {}
                Form::Current => jobs.push((place.clone(), doc)),
                Form::EarlyV1 => {
                    writeln!(
                        out,
                        "{}: {}: its run policy fields are honoured; `tfjob-operator convert {}` \
                         moves them under spec.runPolicy",
                        file.display(),
                        f.describe(),
                        file.display()
                    )?;
                    jobs.push((place.clone(), doc));
                }
                _ => {
                    let converted = convert_document(doc).map_err(|e| {
                        anyhow::anyhow!("{}, document {}: {e}", file.display(), n + 1)
                    })?;
                    writeln!(
                        out,
                        "{}: {}, not kubeflow.org/v1: running it as `tfjob-operator convert {}` \
                         rewrites it ({} notes, {} to check: run that command to read them)",
                        file.display(),
                        f.describe(),
                        file.display(),
                        converted.notes.0.len(),
                        converted.notes.checks()
                    )?;
                    jobs.push((place, converted.doc));
                }
            }
        }
    }
    if jobs.is_empty() {
        bail!("no TFJob in {files:?}");
    }
    Ok(jobs)
}

/// Input the demo refuses, before it starts anything: every problem, one line each, in
/// `render`'s words (field path, and a hint where one helps), after the file it is in.
#[derive(Debug)]
pub struct BadInput(pub Vec<String>);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("\n"))
    }
}

impl std::error::Error for BadInput {}

/// The documents as the demo creates them — what the API server wrote removed (a `kubectl
/// get -o yaml` output cannot be created again), `--backoff-limit` applied — each checked as
/// `tfjob-operator render` checks a manifest: unknown fields as the API server reports them
/// under kubectl's strict field validation, values its schema refuses, then the operator's
/// own checks. Any problem in any document: `BadInput` with all of them.
fn checked(docs: Vec<(String, Value)>, args: &Args) -> anyhow::Result<Vec<Value>> {
    let mut problems = Vec::new();
    let mut jobs = Vec::new();
    for (place, mut doc) in docs {
        as_created(&mut doc);
        if let Some(limit) = args.backoff_limit {
            doc["spec"]["runPolicy"]["backoffLimit"] = json!(limit);
        }
        // JSON is YAML: render reads the document exactly as it reads a file.
        if let Err(found) = tfjob_operator::render::render(&doc.to_string(), None) {
            problems.extend(found.into_iter().map(|p| format!("{place}: {p}")));
        }
        jobs.push(doc);
    }
    if problems.is_empty() {
        Ok(jobs)
    } else {
        Err(BadInput(problems).into())
    }
}

/// Drops what the API server writes (status, uid, resourceVersion...).
fn as_created(doc: &mut Value) {
    if let Some(obj) = doc.as_object_mut() {
        obj.remove("status");
    }
    if let Some(meta) = doc["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "selfLink",
            "generation",
            "managedFields",
        ] {
            meta.remove(field);
        }
    }
}

/// What the demo binary prints on standard error when `run` fails, and its exit status: bad
/// input (`BadInput`) is listed line by line with exit status 2; any other error is one line,
/// its causes after colons, exit status 1. Never a backtrace.
pub fn failure(e: &anyhow::Error) -> (String, u8) {
    match e.downcast_ref::<BadInput>() {
        Some(bad) => (
            format!("{bad}\nnothing was started: fix the manifest and run the demo again"),
            2,
        ),
        None => (format!("error: {e:#}"), 1),
    }
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
    doc: Value,
    args: &Args,
    out: &mut dyn Write,
) -> anyhow::Result<(String, String)> {
    let ns = doc["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(&ns).await?.is_none() {
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
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
    writeln!(out, "tfjob.kubeflow.org/{name} created in namespace {ns}")?;
    Ok((ns, name))
}

/// Every pod of the job runs `--run-seconds`, plus its `--script` keys; parameter servers and
/// evaluators run until the job ends (the simulator's default for them, as on a real cluster:
/// a PS serves until it is deleted), unless `--script` says otherwise.
fn script(sim: &SimHandle, ns: &str, name: &str, job: &TFJob, args: &Args) -> anyhow::Result<()> {
    let mut scripts: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (t, spec) in job.spec.tf_replica_specs.iter() {
        if matches!(t, ReplicaType::Ps | ReplicaType::Evaluator) {
            continue;
        }
        for i in 0..spec.replicas.unwrap_or(1) {
            let pod = tfjob_operator::crd::labels::child_name(name, t, i);
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
