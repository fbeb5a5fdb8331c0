//! What the TFJobs are doing: how many are in each state and for how long the longest has
//! been (read from the controllers' job caches at each scrape), how long jobs take from their
//! creation to `Running`, and whole-job restarts. Labels: `job_namespace` (Kubeflow's name for
//! it: a plain `namespace` label would be renamed by Prometheus to `exported_namespace`, as the
//! scrape adds the operator pod's own) and `state`. No I/O.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use jiff::Timestamp;
use kube::Resource;
use kube::runtime::reflector::Store;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::crd::cached::CachedJob;
use crate::crd::{ConditionStatus, ConditionType, JobCondition, TFJobStatus};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NamespaceLabels {
    pub job_namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    pub job_namespace: String,
    pub state: &'static str,
}

/// A job's state: its latest condition of these types that is True, Kubeflow's phases (as
/// `kubectl get tfjobs` shows it, ignoring the side conditions), or `Pending` before the
/// operator has written any.
const STATES: [&str; 7] = [
    "Pending",
    "Created",
    "Running",
    "Restarting",
    "Suspended",
    "Succeeded",
    "Failed",
];

/// What the longest-in-state gauge covers: the states a job may linger in, and the side
/// conditions that say it cannot go on (`Stuck`, `ReplicaFailure`, docs/behaviour.md §7, §13).
const LINGERING: [&str; 7] = [
    "Pending",
    "Created",
    "Running",
    "Restarting",
    "Suspended",
    "Stuck",
    "ReplicaFailure",
];

fn phase(t: ConditionType) -> Option<&'static str> {
    Some(match t {
        ConditionType::Created => "Created",
        ConditionType::Running => "Running",
        ConditionType::Restarting => "Restarting",
        ConditionType::Suspended => "Suspended",
        ConditionType::Succeeded => "Succeeded",
        ConditionType::Failed => "Failed",
        _ => return None,
    })
}

fn since(c: &JobCondition) -> Option<Timestamp> {
    c.last_transition_time
        .as_ref()
        .or(c.last_update_time.as_ref())
        .map(|t| t.0)
}

/// A job's state and the states and side conditions it is in, each since when (None: unknown).
pub fn states(
    status: Option<&TFJobStatus>,
    created: Option<Timestamp>,
) -> (&'static str, Vec<(&'static str, Option<Timestamp>)>) {
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    let held = conditions
        .iter()
        .filter(|c| c.status == ConditionStatus::True);
    let (mut state, mut state_since) = ("Pending", created);
    let mut side = Vec::new();
    for c in held {
        match (phase(c.type_), c.type_) {
            (Some(p), _) => (state, state_since) = (p, since(c)),
            (None, ConditionType::Stuck) => side.push(("Stuck", since(c))),
            (None, ConditionType::ReplicaFailure) => side.push(("ReplicaFailure", since(c))),
            (None, _) => {}
        }
    }
    side.insert(0, (state, state_since));
    (state, side)
}

/// The time from a job's creation to its first `Running`, when `new` is that first time: the
/// job had neither condition before. (`Restarting` replaces `Running` and the reverse, as
/// Kubeflow does, so a job running again after a restart had `Restarting`; one that restarted
/// before it ever ran is not measured.)
pub fn first_running(
    created: Option<Timestamp>,
    old: Option<&TFJobStatus>,
    new: &TFJobStatus,
) -> Option<f64> {
    let find =
        |s: &TFJobStatus, t: ConditionType| s.conditions.iter().find(|c| c.type_ == t).cloned();
    let ran = |s: &TFJobStatus| {
        find(s, ConditionType::Running).is_some() || find(s, ConditionType::Restarting).is_some()
    };
    if old.is_some_and(ran) {
        return None;
    }
    let now_running =
        find(new, ConditionType::Running).filter(|c| c.status == ConditionStatus::True)?;
    let took = since(&now_running)?.duration_since(created?);
    Some(took.as_secs_f64().max(0.0))
}

/// Whole-job restarts `new` records beyond `old` (`status.restartAttempt`).
pub fn restarts(old: Option<&TFJobStatus>, new: &TFJobStatus) -> u64 {
    let attempt = |s: Option<&TFJobStatus>| s.and_then(|s| s.restart_attempt).unwrap_or(0);
    u64::try_from(attempt(Some(new)) - attempt(old)).unwrap_or(0)
}

