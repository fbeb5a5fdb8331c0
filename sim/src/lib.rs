//! tfjob-sim: an in-memory Kubernetes API server and pod simulator.
pub mod kubelet;
pub mod schema;
