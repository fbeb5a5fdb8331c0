//! The operators compared: ours (the binary cargo built for this bench) and Kubeflow's
//! training-operator (built by `testcluster/kubeflow-build`), each installed as its manifests
//! install it (its own ClusterRole, bound to a ServiceAccount in its own namespace), scoped to
//! that namespace, and run out of the cluster as that ServiceAccount. Memory and CPU time are
//! read from `/proc`. I/O.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};

use super::cluster::{Cluster, ROOT, env_value, script};

/// Our operator binary, built by cargo with this bench (same profile and features).
const OURS: &str = env!("CARGO_BIN_EXE_tfjob-operator");

/// Kubeflow's flags that decide its throughput.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    pub qps: u32,
    pub burst: u32,
    pub threads: u32,
}

impl Tuning {
    /// Kubeflow's defaults (cmd/training-operator.v1/main.go).
    pub const DEFAULT: Self = Self {
        qps: 20,
        burst: 30,
        threads: 1,
    };
}

impl std::fmt::Display for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--kube-api-qps {} --kube-api-burst {} --controller-threads {}",
            self.qps, self.burst, self.threads
        )
    }
}

#[derive(Clone, Debug)]
pub enum Kind {
    Ours { concurrency: u16 },
    Kubeflow(Tuning),
}

/// One operator with its settings, and the namespace it alone watches.
#[derive(Clone, Debug)]
pub struct Contender {
    pub kind: Kind,
    pub namespace: String,
}

/// Where `testcluster/kubeflow-build` put Kubeflow's binary and module.
#[derive(Clone, Debug)]
pub struct KubeflowBuild {
    pub bin: PathBuf,
    pub module: PathBuf,
    pub version: String,
}

impl KubeflowBuild {
    /// Builds it if this machine has not yet (cached; see testcluster/build-kubeflow.sh).
    pub fn ensure(cache_dir: &Path) -> anyhow::Result<Self> {
        let out = script(cache_dir, "kubeflow-build", &[])?;
        Ok(Self {
            bin: env_value(&out, "KUBEFLOW_BIN")?.into(),
            module: env_value(&out, "KUBEFLOW_MODULE")?.into(),
            version: env_value(&out, "KUBEFLOW_VERSION")?,
        })
    }
}

impl Contender {
    pub fn ours(concurrency: u16) -> Self {
        Self {
            kind: Kind::Ours { concurrency },
            namespace: format!("ours-c{concurrency}"),
        }
    }

    pub fn kubeflow(t: Tuning) -> Self {
        Self {
            kind: Kind::Kubeflow(t),
            namespace: format!("kubeflow-q{}-b{}-t{}", t.qps, t.burst, t.threads),
        }
    }

    pub fn label(&self) -> String {
        match &self.kind {
            Kind::Ours { concurrency } => format!("ours --concurrency {concurrency}"),
            Kind::Kubeflow(t) if *t == Tuning::DEFAULT => "Kubeflow, default flags".into(),
            Kind::Kubeflow(t) => format!("Kubeflow {t}"),
        }
    }

