//! Reconciling a TFJob: naming, TF_CONFIG, desired children, the decision core (all pure).

pub mod children;
pub mod conditions;
pub mod counts;
pub mod desired;
pub mod finish;
pub mod labels;
pub mod plan;
pub mod progress;
pub mod replicas;
pub mod restarts;
pub mod suspend;
#[cfg(test)]
pub mod testing;
pub mod tf_config;
pub mod timers;
pub mod view;