type Histograms = Family<NamespaceLabels, Histogram, fn() -> Histogram>;

/// From seconds to an hour: image pulls and scheduling dominate.
fn running_buckets() -> Histogram {
    Histogram::new([
        0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
    ])
}

/// The job metrics the operator computes.
#[derive(Clone, Debug)]
pub struct JobMetrics {
    pub time_to_running: Histograms,
    pub restarts: Family<NamespaceLabels, Counter>,
    caches: Arc<Mutex<Vec<Store<CachedJob>>>>,
}

impl JobMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            time_to_running: Family::new_with_constructor(running_buckets),
            restarts: Family::default(),
            caches: Arc::default(),
        };
        registry.register(
            "tfjob_operator_job_time_to_running_seconds",
            "Time from a TFJob's creation to its first Running condition",
            metrics.time_to_running.clone(),
        );
        registry.register(
            "tfjob_operator_job_restarts",
            "Whole-job restarts (restart-scope Job): increments of status.restartAttempt",
            metrics.restarts.clone(),
        );
        registry.register_collector(Box::new(JobStates(metrics.caches.clone())));
        metrics
    }

    /// A controller's job cache: its jobs are counted from now on.
    pub fn count(&self, cache: Store<CachedJob>) {
        let mut caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        caches.push(cache);
    }
}

/// Counts the jobs of every cache by namespace and state at each scrape.
#[derive(Debug)]
struct JobStates(Arc<Mutex<Vec<Store<CachedJob>>>>);

#[derive(Default)]
struct Namespace {
    count: BTreeMap<&'static str, i64>,
    longest: BTreeMap<&'static str, f64>,
}

impl JobStates {
    fn tally(&self, now: Timestamp) -> BTreeMap<String, Namespace> {
        let caches = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut all: BTreeMap<String, Namespace> = BTreeMap::new();
        for job in caches.iter().flat_map(Store::state) {
            let meta = job.meta();
            let status = match &job.0 {
                Ok(job) => job.status.as_ref(),
                Err(bad) => bad.status.as_ref(),
            };
            let created = meta.creation_timestamp.as_ref().map(|t| t.0);
            let (state, held) = states(status, created);
            let ns = all
                .entry(meta.namespace.clone().unwrap_or_default())
                .or_default();
            *ns.count.entry(state).or_default() += 1;
            for (what, since) in held {
                let age = since.map_or(0.0, |t| now.duration_since(t).as_secs_f64().max(0.0));
                let longest = ns.longest.entry(what).or_default();
                *longest = longest.max(age);
            }
        }
        all
    }
}

