//! The `tfjob-operator` binary: parse the command line and run the chosen subcommand.
//! Does I/O (files, standard streams).
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::Parser;
use tfjob_operator::cli::{Cli, Command, RenderArgs};
use tfjob_operator::crd::schema::crd_yaml;
use tfjob_operator::render::render;
use tfjob_operator::settings::RunArgs;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => print(&crd_yaml()),
        Command::Render(args) => render_command(&args),
        Command::Run(args) => run_command(*args),
    }
}

fn run_command(args: RunArgs) -> ExitCode {
    tfjob_operator::telemetry::init(args.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
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

fn render_command(args: &RenderArgs) -> ExitCode {
    let input = if args.reads_stdin() {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map(|_| s)
    } else {
        std::fs::read_to_string(&args.file)
    };
    let input = match input {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    match render(&input, args.cluster_domain.as_deref()) {
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
