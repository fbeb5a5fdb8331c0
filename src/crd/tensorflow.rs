//! The `tensorflow` container of a replica's pod: its name, the name of its TF_CONFIG port
//! and that port's default, and where to find them in a pod spec. Pure.

use k8s_openapi::api::core::v1::PodSpec;

/// Name of the container that gets TF_CONFIG and the default port.
pub const TF_CONTAINER: &str = "tensorflow";
/// Name of the port TF_CONFIG addresses use.
pub const TF_PORT_NAME: &str = "tfjob-port";
/// Port used when the `tensorflow` container declares no `tfjob-port`.
pub const TF_DEFAULT_PORT: i32 = 2222;

/// The port TF_CONFIG uses for a replica: the `tfjob-port` of its `tensorflow` container,
/// else 2222.
pub fn tf_port(pod_spec: Option<&PodSpec>) -> i32 {
    pod_spec
        .and_then(|s| s.containers.iter().find(|c| c.name == TF_CONTAINER))
        .and_then(|c| c.ports.as_ref())
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p.name.as_deref() == Some(TF_PORT_NAME))
        })
        .map_or(TF_DEFAULT_PORT, |p| p.container_port)
}
