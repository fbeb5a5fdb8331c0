//! The simulator's integration tests, in one binary so the shared helpers compile once:
//! `cargo test -p tfjob-sim --test sim` (one module: `... --test sim api::`).
//!
//! The `kubectl` module needs the `kubectl` feature (on by default) and kubectl on PATH;
//! `without_kubectl` runs instead when the feature is off (`--no-default-features`).
mod common;

mod api;
mod cluster;
mod deletion;
mod faults;
mod field_validation;
#[cfg(feature = "kubectl")]
mod kubectl;
mod parity;
mod watch;
#[cfg(not(feature = "kubectl"))]
mod without_kubectl;
