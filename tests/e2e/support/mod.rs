//! End-to-end test support: a cluster (the in-memory simulator, or a real one when `KUBECONFIG`
//! is set: the real tier, see `real`) with the TFJob CRD installed, a namespace per test, the
//! operator watching that namespace (in process on the simulator; the shipped binary with its
//! ServiceAccount's rights on the real tier), and scripted pods (`script`) on both.
#![allow(dead_code)] // each test binary uses its own subset

pub mod faults;
pub mod real;
pub mod scrape;
pub mod script;
pub mod wait;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};
use tfjob_operator::cli::{Cli, Command};
use tfjob_operator::crd::{ConditionStatus, ConditionType, TFJob};
use tfjob_operator::http::Probes;
use tfjob_sim::{Options, Sim, SimHandle};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use real::RealTier;
pub use wait::{WAIT, until};

/// User agents of the operators a test starts begin with this, on both tiers (the binary
/// sends `tfjob-operator/<version>`), so their requests can be counted apart from the test's.
pub const OPERATOR_AGENT: &str = "tfjob-operator";

/// A cluster for one test, with the operator running against it.
pub struct TestCluster {
    pub client: Client,
    pub namespace: String,
    /// The simulator, when no real cluster was given.
    pub sim: Option<SimHandle>,
    /// The real tier, when `KUBECONFIG` names a cluster.
    pub real: Option<RealTier>,
    pub probes: Probes,
    scripts: script::Scripts,
    scripter: JoinHandle<()>,
    operator: Option<Operator>,
    /// Where the request history stood when the test began.
    start: Mark,
    /// Held while the test runs: see `without_operator`.
    load: Option<tokio::sync::RwLockReadGuard<'static, ()>>,
}

/// An operator a test started.
pub enum Operator {
    /// In process (simulator tier): stopped through its shutdown future, as on SIGTERM.
    InProcess {
        task: JoinHandle<()>,
        stop: oneshot::Sender<()>,
    },
    /// The shipped binary (real tier).
    Process(real::OperatorProcess),
}

static OPERATORS: AtomicUsize = AtomicUsize::new(0);

/// The simulator the tests run on: its kubelet's CrashLoopBackOff is short (the real kubelet's
/// is 10 s doubling to 300 s), so tests of in-place restarts stay fast; the real tier's kwok
/// restarts after 100 ms too.
pub fn sim_options() -> Options {
    Options {
        crash_loop_backoff: (Duration::from_millis(100), Duration::from_millis(100)),
        ..Options::default()
    }
}

impl Operator {
    /// Starts `tfjob-operator run --namespace NS FLAGS...` on the cluster's tier.
    pub fn start(c: &TestCluster, flags: &[&str]) -> Self {
        let n = OPERATORS.fetch_add(1, Ordering::Relaxed);
        if let Some(tier) = &c.real {
            let name = format!("{}-{n}", c.namespace);
            return Operator::Process(real::OperatorProcess::spawn(
                tier,
                &c.namespace,
                &name,
                flags,
            ));
        }
        let mut argv = vec!["tfjob-operator", "run", "--namespace", &c.namespace];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::parse_from(argv).command else {
            unreachable!("run parses to Command::Run")
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let sim = c
            .sim
            .as_ref()
            .expect("the simulator tier runs the operator in process");
        let mut config = kube::Config::new(sim.url().parse().expect("simulator URL"));
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_str(&format!("{OPERATOR_AGENT}/e2e-{n}")).expect("agent"),
        ));
        let client = Client::try_from(config).expect("operator client");
        let probes = c.probes.clone();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            if let Err(e) =
                tfjob_operator::operator::run_with(client, *args, probes, shutdown).await
            {
                panic!("operator failed: {e:#}");
            }
        });
        Operator::InProcess { task, stop }
    }

    /// Stop as on SIGTERM and wait until in-flight reconciles are drained; whether it
    /// exited cleanly in time.
    pub async fn stop(self) -> bool {
        match self {
            Operator::InProcess { task, stop } => {
                let _ = stop.send(());
                matches!(tokio::time::timeout(WAIT, task).await, Ok(Ok(())))
            }
            Operator::Process(mut p) => p.terminate(WAIT).await,
        }
    }

    /// Kill: nothing drains.
    pub fn kill(self) {
        match self {
            Operator::InProcess { task, .. } => task.abort(),
            Operator::Process(mut p) => p.kill(),
        }
    }
}

