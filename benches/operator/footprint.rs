//! Benchmark 3: the operator binary's memory when idle, before and after 100 finished jobs,
//! and the CPU time those jobs cost it. I/O.

use std::time::{Duration, Instant};

use super::cluster::{Cluster, job};
use super::process::Operator;

const NS: &str = "bench-memory";
pub const JOBS: usize = 100;
/// Simulated run time of each job's single worker.
const RUN: f64 = 0.5;
/// Time left to the process after each phase before its memory is read.
const SETTLE: Duration = Duration::from_secs(2);

pub struct Footprint {
    /// VmRSS (KiB) with caches synced and no job.
    pub idle_kib: u64,
    /// VmRSS (KiB) once 100 jobs finished and the operator went quiet.
    pub after_jobs_kib: u64,
    /// VmHWM (KiB): the peak over the whole run.
    pub peak_kib: u64,
    /// utime + stime spent from the first job's creation until all settled.
    pub cpu: Duration,
    /// Wall time of the same span.
    pub wall: Duration,
}

/// With the operator started with `flags` (e.g. `--kueue`).
pub async fn measure(flags: &[&str]) -> anyhow::Result<Footprint> {
    let cluster = Cluster::start().await?;
    cluster.namespace(NS).await?;
    let mut operator = Operator::spawn(&cluster, flags)?;
    operator.until_synced(&cluster).await?;
    tokio::time::sleep(SETTLE).await;
    let idle_kib = operator.rss_kib()?;

    let cpu_before = operator.cpu()?;
    let start = Instant::now();
    let names: Vec<String> = (0..JOBS).map(|i| format!("mem-{i}")).collect();
    let jobs = names
        .iter()
        .map(|n| job(n, &[("Worker", 1, RUN)]))
        .collect();
    cluster.create_jobs(NS, jobs).await?;
    let timeout = Duration::from_secs(120);
    let what = format!("{JOBS} jobs to succeed");
    cluster
        .until(&what, start, Duration::from_millis(20), timeout, |c| {
            names.iter().all(|n| c.succeeded(NS, n))
        })
        .await?;
    cluster.until_quiet(Duration::from_secs(1), timeout).await?;
    let cpu = operator.cpu()? - cpu_before;
    let wall = start.elapsed();
    tokio::time::sleep(SETTLE).await;
    Ok(Footprint {
        idle_kib,
        after_jobs_kib: operator.rss_kib()?,
        peak_kib: operator.peak_rss_kib()?,
        cpu,
        wall,
    })
}
