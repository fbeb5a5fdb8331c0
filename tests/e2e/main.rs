//! End to end: the real controller against a cluster, the in-memory simulator by default or a
//! real one when `KUBECONFIG` is set (`testcluster/e2e`). `lifecycle`, `restarts`, ... drive the operator through
//! TFJobs as a user would; `faults::*` is the fault suite (issue "Robust controller", R1–R11:
//! fault injection, checked black-box through TFJobs, pods, services, events and the
//! simulator's request counters; randomized tests print their seed, `FAULTS_SEED=<n>`
//! replays it). One binary, so `support` and the operator are compiled and linked once.

mod support;

mod admission;
mod binary;
mod chart;
mod chart_takeover;
mod cluster;
mod convert;
mod failures;
mod gang;
mod install;
mod kubectl;
mod kubeflow;
mod kueue;
mod leader;
mod lifecycle;
mod metrics;
mod monitoring;
mod policies;
mod recovery;
mod refusals;
mod restarts;
mod robustness;
mod success;
mod takeover;

mod faults;
