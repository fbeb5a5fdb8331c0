//! The desired Pod and headless Service of each replica (contract §4). Pure, deterministic.
