//! How a job recovers from faults, set by annotations under one prefix of ours
//! (docs/behaviour.md §6.7): annotations, because Kubeflow's CRD under kubectl's strict
//! validation, the Python SDK's models and MultiKueue's copy through Kubeflow's Go types all
//! drop unknown spec fields, and all keep annotations. Absent, a job behaves exactly as
//! Kubeflow's would. Pure.

use std::collections::BTreeMap;

use super::check::suggestion;
use super::field_error::FieldError;

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
/// The label of a pod of a `restart-scope: Job` job: the attempt it belongs to.
pub const LABEL_RESTART_ATTEMPT: &str = "tfjob-operator.dev/restart-attempt";

const KEYS: [&str; 4] = [
    RESTART_SCOPE,
    RESTART_ON,
    MAX_JOB_RESTARTS,
    STARTUP_DEADLINE_SECONDS,
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

/// A job's recovery settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    pub scope: RestartScope,
    pub restart_on: RestartOn,
    pub max_job_restarts: Option<i32>,
    pub startup_deadline_seconds: Option<i64>,
}

impl Recovery {
    /// Reads the annotations; every problem is named by its field path
    /// (`metadata.annotations[tfjob-operator.dev/restart-scope]`).
    pub fn of(annotations: Option<&BTreeMap<String, String>>) -> Result<Self, Vec<FieldError>> {
        let mut recovery = Recovery::default();
        let mut errors = Vec::new();
        for (key, value) in annotations.into_iter().flatten() {
            if !key.starts_with(PREFIX) {
                continue;
            }
            let invalid = |message: String| FieldError::new(path(key), message);
            let read = match key.as_str() {
                RESTART_SCOPE => match value.as_str() {
                    "Replica" => Ok(RestartScope::Replica),
                    "Job" => Ok(RestartScope::Job),
                    _ => Err(unsupported(value, &["Job", "Replica"])),
                }
                .map(|scope| recovery.scope = scope),
                RESTART_ON => match value.as_str() {
                    "Retryable" => Ok(RestartOn::Retryable),
                    "Any" => Ok(RestartOn::Any),
                    _ => Err(unsupported(value, &["Any", "Retryable"])),
                }
                .map(|on| recovery.restart_on = on),
                MAX_JOB_RESTARTS => {
                    integer(value, 0).map(|n| recovery.max_job_restarts = Some(n as i32))
                }
                STARTUP_DEADLINE_SECONDS => {
                    integer(value, 1).map(|n| recovery.startup_deadline_seconds = Some(n))
                }
                _ => Err(format!(
                    "Unsupported value: {key:?}: not a setting of tfjob-operator{}; supported: {}",
                    suggestion(key, KEYS.into_iter()),
                    KEYS.join(", ")
                )),
            };
            if let Err(message) = read {
                errors.push(invalid(message));
            }
        }
        if recovery.restart_on == RestartOn::Any && recovery.scope != RestartScope::Job {
            errors.push(FieldError::new(
                path(RESTART_ON),
                format!("Invalid value: \"Any\": applies only with {RESTART_SCOPE}: Job"),
            ));
        }
        if errors.is_empty() {
            Ok(recovery)
        } else {
            Err(errors)
        }
    }
}

fn path(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

fn unsupported(value: &str, supported: &[&str]) -> String {
    let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "Unsupported value: {value:?}: supported values: {}",
        supported.join(", ")
    )
}

/// A whole number of at least `min`, as an annotation (a string) holds it.
fn integer(value: &str, min: i64) -> Result<i64, String> {
    match value.trim().parse::<i64>() {
        Ok(n) if n >= min && n <= i64::from(i32::MAX) => Ok(n),
        Ok(_) => Err(format!(
            "Invalid value: {value:?}: must be an integer between {min} and {}",
            i32::MAX
        )),
        Err(_) => Err(format!(
            "Invalid value: {value:?}: must be an integer >= {min}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Recovery, Vec<String>> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Recovery::of(Some(&map)).map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn no_annotation_is_kubeflows_behaviour() {
        assert_eq!(Recovery::of(None), Ok(Recovery::default()));
        assert_eq!(read(&[("other.io/x", "y")]), Ok(Recovery::default()));
        assert_eq!(Recovery::default().scope, RestartScope::Replica);
    }

    #[test]
    fn every_setting_is_read() {
        let r = read(&[
            (RESTART_SCOPE, "Job"),
            (RESTART_ON, "Any"),
            (MAX_JOB_RESTARTS, "3"),
            (STARTUP_DEADLINE_SECONDS, "120"),
        ])
        .unwrap();
        assert_eq!(
            r,
            Recovery {
                scope: RestartScope::Job,
                restart_on: RestartOn::Any,
                max_job_restarts: Some(3),
                startup_deadline_seconds: Some(120),
            }
        );
    }

    #[test]
    fn bad_keys_and_values_are_named_by_their_path() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
        let cases: [Case; 6] = [
            (
                &[("tfjob-operator.dev/restart-scop", "Job")],
                &[
                    "metadata.annotations[tfjob-operator.dev/restart-scop]: Unsupported value: \"tfjob-operator.dev/restart-scop\": not a setting of tfjob-operator (did you mean \"tfjob-operator.dev/restart-scope\"?); supported: tfjob-operator.dev/restart-scope, tfjob-operator.dev/restart-on, tfjob-operator.dev/max-job-restarts, tfjob-operator.dev/startup-deadline-seconds",
                ],
            ),
            (
                &[(RESTART_SCOPE, "job")],
                &[
                    "metadata.annotations[tfjob-operator.dev/restart-scope]: Unsupported value: \"job\": supported values: \"Job\", \"Replica\"",
                ],
            ),
            (
                &[(MAX_JOB_RESTARTS, "-1")],
                &[
                    "metadata.annotations[tfjob-operator.dev/max-job-restarts]: Invalid value: \"-1\": must be an integer between 0 and 2147483647",
                ],
            ),
            (
                &[(STARTUP_DEADLINE_SECONDS, "soon")],
                &[
                    "metadata.annotations[tfjob-operator.dev/startup-deadline-seconds]: Invalid value: \"soon\": must be an integer >= 1",
                ],
            ),
            (
                &[(RESTART_ON, "Any")],
                &[
                    "metadata.annotations[tfjob-operator.dev/restart-on]: Invalid value: \"Any\": applies only with tfjob-operator.dev/restart-scope: Job",
                ],
            ),
            (
                &[(RESTART_SCOPE, "Jobs"), (STARTUP_DEADLINE_SECONDS, "0")],
                &[
                    "metadata.annotations[tfjob-operator.dev/restart-scope]: Unsupported value: \"Jobs\": supported values: \"Job\", \"Replica\"",
                    "metadata.annotations[tfjob-operator.dev/startup-deadline-seconds]: Invalid value: \"0\": must be an integer between 1 and 2147483647",
                ],
            ),
        ];
        for (pairs, want) in cases {
            assert_eq!(
                read(pairs),
                Err(want.iter().map(|s| s.to_string()).collect()),
                "{pairs:?}"
            );
        }
    }
}
