//! tfjob-sim: an in-memory Kubernetes API server and pod simulator, the test cluster of
//! tfjob-operator. [`Sim::start`] serves HTTP on 127.0.0.1 and returns a [`SimHandle`] for
//! tests (URL, kubeconfig, request counters, fault injection, pod scripts, node loss). I/O: a
//! TCP listener and the background tasks of the server and controllers.
#![forbid(unsafe_code)]

// The core, in front: an API server (`server`) over an in-memory object store (`store`), with
// the CRD schemas, selectors and patches it applies. `store` and `selector` are public for
// tests that seed or read objects without HTTP.
pub mod store;

pub(crate) mod server;

pub(crate) mod patch;
pub(crate) mod schema;
pub mod selector;

// Around the core: the controllers that make it a cluster, and what tests inject.
pub(crate) mod chaos;
pub(crate) mod controllers;
// The pod and service addresses the controllers and the store hand out.
pub(crate) mod addresses;

// kubectl fidelity, one door (cargo feature `kubectl`), and the kubeconfig for kubectl.
mod kubeconfig;
pub(crate) mod kubectl;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use chaos::faults::Faults;
pub use chaos::faults::{FaultRule, RequestCounts, RequestKey};
use chaos::watch_delay::WatchDelays;
use controllers::kubelet_loop::{self, Control, LoopOptions};
use controllers::{gc, kubelet};
use store::{Store, StoreOptions, WriteOptions};

/// The real kubelet's delay between a container's `terminated` status and the pod's terminal
/// phase (measured on v1.34).
pub const DEFAULT_PHASE_LAG: Duration = Duration::from_secs(1);

