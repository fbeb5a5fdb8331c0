//! Support of the fault suite (`tests/e2e/faults/`): operators that name themselves by User-Agent
//! (so the simulator's counters and `freeze_after_writes` tell them apart), stopped gracefully
//! or killed; a watch log with arrival times; seeded randomness; a CPU burner; and a lock that
//! lets one load-sensitive test run alone.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::api::Api;
use tfjob_operator::cli::{Cli, Command};
use tfjob_operator::http::Probes;
use tfjob_sim::{Options, RequestCounts, SimHandle};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{TestCluster, WAIT};

/// Every operator started by [`TestCluster::operator`] sends `User-Agent:
/// tfjob-operator-e2e/NNNN` (unique in the process, zero-padded so that no agent is a substring
/// of another); this prefix matches them all.
pub const OPERATOR_AGENT: &str = "tfjob-operator-e2e/";

const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// The seed of a randomized test: `FAULTS_SEED` when set (to reproduce a run), else fresh.
/// Printed, so a failing run can be replayed.
pub fn seed(test: &str) -> u64 {
    let seed = match std::env::var("FAULTS_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .expect("FAULTS_SEED must be an unsigned integer"),
        Err(_) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            (now.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32)
        }
    };
    eprintln!("{test}: seed {seed} (reproduce with FAULTS_SEED={seed})");
    seed
}

/// A small seeded random source (splitmix64) for test plans.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Uniform in `[lo, hi)`.
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.range_f64(0.0, 1.0) < p
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Simulator options of the fault suite: the test's seed (faults, watch delays) and a long watch
/// history, so the tests' own watches replay instead of relisting unless a test compacts it.
pub fn sim_options(seed: u64) -> Options {
    Options {
        seed,
        history: 1_000_000,
        ..super::sim_options()
    }
}

/// A cluster for a fault test: the simulator (seeded) or the real cluster of `KUBECONFIG`; no
/// operator started yet.
pub async fn cluster(test: &str, seed: u64) -> TestCluster {
    TestCluster::without_operator_on(test, sim_options(seed)).await
}

static NEXT_AGENT: AtomicU32 = AtomicU32::new(1);

/// A fresh operator User-Agent, unique in this process.
pub fn next_agent() -> String {
    format!(
        "{OPERATOR_AGENT}{:04}",
        NEXT_AGENT.fetch_add(1, Ordering::Relaxed)
    )
}

/// An operator a fault test started: in process (`operator::run_with`) with its own client and
/// User-Agent on the simulator; the shipped binary with its ServiceAccount on the real tier
/// (`support::real`). Dropping it kills it.
pub struct Operator {
    agent: String,
    probes: Probes,
    task: Option<JoinHandle<anyhow::Result<()>>>,
    stop: Option<oneshot::Sender<()>>,
    process: Option<super::real::OperatorProcess>,
}

impl TestCluster {
    /// Start an operator watching this test's namespace with extra `run` flags, under a fresh
    /// User-Agent (see [`Operator::agent`]). Several may run at once.
    pub async fn operator(&self, flags: &[&str]) -> Operator {
        self.operator_as(&next_agent(), flags).await
    }

    /// The same, with a given User-Agent (on the simulator; the binary sends its own).
    pub async fn operator_as(&self, agent: &str, flags: &[&str]) -> Operator {
        if let Some(tier) = &self.real {
            let name = format!(
                "{}-{}",
                self.namespace,
                agent.rsplit('/').next().unwrap_or(agent)
            );
            let process = super::real::OperatorProcess::spawn(tier, &self.namespace, &name, flags);
            let probes = Probes::default();
            probes.ready.store(true, Ordering::Relaxed);
            return Operator {
                agent: super::OPERATOR_AGENT.to_string(),
                probes,
                task: None,
                stop: None,
                process: Some(process),
            };
        }
        let mut argv = vec!["tfjob-operator", "run", "--namespace", &self.namespace];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::parse_from(argv).command else {
            unreachable!("run parses to Command::Run")
        };
        let client = self.client_as(agent).await;
        let probes = Probes::default();
        let (stop, stopped) = oneshot::channel::<()>();
        let run_probes = probes.clone();
        let task = tokio::spawn(async move {
            // The shutdown future is the operator's SIGTERM; a dropped sender (kill) never fires.
            let shutdown = async move {
                if stopped.await.is_err() {
                    futures::future::pending::<()>().await;
                }
            };
            tfjob_operator::operator::run_with(client, *args, run_probes, shutdown).await
        });
        Operator {
            agent: agent.to_string(),
            probes,
            task: Some(task),
            stop: Some(stop),
            process: None,
        }
    }
}

impl Operator {
    /// Its User-Agent (a needle for `RequestCounts::by_user_agent`, `freeze_after_writes` and
    /// `writes_by`).
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Its `/readyz`: caches synced (or standing by for the lease). Always true for the binary.
    pub fn ready(&self) -> bool {
        self.probes.ready.load(Ordering::Relaxed)
    }