impl TestCluster {
    /// A cluster with the CRD, the namespace `e2e-<test>` and the operator watching it.
    pub async fn start(test: &str) -> Self {
        let mut cluster = Self::without_operator(test).await;
        cluster.start_operator();
        cluster
    }

    /// The same, but the operator is not started yet. The test shares the machine with the
    /// others of this binary, except with one that must run alone (`faults::alone`: the soak
    /// under CPU load measures latency).
    pub async fn without_operator(test: &str) -> Self {
        let load = faults::shared().await;
        let mut cluster = Self::without_operator_on(test, sim_options()).await;
        cluster.load = Some(load);
        cluster
    }

    /// The same, on a simulator started with `options` (when no real cluster is given).
    pub async fn without_operator_on(test: &str, options: Options) -> Self {
        log_to_test_output();
        let real = RealTier::from_env();
        let (client, sim) = if real.is_some() {
            (
                Client::try_default()
                    .await
                    .expect("KUBECONFIG is set but unusable"),
                None,
            )
        } else {
            let sim = Sim::start(options).await.expect("starting the simulator");
            let config = kube::Config::new(sim.url().parse().expect("simulator URL"));
            (
                Client::try_from(config).expect("client for the simulator"),
                Some(sim),
            )
        };
        install_crd(&client).await;
        let namespace = format!("e2e-{test}");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let _ = namespaces
            .delete(&namespace, &DeleteParams::default())
            .await;
        let ns =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("namespace");
        let pp = PostParams::default();
        wait_ok(|| namespaces.create(&pp, &ns)).await;
        let scripts = script::Scripts::default();
        let mut c = Self {
            client,
            namespace,
            sim,
            real,
            probes: Probes::default(),
            scripts: scripts.clone(),
            scripter: tokio::spawn(async {}),
            operator: None,
            start: Mark::Unavailable,
            load: None,
        };
        c.start = c.mark();
        let pods = Api::namespaced(c.client_as(TEST_AGENT).await, &c.namespace);
        c.scripter = script::spawn_scripter(pods, scripts);
        c
    }

    /// Whether this is the simulator tier (fault injection and its other handles).
    pub fn simulated(&self) -> bool {
        self.sim.is_some()
    }

    pub fn sim(&self) -> &SimHandle {
        self.sim.as_ref().expect("this check needs the simulator")
    }

    /// Start the operator, watching this test's namespace.
    pub fn start_operator(&mut self) {
        self.start_operator_with(&[]);
    }

    /// Start the operator with extra `run` flags.
    pub fn start_operator_with(&mut self, flags: &[&str]) {
        self.operator = Some(Operator::start(self, flags));
    }

    /// Stop the operator and wait until its in-flight reconciles are drained.
    pub async fn stop_operator(&mut self) {
        if let Some(operator) = self.operator.take() {
            operator.stop().await;
        }
    }

    /// Kill the operator: nothing drains.
    pub fn kill_operator(&mut self) {
        if let Some(operator) = self.operator.take() {
            operator.kill();
        }
    }

    /// Where this test's operators hold their leader Lease: the test's namespace on the
    /// simulator; on the real tier the operator's own namespace, the only one its Role lets it
    /// write Leases in (one Lease name per test).
    pub fn lease(&self) -> (String, String) {
        let name = format!("{}-leader", self.namespace);
        match &self.real {
            Some(real) => (real.operator_namespace.clone(), name),
            None => (self.namespace.clone(), name),
        }
    }

    /// `run` flags for leader election on [`Self::lease`].
    pub fn leader_flags(&self) -> Vec<String> {
        let (namespace, name) = self.lease();
        vec![
            "--leader-elect".into(),
            "--leader-election-namespace".into(),
            namespace,
            "--leader-election-id".into(),
            name,
        ]
    }

    /// The outcome of pod `name` (e.g. `[("exit-code", "1")]`), for every pod of that name.
    pub fn script_pod(&self, name: &str, keys: &[(&str, &str)]) {
        self.script_pod_in_turn(name, &[keys]);
    }

