//! What happened to each replica in this pass, and what it calls for (docs/behaviour.md §6.2,
//! §6.7, §6.8): the exit-code classes, disruptions, pods deleted from outside, the failure
//! rules, and the action each failure asks of the restart engine, charged or not. Every
//! failure is classified here, for both restart scopes. Pure.

use crate::crd::labels::child_name;
use crate::crd::settings::{RestartOn, RuleAction};
use crate::crd::{ReplicaType, RestartPolicy};
use crate::reconcile::plan::replicas::{ChildPod, Key, Phase, Replicas};
use crate::reconcile::plan::rules::counts::RestartBook;
use crate::reconcile::plan::rules::restarts::{Action, Charge, Fault};
use crate::reconcile::plan::view::JobView;

/// How a failed pod is handled under its replica's restart policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureClass {
    /// The replica failed for good: the job fails.
    Permanent,
    /// The replica is restarted (deleted and recreated), within the backoff limit.
    Retryable,
}

/// Exit codes that mean "this program will fail again": 0–127 (the program's own codes; 0
/// means another container failed the pod), 128 (invalid exit argument) and 139 (SIGSEGV).
/// Every other code (130 SIGINT, 137 SIGKILL/OOM, 138 user-requested retry, 143 SIGTERM,
/// anything else above 128) was a signal from outside and is worth a retry.
pub fn exit_code_is_permanent(code: i32) -> bool {
    matches!(code, 0..=128 | 139)
}

/// Classifies a failed pod by its replica's restart policy and `tensorflow` exit code.
/// Under ExitCode, a pod whose `tensorflow` container never terminated (eviction, node
/// loss) has no code and is retryable: nothing the program did caused it.
pub fn classify(policy: RestartPolicy, exit_code: Option<i32>) -> FailureClass {
    match (policy, exit_code) {
        (RestartPolicy::Never, _) => FailureClass::Permanent,
        (RestartPolicy::OnFailure | RestartPolicy::Always, _) => FailureClass::Retryable,
        (RestartPolicy::ExitCode, Some(code)) if exit_code_is_permanent(code) => {
            FailureClass::Permanent
        }
        (RestartPolicy::ExitCode, _) => FailureClass::Retryable,
    }
}

/// Every replica's failure, in (type, index) order: the order in which failures are decided,
/// so one pass always decides the same way. `book` tells the disruptions counted already;
/// `restarting`: Restarting is True; `started`: the job has a startTime.
pub fn faults<'a>(
    view: &JobView<'_>,
    children: &'a Replicas,
    book: &RestartBook,
    restarting: bool,
    started: bool,
) -> Vec<Fault<'a>> {
    view.keys()
        .into_iter()
        .filter_map(|key| match children.pods.get(&key) {
            Some(pod) => pod_fault(view, book, key, pod),
            None if vanished(view, children, key, restarting, started) => {
                let name = child_name(view.name, key.0, key.1);
                // A pod a disruption deleted at once (pod GC) is known by its last state.
                let disruption = children.departed.get(&name);
                let fault = Fault {
                    key,
                    pod: None,
                    action: restart_action(view),
                    charge: match disruption {
                        Some(_) => Charge::Uncharged,
                        None => Charge::Charged,
                    },
                    rule: None,
                    disrupted: disruption.is_some(),
                    what: match disruption {
                        Some(why) => format!("pod {name} was deleted by a disruption ({why})"),
                        None => format!("pod {name} was deleted"),
                    },
                };
                Some(by_rule(view, fault, None, None))
            }
            None => None,
        })
        .collect()
}

/// The fault of a pod that failed, or that a disruption ends (its `DisruptionTarget`
/// condition, failed or still going). None: no fault (running, finished well, going away
/// at our request, or a dynamic worker's permanent failure no rule claims).
fn pod_fault<'a>(
    view: &JobView<'_>,
    book: &RestartBook,
    key: Key,
    pod: &'a ChildPod,
) -> Option<Fault<'a>> {
    let failed = pod.phase == Phase::Failed && !pod.terminating;
    let disruption = pod
        .disruption
        .as_deref()
        .filter(|_| pod.phase != Phase::Succeeded);
    let fault = |action, charge, what| Fault {
        key,
        pod: Some(pod),
        action,
        charge,
        rule: None,
        disrupted: disruption.is_some(),
        what,
    };
    let exit = (pod.exit_code, pod.exit_reason.as_deref());
    let Some(why) = disruption else {
        if !failed {
            return None;
        }
        let action = failed_pod_action(view, key.0, pod);
        let what = format!("pod {} {}", pod.name, pod.failure_words());
        let fault = fault(action.unwrap_or(Action::Fail), Charge::Charged, what);
        let fault = by_rule(view, fault, exit.0, exit.1);
        return (action.is_some() || fault.rule.is_some()).then_some(fault);
    };
    let what = match failed {
        true => format!("pod {} {}", pod.name, pod.failure_words()),
        false => format!("pod {} was disrupted ({why})", pod.name),
    };
    if book.disruption_counted(key.0, pod.uid.as_deref()) {
        return (!pod.terminating).then(|| fault(Action::RestartReplica, Charge::Counted, what));
    }
    let fault = fault(restart_action(view), Charge::Uncharged, what);
    Some(by_rule(view, fault, exit.0, exit.1))
}

