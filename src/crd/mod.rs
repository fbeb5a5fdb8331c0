//! The TFJob API (`kubeflow.org/v1`): types, the generated CRD, defaulting and validation.
//! Pure: no I/O.

pub mod cached;
pub mod check;
pub mod defaults;
pub mod field_error;
pub mod form;
pub mod labels;
pub mod replica_type;
pub mod schema;
pub mod settings;
pub mod spec;
pub mod status;
pub mod template;
pub mod tensorflow;
pub mod validation;

pub use replica_type::ReplicaType;
pub use spec::*;
pub use status::*;
pub use template::Template;
