//! `cargo bench --features jemalloc --bench side_by_side`: our operator beside Kubeflow's
//! training-operator (v1.9.4, built from Go modules by `testcluster/kubeflow-build`), on the
//! real control plane (`testcluster/up`: etcd, kube-apiserver, kwok), with the same jobs, one
//! operator at a time, each on a fresh cluster and in its own namespace. Kubeflow runs with its
//! default flags and tuned (the best of a sweep of QPS, burst and threads); ours with its
//! default `--concurrency` (and a sweep of it). Prints Markdown tables (BENCHMARKS.md,
//! "Side by side with Kubeflow") and writes them to `target/side-by-side/`; asserts nothing.
//! I/O (clusters, processes, the audit log).
#![forbid(unsafe_code)]

#[path = "side_by_side/audit.rs"]
mod audit;
#[path = "side_by_side/cluster.rs"]
mod cluster;
#[path = "side_by_side/contender.rs"]
mod contender;
#[path = "side_by_side/cpu.rs"]
mod cpu;
#[path = "side_by_side/harness.rs"]
mod harness;
#[path = "side_by_side/jobs.rs"]
mod jobs;
#[path = "side_by_side/report.rs"]
mod report;
#[path = "side_by_side/scenarios.rs"]
mod scenarios;
#[path = "side_by_side/timeline.rs"]
mod timeline;
#[path = "side_by_side/webhook.rs"]
mod webhook;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, bail};

use contender::{Contender, KubeflowBuild, Tuning};
use harness::Harness;
use report::{Figure, Results};

/// Sections by name; `-- throughput big` runs only those.
const SECTIONS: [&str; 5] = ["sweep", "throughput", "big", "lifecycle", "scale"];
/// Our default `--concurrency` (src/settings.rs).
const OURS_DEFAULT: u16 = 8;
const OURS_SWEEP: [u16; 5] = [4, 8, 16, 32, 64];
const KUBEFLOW_SWEEP: [Tuning; 5] = [
    tuning(1000, 2000, 1),
    tuning(1000, 2000, 4),
    tuning(1000, 2000, 16),
    tuning(5000, 10000, 16),
    tuning(5000, 10000, 64),
];
/// Kubeflow's tuned flags when the sweep is not run (the sweep's best on the project machine).
const KUBEFLOW_TUNED: Tuning = tuning(1000, 2000, 16);

const fn tuning(qps: u32, burst: u32, threads: u32) -> Tuning {
    Tuning {
        qps,
        burst,
        threads,
    }
}

struct Args {
    sections: Vec<String>,
    runs: usize,
    /// Which of ours, kubeflow, kubeflow-tuned to run (all by default).
    only: Vec<String>,
    tuned: Option<Tuning>,
    /// Our `--concurrency` (the default's when not given).
    concurrency: u16,
}

