//! The no-cluster demo: `cargo run --example local -- examples/tf_job_mnist.yaml`.
//!
//! Starts the in-memory Kubernetes API server and pod simulator (`sim/`), installs the CRD,
//! runs the real controller in process, applies the given TFJob(s) — converting older forms
//! as `tfjob-operator convert` does — and prints their progress the way `kubectl get
//! tfjobs,pods -w` would, until every job has finished. The logic is in `demo.rs` and
//! `watch.rs`, which `tests/offline/demo_table.rs` runs with every command the README shows.

mod demo;
mod watch;

use clap::Parser;

/// Exit status 0 when every job succeeded, 1 when one failed (or the demo could not run), 2
/// when the input has problems (then nothing is started).
#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = demo::Args::parse();
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match demo::run(&args, &mut std::io::stdout(), ctrl_c).await {
        Ok(outcomes) if outcomes.iter().all(|o| o.state == "Succeeded") => {
            std::process::ExitCode::SUCCESS
        }
        Ok(_) => std::process::ExitCode::FAILURE,
        // Printed by us, not by returning the error from main: that would print its Debug
        // form, with a backtrace when RUST_BACKTRACE is set.
        Err(e) => {
            let (message, status) = demo::failure(&e);
            eprintln!("{message}");
            std::process::ExitCode::from(status)
        }
    }
}
