//! How a replica type's failures would be handled, in words, as `render` shows them: the
//! failure rules that can match it, in order, then what the restart policy and the restart
//! scope do with the rest. The words follow `classify`'s decisions. Pure.

use crate::crd::settings::{FAILURE_RULES, FailureRule, JobSettings, RestartOn};
use crate::crd::{ReplicaType, RestartPolicy};

/// `failure-rules[0]: exit codes 3 → FailJob; then: a disruption → restart the replica, not
/// charged; exit codes 1-127, 128, 139 → fail the job; any other exit → restart the replica;
/// deleted from outside → restart the replica`.
pub fn handling(
    settings: &JobSettings,
    t: ReplicaType,
    policy: RestartPolicy,
    dynamic_workers: bool,
) -> String {
    let mut parts = Vec::new();
    let ours = |r: &&FailureRule| r.replica_types.as_ref().is_none_or(|ts| ts.contains(&t));
    for (i, rule) in settings.failure_rules.iter().enumerate() {
        if !ours(&rule) {
            continue;
        }
        let what = criteria(rule);
        let shown = what.as_deref().unwrap_or("any failure");
        parts.push(format!(
            "{FAILURE_RULES}[{i}]: {shown} → {}",
            rule.action.as_str()
        ));
        if what.is_none() {
            // It matches every failure: nothing after it ever decides.
            return parts.join("; ");
        }
    }
    let unit = match settings.whole_job() {
        true => "restart the job",
        false => "restart the replica",
    };
    let mut rest = vec![format!("a disruption → {unit}, not charged")];
    let fail = match (
        dynamic_workers && t == ReplicaType::Worker,
        settings.whole_job(),
    ) {
        (true, false) => "ignored (enableDynamicWorker)",
        _ if settings.restart_on == RestartOn::Any => unit,
        _ => "fail the job",
    };
    rest.extend(match policy {
        RestartPolicy::Never => vec![format!("any exit → {fail}")],
        RestartPolicy::OnFailure | RestartPolicy::Always => vec![format!("any exit → {unit}")],
        RestartPolicy::ExitCode => vec![
            format!("exit codes 0-128, 139 → {fail}"),
            format!("any other exit → {unit}"),
        ],
    });
    rest.push(format!("deleted from outside → {unit}"));
    if !parts.is_empty() {
        rest[0] = format!("then {}", rest[0]);
    }
    parts.extend(rest);
    parts.join("; ")
}

/// A rule's criteria, in words; none when it matches every failure.
fn criteria(rule: &FailureRule) -> Option<String> {
    let mut words = Vec::new();
    if let Some(codes) = &rule.exit_codes {
        let codes: Vec<String> = codes
            .iter()
            .map(|(a, b)| match a == b {
                true => a.to_string(),
                false => format!("{a}-{b}"),
            })
            .collect();
        words.push(format!("exit codes {}", codes.join(", ")));
    }
    if let Some(reasons) = &rule.container_reasons {
        let reasons: Vec<&str> = reasons.iter().map(String::as_str).collect();
        words.push(format!("container reason {}", reasons.join(", ")));
    }
    match rule.disruption {
        Some(true) => words.push("a disruption".into()),
        Some(false) => words.push("not a disruption".into()),
        None => {}
    }
    (!words.is_empty()).then(|| words.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_first_then_the_restart_policy_and_scope() {
        let annotations = [(
            "tfjob-operator.dev/failure-rules".to_string(),
            "- {replicaTypes: [PS], exitCodes: [3, 129-143], action: FailJob}\n\
             - {disruption: true, action: RestartReplica}\n\
             - {replicaTypes: [Evaluator], action: RestartUncharged}"
                .to_string(),
        )];
        let settings = JobSettings::of(Some(&annotations.into_iter().collect())).unwrap();
        let ps = handling(&settings, ReplicaType::Ps, RestartPolicy::ExitCode, false);
        assert_eq!(
            ps,
            "tfjob-operator.dev/failure-rules[0]: exit codes 3, 129-143 → FailJob; \
             tfjob-operator.dev/failure-rules[1]: a disruption → RestartReplica; then a \
             disruption → restart the replica, not charged; exit codes 0-128, 139 → fail the \
             job; any other exit → restart the replica; deleted from outside → restart the \
             replica"
        );
        let evaluator = handling(
            &settings,
            ReplicaType::Evaluator,
            RestartPolicy::Never,
            false,
        );
        assert_eq!(
            evaluator,
            "tfjob-operator.dev/failure-rules[1]: a disruption → RestartReplica; \
             tfjob-operator.dev/failure-rules[2]: any failure → RestartUncharged"
        );
        let plain = JobSettings::default();
        let worker = handling(&plain, ReplicaType::Worker, RestartPolicy::Never, true);
        assert_eq!(
            worker,
            "a disruption → restart the replica, not charged; any exit → ignored \
             (enableDynamicWorker); deleted from outside → restart the replica"
        );
    }
}
