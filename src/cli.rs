//! Command line of `tfjob-operator`: subcommands and flags, each flag with an environment
//! fallback. Parsing only, no I/O.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    // ---- `run` (the controller) goes here; added with the controller. ----
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// TFJob manifest (YAML, several documents allowed); `-` reads standard input.
    pub file: PathBuf,

    /// Cluster domain appended to the service addresses in TF_CONFIG.
    #[arg(long, env = "CUSTOM_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,
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
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
