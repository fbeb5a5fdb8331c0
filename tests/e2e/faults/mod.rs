//! The fault suite (issue "Robust controller", R1–R11; R12 to R14 since).

mod bad_input;
mod cache;
mod common;
mod r10_recreated_job;
mod r11_soak;
mod r12_child_watch_paths;
mod r13_slow_events;
mod r14_turns;
mod r1_api_errors;
mod r2_kill;
mod r3_watch_delays;
mod r4_watch_loss;
mod r5_leader;
mod r6_sigterm;
mod r7_concurrent_updates;
mod r8_restart_table;
mod r9_restart_counts;
