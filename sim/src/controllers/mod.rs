//! The cluster's controllers around the API core, as background tasks over the store (no
//! network I/O): the garbage collector, and the scheduler and kubelet that run pods (a pure
//! state machine in `kubelet`, driven by the loop in `kubelet_loop`).
pub(crate) mod disruption;
pub(crate) mod gc;
pub(crate) mod kubelet;
pub(crate) mod kubelet_loop;
