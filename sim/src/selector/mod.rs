//! Label and field selectors of list/watch requests, parsed and matched like kube-apiserver
//! (grammar and semantics of apimachinery's `labels.Parse` / `fields.ParseSelector`). Pure, no I/O.

mod field;
mod label;
mod lexer;

pub use field::FieldSelector;
pub use label::LabelSelector;
