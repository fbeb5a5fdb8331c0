//! The `tfjob-operator` binary.
fn main() {}