    /// Whether `run_with` has returned (or panicked).
    pub fn exited(&self) -> bool {
        self.task.as_ref().is_none_or(|t| t.is_finished()) && self.process.is_none()
    }

    /// Wait until it reports ready.
    pub async fn until_ready(&self) {
        let deadline = Instant::now() + WAIT;
        while !self.ready() {
            assert!(
                Instant::now() < deadline,
                "operator {} never became ready",
                self.agent
            );
            assert!(!self.exited(), "operator {} exited", self.agent);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// SIGTERM: resolve its shutdown future (or signal the binary) and wait up to `within` for
    /// it to return. Returns what it returned and how long that took; Err when it did not
    /// return in time (it is then killed).
    pub async fn stop(
        mut self,
        within: Duration,
    ) -> Result<(anyhow::Result<()>, Duration), String> {
        let started = Instant::now();
        if let Some(mut process) = self.process.take() {
            return if process.terminate(within).await {
                Ok((Ok(()), started.elapsed()))
            } else {
                Err(format!(
                    "the operator binary did not exit cleanly within {within:?}: {}",
                    process.log_tail(20)
                ))
            };
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self.task.take().expect("a running operator");
        let abort = task.abort_handle();
        match tokio::time::timeout(within, task).await {
            Ok(Ok(result)) => Ok((result, started.elapsed())),
            Ok(Err(e)) => Err(format!("operator {} panicked: {e}", self.agent)),
            Err(_) => {
                abort.abort();
                Err(format!(
                    "operator {} did not stop within {within:?} of SIGTERM",
                    self.agent
                ))
            }
        }
    }

    /// Stop it gracefully and require a clean exit within 30 s.
    pub async fn stop_cleanly(self) {
        let agent = self.agent.clone();
        match self.stop(Duration::from_secs(30)).await {
            Ok((Ok(()), _)) => {}
            Ok((Err(e), _)) => panic!("operator {agent} failed: {e:#}"),
            Err(e) => panic!("{e}"),
        }
    }

    /// Kill it: its task is aborted at its next await point (the binary gets SIGKILL); requests
    /// in flight are dropped unanswered, nothing drains, nothing is released (a lease stays
    /// held until it expires).
    pub async fn kill(mut self) {
        self.stop.take();
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }
}

/// The write requests (answered or not) in `counts` sent with a User-Agent containing `agent`.
pub fn writes_of(counts: &RequestCounts, agent: &str) -> RequestCounts {
    RequestCounts(
        counts
            .0
            .iter()
            .filter(|(k, _)| k.user_agent.contains(agent))
            .filter(|(k, _)| WRITE_VERBS.contains(&k.verb.as_str()))
            .map(|(k, n)| (k.clone(), *n))
            .collect(),
    )
}

/// The requests in `counts` sent with a User-Agent containing `agent`.
pub fn requests_of(counts: &RequestCounts, agent: &str) -> RequestCounts {
    RequestCounts(
        counts
            .0
            .iter()
            .filter(|(k, _)| k.user_agent.contains(agent))
            .map(|(k, n)| (k.clone(), *n))
            .collect(),
    )
}

/// `counts` as "verb resource: n" (over all user agents), for failure messages.
pub fn breakdown(counts: &RequestCounts) -> String {
    let mut out = BTreeMap::<String, u64>::new();
    for (k, n) in &counts.0 {
        *out.entry(format!("{} {}", k.verb, k.resource)).or_default() += n;
    }
    let parts: Vec<String> = out.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    format!("{{{}}}", parts.join(", "))
}

/// One object version delivered by a watch.
#[derive(Clone, Debug)]
pub struct Seen<K> {
    /// When the test received it.
    pub at: Instant,
    /// Delivered as a deletion.
    pub deleted: bool,
    pub obj: K,
}

impl<K: Resource> Seen<K> {
    pub fn name(&self) -> &str {
        self.obj.meta().name.as_deref().unwrap_or_default()
    }
    pub fn uid(&self) -> &str {
        self.obj.meta().uid.as_deref().unwrap_or_default()
    }
    /// The simulator's resourceVersion as a number: it is one global counter there, so it
    /// orders writes across objects and kinds (happened-before on the server).
    pub fn rv(&self) -> u64 {
        self.obj
            .meta()
            .resource_version
            .as_deref()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
    pub fn terminating(&self) -> bool {
        self.obj.meta().deletion_timestamp.is_some()
    }
}

/// Every version a watch delivered, with its arrival time; like `Recorder`, but with times,
/// deletions marked and cheap access.
pub struct WatchLog<K> {
    seen: Arc<Mutex<Vec<Seen<K>>>>,
    task: JoinHandle<()>,
}

impl<K> WatchLog<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    /// Watch `api` (label selector `labels`, "" = all), returning once the initial list is in.
    pub async fn start(api: Api<K>, labels: &str) -> Self {
        use futures::StreamExt;
        use kube::runtime::watcher;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (ready, listed) = oneshot::channel::<()>();
        let config = watcher::Config::default().labels(labels);
        let sink = seen.clone();
        let task = tokio::spawn(async move {
            let mut ready = Some(ready);
            let mut events = std::pin::pin!(watcher(api, config));
            while let Some(event) = events.next().await {
                let (obj, deleted) = match event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => (o, false),
                    Ok(watcher::Event::Delete(o)) => (o, true),
                    Ok(watcher::Event::InitDone) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                        continue;
                    }
                    Ok(watcher::Event::Init) => continue,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let at = Instant::now();
                sink.lock()
                    .expect("watch log lock")
                    .push(Seen { at, deleted, obj });
            }
        });
        let _ = tokio::time::timeout(WAIT, listed).await;
        Self { seen, task }
    }

    /// Run `f` on every version seen so far, in order of arrival.
    pub fn with<T>(&self, f: impl FnOnce(&[Seen<K>]) -> T) -> T {
        f(&self.seen.lock().expect("watch log lock"))
    }

    pub fn len(&self) -> usize {
        self.with(|s| s.len())
    }

    /// Versions seen from position `from` on (cloned).
    pub fn since(&self, from: usize) -> Vec<Seen<K>> {
        self.with(|s| s.get(from..).unwrap_or_default().to_vec())
    }

    /// The versions of the object named `name`, in order of arrival (cloned).
    pub fn versions(&self, name: &str) -> Vec<Seen<K>> {
        self.with(|s| s.iter().filter(|v| v.name() == name).cloned().collect())
    }

    /// Object name → its distinct uids in order of first sight.
    pub fn uids(&self) -> BTreeMap<String, Vec<String>> {
        self.with(|s| {
            let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for v in s {
                let uids = out.entry(v.name().to_string()).or_default();
                if !uids.iter().any(|u| u == v.uid()) {
                    uids.push(v.uid().to_string());
                }
            }
            out
        })
    }

    /// The distinct uids of the object named `name`.
    pub fn uids_of(&self, name: &str) -> Vec<String> {
        self.uids().remove(name).unwrap_or_default()
    }
}

impl<K> Drop for WatchLog<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Pod phase, "" when none.
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// "After the n-th failed pod named `pod`, script `keys`": pods recreated under the same name get
/// the same script (`script_pod` is by name), so an outcome that changes between incarnations
/// is rescripted from the test while the job runs.
#[derive(Clone, Debug)]
pub struct Rescript {
    pub pod: String,
    /// Distinct failed incarnations (uids seen with phase Failed) before the new script applies.
    pub after_failures: usize,
    pub keys: Vec<(String, String)>,
}

/// Run `main` while applying `rules` as the watch on pods `pods` reveals failures.
pub async fn while_rescripting<T>(
    sim: &SimHandle,
    namespace: &str,
    pods: &WatchLog<Pod>,
    rules: Vec<Rescript>,
    main: impl Future<Output = T>,
) -> T {
    let rescripting = async {
        let mut failed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut pending = rules;
        let mut cursor = 0;
        loop {
            let fresh = pods.since(cursor);
            cursor += fresh.len();
            for v in fresh.iter().filter(|v| phase(&v.obj) == "Failed") {
                let uids = failed.entry(v.name().to_string()).or_default();
                if !uids.iter().any(|u| u == v.uid()) {
                    uids.push(v.uid().to_string());
                }
            }
            pending.retain(|r| {
                let due = failed.get(&r.pod).map_or(0, Vec::len) >= r.after_failures;
                if due {
                    sim.script_pod(namespace, &r.pod, r.keys.clone());
                }
                !due
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        out = main => out,
        _ = rescripting => unreachable!("rescripting never ends"),
    }
}

/// Busy processes (`sh -c 'while :; do :; done'`) loading the machine; killed (by their own
/// pids) when dropped.
pub struct CpuBurner(Vec<std::process::Child>);

impl CpuBurner {
    pub fn start(processes: usize) -> Self {
        let children = (0..processes)
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .expect("starting a CPU burner")
            })
            .collect();
        Self(children)
    }
}

impl Drop for CpuBurner {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

static LOAD: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Held by every test of the suite but a load test, which takes [`alone`]: tests of one binary
/// run in parallel, and a test that loads the machine on purpose must not starve the others.
pub async fn shared() -> tokio::sync::RwLockReadGuard<'static, ()> {
    LOAD.read().await
}

/// [`shared`] for a test that is not async (a property test).
pub fn shared_blocking() -> tokio::sync::RwLockReadGuard<'static, ()> {
    LOAD.blocking_read()
}

/// Run alone among the tests of this binary that hold [`shared`].
pub async fn alone() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    LOAD.write().await
}

/// Quantile `q` (0..=1) of sorted `values` (nearest rank).
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
