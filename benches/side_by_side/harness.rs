//! One operator on a fresh cluster, with the audit log read as it grows: start, wait until its
//! caches are loaded, idle, and the waits every figure is built from. I/O.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;
use jiff::{SignedDuration, Timestamp};

use super::audit::{Request, Tail};
use super::cluster::Cluster;
use super::contender::{Contender, Installed, KubeflowBuild, Process};

/// How long an operator sends nothing before it counts as settled (a restarted one may pause
/// between loading its caches and its first pass).
const QUIET: Duration = Duration::from_secs(10);
/// Idle time between caches loaded and the idle RSS reading.
const IDLE: Duration = Duration::from_secs(10);

pub struct Harness {
    pub cluster: Cluster,
    pub installed: Installed,
    pub process: Process,
    tail: Tail,
    /// Every request since the operator was installed.
    pub log: Vec<Request>,
    pub user: String,
    pub namespace: String,
    starts: usize,
    pub idle_rss_kib: u64,
}

impl Harness {
    /// A fresh cluster with `contender` installed and started, its caches loaded, idle.
    pub async fn start(
        dir: &Path,
        contender: &Contender,
        kubeflow: &KubeflowBuild,
    ) -> anyhow::Result<Self> {
        let cluster = Cluster::up(dir).await?;
        let installed = contender.install(&cluster, kubeflow).await?;
        let tail = cluster.tail()?;
        let process = installed.spawn(0)?;
        let mut h = Self {
            cluster,
            installed,
            process,
            tail,
            log: Vec::new(),
            user: contender.user(),
            namespace: contender.namespace.clone(),
            starts: 1,
            idle_rss_kib: 0,
        };
        h.until_watching(0).await?;
        tokio::time::sleep(IDLE).await;
        h.idle_rss_kib = h.process.rss_kib()?;
        Ok(h)
    }

    /// Stops the operator and starts it again; the log index from which the new one's
    /// requests are.
    pub async fn restart(&mut self) -> anyhow::Result<usize> {
        self.process.stop();
        self.log.extend(self.tail.read()?);
        let mark = self.log.len();
        self.process = self.installed.spawn(self.starts)?;
        self.starts += 1;
        self.until_watching(mark).await?;
        Ok(mark)
    }

    /// Reads what the audit log gained, checking the operator still runs.
    pub fn read(&mut self) -> anyhow::Result<()> {
        self.process.alive()?;
        self.log.extend(self.tail.read()?);
        Ok(())
    }

    /// Polls the audit log every 100 ms (times come from the log, not from the poll) until `done` holds for the requests from `mark` on.
    pub async fn until(
        &mut self,
        what: &str,
        mark: usize,
        timeout: Duration,
        mut done: impl FnMut(&[Request]) -> bool,
    ) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            self.read()?;
            if done(&self.log[mark..]) {
                return Ok(());
            }
            if start.elapsed() > timeout {
                bail!(
                    "{}: {what}: not within {} s (operator log: {})",
                    self.installed.contender.label(),
                    timeout.as_secs(),
                    self.process.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Until the operator watches TFJobs, pods and services (its caches are loading: client-go
    /// loads them by the watch itself, kube-rs lists just before).
    async fn until_watching(&mut self, mark: usize) -> anyhow::Result<()> {
        let user = self.user.clone();
        self.until(
            "watching tfjobs, pods and services",
            mark,
            Duration::from_secs(120),
            |log| {
                ["tfjobs", "pods", "services"].iter().all(|res| {
                    log.iter()
                        .any(|r| r.user == user && r.verb == "watch" && r.resource == *res)
                })
            },
        )
        .await?;
        // Loaded: the watch answered its list (a streaming list of up to 1000 jobs and 4000
        // children takes well under this).
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(())
    }

    /// Until `pods` pods of the namespace are started by kwok and the operator has sent
    /// nothing for `QUIET` (its status writes done); from `mark` on.
    pub async fn until_settled(
        &mut self,
        mark: usize,
        pods: usize,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let (user, ns) = (self.user.clone(), self.namespace.clone());
        let quiet = SignedDuration::try_from(QUIET)?;
        self.until("settled", mark, timeout, |log| {
            let started: std::collections::BTreeSet<&str> = log
                .iter()
                .filter(|r| {
                    r.user == "kwok"
                        && r.resource == "pods/status"
                        && r.namespace == ns
                        && r.code == 200
                })
                .map(|r| r.name.as_str())
                .collect();
            let last = log.iter().rev().find(|r| r.user == user).map(|r| r.at);
            started.len() >= pods && last.is_none_or(|at| at + quiet < Timestamp::now())
        })
        .await
    }

    /// The operator's requests from `mark` on.
    pub fn requests_since(&self, mark: usize) -> impl Iterator<Item = &Request> {
        self.log[mark..].iter().filter(|r| r.user == self.user)
    }
}
