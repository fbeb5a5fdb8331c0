//! One pass's view of a job: the defaulted spec, its names and `now`, with the small
//! questions every rule asks of them. Pure.

use jiff::Timestamp;

use crate::crd::defaults::with_defaults;
use crate::crd::settings::JobSettings;
use crate::crd::{ReplicaType, RestartPolicy, RunPolicy, TFJob, TFJobSpec};
use crate::reconcile::plan::model::Settings;
use crate::reconcile::plan::replicas::Key;

/// The job as the rules of one pass see it. Defaults are applied here, in memory, on every
/// pass (docs/behaviour.md §2): they are never written back to the spec.
#[derive(Clone, Debug)]
pub struct JobView<'a> {
    pub job: &'a TFJob,
    pub spec: TFJobSpec,
    pub run_policy: RunPolicy,
    pub name: &'a str,
    pub namespace: &'a str,
    pub now: Timestamp,
    pub cluster_domain: Option<&'a str>,
    /// The job's settings of ours (its annotations), as validation read them.
    pub settings: JobSettings,
    /// The attempt whose pods count: 0 until the job is first restarted whole.
    pub attempt: i32,
    /// Only this type's replicas are still in play: the job's training succeeded and it
    /// waits for its evaluator (`tfjob-operator.dev/wait-for-evaluator-seconds`).
    pub in_play: Option<ReplicaType>,
}

impl<'a> JobView<'a> {
    /// The view of `job` at `now`, for an operator with `operator`'s settings; `settings` are
    /// the job's own, as `validate` read them.
    pub fn new(
        job: &'a TFJob,
        now: Timestamp,
        operator: &'a Settings,
        settings: JobSettings,
    ) -> Self {
        let spec = with_defaults(&job.spec);
        let run_policy = spec.run_policy.clone().unwrap_or_default();
        Self {
            job,
            spec,
            run_policy,
            name: job.metadata.name.as_deref().unwrap_or_default(),
            namespace: job.metadata.namespace.as_deref().unwrap_or_default(),
            now,
            cluster_domain: operator.cluster_domain.as_deref(),
            settings,
            attempt: job
                .status
                .as_ref()
                .and_then(|s| s.restart_attempt)
                .unwrap_or(0),
            in_play: None,
        }
    }

    /// The view of a job whose training succeeded and that waits for its evaluator: the
    /// evaluator's replicas alone are still created, restarted and judged.
    pub fn evaluating(&self) -> Self {
        Self {
            in_play: Some(ReplicaType::Evaluator),
            ..self.clone()
        }
    }

    /// Whether a fault restarts every pod of the job together.
    pub fn whole_job_restarts(&self) -> bool {
        self.settings.whole_job()
    }

    pub fn run_policy(&self) -> &RunPolicy {
        &self.run_policy
    }

    pub fn suspended(&self) -> bool {
        self.run_policy.suspend.unwrap_or(false)
    }

    pub fn dynamic_workers(&self) -> bool {
        self.spec.enable_dynamic_worker.unwrap_or(false)
    }

    pub fn restart_policy(&self, t: ReplicaType) -> RestartPolicy {
        self.spec
            .tf_replica_specs
            .get(t)
            .and_then(|s| s.restart_policy)
            .unwrap_or_default()
    }

    /// Each replica type of the spec with its replica count, in canonical type order.
    pub fn replicas(&self) -> impl Iterator<Item = (ReplicaType, i32)> + '_ {
        self.spec
            .tf_replica_specs
            .iter()
            .map(|(t, s)| (t, s.count()))
    }

    /// Every replica the spec asks for that is still in play, in (type, index) order: the
    /// order in which failures are decided, so one pass always decides the same way.
    pub fn keys(&self) -> Vec<Key> {
        self.replicas()
            .filter(|(t, _)| self.in_play.is_none_or(|only| only == *t))
            .flat_map(|(t, n)| (0..n).map(move |i| (t, i)))
            .collect()
    }

    /// Whether the spec asks for this replica (false for surplus after a scale-down).
    pub fn wants(&self, (t, i): Key) -> bool {
        self.replicas()
            .any(|(rt, n)| rt == t && (0..n).contains(&i))
    }
}