impl Args {
    fn parse() -> anyhow::Result<Self> {
        let mut args = Self {
            sections: Vec::new(),
            runs: 1,
            only: Vec::new(),
            tuned: None,
            concurrency: OURS_DEFAULT,
        };
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            match a.as_str() {
                "--bench" => {}
                "--runs" => args.runs = it.next().context("--runs N")?.parse()?,
                "--only" => {
                    args.only = it
                        .next()
                        .context("--only LIST")?
                        .split(',')
                        .map(String::from)
                        .collect()
                }
                "--concurrency" => {
                    args.concurrency = it.next().context("--concurrency N")?.parse()?
                }
                "--tuned" => {
                    let v: Vec<u32> = it
                        .next()
                        .context("--tuned QPS,BURST,THREADS")?
                        .split(',')
                        .map(str::parse)
                        .collect::<Result<_, _>>()?;
                    let [qps, burst, threads] = v[..] else {
                        bail!("--tuned QPS,BURST,THREADS")
                    };
                    args.tuned = Some(tuning(qps, burst, threads));
                }
                s if SECTIONS.contains(&s) => args.sections.push(a),
                _ => bail!(
                    "unknown argument {a}; sections: {}; flags: --runs N, --only ours,kubeflow,kubeflow-tuned, --tuned QPS,BURST,THREADS, --concurrency N",
                    SECTIONS.join(", ")
                ),
            }
        }
        Ok(args)
    }

    fn section(&self, name: &str) -> bool {
        self.sections.is_empty() || self.sections.iter().any(|s| s == name)
    }

    fn wants(&self, who: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == who)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    let args = Args::parse()?;
    let out_dir = Path::new(cluster::ROOT).join("target/side-by-side");
    let dir = out_dir.join("cluster");
    std::fs::create_dir_all(&out_dir)?;
    let kubeflow = KubeflowBuild::ensure(&dir)?;
    let header = header(&kubeflow);
    println!("{header}");
    let mut results: BTreeMap<String, Results> = BTreeMap::new();
    let mut tuned = args.tuned.unwrap_or(KUBEFLOW_TUNED);
    let mut sweeps = String::new();
    if args.section("sweep") {
        let ours: Vec<Contender> = OURS_SWEEP.iter().map(|&c| Contender::ours(c)).collect();
        let theirs: Vec<Contender> = KUBEFLOW_SWEEP
            .iter()
            .map(|&t| Contender::kubeflow(t))
            .collect();
        for _ in 0..args.runs {
            for c in ours.iter().chain(&theirs) {
                measure(&dir, &kubeflow, c, "throughput", &mut results).await?;
            }
        }
        tuned = best(&theirs, &results).unwrap_or(tuned);
        let rows = |cs: &[Contender]| -> Vec<(String, Results)> {
            cs.iter()
                .map(|c| {
                    (
                        c.label(),
                        results.get(&c.label()).cloned().unwrap_or_default(),
                    )
                })
                .collect()
        };
        sweeps = format!(
            "{}\n{}",
            report::sweep_table("ours", &rows(&ours)),
            report::sweep_table("Kubeflow", &rows(&theirs))
        );
    }
    let mut contenders = Vec::new();
    for (who, c) in [
        ("ours", Contender::ours(args.concurrency)),
        ("kubeflow", Contender::kubeflow(Tuning::DEFAULT)),
        ("kubeflow-tuned", Contender::kubeflow(tuned)),
    ] {
        if args.wants(who) {
            contenders.push(c);
        }
    }
    for _ in 0..args.runs {
        for c in &contenders {
            for section in ["throughput", "big", "lifecycle", "scale"] {
                if args.section(section) {
                    measure(&dir, &kubeflow, c, section, &mut results).await?;
                }
            }
        }
    }
    let columns: Vec<(String, &Results)> = contenders
        .iter()
        .map(|c| (c.label(), results.get(&c.label())))
        .filter_map(|(l, r)| r.map(|r| (l, r)))
        .collect();
    let main_table = if columns.is_empty() {
        String::new()
    } else {
        report::table(&columns)
    };
    let mut text = format!("{header}\n\n{main_table}\n{sweeps}\n");
    for (label, r) in &results {
        for note in &r.notes {
            text.push_str(&format!("- {label}: {note}\n"));
        }
    }
    text.push_str(&format!(
        "\nwhole benchmark: {:.0} s\n",
        started.elapsed().as_secs_f64()
    ));
    println!("\n{text}");
    let file = out_dir.join(format!("results-{}.md", jiff::Timestamp::now().as_second()));
    std::fs::write(&file, &text)?;
    eprintln!("side-by-side: written to {}", file.display());
    Ok(())
}

