//! TF_CONFIG (contract §5): standard and sparse formats. Pure.
