//! What tests inject into the API server to play a hostile cluster: failing or slow requests
//! (`faults`), clients frozen after their N-th write (`freeze`), late watch events
//! (`watch_delay`), watch connections cut, all or by resource (`watch_cut`), drawn from a seeded source (`rng`). Consulted by the HTTP front end; no I/O
//! of their own.
pub(crate) mod faults;
pub(crate) mod freeze;
mod rng;
pub(crate) mod watch_cut;
pub(crate) mod watch_delay;