    /// Outcomes of successive pods named `name`: the first pod runs the first script, a pod
    /// the operator recreates the next one, and the last script applies to all later pods.
    pub fn script_pod_in_turn(&self, name: &str, turns: &[&[(&str, &str)]]) {
        let turns = turns
            .iter()
            .map(|keys| {
                keys.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .collect();
        self.scripts.set(name, turns);
    }

    /// A client to the same cluster (admin) whose requests carry `agent` as User-Agent.
    pub async fn client_as(&self, agent: &str) -> Client {
        let mut config = match &self.sim {
            Some(sim) => kube::Config::new(sim.url().parse().expect("simulator URL")),
            None => kube::Config::infer().await.expect("KUBECONFIG is unusable"),
        };
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_str(agent).expect("user agent"),
        ));
        Client::try_from(config).expect("client")
    }

    pub fn jobs(&self) -> Api<TFJob> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub fn services(&self) -> Api<Service> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Create a TFJob from JSON in this test's namespace; its pods are held until the
    /// scripter releases them with their scripts (`script_pod`).
    pub async fn create(&self, mut job: Value) -> TFJob {
        script::hold_templates(&mut job);
        let job: TFJob = serde_json::from_value(job).expect("test job is a TFJob");
        self.jobs()
            .create(&PostParams::default(), &job)
            .await
            .expect("creating the TFJob")
    }

    /// Wait until condition `t` of job `name` has status True; returns the job then.
    pub async fn until_condition(&self, name: &str, t: ConditionType) -> TFJob {
        until(&self.jobs(), name, &format!("condition {t:?}"), |job| {
            job.filter(|j| has_condition(j, t)).cloned()
        })
        .await
    }

    /// Names of the pods of job `name` that currently exist.
    pub async fn pod_names(&self, job: &str) -> Vec<String> {
        let lp = kube::api::ListParams::default()
            .labels(&format!("training.kubeflow.org/job-name={job}"));
        let mut names: Vec<String> = self
            .pods()
            .list(&lp)
            .await
            .expect("listing pods")
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.name)
            .collect();
        names.sort();
        names
    }

    /// The events (events.k8s.io/v1) recorded about TFJob `name`.
    pub async fn events_about(&self, name: &str) -> Vec<k8s_openapi::api::events::v1::Event> {
        let api: Api<k8s_openapi::api::events::v1::Event> =
            Api::namespaced(self.client.clone(), &self.namespace);
        api.list(&Default::default())
            .await
            .expect("listing events")
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .collect()
    }

    /// Reason/message pairs of the events recorded about TFJob `name`.
    pub async fn events_of(&self, name: &str) -> Vec<(String, String)> {
        let events = self.events_about(name).await.into_iter();
        let mut out: Vec<(String, String)> = events
            .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
            .collect();
        out.sort();
        out
    }

    /// A point in the cluster's request history, to count what happens after it.
    pub fn mark(&self) -> Mark {
        match (
            &self.sim,
            self.real.as_ref().and_then(|r| r.audit_log.as_ref()),
        ) {
            (Some(sim), _) => Mark::Sim(sim.requests()),
            (None, Some(log)) => Mark::Audit(real::audit_offset(log)),
            (None, None) => Mark::Unavailable,
        }
    }

    /// Whether requests can be counted (the simulator, or a real cluster with an audit log).
    pub fn counts_requests(&self) -> bool {
        !matches!(self.mark(), Mark::Unavailable)
    }

    /// Requests by the test's operators since `mark`, by (verb, resource) — on the real
    /// tier those about this test's namespace.
    pub fn operator_requests_since(&self, mark: &Mark) -> Requests {
        let mut out = Requests::default();
        match mark {
            Mark::Sim(before) => {
                let since = self.sim().requests().since(before);
                for (k, n) in since.0 {
                    if k.user_agent.starts_with(OPERATOR_AGENT) {
                        *out.0.entry((k.verb, k.resource)).or_default() += n;
                    }
                }
            }
            Mark::Audit(offset) => {
                let log = self.real.as_ref().and_then(|r| r.audit_log.as_ref());
                for e in real::audit_entries_since(log.expect("audit log"), *offset) {
                    let here = e.object_ref.namespace.as_deref() == Some(&self.namespace);
                    if here && e.user_agent.starts_with(OPERATOR_AGENT) {
                        *out.0.entry((e.verb.clone(), e.resource())).or_default() += 1;
                    }
                }
            }
            Mark::Unavailable => panic!("requests are not counted on this cluster"),
        }
        out
    }
}

/// With `RUST_LOG` set, the in-process operators' logs go to the test's output (shown for
/// failing tests), e.g. `RUST_LOG=tfjob_operator=debug cargo test --test faults`.
fn log_to_test_output() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
        tracing::info!("test logging on");
    }
}

