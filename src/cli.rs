//! Command line of `tfjob-operator`: subcommands and flags, each flag with an environment
//! fallback. Parsing only, no I/O.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::settings::RunArgs;

/// Runs Kubeflow TFJobs (kubeflow.org/v1) on Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "tfjob-operator", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the TFJob CustomResourceDefinition as YAML.
    Crd,
    /// Print the pods and services the operator would create for a TFJob, or its
    /// validation errors (exit code 1).
    Render(RenderArgs),
    /// Run the controller: watch TFJobs and run their pods and services.
    Run(Box<RunArgs>),
    /// Rewrite TFJob manifests of older forms as kubeflow.org/v1 YAML on standard output:
    /// tf-operator v1alpha1, kubeflow.org v1alpha2/v1beta1/v1beta2 and early v1, T9k's
    /// TensorFlowTrainingJob. Each document says in comments what changed and what was
    /// dropped; other kinds pass through unchanged. A summary goes to standard error.
    Convert(ConvertArgs),
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Manifests (YAML, several documents allowed); `-` reads standard input.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// TFJob manifest (YAML, several documents allowed); `-` reads standard input.
    pub file: PathBuf,

    /// Cluster domain appended to the service addresses in TF_CONFIG.
    #[arg(long, env = "CUSTOM_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,

    /// Show the PodGroup and pods as `run --gang-scheduler-name` makes them.
    #[command(flatten)]
    pub gang: crate::settings::GangArgs,
}

impl RenderArgs {
    /// Whether the manifest comes from standard input.
    pub fn reads_stdin(&self) -> bool {
        self.file.as_os_str() == "-"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_subcommands() {
        assert!(matches!(
            Cli::parse_from(["tfjob-operator", "crd"]).command,
            Command::Crd
        ));
        let Command::Render(args) =
            Cli::parse_from(["tfjob-operator", "render", "-", "--cluster-domain", "c.l"]).command
        else {
            panic!("not render")
        };
        assert!(args.reads_stdin());
        assert_eq!(args.cluster_domain.as_deref(), Some("c.l"));
        let Command::Render(args) =
            Cli::parse_from(["tfjob-operator", "render", "job.yaml"]).command
        else {
            panic!("not render")
        };
        assert!(!args.reads_stdin());
    }

    #[test]
    fn convert_takes_files() {
        let Command::Convert(args) =
            Cli::parse_from(["tfjob-operator", "convert", "a.yaml", "-"]).command
        else {
            panic!("not convert")
        };
        assert_eq!(args.files, [PathBuf::from("a.yaml"), PathBuf::from("-")]);
        assert!(Cli::try_parse_from(["tfjob-operator", "convert"]).is_err());
    }

    #[test]
    fn run_flags_have_the_documented_defaults() {
        let Command::Run(args) = Cli::parse_from(["tfjob-operator", "run"]).command else {
            panic!("not run")
        };
        assert!(
            args.concurrency > 1,
            "Kubeflow's concurrency of 1 is a scale complaint"
        );
        assert!(!args.leader_elect);
        assert_eq!(args.worker_threads, 1);
        assert!(Cli::try_parse_from(["tfjob-operator", "run", "--worker-threads", "0"]).is_err());
        assert_eq!(args.metrics_bind_address, ":8080");
        assert_eq!(args.health_probe_bind_address, ":8081");
        let Command::Run(args) = Cli::parse_from([
            "tfjob-operator",
            "run",
            "--namespace",
            "a",
            "--namespace",
            "b,c",
            "--leader-elect",
        ])
        .command
        else {
            panic!("not run")
        };
        assert_eq!(args.namespaces, ["a", "b", "c"]);
        assert!(args.leader_elect);
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
