//! Tests that need no cluster: the CRD, `render`, `convert`, the seeds, what ships (config/,
//! Dockerfile, the Helm chart), the demo's outcomes in docs/demo.md (it starts its own simulator), the layers
//! of the source tree and the repository paths the docs name. One binary, so the operator is linked once.

// The demo's own modules, as `cargo run --example local` builds them.
#[allow(dead_code)]
#[path = "../../examples/local/demo.rs"]
mod demo;
#[path = "../../examples/local/watch.rs"]
mod watch;

mod admission;
mod chart;
mod convert;
mod crd;
mod demo_table;
mod expressions;
mod layers;
mod monitoring;
mod paths;
mod render;
mod seeds;
mod shipping;
mod tools;
mod workflow;
