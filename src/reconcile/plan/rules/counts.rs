//! `status.replicaStatuses` (docs/behaviour.md §7.1, §6.4): per replica type the Running, Succeeded
//! and Failed pods, the durable restart count with its per-pod bookkeeping, and the type's
//! label selector. Pure.
//!
//! Restart counting: `restarts[T]` counts every restart of a type-T replica, whoever did it.
//! Kubelet restarts (OnFailure/Always) are counted incrementally: each pass, a live pod whose
//! summed container `restartCount` r exceeds the r already counted for its uid
//! (`podRestarts[T][uid]`, 0 if absent) adds the difference, and r is recorded. The record
//! of a pod is dropped once the pod is no longer observed at all (a terminating pod is still
//! observed, so it is not counted twice if it lingers). The operator's own restarts (a failed
//! pod deleted and recreated, a pod deleted from outside recreated) add 1 each, in
//! `restarts::scan`. So nothing is counted twice and nothing is lost when a pod is deleted:
//! its kubelet restarts were counted while it lived.

use std::collections::{BTreeMap, BTreeSet};

use crate::crd::labels::selector_string;
use crate::crd::{ReplicaStatus, ReplicaStatuses, ReplicaType, format_indexes};
use crate::reconcile::plan::model::Deletion;
use crate::reconcile::plan::replicas::{Phase, Replicas};
use crate::reconcile::plan::view::JobView;

/// The durable restart counts of a job and their bookkeeping, as kept in its status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestartBook {
    /// `replicaStatuses[T].restarts`, for the types that have one: charged restarts.
    pub restarts: BTreeMap<ReplicaType, i32>,
    /// `replicaStatuses[T].podRestarts`: kubelet restarts already in `restarts`, by pod uid.
    pub counted: BTreeMap<ReplicaType, BTreeMap<String, i32>>,
    /// `replicaStatuses[T].unchargedRestarts`: restarts not charged.
    pub uncharged: BTreeMap<ReplicaType, i32>,
    /// `replicaStatuses[T].disruptedPods`: disrupted pods whose restart is counted already.
    pub disrupted: BTreeMap<ReplicaType, BTreeSet<String>>,
}

impl RestartBook {
    /// The counts and bookkeeping recorded in a status.
    pub fn recorded(statuses: &ReplicaStatuses) -> Self {
        Self {
            restarts: statuses
                .iter()
                .filter_map(|(t, s)| s.restarts.map(|r| (*t, r)))
                .collect(),
            counted: statuses
                .iter()
                .filter(|(_, s)| !s.pod_restarts.is_empty())
                .map(|(t, s)| (*t, s.pod_restarts.clone()))
                .collect(),
            uncharged: statuses
                .iter()
                .filter_map(|(t, s)| s.uncharged_restarts.map(|r| (*t, r)))
                .collect(),
            disrupted: statuses
                .iter()
                .filter(|(_, s)| !s.disrupted_pods.is_empty())
                .map(|(t, s)| (*t, s.disrupted_pods.iter().cloned().collect()))
                .collect(),
        }
    }

    /// Whether the restart of this disrupted pod (of type `t`) is counted already.
    pub fn disruption_counted(&self, t: ReplicaType, uid: Option<&str>) -> bool {
        uid.is_some_and(|uid| self.disrupted.get(&t).is_some_and(|s| s.contains(uid)))
    }

    /// Counts one restart of a type-`t` replica, charged or not.
    pub fn count(&mut self, t: ReplicaType, charged: bool) {
        let counts = match charged {
            true => &mut self.restarts,
            false => &mut self.uncharged,
        };
        let count = counts.entry(t).or_default();
        *count = count.saturating_add(1);
    }

    /// The charged restarts of the job: what its restart budget is spent on.
    pub fn charged(&self) -> i64 {
        self.restarts.values().map(|&c| i64::from(c)).sum()
    }

    /// Adds the kubelet restarts of the observed pods not counted yet, and forgets the pods
    /// no longer observed (their kubelet restarts, their disruptions). Pods without uid cannot be tracked and are not counted.
    pub fn with_kubelet_restarts(mut self, children: &Replicas) -> Self {
        let observed: BTreeSet<(ReplicaType, &str)> = children
            .pods
            .iter()
            .filter_map(|(&(t, _), p)| Some((t, p.uid.as_deref()?)))
            .collect();
        for (t, per_pod) in &mut self.counted {
            per_pod.retain(|uid, _| observed.contains(&(*t, uid.as_str())));
        }
        self.counted.retain(|_, per_pod| !per_pod.is_empty());
        for (t, uids) in &mut self.disrupted {
            uids.retain(|uid| observed.contains(&(*t, uid.as_str())));
        }
        self.disrupted.retain(|_, uids| !uids.is_empty());
        for (&(t, _), pod) in &children.pods {
            let Some(uid) = pod.uid.as_ref().filter(|_| !pod.terminating) else {
                continue;
            };
            let seen = self.counted.get(&t).and_then(|m| m.get(uid)).copied();
            let new = pod.restart_count.saturating_sub(seen.unwrap_or(0));
            if new > 0 {
                let total = self.restarts.entry(t).or_default();
                *total = total.saturating_add(new);
                self.counted
                    .entry(t)
                    .or_default()
                    .insert(uid.clone(), pod.restart_count);
            }
        }
        self
    }
}

