//! Failed and vanished pods (docs/behaviour.md §6.2, §6.4): exit-code classes, which failures are
//! permanent, which replicas are restarted, the operator's share of the durable restart
//! counts (kubelet restarts are counted in `counts`) and the backoff limit. Pure.

use std::collections::BTreeMap;

use crate::crd::labels::child_name;
use crate::crd::{ReplicaType, RestartPolicy};
use crate::reconcile::plan::model::{Deletion, EventNote};
use crate::reconcile::plan::replicas::{ChildPod, Key, Phase, Replicas};
use crate::reconcile::plan::rules::finish::Cause;
use crate::reconcile::plan::view::JobView;

/// Event reason naming a failed pod and its exit code.
pub const REASON_EXITED_WITH_CODE: &str = "ExitedWithCode";

/// How a failed pod is handled.
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

/// A restart decided in this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restart {
    pub key: Key,
    /// The failed pod to delete; None when the pod was deleted from outside and only has to
    /// be recreated.
    pub pod: Option<Deletion>,
}

/// The outcome of looking at every replica's failures in one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureScan {
    /// The job fails (permanent replica failure or backoff limit); no restart then happens.
    pub failure: Option<Cause>,
    pub restarts: Vec<Restart>,
    /// `replicaStatuses[T].restarts` after this pass (only types that have a count).
    pub counts: BTreeMap<ReplicaType, i32>,
    /// ExitedWithCode warnings for the failed pods decided on in this pass.
    pub events: Vec<EventNote>,
}

/// What one replica contributes to the scan.
enum Candidate<'a> {
    Permanent(&'a ChildPod),
    /// A failed pod to restart, or (None) a pod deleted from outside to recreate.
    Restart(Option<&'a ChildPod>),
}

/// Decides every failure in (type, index) order; the first one that fails the job gives
/// the cause. `counts` are the durable restart counts with this pass's kubelet restarts
/// already added (`counts::RestartBook::with_kubelet_restarts`); `restarting` is whether
/// Restarting is True; `started` whether the job has a startTime.
///
/// Restart counting (DECIDED by the lead, see `counts`): each restart decided here adds
/// exactly 1 to its type's count, whether a failed pod is deleted and recreated or a pod
/// deleted from outside is recreated; the failed pod's kubelet restarts are already in
/// `counts`. The job's count is the sum over its types; a restart that would take it past
/// `backoffLimit` fails the job instead (Kubernetes Job semantics: limit 2 = two restarts,
/// the third failure fails), and so does a count already past the limit (kubelet restarts
/// under OnFailure/Always).
pub fn scan(
    view: &JobView<'_>,
    children: &Replicas,
    counts: &BTreeMap<ReplicaType, i32>,
    restarting: bool,
    started: bool,
) -> FailureScan {
    let limit = view.run_policy.backoff_limit;
    let over_limit = |n: i64| limit.is_some_and(|l| n > i64::from(l));
    let mut job_restarts = counts.values().map(|&c| i64::from(c)).sum::<i64>();
    let mut scan = FailureScan {
        counts: counts.clone(),
        ..FailureScan::default()
    };
    let mut permanent = BTreeMap::<ReplicaType, i32>::new();
    let mut first_failure: Option<Option<ReplicaType>> = None; // Some(None) = backoff
    let mut restart_events = Vec::new();
    for (t, i) in view.keys() {
        match candidate(view, children, (t, i), restarting, started) {
            None => {}
            Some(Candidate::Permanent(pod)) => {
                *permanent.entry(t).or_default() += 1;
                first_failure.get_or_insert(Some(t));
                scan.events.extend(exited_event(view.namespace, pod));
            }
            Some(Candidate::Restart(_)) if first_failure.is_some() => {}
            Some(Candidate::Restart(_)) if over_limit(job_restarts + 1) => {
                first_failure = Some(None);
            }
            Some(Candidate::Restart(pod)) => {
                job_restarts += 1;
                let count = scan.counts.entry(t).or_default();
                *count = count.saturating_add(1);
                scan.restarts.push(Restart {
                    key: (t, i),
                    pod: pod.map(ChildPod::deletion),
                });
                restart_events.extend(pod.and_then(|p| exited_event(view.namespace, p)));
            }
        }
    }
    if first_failure.is_none() && over_limit(job_restarts) {
        first_failure = Some(None);
    }
    scan.failure = first_failure.map(|f| match f {
        Some(t) => Cause::Replicas {
            t,
            n: permanent.get(&t).copied().unwrap_or(0),
        },
        None => Cause::BackoffLimit,
    });
    if scan.failure.is_some() {
        // The job fails instead: nothing is restarted, nothing more counted.
        scan.counts = counts.clone();
        scan.restarts.clear();
    } else {
        scan.events.extend(restart_events);
    }
    scan
}

fn candidate<'a>(
    view: &JobView<'_>,
    children: &'a Replicas,
    key: Key,
    restarting: bool,
    started: bool,
) -> Option<Candidate<'a>> {
    let (t, i) = key;
    match children.pods.get(&key) {
        Some(pod) if pod.terminating || pod.phase != Phase::Failed => None,
        Some(pod) => match classify(view.restart_policy(t), pod.exit_code) {
            // enableDynamicWorker: workers come and go; a dead one does not fail the job.
            FailureClass::Permanent if t == ReplicaType::Worker && view.dynamic_workers() => None,
            FailureClass::Permanent => Some(Candidate::Permanent(pod)),
            FailureClass::Retryable => Some(Candidate::Restart(Some(pod))),
        },
        // The service outlives pod restarts, so a live service without its pod marks an index
        // that had a pod: deleted from outside. During Restarting the missing pod is most
        // likely the one this operator deleted, so it is not counted again.
        None => {
            let name = child_name(view.name, t, i);
            let name_free = !children.foreign_pods.contains(&name);
            // A pod whose create failed never existed: recreating it is no restart; and a
            // replica that succeeded is done, whatever became of its pod.
            let existed = !children.never_created.contains(&name);
            let unfinished = !children.completed.contains(&key);
            let vanished =
                children.live_service(key).is_some() && name_free && existed && unfinished;
            (started && !restarting && vanished).then_some(Candidate::Restart(None))
        }
    }
}

/// `Pod: <ns>.<pod> exited with code <code>`; none when the container never terminated.
pub fn exited_event(namespace: &str, pod: &ChildPod) -> Option<EventNote> {
    let code = pod.exit_code?;
    Some(EventNote::warning(
        REASON_EXITED_WITH_CODE,
        format!("Pod: {namespace}.{} exited with code {code}", pod.name),
    ))
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
