//! The pass being composed: the status as the rules decided so far, and the plan, with the
//! few ways the composer changes them. Pure.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::crd::TFJobStatus;
use crate::reconcile::plan::conditions::{self, Change};
use crate::reconcile::plan::model::{Deletion, EventNote, Plan};
use crate::reconcile::plan::rules::finish::{self, Verdict};
use crate::reconcile::plan::view::JobView;

/// The pass being composed: the status as the rules decided so far, and the plan.
pub(super) struct Pass {
    pub status: TFJobStatus,
    pub plan: Plan,
    pub now: Timestamp,
}

impl Pass {
    /// Applies condition changes in order, keeping the events of those that took effect.
    pub fn change<'a>(&mut self, changes: impl IntoIterator<Item = Change<'a>>) {
        let announced = conditions::change_all(&mut self.status.conditions, changes, self.now);
        self.plan.events.extend(announced);
    }

    pub fn events(&mut self, notes: impl IntoIterator<Item = EventNote>) {
        self.plan.events.extend(notes);
    }

    /// Come back at `at` at the latest.
    pub fn wake_at(&mut self, at: Timestamp) {
        self.plan.requeue_at = Some(self.plan.requeue_at.map_or(at, |t| t.min(at)));
    }

    pub fn delete(&mut self, pods: impl IntoIterator<Item = Deletion>, services: Vec<Deletion>) {
        self.plan.delete_pods.extend(pods);
        self.plan.delete_services.extend(services);
    }

    /// The job ends: terminal conditions, `completionTime`, and on success the counts settle.
    pub fn conclude(&mut self, view: &JobView<'_>, verdict: Verdict) {
        self.change(finish::conclude(view, &verdict));
        self.status.completion_time = Some(Time(self.now));
        // The counts are final (docs/behaviour.md §6.4): the per-pod record that kept them
        // from counting a kubelet restart twice has done its job and leaves the status.
        for counts in self.status.replica_statuses.values_mut() {
            counts.pod_restarts.clear();
            counts.disrupted_pods.clear();
        }
        if verdict == Verdict::Succeeded {
            let statuses = std::mem::take(&mut self.status.replica_statuses);
            self.status.replica_statuses = finish::settle_counts(statuses);
        }
    }
}
