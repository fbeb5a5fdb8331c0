//! Defaulting (contract §2): applied in memory on every reconcile, never written back. Pure.

use super::spec::TFJobSpec;

/// Name of the container that gets TF_CONFIG and the default port.
pub const TF_CONTAINER: &str = "tensorflow";
/// Name of the port TF_CONFIG addresses use.
pub const TF_PORT_NAME: &str = "tfjob-port";
/// Port used when the `tensorflow` container declares no `tfjob-port`.
pub const TF_DEFAULT_PORT: i32 = 2222;

/// The spec with every default filled in: replicas 1, restartPolicy Never,
/// cleanPodPolicy Running, successPolicy "", suspend false, and the `tfjob-port` appended
/// to each `tensorflow` container lacking one.
pub fn with_defaults(spec: &TFJobSpec) -> TFJobSpec {
    let _ = spec;
    todo!()
}
