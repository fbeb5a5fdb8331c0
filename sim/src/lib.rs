//! tfjob-sim: an in-memory Kubernetes API server and pod simulator.
pub mod jsonpath;
pub mod kubelet;
pub mod patch;
pub mod schema;
pub mod selector;
pub mod table;
