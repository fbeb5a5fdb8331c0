//! Settings of `tfjob-operator run` (docs/behaviour.md §9): each a flag with an environment fallback.

use std::net::SocketAddr;

use clap::{Args, ValueEnum};

/// How the operator runs.
#[derive(Args, Clone, Debug)]
pub struct RunArgs {
    /// Namespace to watch; repeat for several; none = all namespaces.
    /// Env KUBEFLOW_NAMESPACE (comma-separated).
    #[arg(long = "namespace", env = "KUBEFLOW_NAMESPACE", value_delimiter = ',')]
    pub namespaces: Vec<String>,

    /// Cluster domain appended to TF_CONFIG addresses (`<svc>.<ns>.svc.<domain>`).
    #[arg(long, env = "CUSTOM_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,

    /// TFJobs planned and having their children written at once (per watched namespace); each
    /// pass's status write follows outside this bound.
    #[arg(long, env = "TFJOB_CONCURRENCY", default_value_t = 8)]
    pub concurrency: u16,

    /// Threads running the operator's work. The operator mostly waits for the API server: one
    /// thread cost about a fifth less CPU per job than two, with the same throughput
    /// (BENCHMARKS.md); raise it only if the operator's own CPU use nears one core.
    #[arg(long, env = "TFJOB_WORKER_THREADS", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub worker_threads: u16,

    /// Longest wait, in seconds, before a failed pass is retried (the backoff doubles from
    /// 0.5 s up to it). It bounds how long a job refused by a quota or an admission rule waits
    /// once the cause is gone.
    #[arg(long, env = "MAX_ERROR_BACKOFF", default_value_t = 60.0, value_parser = positive_seconds)]
    pub max_error_backoff: f64,

    /// Run only while holding the leader Lease (for more than one operator replica).
    #[arg(long, env = "LEADER_ELECT", default_value_t = false)]
    pub leader_elect: bool,

    /// Name of the leader-election Lease.
    #[arg(
        long,
        env = "LEADER_ELECTION_ID",
        default_value = "tfjob-operator-leader"
    )]
    pub leader_election_id: String,

    /// Namespace of the leader-election Lease (default: the pod's namespace, else `default`).
    #[arg(long, env = "LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// Address of the Prometheus `/metrics` endpoint; `0` disables it.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = ":8080")]
    pub metrics_bind_address: String,

    /// Address of `/healthz` and `/readyz`; `0` disables it.
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081")]
    pub health_probe_bind_address: String,

    #[command(flatten)]
    pub gang: GangArgs,

    /// Queue TFJobs with Kueue as its external framework (Kueue's
    /// `integrations.externalFrameworks: ["TFJob.v1.kubeflow.org"]`): the operator makes and
    /// follows the Workload of every job labelled `kueue.x-k8s.io/queue-name`.
    #[arg(long, env = "TFJOB_KUEUE", default_value_t = false)]
    pub kueue: bool,

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "{s}: expected seconds, more than 0 and at most 86400"
        )),
    }
}

/// Parse a Go-style bind address (`:8080`, `0.0.0.0:8080`, `127.0.0.1:0`); `0` or empty = off.
pub fn bind_address(s: &str) -> Result<Option<SocketAddr>, String> {
    match s.trim() {
        "" | "0" => Ok(None),
        s if s.starts_with(':') => format!("0.0.0.0{s}")
            .parse()
            .map(Some)
            .map_err(|e| format!("{s}: {e}")),
        s => s.parse().map(Some).map_err(|e| format!("{s}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_in_go_style() {
        let cases = [
            (":8080", Some("0.0.0.0:8080")),
            ("127.0.0.1:9000", Some("127.0.0.1:9000")),
            ("0", None),
            ("", None),
        ];
        for (input, want) in cases {
            let got = bind_address(input).unwrap().map(|a| a.to_string());
            assert_eq!(got.as_deref(), want, "{input}");
        }
        assert!(bind_address("nonsense").is_err());
    }
}

/// The gang-scheduling flags, shared by `run` and `render`.
#[derive(clap::Args, Clone, Debug)]
pub struct GangArgs {
    /// Gang scheduler (Kubeflow's flag): `volcano`, `scheduler-plugins`, or the name of a
    /// scheduler-plugins scheduler. Each job then gets a PodGroup and its pods that
    /// scheduler. Unset: no gang scheduling.
    #[arg(long, env = "GANG_SCHEDULER_NAME")]
    pub gang_scheduler_name: Option<String>,

    /// The scheduler-plugins scheduler's name, for `--gang-scheduler-name scheduler-plugins`.
    #[arg(
        long,
        env = "SCHEDULER_PLUGINS_NAME",
        default_value = crate::reconcile::build::gang::DEFAULT_SCHEDULER_PLUGINS_NAME
    )]
    pub scheduler_plugins_name: String,
}

impl GangArgs {
    /// The gang scheduler these flags name, if any.
    pub fn gang(&self) -> Option<crate::reconcile::build::gang::Gang> {
        crate::reconcile::build::gang::Gang::from_setting(
            self.gang_scheduler_name.as_deref(),
            &self.scheduler_plugins_name,
        )
    }
}
