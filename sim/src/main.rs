//! `tfjob-sim [--port N] [--kubeconfig PATH] [--nodes N] [--slow-deletion]
//! [--crash-loop-backoff INITIAL[,MAX]] [--phase-lag DURATION]`: run the simulator until Ctrl-C, writing a kubeconfig
//! for kubectl (I/O: the network, a file).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use tfjob_sim::{Options, Sim};

fn usage() -> ! {
    eprintln!(
        "usage: tfjob-sim [--port N] [--kubeconfig PATH] [--nodes N] [--slow-deletion] [--crash-loop-backoff INITIAL[,MAX]] [--phase-lag D]\n  durations like 100ms, 10s, 5m (back-off default 10s,300s, phase lag 1s: the real kubelet's)"
    );
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
            "--crash-loop-backoff" => {
                opts.crash_loop_backoff = args
                    .next()
                    .and_then(|a| parse_backoff(&a))
                    .unwrap_or_else(|| usage())
            }
            "--phase-lag" => {
                opts.phase_lag = args
                    .next()
                    .and_then(|a| parse_duration(&a))
                    .unwrap_or_else(|| usage())
            }
            _ => usage(),
        }
    }
    (opts, kubeconfig)
}

/// `100ms`, `10s`, `5m`, or plain seconds (`0.5`).
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

/// `INITIAL[,MAX]`; MAX defaults to the real 300 s (never below INITIAL).
fn parse_backoff(s: &str) -> Option<(Duration, Duration)> {
    let (initial, max) = match s.split_once(',') {
        Some((i, m)) => (parse_duration(i)?, parse_duration(m)?),
        None => {
            let i = parse_duration(s)?;
            (i, Duration::from_secs(300).max(i))
        }
    };
    Some((initial, max.max(initial)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_flag_values() {
        let ms = Duration::from_millis;
        let cases = [
            ("100ms,1s", Some((ms(100), ms(1000)))),
            ("10s,5m", Some((ms(10_000), ms(300_000)))),
            ("0.5", Some((ms(500), ms(300_000)))),
            ("2s,1s", Some((ms(2000), ms(2000)))),
            ("fast", None),
            ("1h", None),
        ];
        for (arg, want) in cases {
            assert_eq!(parse_backoff(arg), want, "{arg}");
        }
    }
}
