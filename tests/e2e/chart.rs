//! The Helm chart on a real API server (real tier only; the simulator has no dry run, RBAC or
//! Pod Security): everything the chart renders, at its defaults and with each values file of
//! `charts/tfjob-operator/ci/`, is accepted by `kubectl apply --dry-run=server
//! --validate=strict` (no unknown or ill-typed field), its operator pod is admitted in a namespace
//! enforcing Pod Security `restricted`; and with `watchNamespaces` the operator, installed by
//! `helm install` and run with its ServiceAccount's token, runs a job on the Roles the chart
//! gives it alone, with no right outside that namespace. Taking over Kubeflow's CRD with helm 3
//! and 4: `chart_takeover`; offline checks of the same chart: `tests/offline/chart.rs`;
//! install, upgrade, rollback and takeover with jobs running on a real node: `tests/node/helm.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};
use tfjob_operator::crd::ConditionType;

use crate::support::real::OperatorProcess;
use crate::support::{RealTier, TestCluster, has_condition, job};

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");
pub const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/tfjob-operator");

/// What `testcluster/tools --env` says (helm, the Prometheus Operator's CRDs), unless the
/// environment says it already (`testcluster/e2e` exports it).
pub fn tool(var: &str) -> PathBuf {
    static TOOLS: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    if let Some(v) = std::env::var_os(var) {
        return v.into();
    }
    let tools = TOOLS.get_or_init(|| {
        let out = Command::new(format!("{ROOT}/testcluster/tools"))
            .arg("--env")
            .output()
            .expect("run testcluster/tools");
        assert!(
            out.status.success(),
            "testcluster/tools: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    });
    tools
        .get(var)
        .unwrap_or_else(|| panic!("testcluster/tools --env gives no {var}"))
        .into()
}

pub fn run(program: &Path, args: &[&str], input: Option<&str>) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.unwrap_or("").as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(stdout + &stderr)
    } else {
        Err(format!(
            "{} {}: {stderr}{stdout}",
            program.display(),
            args.join(" ")
        ))
    }
}

/// `kubectl --kubeconfig <admin> ARGS` with INPUT on its standard input.
pub fn kubectl(real: &RealTier, args: &[&str], input: Option<&str>) -> Result<String, String> {
    let mut all = vec!["--kubeconfig", real.admin_kubeconfig.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&real.kubectl, &all, input)
}

/// `helm template RELEASE charts/tfjob-operator -n NAMESPACE ARGS` (helm 4).
fn template(release: &str, namespace: &str, args: &[&str]) -> String {
    let mut all = vec!["template", release, CHART, "--namespace", namespace];
    all.extend_from_slice(args);
    run(&tool("TFJOB_HELM4"), &all, None).unwrap_or_else(|e| panic!("{e}"))
}

/// The values files of the matrix, as `helm template` arguments, with the defaults first.
fn matrix() -> Vec<(String, Vec<String>)> {
    let mut sets = vec![("defaults".to_string(), vec![])];
    let mut files: Vec<PathBuf> = std::fs::read_dir(format!("{CHART}/ci"))
        .expect("charts/tfjob-operator/ci")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        sets.push((name, vec!["--values".into(), f.to_string_lossy().into()]));
    }
    sets
}

/// The namespaces the rendered objects live in (they must exist for a dry run).
fn namespaces_of(manifest: &str) -> Vec<String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(manifest).expect("YAML");
    let mut out: Vec<String> = docs
        .iter()
        .filter_map(|d| d["metadata"]["namespace"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The operator's pod as the Deployment of MANIFEST would create it, in NAMESPACE.
fn operator_pod(manifest: &str, namespace: &str) -> Value {
    let docs: Vec<Value> = serde_saphyr::from_multiple(manifest).expect("YAML");
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment rendered");
    let template = &deployment["spec"]["template"];
    let mut spec = template["spec"].clone();
    // (Its ServiceAccount lives in the release's namespace, not in this one.)
    spec.as_object_mut().unwrap().remove("serviceAccountName");
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "chart-operator-pod", "namespace": namespace,
            "labels": template["metadata"]["labels"]},
        "spec": spec,
    })
}

