//! End to end: the real controller against a cluster, the in-memory simulator by default or a
//! real one when `KUBECONFIG` is set (`testcluster/e2e`). `e2e::*` drive the operator through
//! TFJobs as a user would; `faults::*` is the fault suite (issue "Robust controller", R1–R11:
//! fault injection, checked black-box through TFJobs, pods, services, events and the
//! simulator's request counters; randomized tests print their seed, `FAULTS_SEED=<n>`
//! replays it). One binary, so `support` and the operator are compiled and linked once.

mod support;

mod e2e {
    mod binary;
    mod cluster;
    mod convert;
    mod failures;
    mod gang;
    mod install;
    mod kubectl;
    mod leader;
    mod lifecycle;
    mod refusals;
    mod restarts;
    mod robustness;
    mod success;
    mod takeover;
}

mod faults {
    mod bad_input;
    mod cache;
    mod common;
    mod r10_recreated_job;
    mod r11_soak;
    mod r1_api_errors;
    mod r2_kill;
    mod r3_watch_delays;
    mod r4_watch_loss;
    mod r5_leader;
    mod r6_sigterm;
    mod r7_concurrent_updates;
    mod r8_restart_table;
    mod r9_restart_counts;
}