/// A point in the request history (see [`TestCluster::mark`]).
pub enum Mark {
    Sim(tfjob_sim::RequestCounts),
    Audit(u64),
    Unavailable,
}

/// Request counts by (verb, resource), e.g. `("create", "pods")`, `("update", "tfjobs/status")`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requests(pub BTreeMap<(String, String), u64>);

impl Requests {
    /// Requests with this verb and resource (None = any).
    pub fn count(&self, verb: Option<&str>, resource: Option<&str>) -> u64 {
        self.0
            .iter()
            .filter(|((v, r), _)| verb.is_none_or(|x| x == v) && resource.is_none_or(|x| x == r))
            .map(|(_, n)| n)
            .sum()
    }

    /// Writes: create, update, patch, delete, deletecollection.
    pub fn writes(&self) -> u64 {
        self.0
            .iter()
            .filter(|((v, _), _)| {
                ["create", "update", "patch", "delete", "deletecollection"].contains(&v.as_str())
            })
            .map(|(_, n)| n)
            .sum()
    }
}

impl Drop for TestCluster {
    /// Stops what the test started. On the real tier, a test that passed still fails if the
    /// operator was refused anything for lack of rights (least privilege, really checked).
    fn drop(&mut self) {
        self.scripter.abort();
        let operator = self.operator.take();
        if let Some(Operator::Process(p)) = &operator
            && std::thread::panicking()
        {
            eprintln!("operator log ({}):\n{}", p.log.display(), p.log_tail(60));
        }
        if let Some(operator) = operator {
            operator.kill();
        }
        let (Mark::Audit(offset), Some(log)) = (
            &self.start,
            self.real.as_ref().and_then(|r| r.audit_log.as_ref()),
        ) else {
            return;
        };
        let denied: Vec<String> = real::audit_entries_since(log, *offset)
            .into_iter()
            .filter(|e| e.user_agent.starts_with(OPERATOR_AGENT) && e.is_permission_denied())
            .filter(|e| e.object_ref.namespace.as_deref() == Some(&self.namespace))
            .map(|e| {
                format!(
                    "{} {}: {:?}",
                    e.verb,
                    e.resource(),
                    e.response_status.message
                )
            })
            .collect();
        if std::thread::panicking() {
            if !denied.is_empty() {
                eprintln!("the operator was refused (403): {denied:#?}");
            }
            return;
        }
        assert!(
            denied.is_empty(),
            "the operator was refused (403): {denied:#?}"
        );
    }
}

/// The children an event note of the operator names: `Created pod: a-worker-0` → one,
/// `Created 4 pods: a-ps-0, a-worker-0 … a-worker-2` → four (`first … last` is a run of
/// consecutive indices).
pub fn children_named(note: &str) -> Vec<String> {
    let Some((_, list)) = note.split_once(": ") else {
        return Vec::new();
    };
    let index = |name: &str| {
        let (prefix, i) = name.rsplit_once('-')?;
        Some((prefix.to_string(), i.parse::<u64>().ok()?))
    };
    let mut out = Vec::new();
    for part in list.split(", ") {
        match part
            .split_once(" … ")
            .and_then(|(a, b)| Some((index(a)?, index(b)?)))
        {
            Some(((prefix, first), (_, last))) => {
                out.extend((first..=last).map(|i| format!("{prefix}-{i}")));
            }
            None => out.push(part.to_string()),
        }
    }
    out
}

/// Whether the job has condition `t` with status True.
pub fn has_condition(job: &TFJob, t: ConditionType) -> bool {
    job.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == t && c.status == ConditionStatus::True)
    })
}

/// The job's condition types with status True, in order.
pub fn true_conditions(job: &TFJob) -> Vec<ConditionType> {
    job.status
        .as_ref()
        .map(|s| {
            s.conditions
                .iter()
                .filter(|c| c.status == ConditionStatus::True)
                .map(|c| c.type_)
                .collect()
        })
        .unwrap_or_default()
}

