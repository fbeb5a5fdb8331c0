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
            ..JobSettings::default()
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
                "metadata.annotations[tfjob-operator.dev/restart-scop]: Unsupported value: \"tfjob-operator.dev/restart-scop\": not a setting of tfjob-operator (did you mean \"tfjob-operator.dev/restart-scope\"?); supported: tfjob-operator.dev/restart-scope, tfjob-operator.dev/restart-on, tfjob-operator.dev/max-job-restarts, tfjob-operator.dev/startup-deadline-seconds, tfjob-operator.dev/failure-rules, tfjob-operator.dev/wait-for-evaluator-seconds",
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

#[test]
fn failure_rules_are_read_one_per_line_in_order() {
    let text = "\
        - {replicaTypes: [PS], action: FailJob}\n\
        # comments and blank lines are skipped\n\
        \n\
        - {replicaTypes: [Worker, Chief], exitCodes: [137, 129-143], action: RestartReplica}\n\
        - {\"disruption\": true, \"action\": \"RestartUncharged\"}\n\
        - {containerReasons: [OOMKilled], action: RestartJob}\n";
    let s = read(&[(FAILURE_RULES, text), (WAIT_FOR_EVALUATOR_SECONDS, "600")]).unwrap();
    assert_eq!(s.wait_for_evaluator_seconds, Some(600));
    let rules = &s.failure_rules;
    assert_eq!(rules.len(), 4);
    assert_eq!(rules[0].action, RuleAction::FailJob);
    assert_eq!(rules[1].exit_codes, Some(vec![(137, 137), (129, 143)]));
    assert_eq!(rules[2].disruption, Some(true));
    assert_eq!(rules[3].action, RuleAction::RestartJob);
    use crate::crd::ReplicaType::{Chief, Ps, Worker};
    // The first rule that matches decides.
    let first =
        |t, code, reason, disruption| s.rule_for(t, code, reason, disruption).map(|(i, _)| i);
    assert_eq!(first(Ps, Some(137), None, false), Some(0));
    assert_eq!(first(Chief, Some(140), None, false), Some(1));
    assert_eq!(first(Worker, Some(1), None, false), None);
    assert_eq!(first(Worker, None, None, true), Some(2));
    assert_eq!(first(Worker, Some(1), Some("OOMKilled"), false), Some(3));
    assert!(
        s.operator_restarts(),
        "with rules the operator sees every failure"
    );
}

#[test]
fn bad_failure_rules_are_named_by_their_path_with_a_hint() {
    let path = "metadata.annotations[tfjob-operator.dev/failure-rules]";
    let cases: [(&str, &[&str]); 7] = [
        (
            "- {replicaTypes: [Ps], action: FailJob}",
            &[
                "[0].replicaTypes[0]: Unsupported value: \"Ps\": supported values: \"Chief\", \"Master\", \"PS\", \"Worker\", \"Evaluator\"",
            ],
        ),
        (
            "- {action: FailJob}\n- {exitCodes: [300, 5-2], action: Restart}",
            &[
                "[1].exitCodes[0]: Invalid value: \"300\": an exit code 0-255, or a range such as 129-255",
                "[1].exitCodes[1]: Invalid value: \"5-2\": an exit code 0-255, or a range such as 129-255",
                "[1].action: Unsupported value: \"Restart\": supported values: \"RestartReplica\", \"RestartJob\", \"FailJob\", \"RestartUncharged\"",
            ],
        ),
        (
            "- {replicaType: [PS], action: FailJob}",
            &[
                "[0].replicaType: Unsupported value: \"replicaType\": not a key of a failure rule (did you mean \"replicaTypes\"?); supported: replicaTypes, exitCodes, disruption, containerReasons, action",
            ],
        ),
        (
            "- {replicaTypes: [PS]}",
            &[
                "[0].action: Required value: one of RestartReplica, RestartJob, FailJob, RestartUncharged",
            ],
        ),
        (
            "- replicaTypes: [PS]\n  action: FailJob",
            &[
                "[0]: Invalid value: \"- replicaTypes: [PS]\": a rule is one line of the form - {replicaTypes: [...], exitCodes: [...], disruption: true|false, containerReasons: [...], action: RestartReplica|RestartJob|FailJob|RestartUncharged}",
                "[1]: Invalid value: \"action: FailJob\": a rule is one line of the form - {replicaTypes: [...], exitCodes: [...], disruption: true|false, containerReasons: [...], action: RestartReplica|RestartJob|FailJob|RestartUncharged}",
            ],
        ),
        (
            "- {disruption: yes, exitCodes: [], action: FailJob, action: FailJob}",
            &[
                "[0].disruption: Unsupported value: \"yes\": supported values: \"true\", \"false\"",
                "[0].exitCodes: Required value: an empty list matches nothing",
                "[0].action: Duplicate value: given twice",
            ],
        ),
        (
            "# nothing but a comment",
            &[
                ": Required value: at least one rule, one per line: - {replicaTypes: [...], exitCodes: [...], disruption: true|false, containerReasons: [...], action: RestartReplica|RestartJob|FailJob|RestartUncharged}",
            ],
        ),
    ];
    for (text, want) in cases {
        let want: Vec<String> = want.iter().map(|w| format!("{path}{w}")).collect();
        assert_eq!(read(&[(FAILURE_RULES, text)]), Err(want), "{text}");
    }
}
