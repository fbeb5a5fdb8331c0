//! `tfjob-sim [--port N] [--kubeconfig PATH] [--nodes N] [--slow-deletion]`: run the simulator
//! until Ctrl-C, writing a kubeconfig for kubectl.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use tfjob_sim::{Options, Sim};

fn usage() -> ! {
    eprintln!("usage: tfjob-sim [--port N] [--kubeconfig PATH] [--nodes N] [--slow-deletion]");
    std::process::exit(2)
}

fn parse_args() -> (Options, PathBuf) {
    let mut opts = Options::default();
    let mut kubeconfig = PathBuf::from("tfjob-sim.kubeconfig");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => {
                opts.port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--nodes" => {
                opts.nodes = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--kubeconfig" => {
                kubeconfig = args.next().map(PathBuf::from).unwrap_or_else(|| usage())
            }
            "--slow-deletion" => opts.fast_deletion = false,
            _ => usage(),
        }
    }
    (opts, kubeconfig)
}

#[tokio::main]
async fn main() {
    let (opts, kubeconfig) = parse_args();
    let sim = match Sim::start(opts).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tfjob-sim: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = sim.write_kubeconfig(&kubeconfig) {
        eprintln!("tfjob-sim: writing {}: {e}", kubeconfig.display());
        std::process::exit(1);
    }
    println!("tfjob-sim listening on {}", sim.url());
    println!("kubeconfig: {}", kubeconfig.display());
    let _ = tokio::signal::ctrl_c().await;
    sim.shutdown();
}
