//! A job's settings of ours: its `tfjob-operator.dev/*` annotations, read once, in one place,
//! into one typed value (docs/recovery.md, docs/behaviour.md §6.7). Validation reports their
//! problems by field path; the plan and the pods it builds read the value, never the text.
//!
//! Annotations, because Kubeflow's CRD under kubectl's strict validation, the Python SDK's
//! models and MultiKueue's copy through Kubeflow's Go types all drop unknown spec fields, and
//! all keep annotations. Absent, a job behaves exactly as Kubeflow's would. Pure.

use std::collections::BTreeMap;

use super::check::suggestion;
use super::field_error::FieldError;

pub mod rules;
mod syntax;
#[cfg(test)]
mod tests;

pub use rules::{FailureRule, RuleAction};

/// The prefix of every annotation (and label) of ours.
pub const PREFIX: &str = "tfjob-operator.dev/";
/// `Replica` (default): a failed replica is restarted alone. `Job`: every pod of the job is
/// restarted together (synchronous training).
pub const RESTART_SCOPE: &str = "tfjob-operator.dev/restart-scope";
/// `Retryable` (default): a job restart for failures its replicas' restart policies retry.
/// `Any`: for every failure, permanent exit codes included (only with `restart-scope: Job`).
pub const RESTART_ON: &str = "tfjob-operator.dev/restart-on";
/// Job restarts allowed before the job fails (default `runPolicy.backoffLimit`).
pub const MAX_JOB_RESTARTS: &str = "tfjob-operator.dev/max-job-restarts";
/// Seconds within which every replica must run after the job (re)starts.
pub const STARTUP_DEADLINE_SECONDS: &str = "tfjob-operator.dev/startup-deadline-seconds";
/// How each failure is handled: an ordered list of rules, the first that matches decides.
pub const FAILURE_RULES: &str = "tfjob-operator.dev/failure-rules";
/// Success waits up to N seconds for the evaluator to finish after the chief (or worker 0).
pub const WAIT_FOR_EVALUATOR_SECONDS: &str = "tfjob-operator.dev/wait-for-evaluator-seconds";

/// Every key of ours, in the order the documentation gives them.
pub const KEYS: [&str; 6] = [
    RESTART_SCOPE,
    RESTART_ON,
    MAX_JOB_RESTARTS,
    STARTUP_DEADLINE_SECONDS,
    FAILURE_RULES,
    WAIT_FOR_EVALUATOR_SECONDS,
];

/// What restarts on a retryable failure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestartScope {
    /// The failed replica's pod (Kubeflow's behaviour).
    #[default]
    Replica,
    /// Every pod of the job, together.
    Job,
}

/// Which failures restart the job (under `RestartScope::Job`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestartOn {
    /// Those the replica's restart policy retries, plus eviction, node loss and a pod
    /// deleted from outside.
    #[default]
    Retryable,
    /// Every failure, permanent exit codes and `restartPolicy: Never` included.
    Any,
}

/// A job's settings of ours; the default is a job without any of our annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobSettings {
    pub scope: RestartScope,
    pub restart_on: RestartOn,
    pub max_job_restarts: Option<i32>,
    pub startup_deadline_seconds: Option<i64>,
    /// In order: the first that matches a failure decides what it does.
    pub failure_rules: Vec<FailureRule>,
    /// Success waits this long at most for the evaluator, after the chief (or worker 0).
    pub wait_for_evaluator_seconds: Option<i64>,
}

impl JobSettings {
    /// Reads the annotations of ours (others are not looked at); every problem is named by
    /// its field path (`metadata.annotations[tfjob-operator.dev/restart-scope]`).
    pub fn of(annotations: Option<&BTreeMap<String, String>>) -> Result<Self, Vec<FieldError>> {
        let mut settings = JobSettings::default();
        let mut errors = Vec::new();
        let ours = annotations.into_iter().flatten();
        for (key, value) in ours.filter(|(k, _)| k.starts_with(PREFIX)) {
            if key == FAILURE_RULES {
                match rules::parse(&path(key), value) {
                    Ok(rules) => settings.failure_rules = rules,
                    Err(bad) => errors.extend(bad),
                }
            } else if let Err(message) = settings.read(key, value) {
                errors.push(FieldError::new(path(key), message));
            }
        }
        if settings.restart_on == RestartOn::Any && settings.scope != RestartScope::Job {
            errors.push(FieldError::new(
                path(RESTART_ON),
                format!("Invalid value: \"Any\": applies only with {RESTART_SCOPE}: Job"),
            ));
        }
        match errors.is_empty() {
            true => Ok(settings),
            false => Err(errors),
        }
    }

    /// Reads one annotation of ours into its setting.
    fn read(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            RESTART_SCOPE => {
                self.scope = one_of(
                    value,
                    &[
                        ("Job", RestartScope::Job),
                        ("Replica", RestartScope::Replica),
                    ],
                )?;
            }
            RESTART_ON => {
                self.restart_on = one_of(
                    value,
                    &[("Any", RestartOn::Any), ("Retryable", RestartOn::Retryable)],
                )?;
            }
            MAX_JOB_RESTARTS => self.max_job_restarts = Some(integer(value, 0)? as i32),
            STARTUP_DEADLINE_SECONDS => self.startup_deadline_seconds = Some(integer(value, 1)?),
            WAIT_FOR_EVALUATOR_SECONDS => {
                self.wait_for_evaluator_seconds = Some(integer(value, 1)?);
            }
            _ => {
                return Err(format!(
                    "Unsupported value: {key:?}: not a setting of tfjob-operator{}; supported: {}",
                    suggestion(key, KEYS.into_iter()),
                    KEYS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Whether a fault restarts every pod of the job together.
    pub fn whole_job(&self) -> bool {
        self.scope == RestartScope::Job
    }

    /// Whether the operator must see every failure: the kubelet then never restarts a
    /// container in place (pods get `restartPolicy: Never`), so whole-job restarts and
    /// failure rules apply to every exit.
    pub fn operator_restarts(&self) -> bool {
        self.whole_job() || !self.failure_rules.is_empty()
    }

    /// The first failure rule that matches, with its index.
    pub fn rule_for(
        &self,
        t: super::ReplicaType,
        exit_code: Option<i32>,
        reason: Option<&str>,
        disruption: bool,
    ) -> Option<(usize, &FailureRule)> {
        self.failure_rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.matches(t, exit_code, reason, disruption))
    }
}

/// `metadata.annotations[<key>]`.
pub fn path(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

/// The value named by `value` among `supported` (name, value), in Kubernetes' words if none.
fn one_of<T: Copy>(value: &str, supported: &[(&str, T)]) -> Result<T, String> {
    match supported.iter().find(|(name, _)| *name == value) {
        Some((_, v)) => Ok(*v),
        None => {
            let names: Vec<String> = supported.iter().map(|(s, _)| format!("{s:?}")).collect();
            Err(format!(
                "Unsupported value: {value:?}: supported values: {}",
                names.join(", ")
            ))
        }
    }
}

/// A whole number of at least `min`, as an annotation (a string) holds it: digits only (what
/// the admission policy in `config/` can check too).
fn integer(value: &str, min: i64) -> Result<i64, String> {
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    match value.parse::<i64>() {
        Ok(n) if digits && n >= min && n <= i64::from(i32::MAX) => Ok(n),
        Ok(_) => Err(format!(
            "Invalid value: {value:?}: must be an integer between {min} and {}",
            i32::MAX
        )),
        Err(_) => Err(format!(
            "Invalid value: {value:?}: must be an integer >= {min}"
        )),
    }
}
