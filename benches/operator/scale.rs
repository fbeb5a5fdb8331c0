//! Benchmarks 5 and 6: the operator binary holding many running jobs. Its memory per pod, a
//! full resync (every watch re-listed) of settled jobs, and a 1000-replica job created beside
//! them, with a 1-replica job submitted meanwhile, then deleted. I/O.

use std::time::{Duration, Instant};

use kube::api::DeleteParams;
use serde_json::Value;
use std::io::{Read as _, Write as _};

use super::cluster::{Cluster, LONG_RUN, job};
use super::creation;
use super::process::Operator;

/// The operator watches only this namespace; floors are measured in `BASELINE_NS`.
const NS: &str = "bench-scale";
const BASELINE_NS: &str = "bench-scale-base";
/// Time left to the process after each phase before its memory is read.
const SETTLE: Duration = Duration::from_secs(3);
const TIMEOUT: Duration = Duration::from_secs(900);
/// Replicas of the big job created beside the others.
pub const BIG: i32 = 1000;

/// The shape of a scale run: `jobs` jobs of `workers` long-running workers each.
#[derive(Clone, Copy)]
pub struct Shape {
    pub jobs: usize,
    pub workers: i32,
}

impl Shape {
    pub fn pods(&self) -> usize {
        self.jobs * self.workers as usize
    }
}

pub struct Scale {
    pub shape: Shape,
    /// VmRSS (KiB) with caches synced and no job.
    pub idle_kib: u64,
    /// VmRSS (KiB) with the first half of the jobs' children created and the operator quiet.
    pub half_kib: u64,
    /// VmRSS (KiB) with every job's children created and the operator quiet.
    pub loaded_kib: u64,
    /// RssFile (KiB) idle and loaded: the binary's code pages (and libc's) touched so far,
    /// part of the growth above idle that is not data.
    pub file_kib: (u64, u64),
    /// VmHWM (KiB) until then.
    pub peak_kib: u64,
    /// From the first job's creation to every child stored.
    pub fill: Duration,
    pub resync: Resync,
    pub big: Option<Big>,
}

/// A full resync: the API server's history compacted and every watch dropped, so each watch
/// re-lists and every job is reconciled again.
pub struct Resync {
    /// Operator CPU (user+system) from the drop until the passes stopped.
    pub cpu: Duration,
    pub wall: Duration,
    /// Reconcile passes it ran (from its metrics).
    pub reconciles: u64,
    /// Writes it made meanwhile (the goal: none).
    pub writes: u64,
}

/// A 1000-replica job beside the others.
pub struct Big {
    /// Time to all its children stored, and the bare-client floor in the same cluster.
    pub children: Duration,
    pub floor: Duration,
    /// A 1-worker job created once the big job's creation was under way: from its creation
    /// to its pod and service stored.
    pub small_children: Duration,
    /// Big job children already stored when the small job was created.
    pub big_progress_at_small: usize,
    /// VmRSS (KiB) before the big job, and once it was deleted and its children collected.
    pub before_kib: u64,
    pub after_kib: u64,
    /// VmRSS (KiB) with the big job's children all created.
    pub with_big_kib: u64,
}

/// With the operator started with `extra` flags (e.g. `--kueue`) besides its own.
pub async fn measure(shape: Shape, big: bool, extra: &[&str]) -> anyhow::Result<Scale> {
    let cluster = Cluster::start().await?;
    cluster.namespace(NS).await?;
    cluster.namespace(BASELINE_NS).await?;
    let metrics_port = free_port()?;
    let metrics = format!("127.0.0.1:{metrics_port}");
    let mut flags = vec!["--namespace", NS, "--metrics-bind-address", &metrics];
    flags.extend_from_slice(extra);
    let mut operator = Operator::spawn(&cluster, &flags)?;
    operator.until_synced(&cluster).await?;
    tokio::time::sleep(SETTLE).await;
    let idle_kib = operator.rss_kib()?;

    let idle_file_kib = operator.rss_file_kib()?;

    // Filled in two halves: the second half's growth is what a pod costs at the margin, free
    // of what the first jobs cost once (code pages touched, buffers, queues sized).
    let half = shape.jobs / 2;
    let first = fill(&cluster, shape, 0..half).await?;
    let half_kib = operator.rss_kib()?;
    let fill = first + fill(&cluster, shape, half..shape.jobs).await?;
    let loaded_kib = operator.rss_kib()?;
    let peak_kib = operator.peak_rss_kib()?;
    eprintln!(
        "scale {}x{}: idle {idle_kib} KiB, half {half_kib} KiB, loaded {loaded_kib} KiB, peak {peak_kib} KiB, filled in {fill:?}",
        shape.jobs, shape.workers
    );

    let resync = resync(&cluster, &operator, metrics_port, shape.jobs).await?;
    let big = match big {
        true => Some(big_beside(&cluster, &operator).await?),
        false => None,
    };
    Ok(Scale {
        shape,
        idle_kib,
        half_kib,
        loaded_kib,
        file_kib: (idle_file_kib, operator.rss_file_kib()?),
        peak_kib,
        fill,
        resync,
        big,
    })
}

/// Creates the jobs numbered `range` and waits until all their children exist (the time
/// returned) and the operator is quiet, then `SETTLE`.
async fn fill(
    cluster: &Cluster,
    shape: Shape,
    range: std::ops::Range<usize>,
) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let total = range.end * shape.workers as usize;
    let jobs = range
        .map(|i| job(&format!("s-{i}"), &[("Worker", shape.workers, LONG_RUN)]))
        .collect();
    cluster.create_jobs(NS, jobs).await?;
    let filled = cluster
        .until(
            "every child of the scale jobs",
            start,
            Duration::from_millis(200),
            TIMEOUT,
            |c| {
                c.count("pods", NS, |_| true) >= total && c.count("services", NS, |_| true) >= total
            },
        )
        .await?;
    cluster.until_quiet(Duration::from_secs(2), TIMEOUT).await?;
    tokio::time::sleep(SETTLE).await;
    Ok(filled)
}

