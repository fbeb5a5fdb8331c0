//! Benchmark 7: what the Kueue mode (`run --kueue`) costs jobs without a queue label. Sections
//! 1 and 3–5 again, the operator binary started without and with `--kueue`, alternately in the
//! same run, so a loaded machine moves both; each figure is printed beside its twin, with
//! their ratio. The simulator serves Kueue's Workload CRD (`cluster.rs`), so the mode lists and
//! watches Workloads as it would on a cluster with Kueue. I/O.

use std::time::Duration;

use super::creation::{self, Run};
use super::{footprint, ms, scale, throughput};

/// The two operators compared: the flags each is started with.
const VARIANTS: [&[&str]; 2] = [&[], &["--kueue"]];
/// Rounds of the short measures (throughput, footprint); the median is shown.
const ROUNDS: usize = 3;

/// One measure, without and with `--kueue`.
pub struct Row {
    pub label: String,
    pub unit: &'static str,
    pub without: f64,
    pub with: f64,
}

impl Row {
    fn new(label: impl Into<String>, unit: &'static str, [without, with]: [f64; 2]) -> Self {
        Self {
            label: label.into(),
            unit,
            without,
            with,
        }
    }
}

pub async fn measure(reps: usize) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for workers in creation::WORKERS {
        let mut runs = Vec::new();
        for flags in VARIANTS {
            runs.push(creation::measure(reps, workers, Run::Spawned(flags)).await?);
        }
        let operator = |i: usize| ms(super::median(&runs[i].operator));
        let ratio = |i: usize| operator(i) / ms(super::median(&runs[i].baseline));
        let label = format!("1. all children of a {workers}-worker job, median of {reps}");
        rows.push(Row::new(label, "ms", [operator(0), operator(1)]));
        let label = "   the same over its floor (bare creates, same cluster)";
        rows.push(Row::new(label, "x", [ratio(0), ratio(1)]));
    }
    rows.extend(footprints().await?);
    rows.extend(throughputs().await?);
    rows.extend(scale().await?);
    Ok(rows)
}

async fn footprints() -> anyhow::Result<Vec<Row>> {
    let mut runs: [Vec<footprint::Footprint>; 2] = Default::default();
    for _ in 0..ROUNDS {
        for (i, flags) in VARIANTS.iter().enumerate() {
            runs[i].push(footprint::measure(flags).await?);
        }
    }
    let of = |f: fn(&footprint::Footprint) -> f64| runs.each_ref().map(|r| median_of(r, f));
    let per_job = |f: &footprint::Footprint| ms(f.cpu) / footprint::JOBS as f64;
    Ok(vec![
        Row::new("3. idle RSS, caches synced", "MiB", of(|f| mib(f.idle_kib))),
        Row::new(
            format!("3. RSS after {} finished jobs", footprint::JOBS),
            "MiB",
            of(|f| mib(f.after_jobs_kib)),
        ),
        Row::new("3. CPU per finished 1-worker job", "ms", of(per_job)),
    ])
}

async fn throughputs() -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for latency in [Duration::ZERO, super::API_LATENCY] {
        let mut runs: [Vec<throughput::Throughput>; 2] = Default::default();
        for _ in 0..ROUNDS {
            for (i, flags) in VARIANTS.iter().enumerate() {
                runs[i].push(throughput::measure(None, latency, flags).await?);
            }
        }
        let of = |f: fn(&throughput::Throughput) -> f64| runs.each_ref().map(|r| median_of(r, f));
        let label = format!(
            "4. {} jobs at once to all Succeeded, +{} ms/request",
            throughput::JOBS,
            latency.as_millis()
        );
        rows.push(Row::new(label, "s", of(|t| t.all_succeeded.as_secs_f64())));
        rows.push(Row::new("   writes", "", of(|t| t.writes as f64)));
    }
    Ok(rows)
}

async fn scale() -> anyhow::Result<Vec<Row>> {
    let shape = scale::Shape {
        jobs: 1000,
        workers: 2,
    };
    let mut runs = Vec::new();
    for flags in VARIANTS {
        runs.push(scale::measure(shape, false, flags).await?);
    }
    let of = |f: fn(&scale::Scale) -> f64| [f(&runs[0]), f(&runs[1])];
    let per_pod =
        |s: &scale::Scale| s.loaded_kib.saturating_sub(s.idle_kib) as f64 / s.shape.pods() as f64;
    Ok(vec![
        Row::new(
            "5. 1000 jobs x 2 workers: idle RSS",
            "MiB",
            of(|s| mib(s.idle_kib)),
        ),
        Row::new(
            "5. RSS with every job running",
            "MiB",
            of(|s| mib(s.loaded_kib)),
        ),
        Row::new("5. RSS per pod above idle", "KiB", of(per_pod)),
        Row::new(
            "5. time to create every child",
            "s",
            of(|s| s.fill.as_secs_f64()),
        ),
        Row::new(
            "5. full resync: CPU",
            "s",
            of(|s| s.resync.cpu.as_secs_f64()),
        ),
        Row::new(
            "5. full resync: passes",
            "",
            of(|s| s.resync.reconciles as f64),
        ),
        Row::new("5. full resync: writes", "", of(|s| s.resync.writes as f64)),
    ])
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn median_of<T>(runs: &[T], f: impl Fn(&T) -> f64) -> f64 {
    let mut xs: Vec<f64> = runs.iter().map(f).collect();
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or_default()
}

pub fn print(rows: &[Row]) {
    println!(
        "\n7. Jobs without a queue label, the operator binary without and with --kueue (Workload CRD served)"
    );
    println!("   short measures: median of {ROUNDS} rounds, the two alternating");
    println!(
        "   {:<58} {:>12} {:>12} {:>8}",
        "", "without", "--kueue", "ratio"
    );
    for r in rows {
        let ratio = if r.without == 0.0 && r.with == 0.0 {
            1.0
        } else {
            r.with / r.without
        };
        let cell = |v: f64| format!("{v:.2} {}", r.unit).trim_end().to_string();
        println!(
            "   {:<58} {:>12} {:>12} {:>7.2}x",
            r.label,
            cell(r.without),
            cell(r.with),
            ratio
        );
    }
}
