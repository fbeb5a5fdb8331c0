//! The figures, each measured the same way for every operator on its own fresh cluster: how
//! long until every child exists, memory per pod once settled, requests and events per job,
//! CPU per finished job, and the requests of a restart. I/O.

use std::time::Duration;

use jiff::Timestamp;

use super::audit::{Counts, Request, created_names};
use super::cpu::Snapshot;
use super::harness::Harness;
use super::jobs::{self, Finished, RUNS_ON};
use super::timeline;

/// Time allowed for any one figure (Kubeflow's defaults make 1000 jobs take minutes).
const TIMEOUT: Duration = Duration::from_secs(3600);

/// Many jobs applied at once, until every child exists and then settled.
#[derive(Clone, Debug)]
pub struct Load {
    /// From the first TFJob create sent to the last child created.
    pub children: Duration,
    /// RSS once settled, above idle, per pod.
    pub rss_per_pod_kib: f64,
    pub rss_kib: u64,
    /// CPU per process from the first create until every child existed.
    pub cpu_split: String,
    /// The operator's requests from the first create until every child existed.
    pub requests: Counts,
    /// Where that time went (`timeline::summary`).
    pub timeline: String,
}

/// The operator stopped and started again with the jobs of a `Load` settled.
#[derive(Clone, Debug)]
pub struct Restart {
    pub requests: Counts,
    pub writes: u64,
}

#[derive(Clone, Debug)]
pub struct BigJob {
    /// A 1000-worker job: its create to its last child's.
    pub big: Duration,
    /// A 1-worker job applied once a tenth of those exist: its create to its last child's.
    pub small: Duration,
    /// Where the small job's time went, from the audit log (`SmallSplit`).
    pub split: SmallSplit,
}

/// The small job's time in three stages, each from the API server's own timestamps: how busy
/// the server was (the user's create of the job), how soon the operator acted, and the server
/// again (the children's creates).
#[derive(Clone, Debug, Default)]
pub struct SmallSplit {
    /// The user's create of the TFJob: received → answered.
    pub user_create: Duration,
    /// The TFJob answered → the operator's first child create received.
    pub reaction: Duration,
    /// The first child create received → the last child create answered.
    pub children: Duration,
}

impl SmallSplit {
    fn of(log: &[Request], user: &str, ns: &str) -> Self {
        let job = log
            .iter()
            .find(|r| r.created("tfjobs", ns) && r.name == "small");
        let children: Vec<&Request> = log
            .iter()
            .filter(|r| r.user == user && r.name.starts_with("small-"))
            .filter(|r| r.created("pods", ns) || r.created("services", ns))
            .collect();
        let first = children.iter().map(|r| r.received).min();
        let last = children.iter().map(|r| r.at).max();
        match (job, first, last) {
            (Some(job), Some(first), Some(last)) => Self {
                user_create: since(job.received, job.at),
                reaction: since(job.at, first),
                children: since(first, last),
            },
            _ => Self::default(),
        }
    }
}

impl std::fmt::Display for SmallSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        write!(
            f,
            "the user's create answered in {:.0} ms, the operator's first child create {:.0} ms \
             after, its children answered {:.0} ms after that",
            ms(self.user_create),
            ms(self.reaction),
            ms(self.children)
        )
    }
}

#[derive(Clone, Debug)]
pub struct Lifecycle {
    pub jobs: usize,
    /// The operator's requests from the first create until settled after all Succeeded.
    pub requests: Counts,
    /// Event objects it created.
    pub events: u64,
    pub cpu: Duration,
    /// From the first create to the last job's `Succeeded`.
    pub finished: Duration,
    /// Where each job's time went (`timeline::lifecycle`).
    pub timeline: String,
}

/// `count` jobs of `workers` workers applied at once, until all `2 × count × workers`
/// children exist, then settled.
pub async fn load(h: &mut Harness, count: usize, workers: u32) -> anyhow::Result<Load> {
    let mark = h.log.len();
    let cpu0 = Snapshot::take(&h.cluster.dir, h.process.pid());
    let t0 = Timestamp::now();
    let ns = h.namespace.clone();
    h.cluster
        .create_jobs(&ns, jobs::many("job", count, workers, RUNS_ON))
        .await?;
    let pods = count * workers as usize;
    let last = until_children(h, mark, pods, "").await?;
    let cpu_split =
        Snapshot::take(&h.cluster.dir, h.process.pid()).since(&cpu0, since(t0, Timestamp::now()));
    let requests = Counts::of(h.requests_since(mark).filter(|r| r.at <= last));
    let burst: Vec<Request> = h.log[mark..]
        .iter()
        .filter(|r| r.at <= last)
        .cloned()
        .collect();
    let timeline = timeline::summary(&burst, &h.user, &ns);
    h.until_settled(mark, pods, TIMEOUT).await?;
    let rss_kib = h.process.rss_kib()?;
    Ok(Load {
        children: since(t0, last),
        rss_per_pod_kib: (rss_kib as f64 - h.idle_rss_kib as f64) / pods as f64,
        rss_kib,
        cpu_split,
        requests,
        timeline,
    })
}

