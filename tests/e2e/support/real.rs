//! The real tier: a real control plane (`testcluster/`, or any cluster named by `KUBECONFIG`).
//! The operator runs there as the shipped binary with its own ServiceAccount's rights, and the
//! API server's audit log counts its requests.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::Deserialize;

/// Where the real tier's pieces are, from the environment `testcluster/e2e` sets up.
#[derive(Clone, Debug)]
pub struct RealTier {
    /// The admin's kubeconfig (`KUBECONFIG`), as the tests and kubectl use it.
    pub admin_kubeconfig: PathBuf,
    /// Credentials of the operator's ServiceAccount (`config/rbac`), else the admin's.
    pub operator_kubeconfig: PathBuf,
    /// The API server's audit log (JSON lines), when the cluster writes one.
    pub audit_log: Option<PathBuf>,
    /// The kubectl matching the cluster's version, else `kubectl` from PATH.
    pub kubectl: PathBuf,
    /// Namespace of the operator's Role (leader-election leases live there).
    pub operator_namespace: String,
    /// Where the operator processes write their logs.
    pub log_dir: PathBuf,
}

impl RealTier {
    /// The real tier when `KUBECONFIG` is set.
    pub fn from_env() -> Option<Self> {
        let admin = PathBuf::from(std::env::var_os("KUBECONFIG")?);
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let log_dir = var("TESTCLUSTER_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join("operator-logs");
        Some(Self {
            admin_kubeconfig: admin.clone(),
            operator_kubeconfig: var("TFJOB_E2E_OPERATOR_KUBECONFIG")
                .map(PathBuf::from)
                .unwrap_or_else(|| admin.clone()),
            audit_log: var("TESTCLUSTER_AUDIT_LOG").map(PathBuf::from),
            kubectl: var("TESTCLUSTER_KUBECTL")
                .map(PathBuf::from)
                .unwrap_or_else(|| "kubectl".into()),
            operator_namespace: std::env::var("TFJOB_E2E_OPERATOR_NAMESPACE")
                .unwrap_or_else(|_| "kubeflow".into()),
            log_dir,
        })
    }
}

/// The operator binary running as a process of its own.
pub struct OperatorProcess {
    child: Child,
    pub log: PathBuf,
}

impl OperatorProcess {
    /// `tfjob-operator run --namespace NS FLAGS...` with the operator's credentials; its log
    /// goes to `<log_dir>/<name>.log` (printed when a test fails).
    pub fn spawn(tier: &RealTier, namespace: &str, name: &str, flags: &[&str]) -> Self {
        std::fs::create_dir_all(&tier.log_dir).expect("operator log directory");
        let log = tier.log_dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).expect("operator log file");
        let mut args = vec![
            "run",
            "--namespace",
            namespace,
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ];
        args.extend_from_slice(flags);
        let child = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"))
            .args(&args)
            .env("KUBECONFIG", &tier.operator_kubeconfig)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .spawn()
            .expect("starting the tfjob-operator binary");
        Self { child, log }
    }

    /// SIGTERM, as Kubernetes stops a pod; waits for the exit (SIGKILL after `grace`).
    /// Returns whether it exited cleanly (status 0) within the grace period.
    pub async fn terminate(&mut self, grace: Duration) -> bool {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            if tokio::time::Instant::now() > deadline {
                self.kill();
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL: nothing drains, in-flight requests are cut.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last lines of the operator's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One request as the audit log records it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub verb: String,
    #[serde(default)]
    pub user_agent: String,
    #[serde(default)]
    pub object_ref: ObjectRef,
    #[serde(default)]
    pub response_status: ResponseStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ObjectRef {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub subresource: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResponseStatus {
    #[serde(default)]
    pub code: u16,
    /// The error's message, for failed requests.
    #[serde(default)]
    pub message: Option<String>,
}

impl AuditEntry {
    /// A 403 that means missing rights (RBAC, or admission such as
    /// OwnerReferencesPermissionEnforcement): not one for a namespace being deleted, or a
    /// quota or Pod Security refusal, which refuse a create whoever asks.
    pub fn is_permission_denied(&self) -> bool {
        let message = self.response_status.message.as_deref().unwrap_or_default();
        let anyone = [
            "because it is being terminated",
            "exceeded quota:",
            "violates PodSecurity",
        ];
        self.response_status.code == 403 && !anyone.iter().any(|m| message.contains(m))
    }

    /// `pods`, `tfjobs/status`, ...
    pub fn resource(&self) -> String {
        match &self.object_ref.subresource {
            Some(sub) => format!("{}/{sub}", self.object_ref.resource),
            None => self.object_ref.resource.clone(),
        }
    }
}

/// The audit log's size now: entries after it are what happens next.
pub fn audit_offset(log: &std::path::Path) -> u64 {
    std::fs::metadata(log).map(|m| m.len()).unwrap_or(0)
}

/// Entries of the audit log from byte `offset` on (an incomplete last line is left out).
pub fn audit_entries_since(log: &std::path::Path, offset: u64) -> Vec<AuditEntry> {
    let Ok(mut file) = std::fs::File::open(log) else {
        return Vec::new();
    };
    if file.seek(SeekFrom::Start(offset)).is_err() {
        return Vec::new();
    }
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}
