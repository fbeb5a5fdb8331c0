//! `cargo bench --bench operator`: the operator's performance on the simulator, each number
//! beside the minimum possible on the same simulator in the same run. Prints tables; asserts
//! nothing about time. I/O (starts simulators, spawns the operator binary, prints).
#![forbid(unsafe_code)]

#[path = "operator/cluster.rs"]
mod cluster;
#[path = "operator/creation.rs"]
mod creation;
#[path = "operator/footprint.rs"]
mod footprint;
#[path = "operator/kueue.rs"]
mod kueue;
#[path = "operator/process.rs"]
mod process;
#[path = "operator/scale.rs"]
mod scale;
#[path = "operator/throughput.rs"]
mod throughput;
#[path = "operator/writes.rs"]
mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const REPS: usize = 5;
/// Added to every request in the second throughput pair: a real API server's write latency.
const API_LATENCY: Duration = Duration::from_millis(5);

/// Sections by name; `cargo bench --bench operator -- scale` runs only those named. `kueue`
/// (1 and 3–5 again, without and with `--kueue`) runs only when named.
const SECTIONS: [&str; 7] = [
    "creation",
    "writes",
    "footprint",
    "throughput",
    "scale",
    "scale-10k",
    "kueue",
];

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    // cargo passes `--bench`; any other argument names sections.
    let asked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Some(unknown) = asked.iter().find(|a| !SECTIONS.contains(&a.as_str())) {
        anyhow::bail!(
            "unknown section {unknown}; sections: {}",
            SECTIONS.join(", ")
        );
    }
    let named = |section: &str| asked.iter().any(|a| a == section);
    let run = |section: &str| (asked.is_empty() && section != "kueue") || named(section);
    header();

    if run("creation") {
        let mut all = Vec::new();
        for workers in creation::WORKERS {
            all.push(creation::measure(REPS, workers, creation::Run::InProcess).await?);
        }
        print_creation(&all);
    }
    if run("writes") {
        print_writes(&writes::measure().await?);
    }
    if run("footprint") {
        print_footprint(&footprint::measure(&[]).await?);
    }
    if run("throughput") {
        let mut runs = Vec::new();
        for latency in [Duration::ZERO, API_LATENCY] {
            runs.push(throughput::measure(Some(1), latency, &[]).await?);
            runs.push(throughput::measure(None, latency, &[]).await?);
        }
        print_throughput(&runs);
    }
    if run("scale") {
        let shape = scale::Shape {
            jobs: 1000,
            workers: 2,
        };
        print_scale(&scale::measure(shape, true, &[]).await?);
    }
    if run("scale-10k") {
        let shape = scale::Shape {
            jobs: 10_000,
            workers: 5,
        };
        print_scale(&scale::measure(shape, false, &[]).await?);
    }
    if run("kueue") {
        kueue::print(&kueue::measure(REPS).await?);
    }

    println!(
        "\nwhole benchmark: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn header() {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, m)| m.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into());
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("tfjob-operator benchmarks: cargo bench --bench operator");
    println!("machine: {cores} cores ({model}); load average at start: {load}");
    println!("build: {profile}; cluster: the in-memory simulator (tfjob-sim) in this process");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(xs: &[Duration]) -> Duration {
    let mut v = xs.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn min(xs: &[Duration]) -> Duration {
    xs.iter().min().copied().unwrap_or_default()
}

fn print_creation(all: &[creation::Creation]) {
    println!(
        "\n1. Creating every child of an N-worker job (N pods + N services), {REPS} runs each"
    );
    println!(
        "   from the TFJob create call returning to all children in the store (polled every 1 ms)"
    );
    for c in all {
        print_one_creation(c);
    }
}

fn print_one_creation(c: &creation::Creation) {
    let n = c.workers;
    println!(
        "   {:<58} {:>10} {:>10}",
        format!("{n} workers"),
        "median",
        "min"
    );
    let op = (median(&c.operator), min(&c.operator));
    let bl = (median(&c.baseline), min(&c.baseline));
    let ev = (median(&c.with_events), min(&c.with_events));
    println!(
        "   {:<58} {:>7.1} ms {:>7.1} ms",
        "operator",
        ms(op.0),
        ms(op.1)
    );
    println!(
        "   {:<58} {:>7.1} ms {:>7.1} ms",
        "floor: plain client, same objects, 16 creates in flight",
        ms(bl.0),
        ms(bl.1)
    );
    println!(
        "   {:<58} {:>7.1} ms {:>7.1} ms",
        "Kubeflow's way for comparison: + 1 event per create",
        ms(ev.0),
        ms(ev.1)
    );
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "   {:<58} {:>9.2}x {:>9.2}x",
        "ratio operator / floor (target <= 1.3x)",
        ratio(op.0, bl.0),
        ratio(op.1, bl.1)
    );
    let all = |xs: &[Duration]| {
        xs.iter()
            .map(|d| format!("{:.0}", ms(*d)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "   runs (ms): operator {}; floor {}; with events {}",
        all(&c.operator),
        all(&c.baseline),
        all(&c.with_events)
    );
}

fn print_writes(jobs: &[writes::JobWrites]) {
    println!(
        "\n2. API requests per job, from creation until settled (Succeeded, cleanup done, 1 s without a write)"
    );
    println!(
        "   worker 0 runs 1 s and decides success; every other pod outlives it, so the default"
    );
    println!("   cleanPodPolicy Running deletes all of them and their services");
    print!("   {:<30}", "verb resource");
    for j in jobs {
        print!(" {:>26}", j.label);
    }
    println!();
    print!("   {:<30}", "");
    for _ in jobs {
        print!(" {:>12} {:>13}", "measured", "minimum");
    }
    println!();
    print_rows(jobs, is_write);
    print_row(
        "writes",
        jobs.iter()
            .map(|j| (sum(&j.measured, is_write), sum(&j.minimum, is_write))),
    );
    print_rows(jobs, is_read);
    print_row(
        "reads",
        jobs.iter()
            .map(|j| (sum(&j.measured, is_read), sum(&j.minimum, is_read))),
    );
    print_row(
        "all requests",
        jobs.iter()
            .map(|j| (sum(&j.measured, |_| true), sum(&j.minimum, |_| true))),
    );
    for j in jobs {
        let reasons: Vec<String> = j
            .event_reasons
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        println!("   {} events by reason: {}", j.label, reasons.join(", "));
    }
    for j in jobs {
        println!(
            "   {}: {} pods and {} services left after cleanup; writes {:.2}x the minimum",
            j.label,
            j.left.0,
            j.left.1,
            sum(&j.measured, is_write) as f64 / sum(&j.minimum, is_write).max(1) as f64
        );
    }
    println!(
        "   minimum = 1 create per pod and service; 3 status writes (Created, Running, Succeeded);"
    );
    println!(
        "   1 delete per pod still running at success and its service; 1 event per create, delete"
    );
    println!("   and TFJobSucceeded; no reads (the watch caches are shared by all jobs)");
}

type Counts = BTreeMap<(String, String), u64>;

/// One row per (verb, resource) that `keep` selects, measured and minimum for each job.
fn print_rows(jobs: &[writes::JobWrites], keep: fn(&str) -> bool) {
    let keys: BTreeSet<&(String, String)> = jobs
        .iter()
        .flat_map(|j| j.measured.keys().chain(j.minimum.keys()))
        .filter(|(verb, _)| keep(verb))
        .collect();
    for key @ (verb, resource) in keys {
        let cell = |m: &Counts| m.get(key).copied().unwrap_or(0);
        let cells = jobs.iter().map(|j| (cell(&j.measured), cell(&j.minimum)));
        print_row(&format!("{verb} {resource}"), cells);
    }
}

fn sum(m: &Counts, keep: fn(&str) -> bool) -> u64 {
    m.iter().filter(|((v, _), _)| keep(v)).map(|(_, n)| n).sum()
}

fn is_read(verb: &str) -> bool {
    !is_write(verb)
}

fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

fn print_row(label: &str, cells: impl Iterator<Item = (u64, u64)>) {
    print!("   {label:<30}");
    for (measured, minimum) in cells {
        print!(" {measured:>12} {minimum:>13}");
    }
    println!();
}

fn print_footprint(f: &footprint::Footprint) {
    let mib = |k: u64| k as f64 / 1024.0;
    println!("\n3. The operator binary (spawned, KUBECONFIG at the simulator, metrics/health off)");
    println!(
        "   {:<58} {:>8.1} MiB",
        "idle RSS, caches synced, no jobs",
        mib(f.idle_kib)
    );
    println!(
        "   {:<58} {:>8.1} MiB",
        format!(
            "idle RSS after {} finished 1-worker jobs settled",
            footprint::JOBS
        ),
        mib(f.after_jobs_kib)
    );
    println!("   {:<58} {:>8.1} MiB", "peak RSS (VmHWM)", mib(f.peak_kib));
    println!(
        "   {:<58} {:>8.0} ms  ({:.1} ms per job, over {:.1} s wall)",
        format!("CPU time (user+system) for the {} jobs", footprint::JOBS),
        ms(f.cpu),
        ms(f.cpu) / footprint::JOBS as f64,
        f.wall.as_secs_f64()
    );
}

fn print_throughput(runs: &[throughput::Throughput]) {
    println!(
        "\n4. {} single-worker jobs (worker runs {} s) created at once, until all Succeeded",
        throughput::JOBS,
        throughput::RUN
    );
    println!(
        "   {:<26} {:<16} {:>9} {:>9} {:>8}",
        "operator binary", "API latency", "time", "jobs/s", "writes"
    );
    for r in runs {
        let label = match r.concurrency {
            Some(c) => format!("--concurrency {c}"),
            None => "default (--concurrency 8)".into(),
        };
        let latency = format!("+{} ms/request", r.latency.as_millis());
        let secs = r.all_succeeded.as_secs_f64();
        let rate = throughput::JOBS as f64 / secs;
        println!(
            "   {label:<26} {latency:<16} {secs:>7.2} s {rate:>9.1} {:>8}",
            r.writes
        );
    }
    for pair in runs.chunks(2) {
        if let [serial, default] = pair {
            println!(
                "   speed-up of the default over --concurrency 1 at +{} ms: {:.2}x",
                serial.latency.as_millis(),
                serial.all_succeeded.as_secs_f64() / default.all_succeeded.as_secs_f64()
            );
        }
    }
}

fn print_scale(s: &scale::Scale) {
    let mib = |k: u64| k as f64 / 1024.0;
    let pods = s.shape.pods();
    println!(
        "\n5. The operator binary holding {} running jobs of {} workers ({pods} pods, {pods} services)",
        s.shape.jobs, s.shape.workers
    );
    println!(
        "   {:<58} {:>8.1} MiB",
        "idle RSS, caches synced, no jobs",
        mib(s.idle_kib)
    );
    println!(
        "   {:<58} {:>8.1} MiB",
        "RSS with every job running, operator quiet",
        mib(s.loaded_kib)
    );
    println!("   {:<58} {:>8.1} MiB", "peak RSS (VmHWM)", mib(s.peak_kib));
    println!(
        "   {:<58} {:>8.2} KiB  (target <= 5 KiB)",
        "RSS per pod (with its job share and service), above idle",
        s.loaded_kib.saturating_sub(s.idle_kib) as f64 / pods as f64
    );
    let second_half = pods - pods / s.shape.jobs.max(1) * (s.shape.jobs / 2);
    println!(
        "   {:<58} {:>8.2} KiB",
        "  the same, second half of the jobs (a pod's marginal cost)",
        s.loaded_kib.saturating_sub(s.half_kib) as f64 / second_half as f64
    );
    let (idle_file, loaded_file) = s.file_kib;
    println!(
        "   {:<58} {:>8.1} MiB",
        "  of the growth above idle, code pages (RssFile)",
        mib(loaded_file.saturating_sub(idle_file))
    );
    println!(
        "   {:<58} {:>8.1} s",
        "time to create every child",
        s.fill.as_secs_f64()
    );
    let r = &s.resync;
    println!(
        "   full resync (history compacted, every watch dropped): {} passes in {:.2} s wall, {:.2} s CPU (target < 2 s), {} writes (target 0)",
        r.reconciles,
        r.wall.as_secs_f64(),
        r.cpu.as_secs_f64(),
        r.writes
    );
    println!(
        "   no-op reconciles per CPU second: {:.0}",
        r.reconciles as f64 / r.cpu.as_secs_f64().max(1e-3)
    );
    if let Some(b) = &s.big {
        println!(
            "\n6. A {}-worker job created beside them, a 1-worker job submitted during its creates",
            scale::BIG
        );
        println!(
            "   {:<58} {:>8.0} ms",
            "its children, operator",
            ms(b.children)
        );
        println!(
            "   {:<58} {:>8.0} ms",
            "floor: plain client, same objects, same cluster",
            ms(b.floor)
        );
        println!(
            "   {:<58} {:>8.2}x  (target <= 1.5x)",
            "ratio operator / floor",
            b.children.as_secs_f64() / b.floor.as_secs_f64()
        );
        println!(
            "   {:<58} {:>8.0} ms  (target <= 1000 ms; {} of the big job's pods stored when it was posted)",
            "the 1-worker job's children",
            ms(b.small_children),
            b.big_progress_at_small
        );
        println!(
            "   RSS before the big job {:.1} MiB, with it {:.1} MiB, after its deletion {:.1} MiB ({:+.1}%, target within 10%)",
            mib(b.before_kib),
            mib(b.with_big_kib),
            mib(b.after_kib),
            (b.after_kib as f64 / b.before_kib as f64 - 1.0) * 100.0
        );
    }
}
