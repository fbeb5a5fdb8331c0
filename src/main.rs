//! The `tfjob-operator` binary: parse the command line and run the chosen subcommand.
//! Does I/O (files, standard streams).
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::Parser;
use tfjob_operator::cli::{Cli, Command, ConvertArgs, RenderArgs};
use tfjob_operator::convert::convert;
use tfjob_operator::crd::schema::crd_yaml;
use tfjob_operator::render::render_with;
use tfjob_operator::settings::RunArgs;

/// jemalloc (feature `jemalloc`, on in the image), with a background thread giving freed pages back within about a second
/// (`.cargo/config.toml`): after a big job's children are gone the operator shrinks again
/// (glibc's malloc kept them for good), and bursts fragment less (BENCHMARKS.md has the
/// numbers; mimalloc was tried too and idled at 21 MiB).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => print(&crd_yaml()),
        Command::Render(args) => render_command(&args),
        Command::Run(args) => run_command(*args),
        Command::Convert(args) => convert_command(&args),
    }
}

fn run_command(args: RunArgs) -> ExitCode {
    tfjob_operator::telemetry::init(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(args.worker_threads))
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(tfjob_operator::operator::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A file's text; `-` is standard input.
fn read_input(file: &std::path::Path) -> std::io::Result<String> {
    if file.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map(|_| s)
    } else {
        std::fs::read_to_string(file)
    }
}

fn convert_command(args: &ConvertArgs) -> ExitCode {
    let mut outputs = Vec::new();
    let mut failed = false;
    for file in &args.files {
        let name = file.display().to_string();
        let result = read_input(file)
            .map_err(|e| vec![e.to_string()])
            .and_then(|text| convert(&text, &name));
        match result {
            Ok(c) => {
                for line in &c.summary {
                    eprintln!("{line}");
                }
                outputs.push(c.yaml);
            }
            Err(errors) => {
                failed = true;
                for e in errors {
                    eprintln!("{name}: {e}");
                }
            }
        }
    }
    if failed {
        return ExitCode::FAILURE;
    }
    print(&outputs.join("---\n"))
}

fn render_command(args: &RenderArgs) -> ExitCode {
    let input = match read_input(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    let gang = args.gang.gang();
    match render_with(&input, args.cluster_domain.as_deref(), gang.as_ref()) {
        Ok(yaml) => print(&yaml),
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            ExitCode::FAILURE
        }
    }
}

fn print(text: &str) -> ExitCode {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("writing standard output: {e}");
            ExitCode::FAILURE
        }
    }
}
