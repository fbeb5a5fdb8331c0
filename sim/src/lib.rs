//! tfjob-sim: an in-memory Kubernetes API server and pod simulator.
pub mod jsonpath;
pub mod patch;
pub mod selector;
pub mod table;
