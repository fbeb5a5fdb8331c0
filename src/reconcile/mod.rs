//! Reconciling a TFJob: naming, TF_CONFIG, desired children, the decision core (all pure).

pub mod desired;
pub mod labels;
pub mod plan;
pub mod tf_config;
