//! `status.replicaStatuses` (contract §7.1): per replica type the Running, Succeeded and
//! Failed pods, the durable restart count and the type's label selector. Pure.

use std::collections::BTreeMap;

use super::labels::selector_string;
use super::plan::Deletion;
use super::replicas::{Children, Phase};
use super::view::JobView;
use crate::crd::{ReplicaStatus, ReplicaType};

/// Counts for every type in the spec, from the live pods of replicas the spec asks for.
/// Pods going away count nowhere: terminating ones, surplus ones, and those this very pass
/// deletes (`deleting`: restarts, suspension) — counting them now and not on the next pass
/// would make the status flicker. Zero counts are left out, as Kubeflow's `omitempty`
/// does; `restarts` is present when `restart_counts` has the type (already recorded, or
/// restarted now).
pub fn replica_statuses(
    view: &JobView<'_>,
    children: &Children,
    restart_counts: &BTreeMap<ReplicaType, i32>,
    deleting: &[Deletion],
) -> BTreeMap<ReplicaType, ReplicaStatus> {
    view.replicas()
        .map(|(t, n)| {
            let live = (0..n).filter_map(|i| children.live_pod((t, i)));
            let staying = live.filter(|p| !deleting.iter().any(|d| d.name == p.name));
            let (mut active, mut succeeded, mut failed) = (0, 0, 0);
            for pod in staying {
                match pod.phase {
                    Phase::Running => active += 1,
                    Phase::Succeeded => succeeded += 1,
                    Phase::Failed => failed += 1,
                    _ => {}
                }
            }
            let status = ReplicaStatus {
                active: positive(active),
                succeeded: positive(succeeded),
                failed: positive(failed),
                restarts: restart_counts.get(&t).copied(),
                selector: Some(selector_string(view.name, t)),
            };
            (t, status)
        })
        .collect()
}

/// The durable restart counts recorded in a status, by type.
pub fn recorded_restarts(
    statuses: &BTreeMap<ReplicaType, ReplicaStatus>,
) -> BTreeMap<ReplicaType, i32> {
    statuses
        .iter()
        .filter_map(|(t, s)| s.restarts.map(|r| (*t, r)))
        .collect()
}

fn positive(n: i32) -> Option<i32> {
    (n > 0).then_some(n)
}
