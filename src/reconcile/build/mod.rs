//! The objects a job wants, built from its spec alone: each replica's pod and headless service
//! (`children`) with its TF_CONFIG (`tf_config`), and for gang scheduling the PodGroup and what
//! the pods carry for it (`gang`). Pure: no API client, no clock; `render` shows exactly these.

pub mod children;
pub mod gang;
pub mod tf_config;
