//! The `process_*` metrics of Prometheus's client libraries (memory, CPU, file descriptors,
//! start time), read from `/proc/self` at each scrape. I/O: reads /proc (Linux only; elsewhere
//! nothing is exported). prometheus-client has no process collector; the parsing is pure.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// The kernel's `USER_HZ`, the unit of CPU times in /proc: 100 on every architecture Linux
/// exposes to user space (its ABI). client_golang's procfs assumes the same, for the same
/// reason: asking `sysconf` would need libc, for a value that does not vary.
const USER_HZ: f64 = 100.0;

/// What one scrape reports of this process.
#[derive(Debug, Default, PartialEq)]
pub struct Process {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub start_time_seconds: f64,
    pub open_fds: u64,
    /// The soft limit; None when unlimited.
    pub max_fds: Option<u64>,
}

/// From `/proc/self/stat`: (CPU seconds, virtual memory bytes, start in ticks after boot).
fn parse_stat(stat: &str) -> Option<(f64, u64, u64)> {
    // The command name (field 2) is in parentheses and may hold spaces and parentheses
    // itself: the fields that follow start after the last `)`, at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let cpu = (field(14)? + field(15)?) as f64 / USER_HZ;
    Some((cpu, field(23)?, field(22)?))
}

/// `VmRSS` of `/proc/self/status`, in bytes.
fn parse_resident(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The soft limit of open files in `/proc/self/limits`: Some(None) when unlimited.
fn parse_max_fds(limits: &str) -> Option<Option<u64>> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    match soft {
        "unlimited" => Some(None),
        n => n.parse().ok().map(Some),
    }
}

/// The boot time, seconds since the epoch: `btime` of `/proc/stat`.
fn parse_boot_time(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("btime "))?;
    line["btime ".len()..].trim().parse().ok()
}

impl Process {
    /// This process now; None where /proc cannot be read.
    pub fn read() -> Option<Self> {
        let read = |path| std::fs::read_to_string(path).ok();
        let (cpu_seconds, virtual_bytes, start_ticks) = parse_stat(&read("/proc/self/stat")?)?;
        let boot = parse_boot_time(&read("/proc/stat")?)?;
        Some(Self {
            cpu_seconds,
            resident_bytes: parse_resident(&read("/proc/self/status")?)?,
            virtual_bytes,
            start_time_seconds: boot as f64 + start_ticks as f64 / USER_HZ,
            open_fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as u64,
            max_fds: parse_max_fds(&read("/proc/self/limits")?)?,
        })
    }
}

/// Reports [`Process`] at each scrape.
#[derive(Debug, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(p) = Process::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(p.cpu_seconds);
        let metric = encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?;
        cpu.encode(metric)?;
        let mut gauges = vec![
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                p.resident_bytes as f64,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                p.virtual_bytes as f64,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                p.start_time_seconds,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                p.open_fds as f64,
            ),
        ];
        if let Some(max) = p.max_fds {
            gauges.push((
                "process_max_fds",
                "Maximum number of open file descriptors",
                max as f64,
            ));
        }
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_memory_and_start_from_stat_past_a_tricky_name() {
        // Fields 3.. of a real /proc/self/stat, behind a name with a space and a `)`.
        let stat = "4242 (tfjob (op) x) S 1 4242 4242 0 -1 4194560 2163 0 0 0 \
                    150 25 0 0 20 0 9 0 123456 104857600 3000 18446744073709551615";
        assert_eq!(parse_stat(stat), Some((1.75, 104_857_600, 123_456)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn reads_resident_memory_limits_and_boot_time() {
        let status = "Name:\ttfjob-operator\nVmSize:\t  102400 kB\nVmRSS:\t   12000 kB\n";
        assert_eq!(parse_resident(status), Some(12_000 * 1024));
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 1048576              files     \n";
        assert_eq!(parse_max_fds(limits), Some(Some(1024)));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_max_fds(unlimited), Some(None));
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nbtime 1767225600\n"),
            Some(1_767_225_600)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_and_exported() {
        let p = Process::read().expect("/proc/self");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            p.resident_bytes > 1 << 20 && p.virtual_bytes >= p.resident_bytes,
            "{p:?}"
        );
        assert!(p.open_fds >= 3, "stdin, stdout, stderr at least: {p:?}");
        // Started in this test run, before now (boot time is whole seconds: 1 s of slack).
        assert!(
            p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 3600.0,
            "{p:?}"
        );
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_virtual_memory_bytes ",
            "process_start_time_seconds ",
            "process_open_fds ",
        ] {
            assert!(text.contains(name), "{name} missing:\n{text}");
        }
    }
}