impl Collector for JobStates {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let all = self.tally(Timestamp::now());
        let mut count = encoder.encode_descriptor(
            "tfjob_operator_jobs",
            "TFJobs by namespace and state (the latest of Kubeflow's phase conditions that is True; Pending before any)",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (ns, tally) in &all {
            for state in STATES {
                let labels = StateLabels {
                    job_namespace: ns.clone(),
                    state,
                };
                let n = tally.count.get(state).copied().unwrap_or(0);
                ConstGauge::new(n).encode(count.encode_family(&labels)?)?;
            }
        }
        let mut longest = encoder.encode_descriptor(
            "tfjob_operator_jobs_longest_in_state_seconds",
            "The longest any TFJob of the namespace has been in this state or side condition (0: none is)",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (ns, tally) in &all {
            for state in LINGERING {
                let labels = StateLabels {
                    job_namespace: ns.clone(),
                    state,
                };
                let age = tally.longest.get(state).copied().unwrap_or(0.0);
                ConstGauge::new(age).encode(longest.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher};
    use serde_json::{Value, json};

    const T0: &str = "2026-01-01T00:00:00Z";

    fn status(conditions: &[(&str, &str, &str)]) -> TFJobStatus {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(t, s, at)| json!({"type": t, "status": s, "lastTransitionTime": at}))
            .collect();
        serde_json::from_value(json!({"conditions": conditions})).unwrap()
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_jobs_state_is_its_latest_true_phase_with_its_side_conditions() {
        let created = Some(at(T0));
        assert_eq!(
            states(None, created),
            ("Pending", vec![("Pending", created)])
        );
        let running = status(&[
            ("Created", "True", "2026-01-01T00:00:01Z"),
            ("Running", "True", "2026-01-01T00:00:05Z"),
            ("Stuck", "True", "2026-01-01T00:00:09Z"),
        ]);
        assert_eq!(
            states(Some(&running), created),
            (
                "Running",
                vec![
                    ("Running", Some(at("2026-01-01T00:00:05Z"))),
                    ("Stuck", Some(at("2026-01-01T00:00:09Z")))
                ]
            )
        );
        let restarting = status(&[
            ("Created", "True", T0),
            ("Running", "False", T0),
            ("Restarting", "True", T0),
        ]);
        assert_eq!(states(Some(&restarting), created).0, "Restarting");
        let done = status(&[
            ("Created", "True", T0),
            ("Running", "False", T0),
            ("Succeeded", "True", T0),
        ]);
        assert_eq!(states(Some(&done), created).0, "Succeeded");
    }

    #[test]
    fn time_to_running_is_measured_once_from_creation() {
        let created = Some(at(T0));
        let was = status(&[("Created", "True", T0)]);
        let now = status(&[
            ("Created", "True", T0),
            ("Running", "True", "2026-01-01T00:00:42Z"),
        ]);
        assert_eq!(first_running(created, Some(&was), &now), Some(42.0));
        assert_eq!(first_running(created, None, &now), Some(42.0));
        assert_eq!(
            first_running(created, Some(&now), &now),
            None,
            "already running"
        );
        let again = status(&[("Created", "True", T0), ("Restarting", "True", T0)]);
        let back = status(&[("Running", "True", "2026-01-01T00:09:00Z")]);
        assert_eq!(
            first_running(created, Some(&again), &back),
            None,
            "running again after a restart"
        );
        assert_eq!(
            first_running(None, Some(&was), &now),
            None,
            "no creation time"
        );
    }

    #[test]
    fn whole_job_restarts_are_the_steps_of_restart_attempt() {
        let attempt = |n| TFJobStatus {
            restart_attempt: n,
            ..Default::default()
        };
        assert_eq!(restarts(None, &attempt(Some(1))), 1);
        assert_eq!(restarts(Some(&attempt(Some(1))), &attempt(Some(2))), 1);
        assert_eq!(restarts(Some(&attempt(Some(2))), &attempt(Some(2))), 0);
        assert_eq!(restarts(Some(&attempt(None)), &attempt(None)), 0);
    }

    fn cached(name: &str, ns: &str, status: Value) -> CachedJob {
        CachedJob::from_value(&json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": T0},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {}}}},
            "status": status,
        }))
    }

    #[test]
    fn the_caches_jobs_are_counted_by_namespace_and_state_at_each_scrape() {
        let (store, mut writer) = reflector::store();
        let running = json!({"conditions": [{"type": "Running", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]});
        for job in [
            cached("a", "team-a", running.clone()),
            cached("b", "team-a", running),
            cached("c", "team-a", json!({})),
            cached(
                "d",
                "team-b",
                json!({"conditions": [{"type": "Failed", "status": "True"}]}),
            ),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(job));
        }
        let mut registry = Registry::default();
        let metrics = JobMetrics::register(&mut registry);
        metrics.count(store);
        let tally = JobStates(metrics.caches.clone()).tally(at("2026-01-01T00:11:00Z"));
        assert_eq!(
            tally["team-a"].count,
            [("Pending", 1), ("Running", 2)].into()
        );
        assert_eq!(tally["team-a"].longest["Running"], 600.0);
        assert_eq!(tally["team-a"].longest["Pending"], 660.0, "since creation");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            r#"tfjob_operator_jobs{job_namespace="team-a",state="Running"} 2"#,
            r#"tfjob_operator_jobs{job_namespace="team-a",state="Failed"} 0"#,
            r#"tfjob_operator_jobs{job_namespace="team-b",state="Failed"} 1"#,
            r#"tfjob_operator_jobs_longest_in_state_seconds{job_namespace="team-b",state="Stuck"} 0"#,
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
    }
}
