//! Prometheus metrics (docs/metrics.md, docs/behaviour.md §9): Kubeflow's job counters; the
//! health metrics of controller-runtime, client-go's work queue and API client, leader
//! election and the process, under their names (`controller`, `queue`, `rest`, `process`);
//! TFJobs by state (`jobs`); our own reconcile counts. Labels are low-cardinality: never
//! object names. No I/O but `process` reading /proc at each scrape.

pub mod controller;
pub mod jobs;
pub mod process;
pub mod queue;
pub mod rest;

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::crd::{ConditionStatus, ConditionType, TFJobStatus};
use controller::{CONTROLLER, ControllerMetrics};
use jobs::{JobMetrics, NamespaceLabels};
use queue::WorkQueue;
use rest::RestMetrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    pub job_namespace: String,
    pub framework: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabels {
    pub resource: &'static str,
}

/// client-go's label of a leader election: the Lease's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeaseLabels {
    pub name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: &'static str,
    pub git_commit: &'static str,
}

/// The commit the binary was built from: `TFJOB_OPERATOR_GIT_COMMIT` in the build's
/// environment (a release build sets it), else `unknown`.
const GIT_COMMIT: &str = match option_env!("TFJOB_OPERATOR_GIT_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// Every metric the operator exports.
#[derive(Clone)]
pub struct Metrics {
    pub jobs_created: Family<JobLabels, Counter>,
    pub jobs_successful: Family<JobLabels, Counter>,
    pub jobs_failed: Family<JobLabels, Counter>,
    pub jobs_restarted: Family<JobLabels, Counter>,
    pub jobs_deleted: Family<JobLabels, Counter>,
    pub reconciles: Counter,
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    pub reconcile_duration: Histogram,
    /// Full lists of a watched resource: one at start, then one per lost watch history (410).
    pub watch_lists: Family<WatchLabels, Counter>,
    pub controller: ControllerMetrics,
    pub queue: WorkQueue,
    pub rest: RestMetrics,
    pub jobs: JobMetrics,
    /// client-go's `leader_election_master_status`: 1 while this replica holds the Lease.
    pub leader: Family<LeaseLabels, Gauge>,
    registry: Arc<Registry>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let jobs_created = Family::<JobLabels, Counter>::default();
        let jobs_successful = Family::<JobLabels, Counter>::default();
        let jobs_failed = Family::<JobLabels, Counter>::default();
        let jobs_restarted = Family::<JobLabels, Counter>::default();
        let jobs_deleted = Family::<JobLabels, Counter>::default();
        let reconciles = Counter::default();
        let reconcile_errors = Family::<ErrorLabels, Counter>::default();
        let reconcile_duration = Histogram::new(exponential_buckets(0.001, 2.0, 14));
        let watch_lists = Family::<WatchLabels, Counter>::default();
        // prometheus-client appends `_total` to counters.
        let jobs = [
            (
                "training_operator_jobs_created",
                "Jobs created",
                &jobs_created,
            ),
            (
                "training_operator_jobs_successful",
                "Jobs succeeded",
                &jobs_successful,
            ),
            ("training_operator_jobs_failed", "Jobs failed", &jobs_failed),
            (
                "training_operator_jobs_restarted",
                "Job restarts",
                &jobs_restarted,
            ),
            (
                "training_operator_jobs_deleted",
                "Jobs deleted",
                &jobs_deleted,
            ),
        ];
        for (name, help, family) in jobs {
            registry.register(name, help, family.clone());
        }
        registry.register(
            "tfjob_operator_reconciles",
            "Reconcile passes",
            reconciles.clone(),
        );
        registry.register(
            "tfjob_operator_reconcile_errors",
            "Failed reconcile passes",
            reconcile_errors.clone(),
        );
        registry.register(
            "tfjob_operator_reconcile_duration_seconds",
            "Duration of a reconcile pass",
            reconcile_duration.clone(),
        );
        registry.register(
            "tfjob_operator_watch_lists",
            "Full lists of a watched resource (the first, then one per lost watch history)",
            watch_lists.clone(),
        );
        let leader = Family::<LeaseLabels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease",
            leader.clone(),
        );
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
                git_commit: GIT_COMMIT,
            })
            .set(1);
        registry.register(
            "tfjob_operator_build_info",
            "The operator's version and commit, as labels; always 1",
            build,
        );
        registry.register_collector(Box::new(process::ProcessCollector));
        Self {
            controller: ControllerMetrics::register(&mut registry),
            queue: WorkQueue::register(&mut registry, CONTROLLER),
            rest: RestMetrics::register(&mut registry),
            jobs: JobMetrics::register(&mut registry),
            leader,
            jobs_created,
            jobs_successful,
            jobs_failed,
            jobs_restarted,
            jobs_deleted,
            reconciles,
            reconcile_errors,
            reconcile_duration,
            watch_lists,
            registry: Arc::new(registry),
        }
    }
}

impl Metrics {
    pub fn job(namespace: &str) -> JobLabels {
        JobLabels {
            job_namespace: namespace.to_string(),
            framework: "tensorflow",
        }
    }

    /// What a status write records: Kubeflow's job counters, bumped when a condition turns
    /// True; the time to the first `Running`; whole-job restarts.
    pub fn count_transitions(
        &self,
        namespace: &str,
        created: Option<Timestamp>,
        old: Option<&TFJobStatus>,
        new: &TFJobStatus,
    ) {
        let ns = NamespaceLabels {
            job_namespace: namespace.to_string(),
        };
        if let Some(took) = jobs::first_running(created, old, new) {
            self.jobs.time_to_running.get_or_create(&ns).observe(took);
        }
        let restarts = jobs::restarts(old, new);
        if restarts > 0 {
            self.jobs.restarts.get_or_create(&ns).inc_by(restarts);
        }
        let is_true = |s: Option<&TFJobStatus>, t: ConditionType| {
            s.is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == t && c.status == ConditionStatus::True)
            })
        };
        let labels = Self::job(namespace);
        let counters = [
            (ConditionType::Created, &self.jobs_created),
            (ConditionType::Succeeded, &self.jobs_successful),
            (ConditionType::Failed, &self.jobs_failed),
            (ConditionType::Restarting, &self.jobs_restarted),
        ];
        for (t, counter) in counters {
            if is_true(Some(new), t) && !is_true(old, t) {
                counter.get_or_create(&labels).inc();
            }
        }
    }

    pub fn observe_reconcile(&self, took: Duration) {
        self.reconciles.inc();
        self.reconcile_duration.observe(took.as_secs_f64());
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_kubeflow_metric_names_with_namespace_and_framework() {
        let m = Metrics::default();
        let labels = Metrics::job("team-a");
        for family in [
            &m.jobs_created,
            &m.jobs_successful,
            &m.jobs_failed,
            &m.jobs_restarted,
            &m.jobs_deleted,
        ] {
            family.get_or_create(&labels).inc();
        }
        let text = m.render();
        for name in ["created", "successful", "failed", "restarted", "deleted"] {
            let line = format!(
                r#"training_operator_jobs_{name}_total{{job_namespace="team-a",framework="tensorflow"}} 1"#
            );
            assert!(text.contains(&line), "{line} missing from:\n{text}");
        }
    }
}
