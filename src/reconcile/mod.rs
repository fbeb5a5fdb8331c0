//! Reconciling a TFJob. Pure: naming and labels, TF_CONFIG, desired children, the decision core
//! (`plan`), expectations and the event log. I/O: `observe` (cache reads), `apply` (API writes),
//! `controller` (the driver and its watches).

pub mod apply;
pub mod controller;
pub mod desired;
pub mod events;
pub mod expectations;
pub mod labels;
pub mod observe;
pub mod plan;
pub mod tf_config;
pub mod unreadable;
