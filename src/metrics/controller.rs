//! controller-runtime's controller metrics (`controller_runtime_*`), under its names and
//! labels, so dashboards and alerts built for controller-runtime operators read ours
//! (`controller_runtime_active_workers` is read from the work queue's ledger, `queue`). No I/O.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The controller's name in every `controller` (and work queue `name`) label: Kubeflow's
/// training-operator names its TFJob controller so, and dashboards filter on it.
pub const CONTROLLER: &str = "tfjob-controller";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub controller: &'static str,
    pub result: &'static str,
}

/// How a pass ended, in controller-runtime's words (its `result` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done; back on the next change.
    Success,
    /// Failed; retried after a backoff.
    Error,
    /// Done; asked to run again at once (controller-runtime's `Requeue`; we never do).
    Requeue,
    /// Done; asked to run again after a delay (a deadline, a TTL, a cache catching up).
    RequeueAfter,
}

impl Outcome {
    const ALL: [Outcome; 4] = [
        Outcome::Success,
        Outcome::Error,
        Outcome::Requeue,
        Outcome::RequeueAfter,
    ];

    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Requeue => "requeue",
            Outcome::RequeueAfter => "requeue_after",
        }
    }
}

type Histograms = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`.
fn reconcile_buckets() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// The `controller_runtime_*` metrics of the TFJob controller.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    total: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    time: Histograms,
    max_concurrent: Family<ControllerLabels, Gauge>,
    /// The turns of every scope started so far (one controller per watched namespace, all
    /// reported as one controller).
    turns: Arc<AtomicI64>,
}

impl ControllerMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            total: Family::default(),
            errors: Family::default(),
            time: Family::new_with_constructor(reconcile_buckets),
            max_concurrent: Family::default(),
            turns: Arc::default(),
        };
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            metrics.total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            metrics.errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            metrics.time.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            metrics.max_concurrent.clone(),
        );
        metrics
    }

    const LABELS: ControllerLabels = ControllerLabels {
        controller: CONTROLLER,
    };

    /// A scope's controller starts with `turns` passes at once: every series exists from
    /// now on (at zero, as controller-runtime starts them).
    pub fn start(&self, turns: u16) {
        for outcome in Outcome::ALL {
            drop(self.total.get_or_create(&Self::result(outcome)));
        }
        drop(self.errors.get_or_create(&Self::LABELS));
        drop(self.time.get_or_create(&Self::LABELS));
        let all = self.turns.fetch_add(i64::from(turns), Ordering::Relaxed) + i64::from(turns);
        self.max_concurrent.get_or_create(&Self::LABELS).set(all);
    }

    /// A pass ended, after `took` (from its turn).
    pub fn finished(&self, outcome: Outcome, took: Duration) {
        self.total.get_or_create(&Self::result(outcome)).inc();
        if outcome == Outcome::Error {
            self.errors.get_or_create(&Self::LABELS).inc();
        }
        self.time
            .get_or_create(&Self::LABELS)
            .observe(took.as_secs_f64());
    }

    fn result(outcome: Outcome) -> ResultLabels {
        ResultLabels {
            controller: CONTROLLER,
            result: outcome.label(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_controller_runtime_names_and_results_from_the_start() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry);
        m.start(8);
        m.start(8);
        m.finished(Outcome::Error, Duration::from_millis(30));
        m.finished(Outcome::RequeueAfter, Duration::from_millis(1));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let c = r#"controller="tfjob-controller""#;
        for line in [
            format!(r#"controller_runtime_reconcile_total{{{c},result="success"}} 0"#),
            format!(r#"controller_runtime_reconcile_total{{{c},result="requeue"}} 0"#),
            format!(r#"controller_runtime_reconcile_total{{{c},result="error"}} 1"#),
            format!(r#"controller_runtime_reconcile_total{{{c},result="requeue_after"}} 1"#),
            format!("controller_runtime_reconcile_errors_total{{{c}}} 1"),
            format!("controller_runtime_reconcile_time_seconds_count{{{c}}} 2"),
            format!(r#"controller_runtime_reconcile_time_seconds_bucket{{le="0.05",{c}}} 2"#),
            format!(r#"controller_runtime_reconcile_time_seconds_bucket{{le="0.025",{c}}} 1"#),
            format!("controller_runtime_max_concurrent_reconciles{{{c}}} 16"),
        ] {
            assert!(text.contains(&line), "{line} missing:\n{text}");
        }
    }
}
