//! kubectl fidelity (the `kubectl` feature): the real kubectl against the `tfjob-sim` binary,
//! and kubectl's request kinds checked one by one.
mod binary;
mod requests;
