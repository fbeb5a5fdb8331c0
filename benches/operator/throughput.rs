//! Benchmark 4: 200 single-worker jobs created at once, time until all Succeeded, with the
//! operator binary at `--concurrency 1` and at its default, on the simulator as it is and with
//! every request answered later (a real API server takes milliseconds per write). I/O.

use std::time::{Duration, Instant};

use tfjob_sim::FaultRule;

use super::cluster::{Cluster, job};
use super::process::Operator;

const NS: &str = "bench-throughput";
pub const JOBS: usize = 200;
/// Simulated run time of each worker: the floor of any job's completion time.
pub const RUN: f64 = 0.2;

pub struct Throughput {
    /// `--concurrency` value, None for the default.
    pub concurrency: Option<u16>,
    /// Latency the simulator added to every request.
    pub latency: Duration,
    /// From the first create call to all jobs Succeeded.
    pub all_succeeded: Duration,
    /// Writes the operator made until then.
    pub writes: u64,
}

/// With the operator started with `extra` flags (e.g. `--kueue`) besides `--concurrency`.
pub async fn measure(
    concurrency: Option<u16>,
    latency: Duration,
    extra: &[&str],
) -> anyhow::Result<Throughput> {
    let cluster = Cluster::start().await?;
    if !latency.is_zero() {
        cluster
            .sim
            .set_fault(FaultRule::latency(None, None, latency));
    }
    cluster.namespace(NS).await?;
    let flag = concurrency.map(|c| c.to_string());
    let mut flags: Vec<&str> = match &flag {
        Some(c) => vec!["--concurrency", c],
        None => vec![],
    };
    flags.extend_from_slice(extra);
    let mut operator = Operator::spawn(&cluster, &flags)?;
    operator.until_synced(&cluster).await?;
    let before = cluster.operator_requests();
    let names: Vec<String> = (0..JOBS).map(|i| format!("tp-{i}")).collect();
    let jobs = names
        .iter()
        .map(|n| job(n, &[("Worker", 1, RUN)]))
        .collect();
    let start = Instant::now();
    cluster.create_jobs(NS, jobs).await?;
    let what = format!("{JOBS} jobs to succeed");
    let all_succeeded = cluster
        .until(
            &what,
            start,
            Duration::from_millis(10),
            Duration::from_secs(120),
            |c| names.iter().all(|n| c.succeeded(NS, n)),
        )
        .await?;
    let writes = cluster.operator_requests().since(&before).writes();
    drop(operator);
    Ok(Throughput {
        concurrency,
        latency,
        all_succeeded,
        writes,
    })
}
