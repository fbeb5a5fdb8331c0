//! The real control plane of the side-by-side benchmark: `testcluster/up` with its state in
//! `target/side-by-side/cluster`, started fresh for every operator and figure, so each runs on
//! an empty etcd with nothing left over from the one before. Neither Kueue nor the gang
//! schedulers (they would watch the same objects), and the audit policy that also logs
//! watches. I/O (runs the testcluster scripts and kubectl, the benchmark's API client).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;

use super::audit::Tail;

/// The repository's root (this bench's package).
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The kwok node every pod is bound to (the pod template names it: no scheduling).
pub const NODE: &str = "kwok-node-0";

/// A running test cluster; stopped when dropped.
pub struct Cluster {
    pub dir: PathBuf,
    pub kubectl: PathBuf,
    pub audit_log: PathBuf,
    pub client: Client,
}

impl Cluster {
    /// `testcluster/down` (a previous run may have left it up), then `testcluster/up`.
    pub async fn up(dir: &Path) -> anyhow::Result<Self> {
        script(dir, "down", &["--clean"])?;
        script(dir, "up", &[])?;
        let kubeconfig = dir.join("admin.kubeconfig");
        let config = Config::from_custom_kubeconfig(
            Kubeconfig::read_from(&kubeconfig)?,
            &KubeConfigOptions::default(),
        )
        .await?;
        let env = std::fs::read_to_string(dir.join("env"))?;
        let kubectl = env_value(&env, "TESTCLUSTER_KUBECTL")?;
        let cluster = Self {
            dir: dir.to_path_buf(),
            kubectl: kubectl.into(),
            audit_log: dir.join("audit.log"),
            client: Client::try_from(config)?,
        };
        // Room for every pod of the largest figure on the one node.
        script(
            dir,
            "node",
            &["resize", NODE, "--pods", "100000", "--cpu", "100000"],
        )?;
        Ok(cluster)
    }

    /// `kubectl` as the cluster's admin; its output on failure.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
        let mut command = Command::new(&self.kubectl);
        command
            .arg("--kubeconfig")
            .arg(self.dir.join("admin.kubeconfig"))
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().context("running kubectl")?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            std::io::Write::write_all(&mut pipe, input.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "kubectl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A namespace, once its `default` ServiceAccount exists (pods are refused before).
    pub async fn namespace(&self, name: &str) -> anyhow::Result<()> {
        self.kubectl(&["create", "namespace", name], None)?;
        for _ in 0..300 {
            if self
                .kubectl(&["-n", name, "get", "serviceaccount", "default"], None)
                .is_ok()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("namespace {name}: no default ServiceAccount after 30 s")
    }

    /// A kubeconfig with a ServiceAccount's token (`testcluster/operator-kubeconfig`).
    pub fn service_account_kubeconfig(
        &self,
        namespace: &str,
        account: &str,
    ) -> anyhow::Result<PathBuf> {
        let out = self.dir.join(format!("{namespace}-{account}.kubeconfig"));
        let out_str = out.to_string_lossy().into_owned();
        script(
            &self.dir,
            "operator-kubeconfig",
            &[namespace, account, &out_str],
        )?;
        Ok(out)
    }

    pub fn tail(&self) -> anyhow::Result<Tail> {
        Tail::at_end(self.audit_log.clone())
    }

    pub fn tfjobs(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &tfjob_resource())
    }

    /// Create `jobs` in `namespace`, 32 requests in flight: applied at once.
    pub async fn create_jobs(&self, namespace: &str, jobs: Vec<Value>) -> anyhow::Result<()> {
        let api = self.tfjobs(namespace);
        stream::iter(jobs)
            .map(|job| {
                let api = api.clone();
                async move {
                    let job: DynamicObject = serde_json::from_value(job)?;
                    api.create(&PostParams::default(), &job).await?;
                    anyhow::Ok(())
                }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<_>>()
            .await?;
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = script(&self.dir, "down", &[]) {
            eprintln!("side-by-side: testcluster/down: {e:#}");
        }
    }
}

pub fn tfjob_resource() -> ApiResource {
    ApiResource {
        group: "kubeflow.org".into(),
        version: "v1".into(),
        api_version: "kubeflow.org/v1".into(),
        kind: "TFJob".into(),
        plural: "tfjobs".into(),
    }
}

/// Runs `testcluster/<name> args` for the cluster in `dir`; its output on failure.
pub fn script(dir: &Path, name: &str, args: &[&str]) -> anyhow::Result<String> {
    let path = Path::new(ROOT).join("testcluster").join(name);
    let out = Command::new(&path)
        .args(args)
        .env("TESTCLUSTER_DIR", dir)
        .env("TESTCLUSTER_GANG", "0")
        .env("TESTCLUSTER_KUEUE", "0")
        .env(
            "TESTCLUSTER_AUDIT_POLICY",
            Path::new(ROOT).join("benches/side_by_side/audit-policy.yaml"),
        )
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", path.display()))?;
    if !out.status.success() {
        bail!(
            "testcluster/{name} {} failed:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `NAME=value` or `export NAME=value` from a shell file of such lines.
pub fn env_value(text: &str, name: &str) -> anyhow::Result<String> {
    text.lines()
        .find_map(|l| {
            l.trim_start_matches("export ")
                .strip_prefix(name)?
                .strip_prefix('=')
                .map(|v| v.trim_matches(|c| c == '\'' || c == '"').to_string())
        })
        .with_context(|| format!("{name} not found"))
}
