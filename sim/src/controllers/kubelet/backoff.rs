//! The kubelet's container restart back-off (CrashLoopBackOff), as `kuberuntime`'s `doBackOff`
//! drives client-go's `flowcontrol.Backoff` (pure: the caller passes the clock).
//!
//! Per container (pod uid + name): a container that exits while it has no entry restarts at
//! once, and the entry starts at `initial`; an exit while it has one waits until the current
//! back-off has passed since the exit (`IsInBackOffSince`), then restarts and doubles the
//! back-off up to `max` (`Next`). An entry not updated for more than `2 × max` is forgotten, so a
//! container that ran that long starts over (real kubelet: 10 s doubling to 300 s, reset after
//! 10 minutes).
use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// The real kubelet's defaults: `backOffPeriod` and `MaxContainerBackOff`.
pub const DEFAULT_INITIAL: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX: Duration = Duration::from_secs(300);

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    backoff: Duration,
    last_update: Timestamp,
}

/// Back-off state of every container the kubelet restarted.
#[derive(Clone, Debug, PartialEq)]
pub struct CrashBackoff {
    initial: Duration,
    max: Duration,
    entries: BTreeMap<String, Entry>,
}

impl Default for CrashBackoff {
    fn default() -> Self {
        Self::new(DEFAULT_INITIAL, DEFAULT_MAX)
    }
}

fn since(later: Timestamp, earlier: Timestamp) -> Duration {
    Duration::try_from(later.duration_since(earlier)).unwrap_or(Duration::ZERO)
}

impl CrashBackoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max: max.max(initial),
            entries: BTreeMap::new(),
        }
    }

    /// Stable key of one container of one pod.
    pub fn key(pod_uid: &str, container: &str) -> String {
        format!("{pod_uid}/{container}")
    }

    fn expired(&self, event: Timestamp, e: &Entry) -> bool {
        since(event, e.last_update) > self.max * 2
    }

    /// `IsInBackOffSince`: the back-off a container that finished at `finished` still waits out
    /// at `now` (None = restart now).
    pub fn waiting(&self, key: &str, finished: Timestamp, now: Timestamp) -> Option<Duration> {
        let e = self.entries.get(key)?;
        if self.expired(finished, e) {
            return None;
        }
        (since(now, finished) < e.backoff).then_some(e.backoff)
    }

    /// `Next`: the container restarts now; the next exit waits longer (or starts over).
    pub fn next(&mut self, key: &str, finished: Timestamp, now: Timestamp) {
        let max = self.max;
        let backoff = match self.entries.get(key) {
            Some(e) if !self.expired(finished, e) => (e.backoff * 2).min(max),
            _ => self.initial,
        };
        // What `Backoff.GC` does periodically: entries idle for 2 × max can go.
        self.entries
            .retain(|_, e| since(now, e.last_update) <= max * 2);
        let entry = Entry {
            backoff,
            last_update: now,
        };
        self.entries.insert(key.to_string(), entry);
    }
}

/// A duration as Go's `time.Duration.String` writes it (`10s`, `1m20s`, `5m0s`, `100ms`), for
/// the kubelet's `back-off 10s restarting failed container=...` message.
pub fn go_duration(d: Duration) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if d.is_zero() {
        return "0s".into();
    }
    if d < Duration::from_micros(1) {
        return format!("{}ns", d.as_nanos());
    }
    if d < Duration::from_millis(1) {
        return trim(format!("{:.3}", d.as_nanos() as f64 / 1e3)) + "µs";
    }
    if d < Duration::from_secs(1) {
        return trim(format!("{:.6}", d.as_nanos() as f64 / 1e6)) + "ms";
    }
    let total = d.as_secs();
    let (h, m) = (total / 3600, total / 60 % 60);
    let secs = trim(format!("{}.{:09}", total % 60, d.subsec_nanos()));
    match (h, m) {
        (0, 0) => format!("{secs}s"),
        (0, m) => format!("{m}m{secs}s"),
        (h, m) => format!("{h}h{m}m{secs}s"),
    }
}

/// `start + d`, saturating.
pub(super) fn after(start: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| start.checked_add(d).ok())
        .unwrap_or(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Timestamp {
        after(
            Timestamp::UNIX_EPOCH,
            Duration::from_secs(1_700_000_000 + s),
        )
    }

    #[test]
    fn exits_restart_at_once_then_wait_doubling_up_to_max_and_start_over_after_a_long_run() {
        let mut b = CrashBackoff::default();
        let k = CrashBackoff::key("uid", "tensorflow");
        // (exit time, wait before the restart)
        let exits = [
            (0, 0),
            (1, 10),
            (12, 20),
            (33, 40),
            (74, 80),
            (155, 160),
            (316, 300),
            (617, 300),
            // ran for over 2 × max since the last restart decision: starts over
            (2000, 0),
            (2001, 10),
        ];
        for (exit, wait) in exits {
            let finished = at(exit);
            let got = b.waiting(&k, finished, finished).map_or(0, |d| d.as_secs());
            assert_eq!(got, wait, "exit at {exit}");
            let restart = after(finished, Duration::from_secs(wait));
            assert_eq!(
                b.waiting(&k, finished, restart),
                None,
                "over at {exit}+{wait}"
            );
            b.next(&k, finished, restart);
        }
    }

    #[test]
    fn durations_read_like_go() {
        let cases = [
            (Duration::from_secs(10), "10s"),
            (Duration::from_secs(80), "1m20s"),
            (Duration::from_secs(300), "5m0s"),
            (Duration::from_secs(3725), "1h2m5s"),
            (Duration::from_millis(100), "100ms"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::ZERO, "0s"),
        ];
        for (d, want) in cases {
            assert_eq!(go_duration(d), want);
        }
    }
}