/// How to start the simulator.
#[derive(Clone, Debug)]
pub struct Options {
    /// TCP port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Simulated nodes `sim-node-0..N`.
    pub nodes: usize,
    /// Watch events kept for replay (older resourceVersions get 410 Expired).
    pub history: usize,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Deleted running pods disappear after ~50ms instead of their grace period.
    pub fast_deletion: bool,
    /// Run the pod simulator loop (scheduler + kubelet).
    pub kubelet: bool,
    /// Seed of the fault-injection and watch-delay random sources.
    pub seed: u64,
    /// Container restart back-off (CrashLoopBackOff): (initial, max). The first restart is
    /// immediate, later ones wait `initial` doubling up to `max`; default the real kubelet's
    /// (10 s, 300 s).
    pub crash_loop_backoff: (Duration, Duration),
    /// How long after its containers' end a pod's terminal phase (Succeeded/Failed) is
    /// written: the status with the `terminated` states comes first, phase still Running, as
    /// on a real node (measured ~1 s, the default).
    pub phase_lag: Duration,
    /// Serve streaming lists (watches with `sendInitialEvents`: the `WatchList` feature, on by
    /// default in Kubernetes 1.34). Off, they are refused as invalid (422), as 1.33 refuses them.
    pub streaming_lists: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            port: 0,
            nodes: 3,
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
            fast_deletion: true,
            kubelet: true,
            seed: 0x5EED,
            crash_loop_backoff: (
                kubelet::backoff::DEFAULT_INITIAL,
                kubelet::backoff::DEFAULT_MAX,
            ),
            phase_lag: DEFAULT_PHASE_LAG,
            streaming_lists: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("binding 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("seeding the store: {0}")]
    Seed(#[from] store::ApiError),
}

/// Entry point.
pub struct Sim;

/// A running simulator. Dropping it stops the server and its loops.
pub struct SimHandle {
    addr: SocketAddr,
    store: Arc<Store>,
    faults: Arc<Faults>,
    state: Arc<server::State>,
    control: Arc<Control>,
    nodes: Vec<String>,
    shutdown: tokio::sync::watch::Sender<bool>,
}

fn seed(store: &Store, nodes: &[String]) -> Result<(), store::ApiError> {
    let opts = WriteOptions::default();
    let internal = WriteOptions {
        internal: true,
        ..Default::default()
    };
    if let Some(ns) = store.lookup("", "v1", "namespaces") {
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            store.create(&ns, "", json!({"metadata": {"name": name}}), &opts)?;
        }
    }
    if let Some(rt) = store.lookup("", "v1", "nodes") {
        for n in nodes {
            let ip = kubelet_loop::node_ip(nodes, n);
            store.create(&rt, "", kubelet_loop::node_object(n, &ip), &internal)?;
        }
    }
    Ok(())
}

impl Sim {
    /// Bind, seed namespaces and nodes, and spawn the server, GC and pod loops.
    pub async fn start(opts: Options) -> Result<SimHandle, SimError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", opts.port))
            .await
            .map_err(|source| SimError::Bind {
                port: opts.port,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| SimError::Bind {
            port: opts.port,
            source,
        })?;
        let store = Arc::new(Store::new(StoreOptions {
            history: opts.history,
            ..Default::default()
        }));
        let nodes: Vec<String> = (0..opts.nodes).map(|i| format!("sim-node-{i}")).collect();
        seed(&store, &nodes)?;
        let faults = Arc::new(Faults::new(opts.seed));
        let state = Arc::new(server::State {
            store: store.clone(),
            faults: faults.clone(),
            watch_delays: Arc::new(WatchDelays::new(opts.seed)),
            freeze: Arc::new(chaos::freeze::Freeze::default()),
            addr,
            bookmark_interval: opts.bookmark_interval,
            watch_cuts: Default::default(),
            streaming_lists: opts.streaming_lists,
            streamed_lists: Default::default(),
            streamed_lists_done: Default::default(),
        });
        let (shutdown, rx) = tokio::sync::watch::channel(false);
        let control = Arc::new(Control::default());
        tokio::spawn(server::serve(listener, state.clone(), rx.clone()));
        tokio::spawn(gc::run(store.clone(), rx.clone()));
        if opts.kubelet {
            let lo = LoopOptions {
                nodes: nodes.clone(),
                fast_deletion: opts.fast_deletion,
                crash_loop_backoff: opts.crash_loop_backoff,
                phase_lag: opts.phase_lag,
            };
            tokio::spawn(kubelet_loop::run(store.clone(), control.clone(), lo, rx));
        }
        Ok(SimHandle {
            addr,
            store,
            faults,
            state,
            control,
            nodes,
            shutdown,
        })
    }
}

impl SimHandle {
    /// `http://127.0.0.1:<port>`: give it to `kube::Config::new`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// Direct access to the object store (bypasses HTTP, faults and counters).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
    /// Write a kubeconfig (no auth, current context set) for kubectl.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        kubeconfig::write_kubeconfig(path, &self.url())
    }
    /// Snapshot of request counters by verb, resource and user agent.
    pub fn requests(&self) -> RequestCounts {
        self.faults.counts()
    }
    /// Write requests (create/update/patch/delete) since `snapshot`.
    pub fn writes_since(&self, snapshot: &RequestCounts) -> u64 {
        self.requests().since(snapshot).writes()
    }
    /// Streaming lists served so far (each also counted as a `list` in `requests`).
    pub fn streamed_lists(&self) -> u64 {
        self.state
            .streamed_lists
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Streaming lists of `plural` whose initial events were all sent (the client's view of
    /// that resource is complete once it has read them).
    pub fn streamed_lists_of(&self, plural: &str) -> u64 {
        let done = self.state.streamed_lists_done.lock();
        let done = done.unwrap_or_else(|e| e.into_inner());
        done.get(plural).copied().unwrap_or(0)
    }

    pub fn set_fault(&self, rule: FaultRule) {
        self.faults.add_rule(rule);
    }
    pub fn clear_faults(&self) {
        self.faults.clear_rules();
    }
    /// Delay delivery of watch events of `resource` (a plural such as "pods"; None = every
    /// resource) by a uniform random latency in [min, max] (seeded by `Options::seed`). Each
    /// stream keeps its order; streams of different kinds drift apart. Applies to live events
    /// from now on; replays and initial lists are not delayed.
    pub fn set_watch_delay(&self, resource: Option<&str>, min: Duration, max: Duration) {
        self.state.watch_delays.set(resource, min, max);
    }
    /// Deliver watch events without delay again (events already in flight still arrive).
    pub fn clear_watch_delays(&self) {
        self.state.watch_delays.clear();
    }
    /// Simulate the client process being killed right after its `n`-th write from now: once
    /// the server has carried out `n` more writes (create, update, patch, delete,
    /// deletecollection answered 2xx) from clients whose User-Agent contains `user_agent`, every
    /// later request of such a client hangs, never carried out, and their watches deliver
    /// nothing, until [`SimHandle::unfreeze`] (which closes those connections unanswered). While
    /// armed, that client's writes run one at a time, so exactly `n` take effect. `n = 0`
    /// freezes at once.
    pub fn freeze_after_writes(&self, user_agent: &str, n: u64) {
        self.state.freeze.arm(user_agent, n);
    }
    /// Lift the freeze (and disarm): held requests get their connections closed unanswered
    /// (nothing they asked for is done), frozen watch streams end; later requests are served.
    pub fn unfreeze(&self) {
        self.state.freeze.unfreeze();
    }
    /// Writes the server carried out (answered 2xx; an `error_after_write` fault still counts)
    /// for clients whose User-Agent contains `user_agent`, since the start.
    pub fn writes_by(&self, user_agent: &str) -> u64 {
        self.state.freeze.writes_by(user_agent)
    }
    /// End every open watch connection (clients re-watch from their last resourceVersion).
    pub fn drop_watches(&self) {
        self.state.watch_cuts.all();
    }
    /// End the open watch connections of these resources (plurals: "pods", "services",
    /// "tfjobs") and no other; their clients re-watch from their last resourceVersion.
    pub fn drop_watches_of(&self, plurals: &[&str]) {
        self.state.watch_cuts.of(plurals);
    }
    /// Forget the watch history: re-watching from an older resourceVersion yields 410.
    pub fn compact_history(&self) {
        self.store.compact_history();
    }
    /// Forget the watch history of these resources alone (plurals of any group): their
    /// re-watches from an older resourceVersion get 410 and the client re-lists, while the
    /// watches of other resources resume where they were, as when one of the API server's
    /// per-resource watch caches loses its window.
    pub fn compact_history_of(&self, plurals: &[&str]) {
        self.store.compact_history_of(plurals);
    }
    /// An API server restart as clients see it: every watch drops, state is kept.
    pub fn restart(&self) {
        self.drop_watches();
    }
    /// Script the pod `ns/name` with `sim.tfjob.dev/<key>` keys (e.g. `("exit-code", "1")`),
    /// taking precedence over its annotations; the pod may be created later.
    pub fn script_pod<K: Into<String>, V: Into<String>>(
        &self,
        ns: &str,
        name: &str,
        keys: impl IntoIterator<Item = (K, V)>,
    ) {
        let keys: BTreeMap<String, String> = keys
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.control.script_pod(ns, name, keys);
    }
    /// The simulated node names.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }
    /// Lose a node, as when its Node object is deleted: NotReady, no new pods; as pod GC does,
    /// its unfinished pods marked Failed with `DisruptionTarget` (`DeletionByPodGC`), then every
    /// pod on it deleted with grace 0.
    pub fn lose_node(&self, node: &str) {
        kubelet_loop::lose_node(&self.store, &self.control, node);
    }
    /// A stored object (as stored), for assertions without HTTP.
    pub fn object(&self, api_version: &str, plural: &str, ns: &str, name: &str) -> Option<Value> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let rt = self.store.lookup(group, version, plural)?;
        self.store.get(&rt, ns, name).map(|o| (*o).clone())
    }
    /// Stop the server and loops.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.drop_watches();
    }
}
