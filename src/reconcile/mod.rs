//! Reconciling a TFJob. Pure: naming and labels, TF_CONFIG, desired children, the decision core
//! (`plan`), expectations and the event log. I/O: `observe` (cache reads), `apply` (API writes),
//! `controller` (the driver and its watches).

pub mod apply;
pub mod children;
pub mod conditions;
pub mod controller;
pub mod counts;
pub mod desired;
pub mod events;
pub mod expectations;
pub mod finish;
pub mod labels;
pub mod model;
pub mod observe;
pub mod plan;
pub mod progress;
pub mod replicas;
pub mod restarts;
pub mod suspend;
#[cfg(test)]
pub mod testing;
pub mod tf_config;
pub mod timers;
pub mod unreadable;
pub mod view;