/// Restarts the operator with everything settled: its requests until it is quiet again.
pub async fn restart(h: &mut Harness) -> anyhow::Result<Restart> {
    let mark = h.restart().await?;
    h.until_settled(mark, 0, TIMEOUT).await?;
    let requests = Counts::of(h.requests_since(mark));
    let writes = h.requests_since(mark).filter(|r| r.is_write()).count() as u64;
    Ok(Restart { requests, writes })
}

/// One 1000-worker job; once 200 of its children exist, a 1-worker job.
pub async fn big_job(h: &mut Harness, workers: u32) -> anyhow::Result<BigJob> {
    let ns = h.namespace.clone();
    let mark = h.log.len();
    let t0 = Timestamp::now();
    h.cluster
        .create_jobs(&ns, vec![jobs::tfjob("big", workers, RUNS_ON)])
        .await?;
    let (user, ns2) = (h.user.clone(), ns.clone());
    let tenth = workers as usize / 5;
    h.until("a tenth of the big job's children", mark, TIMEOUT, |log| {
        children_of(log, &user, &ns2, "big-").0 >= tenth
    })
    .await?;
    let mark_small = h.log.len();
    let t1 = Timestamp::now();
    h.cluster
        .create_jobs(&ns, vec![jobs::tfjob("small", 1, RUNS_ON)])
        .await?;
    let small_last = until_children(h, mark_small, 1, "small-").await?;
    let split = SmallSplit::of(&h.log[mark_small..], &h.user, &ns);
    let big_last = until_children(h, mark, workers as usize, "big-").await?;
    Ok(BigJob {
        big: since(t0, big_last),
        small: since(t1, small_last),
        split,
    })
}

/// `count` 1-worker jobs that run `run_seconds`, applied at once, until all Succeeded and
/// the operator is quiet.
pub async fn lifecycle(
    h: &mut Harness,
    count: usize,
    run_seconds: f64,
) -> anyhow::Result<Lifecycle> {
    let ns = h.namespace.clone();
    let finished = Finished::watch(&h.cluster, &ns);
    let cpu0 = h.process.cpu()?;
    let mark = h.log.len();
    let t0 = Timestamp::now();
    h.cluster
        .create_jobs(&ns, jobs::many("run", count, 1, run_seconds))
        .await?;
    let mut done_at = None;
    h.until("every job Succeeded", mark, TIMEOUT, |_| {
        let done = finished.count() >= count;
        if done {
            done_at = Some(Timestamp::now());
        }
        done
    })
    .await?;
    h.until_settled(mark, count, TIMEOUT).await?;
    let cpu = h.process.cpu()? - cpu0;
    let user = h.user.clone();
    let events = h.log[mark..]
        .iter()
        .filter(|r| r.user == user && r.created("events", &ns))
        .count() as u64;
    let timeline = timeline::lifecycle(&h.log[mark..], &user, &ns);
    Ok(Lifecycle {
        timeline,
        jobs: count,
        requests: Counts::of(h.requests_since(mark)),
        events,
        cpu,
        finished: since(t0, done_at.unwrap_or_else(Timestamp::now)),
    })
}

/// Waits until the operator has created `pods` pods and as many services (named
/// `prefix…`) from `mark` on; when the last of them was created.
async fn until_children(
    h: &mut Harness,
    mark: usize,
    pods: usize,
    prefix: &str,
) -> anyhow::Result<Timestamp> {
    let (user, ns) = (h.user.clone(), h.namespace.clone());
    let mut last = Timestamp::UNIX_EPOCH;
    h.until("every child created", mark, TIMEOUT, |log| {
        let (n, at) = children_of(log, &user, &ns, prefix);
        last = at;
        n >= 2 * pods
    })
    .await?;
    Ok(last)
}

/// Distinct pods and services created (201) by `user` in `ns` named `prefix…`, and when the
/// last one was.
fn children_of(log: &[Request], user: &str, ns: &str, prefix: &str) -> (usize, Timestamp) {
    let mine = |r: &&Request| r.user == user && r.name.starts_with(prefix);
    let pods = created_names(log.iter().filter(mine), user, "pods", ns);
    let services = created_names(log.iter().filter(mine), user, "services", ns);
    let last = log
        .iter()
        .filter(mine)
        .filter(|r| r.created("pods", ns) || r.created("services", ns))
        .map(|r| r.at)
        .max()
        .unwrap_or(Timestamp::UNIX_EPOCH);
    (pods.len() + services.len(), last)
}

fn since(t0: Timestamp, t: Timestamp) -> Duration {
    Duration::try_from(t.duration_since(t0)).unwrap_or_default()
}