async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds
        .create(&PostParams::default(), &tfjob_operator::crd::schema::crd())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("installing the CRD: {e}"),
    }
    until(&crds, "tfjobs.kubeflow.org", "CRD established", |crd| {
        crd.and_then(|c| c.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .filter(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
            .map(|_| ())
    })
    .await;
}

/// Retry `f` while it fails (a namespace still terminating from an earlier run, say).
async fn wait_ok<T, F, Fut>(f: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if tokio::time::Instant::now() > deadline => panic!("giving up: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// A TFJob in JSON: `replicas` lists (type, count, restartPolicy); every replica runs
/// `run_seconds` on the simulator and exits 0 unless scripted otherwise.
pub fn job(name: &str, replicas: &[(&str, i32, &str)]) -> Value {
    let specs: serde_json::Map<String, Value> = replicas
        .iter()
        .map(|(t, n, policy)| {
            let spec = json!({
                "replicas": n,
                "restartPolicy": policy,
                "template": {
                    "metadata": {"annotations": {"sim.tfjob.dev/run-seconds": "0.3"}},
                    "spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 1"]}]}
                }
            });
            (t.to_string(), spec)
        })
        .collect();
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": specs}
    })
}

/// Set an annotation on the pod template of replica type `t` (e.g. a `sim.tfjob.dev/` script key).
pub fn annotate(job: &mut Value, t: &str, key: &str, value: &str) {
    job["spec"]["tfReplicaSpecs"][t]["template"]["metadata"]["annotations"][key] = json!(value);
}

// e2e-a helpers

/// Every version of the objects in an `Api` that a watch delivered from its start: the
/// evidence for "never happened" checks (no new pod, never Running and Restarting at once),
/// which polling could miss between two reads.
pub struct Recorder<K> {
    seen: std::sync::Arc<std::sync::Mutex<Vec<K>>>,
    task: JoinHandle<()>,
}

impl<K> Recorder<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync,
    K: 'static,
{
    /// Watch `api` (objects matching the label selector `labels`, "" for all), returning
    /// once the watch has listed what exists, so nothing created afterwards is missed.
    pub async fn start(api: Api<K>, labels: &str) -> Self {
        use futures::StreamExt;
        use kube::runtime::watcher;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (ready, listed) = oneshot::channel::<()>();
        let config = watcher::Config::default().labels(labels);
        let sink = seen.clone();
        let task = tokio::spawn(async move {
            let mut ready = Some(ready);
            let mut events = std::pin::pin!(watcher(api, config));
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                        sink.lock().expect("recorder lock").push(o)
                    }
                    Ok(watcher::Event::Delete(o)) => sink.lock().expect("recorder lock").push(o),
                    Ok(watcher::Event::InitDone) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                    }
                    Ok(watcher::Event::Init) => {}
                    // (the watcher retries at once: a failure that comes back at once would
                    // spin this task, see `script::spawn_scripter`)
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        });
        let _ = tokio::time::timeout(WAIT, listed).await;
        Self { seen, task }
    }

    /// Every version seen so far, in the order seen.
    pub fn seen(&self) -> Vec<K> {
        self.seen.lock().expect("recorder lock").clone()
    }

    /// The distinct UIDs seen for the object named `name`, in order of first sight.
    pub fn uids_of(&self, name: &str) -> Vec<String> {
        let mut uids = Vec::new();
        for o in self.seen() {
            let meta = o.meta();
            if meta.name.as_deref() == Some(name)
                && let Some(uid) = meta.uid.clone()
                && !uids.contains(&uid)
            {
                uids.push(uid);
            }
        }
        uids
    }

    /// The distinct (name, uid) pairs seen, sorted.
    pub fn identities(&self) -> std::collections::BTreeSet<(String, String)> {
        self.seen()
            .iter()
            .filter_map(|o| Some((o.meta().name.clone()?, o.meta().uid.clone()?)))
            .collect()
    }
}

impl<K> Drop for Recorder<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A watch on the pods of TFJob `job` in the test's namespace.
pub async fn record_pods(c: &TestCluster, job: &str) -> Recorder<Pod> {
    Recorder::start(c.pods(), &format!("training.kubeflow.org/job-name={job}")).await
}

/// A watch on every TFJob of the test's namespace (filter by name when reading).
pub async fn record_jobs(c: &TestCluster) -> Recorder<TFJob> {
    Recorder::start(c.jobs(), "").await
}

/// The condition of type `t`, if present.
pub fn condition(job: &TFJob, t: ConditionType) -> Option<&tfjob_operator::crd::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == t)
}

/// `(reason, message)` of condition `t`, if present.
pub fn reason_and_message(job: &TFJob, t: ConditionType) -> Option<(String, String)> {
    condition(job, t).map(|c| {
        (
            c.reason.clone().unwrap_or_default(),
            c.message.clone().unwrap_or_default(),
        )
    })
}

