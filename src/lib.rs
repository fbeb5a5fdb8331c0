//! tfjob-operator: runs Kubeflow TFJobs (`kubeflow.org/v1`) on Kubernetes.
//!
//! `crd` holds the API types and the pure rules on them; `reconcile` one pass over a job (its
//! pure decision core in `reconcile::plan` and `reconcile::build`, its I/O at the edges);
//! `controller` and `runtime` the watches and caches that feed it; `kueue` the Kueue mode (the
//! operator as Kueue's external framework); `operator` the running binary. Public for the binary, `render`, the simulator's demo and the tests; the rest is
//! crate-private.
#![forbid(unsafe_code)]

pub mod child;
pub mod cli;
pub(crate) mod controller;
pub mod convert;
pub mod crd;
pub(crate) mod error;
pub mod http;
pub mod kueue;
pub(crate) mod metrics;
pub mod operator;
pub mod reconcile;
pub mod render;
pub(crate) mod runtime;
pub mod settings;
pub mod telemetry;