/// The fault as the first failure rule that matches it decides, if one does.
fn by_rule<'a>(
    view: &JobView<'_>,
    fault: Fault<'a>,
    exit_code: Option<i32>,
    reason: Option<&str>,
) -> Fault<'a> {
    let settings = &view.settings;
    let matched = settings.rule_for(fault.t(), exit_code, reason, fault.disrupted);
    let Some((i, rule)) = matched else {
        return fault;
    };
    let (action, charge) = match rule.action {
        RuleAction::RestartReplica => (Action::RestartReplica, Charge::Charged),
        RuleAction::RestartJob => (Action::RestartJob, Charge::Charged),
        RuleAction::FailJob => (Action::Fail, Charge::Charged),
        RuleAction::RestartUncharged => (restart_action(view), Charge::Uncharged),
    };
    Fault {
        action,
        charge,
        rule: Some((i, rule.action)),
        ..fault
    }
}

/// The restart a retryable failure gets: of the replica, or of the whole job under
/// `restart-scope: Job`.
fn restart_action(view: &JobView<'_>) -> Action {
    match view.whole_job_restarts() {
        true => Action::RestartJob,
        false => Action::RestartReplica,
    }
}

/// A failed pod's action by its replica's restart policy and exit code. Under
/// `restart-scope: Job`, a pod that never exited by itself (evicted, its node lost) and,
/// with `restart-on: Any`, every failure restart the job. None: the failure is no fault
/// (a dynamic worker's, which may come and go).
fn failed_pod_action(view: &JobView<'_>, t: ReplicaType, pod: &ChildPod) -> Option<Action> {
    let class = classify(view.restart_policy(t), pod.exit_code);
    if view.whole_job_restarts() {
        let retries = view.settings.restart_on == RestartOn::Any
            || pod.exit_code.is_none()
            || class == FailureClass::Retryable;
        return Some(if retries {
            Action::RestartJob
        } else {
            Action::Fail
        });
    }
    match class {
        FailureClass::Permanent if t == ReplicaType::Worker && view.dynamic_workers() => None,
        FailureClass::Permanent => Some(Action::Fail),
        FailureClass::Retryable => Some(Action::RestartReplica),
    }
}

/// A replica whose pod is gone while its service stays, after the job started and outside
/// a restart: deleted from outside (preemption, node loss, a user). The service outlives
/// pod restarts, so a live service without its pod marks an index that had a pod. During
/// Restarting the missing pod is most likely the one this operator deleted, so it is not
/// counted again. A pod whose create failed never existed (recreating it is no restart), a
/// replica that succeeded is done whatever became of its pod, and a name a foreign pod holds
/// is not ours.
fn vanished(
    view: &JobView<'_>,
    children: &Replicas,
    key: Key,
    restarting: bool,
    started: bool,
) -> bool {
    let name = child_name(view.name, key.0, key.1);
    started
        && !restarting
        && !children.completed.contains(&key)
        && children.live_service(key).is_some()
        && !children.foreign_pods.contains(&name)
        && !children.never_created.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_code_classes() {
        let permanent = [0, 1, 2, 126, 127, 128, 139];
        let retryable = [130, 137, 138, 143, 255, 129, 200];
        for code in permanent {
            assert_eq!(
                classify(RestartPolicy::ExitCode, Some(code)),
                FailureClass::Permanent,
                "{code}"
            );
        }
        for code in retryable {
            assert_eq!(
                classify(RestartPolicy::ExitCode, Some(code)),
                FailureClass::Retryable,
                "{code}"
            );
        }
        assert_eq!(
            classify(RestartPolicy::ExitCode, None),
            FailureClass::Retryable
        );
    }

    #[test]
    fn restart_policy_classes() {
        for (policy, code, want) in [
            (RestartPolicy::Never, Some(137), FailureClass::Permanent),
            (RestartPolicy::Never, None, FailureClass::Permanent),
            (RestartPolicy::OnFailure, Some(1), FailureClass::Retryable),
            (RestartPolicy::Always, Some(1), FailureClass::Retryable),
            (RestartPolicy::Always, None, FailureClass::Retryable),
        ] {
            assert_eq!(classify(policy, code), want, "{policy:?} {code:?}");
        }
    }
}
