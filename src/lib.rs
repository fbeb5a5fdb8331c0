//! tfjob-operator: runs Kubeflow TFJobs (`kubeflow.org/v1`) on Kubernetes.
//!
//! `crd` holds the API types and the pure rules on them; `reconcile` the pure decision core
//! (and, at its edges, the controller's I/O).
#![forbid(unsafe_code)]

pub mod cli;
pub mod controller;
pub mod convert;
pub mod crd;
pub mod error;
pub mod http;
pub mod metrics;
pub mod operator;
pub mod reconcile;
pub mod render;
pub mod runtime;
pub mod settings;
pub mod telemetry;
