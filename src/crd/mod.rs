//! The TFJob API (`kubeflow.org/v1`): types, the generated CRD, defaulting and validation.
//! Pure: no I/O.

pub mod check;
pub mod defaults;
pub mod form;
pub mod names;
pub mod object;
pub mod schema;
pub mod spec;
pub mod status;
pub mod validation;

pub use spec::*;
pub use status::*;