/// One section for one operator on a fresh cluster; its figures go to `results`.
async fn measure(
    dir: &Path,
    kubeflow: &KubeflowBuild,
    c: &Contender,
    section: &str,
    results: &mut BTreeMap<String, Results>,
) -> anyhow::Result<()> {
    let load = load_average();
    let mut h = Harness::start(dir, c, kubeflow).await?;
    let r = results.entry(c.label()).or_default();
    let idle_mib = h.idle_rss_kib as f64 / 1024.0;
    r.add(Figure::IdleRss, idle_mib);
    let line = match section {
        "throughput" => {
            let l = scenarios::load(&mut h, 200, 5).await?;
            r.add(Figure::Children200x5, l.children.as_secs_f64());
            r.add(Figure::RssPerPod200x5, l.rss_per_pod_kib);
            r.notes.push(burst_note(200, 5, &l));
            format!(
                "2000 children in {:.2} s, RSS {:.1} MiB, {:.1} KiB per pod; CPU {}; requests {}; {}",
                l.children.as_secs_f64(),
                l.rss_kib as f64 / 1024.0,
                l.rss_per_pod_kib,
                l.cpu_split,
                l.requests.summary(1.0),
                l.timeline
            )
        }
        "big" => {
            let b = scenarios::big_job(&mut h, 1000).await?;
            r.add(Figure::BigJob, b.big.as_secs_f64());
            r.add(Figure::SmallJob, b.small.as_secs_f64());
            r.add(
                Figure::SmallJobUserCreate,
                b.split.user_create.as_secs_f64() * 1000.0,
            );
            format!(
                "big job {:.2} s, small job {:.2} s: {}",
                b.big.as_secs_f64(),
                b.small.as_secs_f64(),
                b.split
            )
        }
        "lifecycle" => {
            let l = scenarios::lifecycle(&mut h, 200, 2.0).await?;
            let n = l.jobs as f64;
            let writes: u64 = l
                .requests
                .0
                .iter()
                .filter(|(k, _)| is_write(k))
                .map(|(_, v)| v)
                .sum();
            r.add(Figure::RequestsPerJob, l.requests.total() as f64 / n);
            r.add(Figure::WritesPerJob, writes as f64 / n);
            r.add(Figure::EventsPerJob, l.events as f64 / n);
            r.add(Figure::CpuPerJob, l.cpu.as_secs_f64() * 1000.0 / n);
            r.add(Figure::Finished, l.finished.as_secs_f64());
            r.notes.push(format!(
                "requests per finished 1-worker job: {}",
                l.requests.summary(n)
            ));
            r.notes.push(format!(
                "200 1-worker jobs of 2 s to Succeeded ({:.2} s): {}",
                l.finished.as_secs_f64(),
                l.timeline
            ));
            format!(
                "{} requests per job, CPU {:.2} ms per job",
                l.requests.summary(n),
                l.cpu.as_secs_f64() * 1000.0 / n
            )
        }
        "scale" => {
            let l = scenarios::load(&mut h, 1000, 2).await?;
            r.add(Figure::Children1000x2, l.children.as_secs_f64());
            r.add(Figure::RssPerPod1000x2, l.rss_per_pod_kib);
            r.notes.push(burst_note(1000, 2, &l));
            let s = scenarios::restart(&mut h).await?;
            r.add(Figure::RestartRequests, s.requests.total() as f64);
            r.add(Figure::RestartWrites, s.writes as f64);
            r.notes.push(format!(
                "requests after a restart with 1000 jobs settled: {}",
                s.requests.summary(1.0)
            ));
            format!(
                "4000 children in {:.2} s, {:.1} KiB per pod; restart: {}",
                l.children.as_secs_f64(),
                l.rss_per_pod_kib,
                s.requests.summary(1.0)
            )
        }
        other => bail!("no section {other}"),
    };
    eprintln!(
        "side-by-side: {} | {section} | load {load} | idle {idle_mib:.1} MiB | {line}",
        c.label()
    );
    Ok(())
}

/// Where a burst's time went: CPU per process, the operator's requests, the create timeline.
fn burst_note(jobs: usize, workers: u32, l: &scenarios::Load) -> String {
    format!(
        "while {jobs} jobs × {workers} workers were created ({:.1} s): CPU {}; its requests {}; {}",
        l.children.as_secs_f64(),
        l.cpu_split,
        l.requests.summary(1.0),
        l.timeline
    )
}

fn is_write(kind: &str) -> bool {
    ["create ", "update ", "patch ", "delete "]
        .iter()
        .any(|v| kind.starts_with(v))
}

/// The Kubeflow setting whose 200 × 5 throughput was best (its median over the runs).
fn best(candidates: &[Contender], results: &BTreeMap<String, Results>) -> Option<Tuning> {
    let median = |c: &Contender| -> Option<f64> {
        let mut v = results
            .get(&c.label())?
            .figures
            .get(&Figure::Children200x5)?
            .clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    candidates
        .iter()
        .filter_map(|c| Some((median(c)?, c)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .and_then(|(_, c)| match c.kind {
            contender::Kind::Kubeflow(t) => Some(t),
            contender::Kind::Ours { .. } => None,
        })
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn header(kubeflow: &KubeflowBuild) -> String {
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
    let allocator = if cfg!(feature = "jemalloc") {
        "jemalloc (--features jemalloc, as the Dockerfile builds it)"
    } else {
        "the system allocator (plain `cargo build --release`; the image uses --features jemalloc)"
    };
    let commit = std::process::Command::new("git")
        .args(["-C", cluster::ROOT, "rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!(
        "side by side: cargo bench --bench side_by_side (commit {commit}, {})\n\
         machine: {cores} cores ({model}); load average at start: {}\n\
         ours: release build, allocator {allocator}\n\
         Kubeflow: training-operator {} ({})",
        jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC"),
        load_average(),
        kubeflow.version,
        kubeflow.bin.display()
    )
}
