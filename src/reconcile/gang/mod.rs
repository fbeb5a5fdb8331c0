//! Gang scheduling (docs/behaviour.md §8): with `--gang-scheduler-name`, each job gets a
//! PodGroup of its name, owned by it, created before its pods and kept in step with its
//! spec, and its pods name the gang scheduler and the group.
//!
//! Pure: the setting (`Gang`), the desired PodGroup and the decision about it (`podgroup`, `diff`),
//! the pods' decoration (`pods`), quantities (`quantity`), the rule of a pass (`rule`). I/O: the PodGroup and
//! PriorityClass caches (`cache`) and the PodGroup writes (`apply`).

pub mod apply;
pub mod cache;
pub mod diff;
pub mod podgroup;
pub mod pods;
pub mod quantity;
pub mod rule;

use std::collections::BTreeMap;

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

/// What the pass knows of the job's PodGroup, from the caches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupView {
    pub cache: CacheState,
    /// The PodGroup of the job's name in its namespace, if the cache has one.
    pub group: Option<ObservedGroup>,
    /// Values of the PriorityClasses the job's templates name (those that exist).
    pub priorities: BTreeMap<String, i32>,
}

/// Whether the PodGroup cache can be believed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheState {
    /// Gang scheduling is off: no cache.
    #[default]
    Off,
    /// Listing (first time, or again after its watch lost its place).
    Syncing,
    Ready,
    /// The API server does not know the PodGroup resource: its CRD is not installed.
    Missing,
}

/// A PodGroup as the cache has it, reduced to what the decision reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObservedGroup {
    pub name: String,
    pub uid: Option<String>,
    /// The uid of its controller, if a TFJob controls it.
    pub controller_uid: Option<String>,
    pub terminating: bool,
    pub spec: serde_json::Value,
    /// `status.phase` (`Pending`, `Scheduling`, `Inqueue`, `Running`, ...).
    pub phase: Option<String>,
    pub created: Option<jiff::Timestamp>,
}