    fn account(&self) -> &'static str {
        match self.kind {
            Kind::Ours { .. } => "tfjob-operator",
            Kind::Kubeflow(_) => "training-operator",
        }
    }

    /// The user its requests carry in the audit log.
    pub fn user(&self) -> String {
        format!(
            "system:serviceaccount:{}:{}",
            self.namespace,
            self.account()
        )
    }

    /// Its namespace, ServiceAccount and ClusterRole (the one its manifests ship), and for
    /// Kubeflow what its webhook's certificate rotator waits for out of a cluster.
    pub async fn install(
        &self,
        cluster: &Cluster,
        kubeflow: &KubeflowBuild,
    ) -> anyhow::Result<Installed> {
        let ns = &self.namespace;
        cluster.namespace(ns).await?;
        cluster.kubectl(
            &["-n", ns, "create", "serviceaccount", self.account()],
            None,
        )?;
        let (role, role_name) = match self.kind {
            Kind::Ours { .. } => (
                Path::new(ROOT).join("config/rbac/role.yaml"),
                "tfjob-operator",
            ),
            Kind::Kubeflow(_) => (
                kubeflow.module.join("manifests/base/rbac/role.yaml"),
                "training-operator",
            ),
        };
        cluster.kubectl(&["apply", "-f", &role.to_string_lossy()], None)?;
        cluster.kubectl(
            &[
                "create",
                "clusterrolebinding",
                &format!("{ns}-{role_name}"),
                "--clusterrole",
                role_name,
                "--serviceaccount",
                &format!("{ns}:{}", self.account()),
            ],
            None,
        )?;
        let kubeconfig = cluster.service_account_kubeconfig(ns, self.account())?;
        let state = cluster.dir.join(ns);
        std::fs::create_dir_all(&state)?;
        if let Kind::Kubeflow(_) = self.kind {
            super::webhook::prepare(cluster, ns, &state)?;
        }
        Ok(Installed {
            contender: self.clone(),
            kubeconfig,
            state,
            kubeflow_bin: kubeflow.bin.clone(),
        })
    }
}

/// A contender installed in a cluster, ready to start (again).
pub struct Installed {
    pub contender: Contender,
    kubeconfig: PathBuf,
    state: PathBuf,
    kubeflow_bin: PathBuf,
}

impl Installed {
    /// Starts the operator; its output goes to `<state>/operator-<n>.log`.
    pub fn spawn(&self, start: usize) -> anyhow::Result<Process> {
        let ns = &self.contender.namespace;
        let log_path = self.state.join(format!("operator-{start}.log"));
        let log = std::fs::File::create(&log_path)?;
        let mut command = match &self.contender.kind {
            Kind::Ours { concurrency } => {
                // (`TFJOB_BENCH_BINARY`: another build of ours, as in the operator bench)
                let ours = std::env::var("TFJOB_BENCH_BINARY").unwrap_or_else(|_| OURS.into());
                let mut c = Command::new(ours);
                c.args(["run", "--namespace", ns])
                    .args(["--metrics-bind-address", "0"])
                    .args(["--health-probe-bind-address", "0"])
                    .args(["--concurrency", &concurrency.to_string()]);
                c
            }
            Kind::Kubeflow(t) => {
                let mut c = super::webhook::command(&self.state, &self.kubeflow_bin)?;
                c.args(["--enable-scheme=tfjob", "--namespace", ns])
                    .args(["--metrics-bind-address", "0"])
                    .args(["--health-probe-bind-address", "0"])
                    .args(["--webhook-server-port", &free_port()?.to_string()])
                    .args(["--kube-api-qps", &t.qps.to_string()])
                    .args(["--kube-api-burst", &t.burst.to_string()])
                    .args(["--controller-threads", &t.threads.to_string()])
                    .env("MY_POD_NAMESPACE", ns);
                c
            }
        };
        let child = command
            .env("KUBECONFIG", &self.kubeconfig)
            .env_remove("KUBEFLOW_NAMESPACE")
            .env_remove("TFJOB_CONCURRENCY")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", self.contender.label()))?;
        Ok(Process {
            child,
            log: log_path,
        })
    }
}

/// A free TCP port on loopback (for Kubeflow's webhook server, which nothing calls).
fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A running operator; stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Process {
    child: Child,
    pub log: PathBuf,
}

impl Process {
    pub fn alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "the operator exited: {status}; its log: {}",
                self.log.display()
            );
        }
        Ok(())
    }

    fn status_kib(&self, field: &str) -> anyhow::Result<u64> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).with_context(|| path.clone())?;
        status
            .lines()
            .find_map(|l| {
                l.strip_prefix(field)?
                    .trim()
                    .strip_suffix("kB")?
                    .trim()
                    .parse()
                    .ok()
            })
            .with_context(|| format!("{field} in {path}"))
    }

    /// Resident set size now, in KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        self.status_kib("VmRSS:")
    }

    /// User plus system CPU time so far (all threads).
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        super::cpu::of(self.child.id())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then SIGKILL after 10 s.
    pub fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..100 {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}
