//! Where a burst's time goes, read from the audit log alone: per job, the wait from its create
//! to its first child (queued: the operator had not begun it) and the span from its first child
//! to its last (creating); how many jobs were being created at once; how long the API server
//! took to answer the operator's creates; and the requests refused. For jobs run to the end
//! (`lifecycle`), where each job's time went from its create to its last status write. Pure.

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::audit::Request;

/// One line: `queued p50 1.2 s / p90 3.4 s / max 5.0 s; creating p50 …; jobs in creation at
/// once: mean 7.9; create latency p50 40 ms / p90 90 ms; refused: 409 ×12`.
pub fn summary(log: &[Request], user: &str, namespace: &str) -> String {
    let mut created: BTreeMap<&str, Timestamp> = BTreeMap::new();
    let mut children: BTreeMap<&str, (Timestamp, Timestamp)> = BTreeMap::new();
    let mut latencies = Vec::new();
    let mut refused: BTreeMap<String, u64> = BTreeMap::new();
    for r in log.iter().filter(|r| r.namespace == namespace) {
        if r.created("tfjobs", namespace) {
            created.insert(&r.name, r.at);
        }
        if r.user != user {
            continue;
        }
        if r.code >= 400 {
            *refused
                .entry(format!("{} {} {}", r.verb, r.resource, r.code))
                .or_insert(0) += 1;
        }
        let is_child = r.created("pods", namespace) || r.created("services", namespace);
        if !is_child {
            continue;
        }
        latencies.push(seconds(r.received, r.at));
        if let Some(job) = job_of(&r.name) {
            let span = children.entry(job).or_insert((r.at, r.at));
            span.0 = span.0.min(r.at);
            span.1 = span.1.max(r.at);
        }
    }
    let mut queued = Vec::new();
    let mut creating = Vec::new();
    for (job, (first, last)) in &children {
        if let Some(at) = created.get(job) {
            queued.push(seconds(*at, *first));
        }
        creating.push(seconds(*first, *last));
    }
    let busy: f64 = creating.iter().sum();
    let window = match (
        children.values().map(|s| s.0).min(),
        children.values().map(|s| s.1).max(),
    ) {
        (Some(a), Some(b)) => seconds(a, b),
        _ => 0.0,
    };
    let refused_text = if refused.is_empty() {
        "none".to_string()
    } else {
        refused
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "per job, create → first child {}; first → last child {}; jobs being created at once: \
         {:.1} on average; the API server's answer to a child create {}; refused: {refused_text}",
        spread(&mut queued, 1.0, "s"),
        spread(&mut creating, 1.0, "s"),
        if window > 0.0 { busy / window } else { 0.0 },
        spread(&mut latencies, 1000.0, "ms"),
    )
}

/// Per job of a lifecycle run, each stage's spread (p50 / p90 / max): its create → its first
/// child; that child → the pod's first status write by anyone else (kwok: running); the pod's
/// last status write (kwok: ended) → the operator's last status write of the job (Succeeded);
/// and the whole, create → that last write. With the operator's status writes per job, the
/// refused ones, and the time of the last write of all (which ends the figure).
pub fn lifecycle(log: &[Request], user: &str, namespace: &str) -> String {
    #[derive(Default)]
    struct Job {
        created: Option<Timestamp>,
        first_child: Option<Timestamp>,
        pod_first: Option<Timestamp>,
        pod_last: Option<Timestamp>,
        status_last: Option<Timestamp>,
        status_writes: u32,
        refused: u32,
    }
    let mut jobs: BTreeMap<&str, Job> = BTreeMap::new();
    for r in log.iter().filter(|r| r.namespace == namespace) {
        let ours = r.user == user;
        if r.created("tfjobs", namespace) {
            jobs.entry(&r.name).or_default().created = Some(r.at);
        } else if ours && r.resource == "tfjobs/status" && r.verb == "update" {
            let job = jobs.entry(&r.name).or_default();
            job.status_writes += 1;
            if r.code < 300 {
                job.status_last = Some(r.at);
            } else {
                job.refused += 1;
            }
        } else if ours
            && r.created("pods", namespace)
            && let Some(name) = job_of(&r.name)
        {
            jobs.entry(name)
                .or_default()
                .first_child
                .get_or_insert(r.at);
        } else if !ours
            && r.resource == "pods/status"
            && r.code < 300
            && let Some(name) = job_of(&r.name)
        {
            let job = jobs.entry(name).or_default();
            job.pod_first.get_or_insert(r.at);
            job.pod_last = Some(r.at);
        }
    }
    let stage = |from: fn(&Job) -> Option<Timestamp>, to: fn(&Job) -> Option<Timestamp>| {
        let mut v: Vec<f64> = jobs
            .values()
            .filter_map(|j| Some(seconds(from(j)?, to(j)?)))
            .collect();
        spread(&mut v, 1.0, "s")
    };
    let n = jobs.len().max(1) as f64;
    let writes: u32 = jobs.values().map(|j| j.status_writes).sum();
    let refused: u32 = jobs.values().map(|j| j.refused).sum();
    let start = jobs.values().filter_map(|j| j.created).min();
    let end = jobs.values().filter_map(|j| j.status_last).max();
    let last = match (start, end) {
        (Some(a), Some(b)) => format!("{:.2} s", seconds(a, b)),
        _ => "–".into(),
    };
    format!(
        "per job, create → first pod {}; first pod → pod running {}; pod ended → last status \
         write {}; create → last status write {}; status writes per job {:.2} ({refused} refused); \
         the last status write of all {last} after the first create",
        stage(|j| j.created, |j| j.first_child),
        stage(|j| j.first_child, |j| j.pod_first),
        stage(|j| j.pod_last, |j| j.status_last),
        stage(|j| j.created, |j| j.status_last),
        f64::from(writes) / n,
    )
}

/// The job of a child named `<job>-<replica type>-<index>`.
fn job_of(child: &str) -> Option<&str> {
    let (rest, _index) = child.rsplit_once('-')?;
    let (job, _kind) = rest.rsplit_once('-')?;
    Some(job)
}

fn seconds(from: Timestamp, to: Timestamp) -> f64 {
    to.duration_since(from).as_secs_f64()
}

/// `p50 1.2 s / p90 3.4 s / max 5.0 s` of `values × scale`.
fn spread(values: &mut [f64], scale: f64, unit: &str) -> String {
    if values.is_empty() {
        return "–".into();
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize] * scale;
    let decimals = if unit == "ms" { 0 } else { 2 };
    format!(
        "p50 {:.decimals$} {unit} / p90 {:.decimals$} {unit} / max {:.decimals$} {unit}",
        at(0.5),
        at(0.9),
        at(1.0)
    )
}
