//! CPU time of processes from `/proc/<pid>/stat`: the operator's per finished job, and during a
//! burst the split between the operator, the control plane's processes and this benchmark
//! itself, which share the machine's cores (where the time of a burst goes). I/O.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context as _;

/// User plus system CPU time of `pid` so far (all its threads).
pub fn of(pid: u32) -> anyhow::Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| path.clone())?;
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(i)
            .with_context(|| format!("field {} of {path}", i + 3))?
            .parse()?)
    };
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_secs_f64(total as f64 / clock_ticks() as f64))
}

/// The CPU time so far of each named process.
#[derive(Clone, Debug, Default)]
pub struct Snapshot(BTreeMap<String, Duration>);

impl Snapshot {
    /// `operator` and this benchmark's own process, and every control-plane component whose
    /// pid `testcluster/up` recorded under `<cluster>/run`.
    pub fn take(cluster_dir: &Path, operator: u32) -> Self {
        let mut pids = vec![("operator".to_string(), operator)];
        pids.push(("benchmark".to_string(), std::process::id()));
        if let Ok(dir) = std::fs::read_dir(cluster_dir.join("run")) {
            for entry in dir.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(component) = name.strip_suffix(".pid") else {
                    continue;
                };
                if let Some(pid) = std::fs::read_to_string(entry.path())
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                {
                    pids.push((component.to_string(), pid));
                }
            }
        }
        Self(
            pids.into_iter()
                .filter_map(|(name, pid)| Some((name, of(pid).ok()?)))
                .collect(),
        )
    }

    /// CPU used since `before`, per process, largest first, as one line for `wall`:
    /// `operator 1.2 s, kube-apiserver 8.0 s, … (of 2 cores × 10.0 s)`.
    pub fn since(&self, before: &Snapshot, wall: Duration) -> String {
        let mut used: Vec<(&String, Duration)> = self
            .0
            .iter()
            .filter_map(|(name, now)| Some((name, now.saturating_sub(*before.0.get(name)?))))
            .collect();
        used.sort_by_key(|b| std::cmp::Reverse(b.1));
        let total: Duration = used.iter().map(|(_, d)| *d).sum();
        let parts: Vec<String> = used
            .iter()
            .map(|(name, d)| format!("{name} {:.1} s", d.as_secs_f64()))
            .collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        format!(
            "{} (together {:.1} s, of {cores} cores × {:.1} s)",
            parts.join(", "),
            total.as_secs_f64(),
            wall.as_secs_f64()
        )
    }
}

/// Kernel clock ticks per second (USER_HZ).
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