#[tokio::test]
async fn chart_renders_objects_the_api_server_accepts_and_a_restricted_pod() {
    let c = TestCluster::without_operator("chart-dry-run").await;
    let Some(real) = c.real.clone() else {
        return eprintln!("skipped: needs a real API server (dry run, Pod Security)");
    };
    // The ServiceMonitor's and PrometheusRule's CRDs, from the Prometheus Operator's module
    // (every-value-values.yaml turns both on).
    let crds = tool("TFJOB_PROMETHEUS_OPERATOR_CRDS");
    for kind in ["servicemonitors", "prometheusrules"] {
        let crd = crds.join(format!("monitoring.coreos.com_{kind}.yaml"));
        let crd = crd.to_str().unwrap();
        let applied = [
            "apply",
            "--server-side",
            "--field-manager",
            "e2e-chart",
            "-f",
            crd,
        ];
        kubectl(&real, &applied, None).unwrap_or_else(|e| panic!("{e}"));
        // Polled, not `kubectl wait --for=condition=Established`: right after the create the
        // CRD has no conditions yet, and that wait fails at once instead of waiting.
        let name = format!("crd/{kind}.monitoring.coreos.com");
        let established = [
            "get",
            &name,
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
        ];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !kubectl(&real, &established, None).is_ok_and(|o| o.trim().starts_with("True")) {
            assert!(
                std::time::Instant::now() < deadline,
                "{name} not Established within 30 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    // Where the operator's pod must be admitted.
    kubectl(
        &real,
        &[
            "label",
            "namespace",
            &c.namespace,
            "pod-security.kubernetes.io/enforce=restricted",
        ],
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let mut made = Vec::new();
    let mut refused = Vec::new();
    for (name, args) in matrix() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let manifest = template("tfjob-operator", "kubeflow", &args);
        for ns in namespaces_of(&manifest) {
            if kubectl(&real, &["get", "namespace", &ns], None).is_err() {
                kubectl(&real, &["create", "namespace", &ns], None)
                    .unwrap_or_else(|e| panic!("{e}"));
                made.push(ns);
            }
        }
        match kubectl(
            &real,
            &["apply", "--dry-run=server", "--validate=strict", "-f", "-"],
            Some(&manifest),
        ) {
            Ok(out) if out.contains("Warning") => {
                refused.push(format!("{name}: applied with a warning:\n{out}"))
            }
            Ok(out) => eprintln!("{name}: the API server accepts every object:\n{out}"),
            Err(e) => refused.push(format!("{name}: {e}")),
        }
        let pod = operator_pod(&manifest, &c.namespace).to_string();
        if let Err(e) = kubectl(
            &real,
            &["create", "--dry-run=server", "-f", "-"],
            Some(&pod),
        ) {
            refused.push(format!(
                "{name}: the operator's pod under Pod Security restricted: {e}"
            ));
        }
    }
    for ns in &made {
        let _ = kubectl(&real, &["delete", "namespace", ns, "--wait=false"], None);
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));

    // The check itself refuses what is wrong: a field the API does not know, and a pod that
    // is not `restricted`.
    let manifest = template(
        "tfjob-operator",
        "kubeflow",
        &["--set", "podSecurityContext.runAsNonRoot=false"],
    );
    let pod = operator_pod(&manifest, &c.namespace).to_string();
    let err = kubectl(
        &real,
        &["create", "--dry-run=server", "-f", "-"],
        Some(&pod),
    )
    .expect_err("a pod allowed to run as root was admitted under restricted");
    assert!(err.contains("violates PodSecurity"), "{err}");
    // (Kubernetes objects inside a value, such as affinity, are checked by the API server.)
    let unknown = template(
        "tfjob-operator",
        "kubeflow",
        &["--set", "affinity.nodeAffinity.preferredDuringScheduling=1"],
    );
    assert!(
        kubectl(
            &real,
            &["apply", "--dry-run=server", "--validate=strict", "-f", "-"],
            Some(&unknown)
        )
        .is_err(),
        "affinity.nodeAffinity.preferredDuringScheduling was accepted"
    );
}

#[tokio::test]
async fn chart_watching_a_namespace_runs_a_job_on_its_roles_alone() {
    let c = TestCluster::without_operator("chart-roles").await;
    let Some(real) = c.real.clone() else {
        return eprintln!("skipped: needs RBAC (real tier)");
    };
    let ns = c.namespace.clone();
    let helm = tool("TFJOB_HELM4");
    let kubeconfig = real.admin_kubeconfig.to_str().unwrap().to_string();
    // Installed for real, in the test's namespace, watching only it: no CRD (crds/ is
    // installed), no replicas (this control plane runs no Deployment controller): the binary
    // runs as the chart's ServiceAccount instead.
    let release = ns.clone();
    let out = run(
        &helm,
        &[
            "install",
            &release,
            CHART,
            "--namespace",
            &ns,
            "--kubeconfig",
            &kubeconfig,
            "--set",
            "crds.enabled=false",
            "--set",
            "replicas=0",
            "--set",
            &format!("watchNamespaces={{{ns}}}"),
        ],
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{out}");
    let fullname = format!("{release}-tfjob-operator");
    let user = format!("system:serviceaccount:{ns}:{fullname}");
    let can = |args: &[&str]| {
        let mut all = vec!["auth", "can-i", "--as", user.as_str()];
        all.extend_from_slice(args);
        kubectl(&real, &all, None)
            .map(|o| o.trim() == "yes")
            .unwrap_or(false)
    };
    assert!(
        can(&["create", "pods", "-n", &ns]),
        "no right to create pods in {ns}"
    );
    assert!(can(&["watch", "tfjobs.kubeflow.org", "-n", &ns]));
    assert!(
        !can(&["list", "pods", "--all-namespaces"]),
        "{user} lists pods everywhere"
    );
    assert!(
        !can(&["list", "tfjobs.kubeflow.org", "-n", "default"]),
        "{user} lists TFJobs in default"
    );

    let kubeconfig_path = real.log_dir.join(format!("{fullname}.kubeconfig"));
    std::fs::create_dir_all(&real.log_dir).unwrap();
    run(
        Path::new(&format!("{ROOT}/testcluster/operator-kubeconfig")),
        &[&ns, &fullname, kubeconfig_path.to_str().unwrap()],
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let tier = RealTier {
        operator_kubeconfig: kubeconfig_path,
        ..real.clone()
    };
    let operator = OperatorProcess::spawn(
        &tier,
        &ns,
        &format!("{fullname}-operator"),
        &["--leader-elect", "--leader-election-namespace", &ns],
    );
    c.create(job("chart-job", &[("Worker", 1, "Never")])).await;
    let done = c
        .until_condition("chart-job", ConditionType::Succeeded)
        .await;
    assert!(has_condition(&done, ConditionType::Succeeded));
    let log = operator.log_tail(400);
    assert!(!log.to_lowercase().contains("forbidden"), "{log}");
    drop(operator);
    run(
        &helm,
        &[
            "uninstall",
            &release,
            "--namespace",
            &ns,
            "--kubeconfig",
            &kubeconfig,
            "--wait",
        ],
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
