//! The Kueue mode (`run --kueue`, docs/kueue.md): the operator as Kueue's external framework
//! for TFJobs (Kueue's `integrations.externalFrameworks: ["TFJob.v1.kubeflow.org"]`). It does
//! the job's half of Kueue's generic job reconciler that Kueue's built-in TFJob integration
//! did: one Workload per queued job, the job resumed on admission with the flavor merged
//! into its templates, suspended on eviction, its quota released, `PodsReady` and `Finished`
//! written, the finalizer dropped.
//!
//! `plan` decides (pure); `cache` watches the Workloads, `pass` is the step a job's pass
//! takes before the TFJob controller plans, `writes` and `lookups` talk to the API,
//! `janitor` cleans up after deleted jobs.
//!
//! No pod before admission: no webhook suspends a queued job for an external framework, so a
//! job created without `suspend: true` is suspended by this side (Kueue's `stopJob`), in the
//! step that comes first in each of the job's passes; a pass that wrote the job ends there,
//! and one whose write failed fails: the TFJob controller plans only once the job it sees is
//! suspended, or admitted.

pub(crate) mod cache;
pub(crate) mod janitor;
pub(crate) mod lookups;
pub(crate) mod pass;
pub mod plan;
pub(crate) mod writes;

pub use writes::KueueSide;

/// The User-Agent of the Kueue side's requests (the TFJob controller's is
/// `tfjob-operator/<version>`): the audit log tells Kueue's share of the work apart, as it
/// does for Kueue's own built-in integration.
pub const USER_AGENT: &str = concat!("tfjob-kueue/", env!("CARGO_PKG_VERSION"));

/// The name the Kueue side's events carry as their reporting controller.
pub const CONTROLLER_NAME: &str = "tfjob-operator-kueue";