/// `status.replicaStatuses[t].restarts`.
pub fn restarts(job: &TFJob, t: tfjob_operator::crd::ReplicaType) -> Option<i32> {
    job.status
        .as_ref()?
        .replica_statuses
        .get(&t)
        .and_then(|s| s.restarts)
}

impl TestCluster {
    /// Wait until an event with `reason` and exactly `message` is recorded about TFJob `job`.
    pub async fn until_event(&self, job: &str, reason: &str, message: &str) {
        let what = format!("{reason} {message:?}");
        self.until_event_where(job, &what, |r, m| r == reason && m == message)
            .await;
    }

    /// Wait until an event with `reason` (any message) is recorded about TFJob `job`.
    pub async fn until_event_reason(&self, job: &str, reason: &str) {
        self.until_event_where(job, reason, |r, _| r == reason)
            .await;
    }

    /// Events are published behind the passes (docs/behaviour.md §9): a test waits for one,
    /// it does not read them once when the status shows.
    async fn until_event_where(&self, job: &str, what: &str, matches: impl Fn(&str, &str) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let events = self.events_of(job).await;
            if events.iter().any(|(r, m)| matches(r, m)) {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("no event {what} about {job}; events: {events:#?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The pod's UID once it exists (and is not being deleted) with a UID other than `not`.
    pub async fn until_pod_uid(&self, name: &str, not: Option<&str>) -> String {
        until(&self.pods(), name, "a (new) pod", |p| {
            p.filter(|p| p.metadata.deletion_timestamp.is_none())
                .and_then(|p| p.metadata.uid.clone())
                .filter(|uid| Some(uid.as_str()) != not)
        })
        .await
    }

    /// The pod's phase once it is `phase`.
    pub async fn until_pod_phase(&self, name: &str, phase: &str) -> Pod {
        until(&self.pods(), name, &format!("pod phase {phase}"), |p| {
            p.filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase))
                .cloned()
        })
        .await
    }
}

/// Let the operator act for a short bounded while, for "this does not happen" checks made
/// after the state that would precede it was reached.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// Poll `check` until it returns `Some` (60 s limit), for states spread over several objects.
pub async fn eventually<T, Fut>(what: &str, check: impl Fn() -> Fut) -> T
where
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl TestCluster {
    /// Wait until the pods of `job` that exist (not being deleted) are exactly `names`.
    pub async fn until_pods_are(&self, job: &str, names: &[&str]) {
        let what = format!("pods of {job} to be {names:?}");
        eventually(&what, || async {
            (self.pod_names(job).await == names).then_some(())
        })
        .await
    }
}

// e2e-b helpers

/// User agent of [`TestCluster::test_client`], so that counted requests separate the test's
/// own writes from the operator's.
pub const TEST_AGENT: &str = "tfjob-e2e-test";

impl TestCluster {
    /// A second client to the same cluster whose requests carry [`TEST_AGENT`].
    pub async fn test_client(&self) -> Client {
        self.client_as(TEST_AGENT).await
    }

    /// TFJobs of this test's namespace, through [`Self::test_client`].
    pub async fn test_jobs(&self) -> Api<TFJob> {
        Api::namespaced(self.test_client().await, &self.namespace)
    }

    /// Apply a JSON merge patch to TFJob `name` (as the test, not as the operator).
    pub async fn merge_patch_job(&self, name: &str, patch: Value) -> TFJob {
        self.test_jobs()
            .await
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
            .expect("patching the TFJob")
    }

    /// Wait until the object `name` is gone from `api` (or is being deleted).
    pub async fn until_gone<K>(&self, api: &Api<K>, name: &str, what: &str)
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        until(api, name, what, |o| {
            o.is_none_or(|o| o.meta().deletion_timestamp.is_some())
                .then_some(())
        })
        .await
    }

    /// Names of the services of job `name` that currently exist.
    pub async fn service_names(&self, job: &str) -> Vec<String> {
        let lp = kube::api::ListParams::default()
            .labels(&format!("training.kubeflow.org/job-name={job}"));
        let mut names: Vec<String> = self
            .services()
            .list(&lp)
            .await
            .expect("listing services")
            .items
            .into_iter()
            .filter(|s| s.metadata.deletion_timestamp.is_none())
            .filter_map(|s| s.metadata.name)
            .collect();
        names.sort();
        names
    }
}
