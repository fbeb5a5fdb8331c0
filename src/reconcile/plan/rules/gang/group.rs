//! What to do about the job's PodGroup (docs/behaviour.md §8): create it, bring its spec in
//! line, delete it, or wait, from the desired PodGroup and the cached one. Pure.

use serde_json::json;

use super::diff;
use crate::crd::TFJob;
use crate::reconcile::build::gang::Gang;
use crate::reconcile::build::gang::podgroup::desired;
use crate::reconcile::plan::model::{CacheState, Deletion, GroupAction, GroupView, ObservedGroup};

/// Whether the job wants a PodGroup now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// Running: the PodGroup exists, as the spec says.
    Present,
    /// Suspended or finished: no PodGroup.
    Absent,
}

/// What to do about the job's PodGroup.
pub fn group_action(job: &TFJob, gang: &Gang, view: &GroupView, want: Want) -> GroupAction {
    let uid = job.metadata.uid.as_deref();
    let ours = |g: &ObservedGroup| g.controller_uid.is_some() && g.controller_uid.as_deref() == uid;
    if want == Want::Absent {
        return match &view.group {
            Some(g) if ours(g) && !g.terminating => GroupAction::Delete(Deletion {
                name: g.name.clone(),
                uid: g.uid.clone(),
                resource_version: None,
            }),
            _ => GroupAction::None,
        };
    }
    match view.cache {
        CacheState::Missing => {
            return GroupAction::CrdMissing {
                crd: gang.crd_name(),
            };
        }
        CacheState::Syncing | CacheState::Off => return GroupAction::Wait,
        CacheState::Ready => {}
    }
    let desired = match desired(job, gang, &view.priorities) {
        Ok(d) => d,
        Err(problem) => return GroupAction::Invalid(problem),
    };
    match &view.group {
        None => GroupAction::Create(desired),
        Some(g) if g.terminating => GroupAction::Wait,
        // Someone else's PodGroup of the job's name is left alone (the job is told, see
        // `foreign_note`); the pods still join it by name.
        Some(g) if !ours(g) => GroupAction::None,
        Some(g) => match diff::spec_patch(&desired["spec"], &g.spec) {
            Some(patch) => GroupAction::Patch {
                name: g.name.clone(),
                patch: json!({"spec": patch}),
            },
            None => GroupAction::None,
        },
    }
}

#[cfg(test)]
mod tests;
