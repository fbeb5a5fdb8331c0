//! The settings of ours read from annotations: what each reads into, and every problem named by
//! its field path (docs/recovery.md).

use std::collections::BTreeMap;

use super::*;

fn read(pairs: &[(&str, &str)]) -> Result<JobSettings, Vec<String>> {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    JobSettings::of(Some(&map)).map_err(|e| e.iter().map(ToString::to_string).collect())
}

#[test]
fn no_annotation_is_kubeflows_behaviour() {
    assert_eq!(JobSettings::of(None), Ok(JobSettings::default()));
    assert_eq!(read(&[("other.io/x", "y")]), Ok(JobSettings::default()));
    assert_eq!(JobSettings::default().scope, RestartScope::Replica);
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
        JobSettings {
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