async fn resync(
    cluster: &Cluster,
    operator: &Operator,
    port: u16,
    jobs: usize,
) -> anyhow::Result<Resync> {
    let (reconciles_before, lists_before) = (
        metric(port, "tfjob_operator_reconciles_total")?,
        metric(port, "tfjob_operator_watch_lists_total")?,
    );
    let writes_before = cluster.operator_requests().writes();
    let cpu_before = operator.cpu()?;
    let start = Instant::now();
    // A write after the operator's last seen version, then the history before it forgotten:
    // re-watching from that version is refused (410 Gone), so every watch re-lists. (A watch
    // that saw a bookmark of the newest version resumes instead: then again.)
    for attempt in 0.. {
        cluster
            .namespace(&format!("bench-resync-{attempt}"))
            .await?;
        cluster.sim.compact_history();
        cluster.sim.drop_watches();
        tokio::time::sleep(Duration::from_secs(1)).await;
        if metric(port, "tfjob_operator_watch_lists_total")? >= lists_before + 2.0 {
            break;
        }
        anyhow::ensure!(attempt < 20, "the watches did not re-list");
    }
    // Every watch re-lists, every job gets a pass (the job list triggers them all), then
    // passes run until none is left.
    let (mut last, mut last_change) = (reconciles_before, Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let lists = metric(port, "tfjob_operator_watch_lists_total")?;
        let now = metric(port, "tfjob_operator_reconciles_total")?;
        if now != last {
            (last, last_change) = (now, Instant::now());
        } else if lists >= lists_before + 2.0
            && now - reconciles_before >= jobs as f64
            && last_change.elapsed() > Duration::from_secs(2)
        {
            break;
        }
        anyhow::ensure!(
            start.elapsed() < TIMEOUT,
            "the resync did not end: {} lists, {} passes",
            lists - lists_before,
            now - reconciles_before
        );
    }
    let wall = last_change - start;
    Ok(Resync {
        cpu: operator.cpu()? - cpu_before,
        wall,
        reconciles: (last - reconciles_before) as u64,
        writes: cluster.operator_requests().writes() - writes_before,
    })
}

async fn big_beside(cluster: &Cluster, operator: &Operator) -> anyhow::Result<Big> {
    let floor = creation::by_client(cluster, BASELINE_NS, "floor", BIG, false).await?;
    cluster.until_quiet(Duration::from_secs(1), TIMEOUT).await?;
    tokio::time::sleep(SETTLE).await;
    let before_kib = operator.rss_kib()?;

    let of = |name: &'static str| {
        move |o: &Value| {
            o["metadata"]["labels"]["training.kubeflow.org/job-name"].as_str() == Some(name)
        }
    };
    cluster
        .create_job(NS, job("big", &[("Worker", BIG, LONG_RUN)]))
        .await?;
    let start = Instant::now();
    // The small job arrives once the big one's creates are under way.
    cluster
        .until(
            "the big job's first children",
            start,
            Duration::from_millis(1),
            TIMEOUT,
            |c| c.count("pods", NS, of("big")) >= 50,
        )
        .await?;
    let big_progress_at_small = cluster.count("pods", NS, of("big"));
    cluster
        .create_job(NS, job("small", &[("Worker", 1, LONG_RUN)]))
        .await?;
    let small_start = Instant::now();
    let small_children = cluster
        .until(
            "the small job's children",
            small_start,
            Duration::from_millis(1),
            TIMEOUT,
            |c| c.count("pods", NS, of("small")) >= 1 && c.count("services", NS, of("small")) >= 1,
        )
        .await?;
    let n = BIG as usize;
    let children = cluster
        .until(
            "the big job's children",
            start,
            Duration::from_millis(1),
            TIMEOUT,
            |c| c.count("pods", NS, of("big")) >= n && c.count("services", NS, of("big")) >= n,
        )
        .await?;
    cluster.until_quiet(Duration::from_secs(1), TIMEOUT).await?;
    let with_big_kib = operator.rss_kib()?;

    for name in ["big", "small"] {
        cluster
            .jobs(NS)
            .delete(name, &DeleteParams::background())
            .await?;
    }
    cluster
        .until(
            "the big job's children to be collected",
            Instant::now(),
            Duration::from_millis(100),
            TIMEOUT,
            |c| c.count("pods", NS, of("big")) == 0 && c.count("services", NS, of("big")) == 0,
        )
        .await?;
    cluster.until_quiet(Duration::from_secs(1), TIMEOUT).await?;
    tokio::time::sleep(SETTLE).await;
    Ok(Big {
        children,
        floor,
        small_children,
        big_progress_at_small,
        before_kib,
        after_kib: operator.rss_kib()?,
        with_big_kib,
    })
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// A counter on the operator's `/metrics`, summed over its labels.
fn metric(port: u16, name: &str) -> anyhow::Result<f64> {
    // A local, small read: blocking is fine here.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
    let mut body = String::new();
    stream.read_to_string(&mut body)?;
    let values: Vec<f64> = body
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once('}')?.1,
                None => rest,
            };
            value.trim().parse().ok()
        })
        .collect();
    anyhow::ensure!(!values.is_empty(), "{name} on the operator's /metrics");
    Ok(values.iter().sum())
}
