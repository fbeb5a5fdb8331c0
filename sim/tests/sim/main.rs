//! The simulator's integration tests, in one binary so the shared helpers compile once:
//! `cargo test -p tfjob-sim --test sim` (one module: `... --test sim api::`). The `kubectl`
//! module needs kubectl on PATH.
mod common;

mod api;
mod cluster;
mod deletion;
mod faults;
mod field_validation;
mod kubectl;
mod parity;
mod watch;
