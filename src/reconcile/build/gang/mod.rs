//! What gang scheduling builds (docs/behaviour.md §8): the setting (`Gang`, from
//! `--gang-scheduler-name`), the PodGroup a job should have (`podgroup`, adding up
//! `quantity`s) and what its pods carry (`pods`). Pure. The decision about a job's PodGroup
//! is the plan's (`plan::rules::gang`).

pub mod podgroup;
pub mod pods;
pub mod quantity;

use kube::core::{ApiResource, GroupVersionKind};

/// Kubeflow's `--gang-scheduler-name` value that means "scheduler-plugins" rather than
/// naming a scheduler.
pub const SCHEDULER_PLUGINS: &str = "scheduler-plugins";
/// The scheduler-plugins scheduler's name when none is configured (Kubeflow's and the
/// scheduler-plugins Helm chart's).
pub const DEFAULT_SCHEDULER_PLUGINS_NAME: &str = "scheduler-plugins-scheduler";
/// Volcano's scheduler name, and the setting that selects it.
pub const VOLCANO: &str = "volcano";

/// Which gang scheduler the operator's PodGroups and pods are for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gang {
    /// Volcano: PodGroup `scheduling.volcano.sh/v1beta1`, pods annotated.
    Volcano,
    /// scheduler-plugins' Coscheduling: PodGroup `scheduling.x-k8s.io/v1alpha1`, pods
    /// labelled, scheduled by the scheduler of this name.
    SchedulerPlugins { scheduler_name: String },
}

impl Gang {
    /// From the settings: `volcano`; `scheduler-plugins` (its scheduler then being
    /// `plugins_name`); any other name is a scheduler-plugins scheduler's; empty = off.
    pub fn from_setting(name: Option<&str>, plugins_name: &str) -> Option<Gang> {
        match name.map(str::trim).unwrap_or_default() {
            "" => None,
            VOLCANO => Some(Gang::Volcano),
            SCHEDULER_PLUGINS => Some(Gang::SchedulerPlugins {
                scheduler_name: plugins_name.to_string(),
            }),
            other => Some(Gang::SchedulerPlugins {
                scheduler_name: other.to_string(),
            }),
        }
    }

    /// The `schedulerName` the job's pods get.
    pub fn scheduler_name(&self) -> &str {
        match self {
            Gang::Volcano => VOLCANO,
            Gang::SchedulerPlugins { scheduler_name } => scheduler_name,
        }
    }

    /// The PodGroup resource of this scheduler.
    pub fn api_resource(&self) -> ApiResource {
        let (group, version) = match self {
            Gang::Volcano => ("scheduling.volcano.sh", "v1beta1"),
            Gang::SchedulerPlugins { .. } => ("scheduling.x-k8s.io", "v1alpha1"),
        };
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, "PodGroup"),
            "podgroups",
        )
    }

    /// The CRD that defines the PodGroup resource (named in the missing-CRD message).
    pub fn crd_name(&self) -> String {
        format!("podgroups.{}", self.api_resource().group)
    }
}
