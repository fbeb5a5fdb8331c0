//! The real `tfjob-operator` binary (built by cargo for this bench, same profile) run as a
//! child process against a simulator, with its memory and CPU time read from `/proc`. I/O.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::cluster::Cluster;

/// The operator binary cargo built alongside this bench.
const BINARY: &str = env!("CARGO_BIN_EXE_tfjob-operator");

/// The binary to run: `TFJOB_BENCH_BINARY` when set (to compare builds, e.g. another profile or
/// allocator), else the one cargo built alongside this bench.
fn binary() -> String {
    std::env::var("TFJOB_BENCH_BINARY").unwrap_or_else(|_| BINARY.to_string())
}

/// A running operator process; killed (by its pid) when dropped.
pub struct Operator {
    child: Child,
    kubeconfig: PathBuf,
    /// Started with `--kueue`: its Workload watch is part of being synced.
    kueue: bool,
}

impl Operator {
    /// `tfjob-operator run` with `flags`, pointed at `cluster` by `KUBECONFIG`, endpoints off
    /// unless `flags` sets them.
    pub fn spawn(cluster: &Cluster, flags: &[&str]) -> anyhow::Result<Self> {
        let port = cluster.sim.addr().port();
        let kubeconfig = std::env::temp_dir().join(format!("tfjob-bench-{port}.kubeconfig"));
        cluster.sim.write_kubeconfig(&kubeconfig)?;
        let binary = binary();
        let mut command = Command::new(&binary);
        command.arg("run");
        for endpoint in ["--metrics-bind-address", "--health-probe-bind-address"] {
            if !flags.contains(&endpoint) {
                command.args([endpoint, "0"]);
            }
        }
        let child = command
            .args(flags)
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("KUBEFLOW_NAMESPACE")
            .env_remove("TFJOB_CONCURRENCY")
            .env_remove("TFJOB_KUEUE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("spawning {binary}"))?;
        Ok(Self {
            child,
            kubeconfig,
            kueue: flags.contains(&"--kueue"),
        })
    }

    /// Wait until its caches are synced: TFJobs, pods and services (and Workloads with
    /// `--kueue`) each had a streaming list whose initial events were all sent, or (paged) a
    /// watch request, which follows the last page.
    pub async fn until_synced(&mut self, cluster: &Cluster) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the operator exited early: {status}");
            }
            let requests = cluster.operator_requests();
            let kueue = self.kueue.then_some("workloads");
            let watching = ["tfjobs", "pods", "services"]
                .into_iter()
                .chain(kueue)
                .all(|r| {
                    cluster.sim.streamed_lists_of(r) > 0
                        || requests.count(Some("watch"), Some(r)) > 0
                });
            if watching {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(30) {
                bail!("the operator did not start watching within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn status_field_kib(&self, field: &str) -> anyhow::Result<u64> {
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
        self.status_field_kib("VmRSS:")
    }

    /// The file-backed part of the resident set (the binary's and libraries' pages), in KiB.
    pub fn rss_file_kib(&self) -> anyhow::Result<u64> {
        self.status_field_kib("RssFile:")
    }

    /// Peak resident set size, in KiB.
    pub fn peak_rss_kib(&self) -> anyhow::Result<u64> {
        self.status_field_kib("VmHWM:")
    }

    /// User plus system CPU time used so far.
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        let path = format!("/proc/{}/stat", self.child.id());
        let stat = std::fs::read_to_string(&path).with_context(|| path.clone())?;
        // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| -> anyhow::Result<u64> {
            let f = fields
                .get(i)
                .with_context(|| format!("field {} of {path}", i + 3))?;
            Ok(f.parse()?)
        };
        let total = ticks(11)? + ticks(12)?;
        Ok(Duration::from_secs_f64(total as f64 / clock_ticks() as f64))
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

/// Kernel clock ticks per second (USER_HZ), as `getconf` reports it; 100 on Linux otherwise.
fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}