/// Counts for every type in the spec, from the live pods of replicas the spec asks for;
/// `succeeded` (and `completedIndexes`) from the replicas that ever succeeded.
/// Pods going away count nowhere: terminating ones, surplus ones, and those this very pass
/// deletes (`deleting`: restarts, suspension) — counting them now and not on the next pass
/// would make the status flicker. Zero counts are left out, as Kubeflow's `omitempty`
/// does; `restarts` is present when `book` has the type (already recorded, or restarted
/// now), `podRestarts` when it has entries for the type.
pub fn replica_statuses(
    view: &JobView<'_>,
    children: &Replicas,
    book: &RestartBook,
    deleting: &[Deletion],
) -> ReplicaStatuses {
    view.replicas()
        .map(|(t, n)| {
            let live = (0..n).filter_map(|i| children.live_pod((t, i)));
            let staying = live.filter(|p| !deleting.iter().any(|d| d.name == p.name));
            let (mut active, mut failed) = (0, 0);
            for pod in staying {
                match pod.phase {
                    Phase::Running => active += 1,
                    Phase::Failed => failed += 1,
                    _ => {}
                }
            }
            // Finished work stays counted, whether its pod is still there or not.
            let completed: Vec<i32> = (0..n)
                .filter(|i| children.completed.contains(&(t, *i)))
                .collect();
            let status = ReplicaStatus {
                active: positive(active),
                succeeded: positive(completed.len() as i32),
                failed: positive(failed),
                restarts: book.restarts.get(&t).copied(),
                pod_restarts: book.counted.get(&t).cloned().unwrap_or_default(),
                uncharged_restarts: book.uncharged.get(&t).copied(),
                disrupted_pods: book
                    .disrupted
                    .get(&t)
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default(),
                selector: Some(selector_string(view.name, t)),
                completed_indexes: (!completed.is_empty()).then(|| format_indexes(completed)),
            };
            (t, Box::new(status))
        })
        .collect()
}

fn positive(n: i32) -> Option<i32> {
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::RestartPolicy;
    use crate::reconcile::plan::model::Observed;
    use crate::reconcile::plan::replicas::sort;
    use crate::reconcile::plan::tests::support::{job, pod};
    use ReplicaType::Worker;

    #[test]
    fn kubelet_restarts_are_counted_once_per_pod_uid() {
        let j = job("j", &[(Worker, 2, RestartPolicy::OnFailure)]);
        let w0 = "uid-j-worker-0";
        // (name, restartCount of worker 0, uid kept?, counted before, restarts before,
        //  restarts after, counted after)
        let cases = [
            ("first sight", 2, true, None, None, Some(2), Some(2)),
            (
                "no kubelet restart: no entry",
                0,
                true,
                None,
                None,
                None,
                None,
            ),
            (
                "already counted",
                2,
                true,
                Some(2),
                Some(5),
                Some(5),
                Some(2),
            ),
            ("risen", 4, true, Some(1), Some(1), Some(4), Some(4)),
            (
                "went down: nothing taken back",
                1,
                true,
                Some(3),
                Some(3),
                Some(3),
                Some(3),
            ),
            ("no uid: not tracked", 2, false, None, None, None, None),
        ];
        for (name, rc, with_uid, counted, before, after, counted_after) in cases {
            let mut p = pod(&j, Worker, 0).running().restarts(rc).build();
            if !with_uid {
                p.uid = None;
            }
            let children = sort(
                &j,
                &Observed {
                    pods: vec![p],
                    ..Observed::default()
                },
                None,
            );
            let book = RestartBook {
                restarts: before.map(|n| (Worker, n)).into_iter().collect(),
                counted: counted
                    .map(|n| (Worker, BTreeMap::from([(w0.to_string(), n)])))
                    .into_iter()
                    .collect(),
                ..RestartBook::default()
            };
            let got = book.with_kubelet_restarts(&children);
            assert_eq!(got.restarts.get(&Worker).copied(), after, "{name}");
            let got_counted = got.counted.get(&Worker).and_then(|m| m.get(w0)).copied();
            assert_eq!(got_counted, counted_after, "{name}");
        }
    }
}
