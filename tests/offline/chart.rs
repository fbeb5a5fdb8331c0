//! The Helm chart (`charts/tfjob-operator`) against what it must equal and what its values say:
//! - its CRD file is `crds/kubeflow.org_tfjobs.yaml` byte for byte, rendered as that CRD with
//!   `helm.sh/resource-policy: keep`;
//! - at its defaults it renders the objects of `kubectl kustomize config/default` plus `crds/`
//!   (with the ServiceMonitor on, plus `config/prometheus`; with `kueue.enabled`, `config/kueue`), Helm's own labels and annotations
//!   aside: the chart and `config/` cannot drift apart;
//! - `helm lint --strict` passes with helm 3 and helm 4, and both render each values file of
//!   `charts/tfjob-operator/ci/` (the matrix the real tier dry-runs, `tests/e2e/chart.rs`) into
//!   the same objects; each file renders what it says;
//! - `values.schema.json` refuses a misspelled or ill-typed value and names it, and every value
//!   is in docs/install.md's table.
//!
//! helm comes from `tools` (built from Go modules once per machine).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::tools::tool;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/tfjob-operator");
/// The labels every chart puts on its objects and `config/` has no use for.
const HELM_LABELS: &[&str] = &[
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
];
/// Helm's own annotation: what `helm uninstall` leaves.
const HELM_ANNOTATIONS: &[&str] = &["helm.sh/resource-policy"];

/// The helm binaries, 3 and 4 (`tools`).
fn helms() -> &'static [(&'static str, PathBuf); 2] {
    static HELMS: OnceLock<[(&'static str, PathBuf); 2]> = OnceLock::new();
    HELMS.get_or_init(|| [("helm 3", tool("helm3")), ("helm 4", tool("helm4"))])
}

fn helm4() -> &'static Path {
    &helms()[1].1
}

/// `helm ARGS`: its standard output, or its standard error as the error.
fn run_helm(helm: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(helm)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", helm.display()));
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `helm template tfjob-operator charts/tfjob-operator -n kubeflow ARGS`, as objects.
fn template(helm: &Path, args: &[&str]) -> Result<Vec<Value>, String> {
    let mut all = vec![
        "template",
        "tfjob-operator",
        CHART,
        "--namespace",
        "kubeflow",
    ];
    all.extend_from_slice(args);
    let text = run_helm(helm, &all)?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("helm template {args:?} is not YAML: {e}\n{text}"));
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

fn rendered(args: &[&str]) -> Vec<Value> {
    template(helm4(), args).unwrap_or_else(|e| panic!("helm template {args:?}: {e}"))
}

/// The values files of the matrix (charts/tfjob-operator/ci/), by name.
fn values_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(format!("{CHART}/ci"))
        .expect("charts/tfjob-operator/ci")
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, p.to_string_lossy().into_owned())
        })
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    files
}

fn values_file(name: &str) -> String {
    format!("{CHART}/ci/{name}")
}

fn kustomize(dir: &str) -> Vec<Value> {
    let out = Command::new("kubectl")
        .args(["kustomize", &format!("{ROOT}/{dir}")])
        .output()
        .expect("kubectl must be installed (see .ci/run)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_saphyr::from_multiple(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

fn crd_of_crds() -> Value {
    serde_saphyr::from_str(include_str!("../../crds/kubeflow.org_tfjobs.yaml")).unwrap()
}

/// Drops Helm's own labels and annotations (and maps they leave empty) wherever objects and
/// pod templates carry them; numbers compared as floats (YAML tools print 0.0 as 0).
fn normalise(mut doc: Value) -> Value {
    fn strip(meta: &mut Value) {
        for (field, keys) in [("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)] {
            if let Some(map) = meta.get_mut(field).and_then(Value::as_object_mut) {
                for k in keys {
                    map.remove(*k);
                }
                if map.is_empty() {
                    meta.as_object_mut().unwrap().remove(field);
                }
            }
        }
    }
    if let Some(meta) = doc.get_mut("metadata") {
        strip(meta);
    }
    if let Some(meta) = doc.pointer_mut("/spec/template/metadata") {
        strip(meta);
    }
    numbers_as_floats(doc)
}

fn numbers_as_floats(v: Value) -> Value {
    match v {
        Value::Number(n) => n.as_f64().map(Value::from).unwrap_or(Value::Number(n)),
        Value::Array(a) => Value::Array(a.into_iter().map(numbers_as_floats).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, numbers_as_floats(v)))
                .collect(),
        ),
        other => other,
    }
}

fn key(doc: &Value) -> String {
    format!(
        "{} {}/{}",
        doc["kind"].as_str().unwrap_or("?"),
        doc["metadata"]["namespace"].as_str().unwrap_or(""),
        doc["metadata"]["name"].as_str().unwrap_or("?")
    )
}

fn by_key(docs: Vec<Value>) -> BTreeMap<String, Value> {
    docs.into_iter().map(|d| (key(&d), normalise(d))).collect()
}

/// Every object that differs, is missing or is extra, with both sides: empty when equal.
fn differences(chart: Vec<Value>, config: Vec<Value>) -> Vec<String> {
    let (chart, config) = (by_key(chart), by_key(config));
    let mut out = Vec::new();
    for (k, want) in &config {
        match chart.get(k) {
            None => out.push(format!("{k}: in config/, not rendered by the chart")),
            Some(got) if got != want => out.push(format!(
                "{k} differs at {}",
                first_difference(got, want, String::new())
            )),
            Some(_) => {}
        }
    }
    for k in chart.keys().filter(|k| !config.contains_key(*k)) {
        out.push(format!("{k}: rendered by the chart, not in config/"));
    }
    out
}

/// Where A and B first differ, as a JSON path, with both values there.
fn first_difference(a: &Value, b: &Value, path: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                if x.get(k) != y.get(k) {
                    let (u, v) = (
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                    );
                    return first_difference(u, v, format!("{path}.{k}"));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                if u != v {
                    return first_difference(u, v, format!("{path}[{i}]"));
                }
            }
        }
        _ => {}
    }
    format!("{path}:\n  chart:   {a}\n  config/: {b}")
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} among {:?}", keys(docs)))
}

fn keys(docs: &[Value]) -> Vec<String> {
    docs.iter().map(key).collect()
}

fn container(docs: &[Value]) -> &Value {
    &find(docs, "Deployment", "tfjob-operator")["spec"]["template"]["spec"]["containers"][0]
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// The chart cannot read outside its folder: the CRD, the alerts and the dashboard it renders
/// are copies of crds/'s and config/monitoring's, byte for byte.
#[test]
fn the_charts_files_are_crds_and_config_monitorings_byte_for_byte() {
    let copies = [
        ("crds/kubeflow.org_tfjobs.yaml", "kubeflow.org_tfjobs.yaml"),
        ("config/monitoring/alerts.yaml", "alerts.yaml"),
        ("config/monitoring/dashboard.json", "dashboard.json"),
    ];
    for (source, copy) in copies {
        let read = |p: String| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(
            read(format!("{CHART}/files/{copy}")) == read(format!("{ROOT}/{source}")),
            "charts/tfjob-operator/files/{copy} differs from {source}; copy it:\n    cp {source} charts/tfjob-operator/files/"
        );
    }
}

#[test]
fn at_its_defaults_the_chart_renders_config_default_and_the_crd_of_crds() {
    let mut config = kustomize("config/default");
    config.push(crd_of_crds());
    for (helm_name, helm) in helms() {
        let chart = template(helm, &[]).unwrap_or_else(|e| panic!("{helm_name}: {e}"));
        let diff = differences(chart.clone(), config.clone());
        assert!(
            diff.is_empty(),
            "{helm_name}: the chart at its defaults and config/default + crds/ differ:\n{}",
            diff.join("\n")
        );
        // What the comparison set aside: the CRD is kept on uninstall, every object carries
        // the chart's labels.
        let crd = find(&chart, "CustomResourceDefinition", "tfjobs.kubeflow.org");
        assert_eq!(
            crd["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
            "{helm_name}"
        );
        for doc in &chart {
            assert_eq!(
                doc["metadata"]["labels"]["app.kubernetes.io/managed-by"],
                "Helm",
                "{helm_name}: {}",
                key(doc)
            );
        }
    }
}

#[test]
fn with_the_service_monitor_alerts_and_dashboard_the_chart_adds_config_prometheus_and_monitoring() {
    let mut config = kustomize("config/default");
    config.push(crd_of_crds());
    config.extend(kustomize("config/prometheus"));
    config.extend(kustomize("config/monitoring"));
    let chart = rendered(&[
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--set",
        "metrics.prometheusRule.enabled=true",
        "--set",
        "metrics.dashboard.enabled=true",
    ]);
    let diff = differences(chart, config);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
}

#[test]
fn with_kueue_enabled_the_chart_renders_config_kueue() {
    let mut config = kustomize("config/kueue");
    config.push(crd_of_crds());
    let chart = rendered(&["--set", "kueue.enabled=true"]);
    let diff = differences(chart, config);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
}

/// With namespaces listed, the Kueue mode's rules on Workloads and TFJobs join each Role, and
/// only its cluster-scoped reads stay in a ClusterRole.
#[test]
fn kueue_with_watched_namespaces_keeps_only_cluster_scoped_reads_in_a_cluster_role() {
    let all = rendered(&["--set", "kueue.enabled=true"]);
    let kueue_rules = find(&all, "ClusterRole", "tfjob-operator-kueue")["rules"]
        .as_array()
        .unwrap()
        .clone();
    let cluster_scoped = |r: &&Value| {
        r["resources"] == json!(["resourceflavors", "workloadpriorityclasses"])
            || r["resources"] == json!(["priorityclasses"])
    };
    let docs = rendered(&[
        "--values",
        &values_file("watch-namespaces-values.yaml"),
        "--set",
        "kueue.enabled=true",
    ]);
    let cluster = find(&docs, "ClusterRole", "tfjob-operator-kueue");
    assert_eq!(
        cluster["rules"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        kueue_rules
            .iter()
            .filter(cluster_scoped)
            .collect::<Vec<_>>()
    );
    find(&docs, "ClusterRoleBinding", "tfjob-operator-kueue");
    for ns in ["tfjob-team-a", "tfjob-team-b"] {
        let role = docs
            .iter()
            .find(|d| d["kind"] == "Role" && d["metadata"]["namespace"] == ns)
            .unwrap_or_else(|| panic!("no Role in {ns}: {:?}", keys(&docs)));
        let rules = role["rules"].as_array().unwrap();
        for rule in kueue_rules.iter().filter(|r| !cluster_scoped(r)) {
            assert!(rules.contains(rule), "{ns}: {rule} missing from {rules:?}");
        }
    }
    assert!(strings(&container(&docs)["args"]).contains(&"--kueue"));
}

/// The alerts select the scrape job by the metrics Service's name: another release's.
#[test]
fn the_alerts_name_the_releases_metrics_service() {
    let docs = template(
        helm4(),
        &[
            "--set",
            "metrics.prometheusRule.enabled=true",
            "--set",
            "fullnameOverride=ml-tfjob",
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rule = find(&docs, "PrometheusRule", "ml-tfjob");
    let exprs: Vec<&str> = rule["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .map(|r| r["expr"].as_str().unwrap())
        .collect();
    assert!(exprs.len() >= 5, "{exprs:?}");
    let text = rule.to_string();
    assert!(!text.contains("tfjob-operator-metrics"), "{text}");
    assert!(
        exprs
            .iter()
            .filter(|e| e.contains("job="))
            .all(|e| e.contains("job=\"ml-tfjob-metrics\"")),
        "{exprs:#?}"
    );
    find(&docs, "Service", "ml-tfjob-metrics");
}

#[test]
fn helm_lint_strict_passes_with_helm_3_and_4_for_every_values_file() {
    let mut sets = vec![("defaults".to_string(), vec![])];
    for (name, path) in values_files() {
        sets.push((name, vec!["--values".to_string(), path]));
    }
    for (helm_name, helm) in helms() {
        for (name, args) in &sets {
            let mut all = vec!["lint", "--strict", CHART];
            all.extend(args.iter().map(String::as_str));
            if let Err(e) = run_helm(helm, &all) {
                panic!("{helm_name} lint --strict with {name}:\n{e}");
            }
        }
    }
}

#[test]
fn helm_3_and_4_render_every_values_file_into_the_same_objects() {
    let mut sets = vec![("defaults".to_string(), vec![])];
    for (name, path) in values_files() {
        sets.push((name, vec!["--values".to_string(), path]));
    }
    let [(_, h3), (_, h4)] = helms();
    for (name, args) in &sets {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let three = template(h3, &args).unwrap_or_else(|e| panic!("helm 3, {name}: {e}"));
        let four = template(h4, &args).unwrap_or_else(|e| panic!("helm 4, {name}: {e}"));
        // (The chart label names the chart, not helm: equal as they are.)
        let diff = differences(three, four);
        assert!(
            diff.is_empty(),
            "{name}: helm 3 and 4 differ:\n{}",
            diff.join("\n")
        );
    }
}

#[test]
fn every_value_lands_where_it_says() {
    let docs = rendered(&["--values", &values_file("every-value-values.yaml")]);
    let deployment = find(&docs, "Deployment", "tfjob-operator");
    let pod = &deployment["spec"]["template"];
    let spec = &pod["spec"];
    let c = container(&docs);
    let env: BTreeMap<&str, &Value> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), &e["value"]))
        .collect();
    // (what, rendered, expected)
    let cases: Vec<(&str, &Value, Value)> = vec![
        (
            "image",
            &c["image"],
            json!("registry.example.com/ml/tfjob-operator:0.1.0-rc.1"),
        ),
        ("image.pullPolicy", &c["imagePullPolicy"], json!("Always")),
        (
            "image.pullSecrets",
            &spec["imagePullSecrets"],
            json!([{"name": "regcred"}]),
        ),
        ("replicas", &deployment["spec"]["replicas"], json!(3)),
        (
            "resources",
            &c["resources"],
            json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}),
        ),
        (
            "podSecurityContext.fsGroup",
            &spec["securityContext"]["fsGroup"],
            json!(1000),
        ),
        (
            "securityContext.runAsNonRoot",
            &c["securityContext"]["runAsNonRoot"],
            json!(true),
        ),
        (
            "nodeSelector",
            &spec["nodeSelector"],
            json!({"kubernetes.io/os": "linux"}),
        ),
        (
            "tolerations",
            &spec["tolerations"][0]["value"],
            json!("ml-control"),
        ),
        (
            "affinity",
            &spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
                [0]["weight"],
            json!(100),
        ),
        (
            "topologySpreadConstraints",
            &spec["topologySpreadConstraints"][0]["topologyKey"],
            json!("topology.kubernetes.io/zone"),
        ),
        (
            "priorityClassName",
            &spec["priorityClassName"],
            json!("system-cluster-critical"),
        ),
        (
            "podLabels",
            &pod["metadata"]["labels"]["team"],
            json!("ml-platform"),
        ),
        (
            "podAnnotations",
            &pod["metadata"]["annotations"]["example.com/owner"],
            json!("ml-platform"),
        ),
        ("logFormat", env["LOG_FORMAT"], json!("text")),
        (
            "extraEnv",
            env["RUST_LOG"],
            json!("info,tfjob_operator=debug"),
        ),
        (
            "serviceAccount.annotations",
            &find(&docs, "ServiceAccount", "tfjob-operator")["metadata"]["annotations"],
            json!({"example.com/role": "tfjob-operator"}),
        ),
        (
            "podDisruptionBudget",
            &find(&docs, "PodDisruptionBudget", "tfjob-operator")["spec"],
            json!({"minAvailable": 2, "selector": {"matchLabels": {"app.kubernetes.io/name": "tfjob-operator"}}}),
        ),
        (
            "metrics.serviceMonitor.interval",
            &find(&docs, "ServiceMonitor", "tfjob-operator")["spec"]["endpoints"][0]["interval"],
            json!("15s"),
        ),
        (
            "metrics.serviceMonitor.labels",
            &find(&docs, "ServiceMonitor", "tfjob-operator")["metadata"]["labels"]["release"],
            json!("prometheus"),
        ),
        (
            "crds.keep",
            &find(&docs, "CustomResourceDefinition", "tfjobs.kubeflow.org")["metadata"]["annotations"],
            Value::Null,
        ),
        (
            "metrics.prometheusRule.labels",
            &find(&docs, "PrometheusRule", "tfjob-operator")["metadata"]["labels"]["release"],
            json!("prometheus"),
        ),
        (
            "metrics.dashboard.labels",
            &find(&docs, "ConfigMap", "tfjob-operator-dashboard")["metadata"]["labels"]["grafana_dashboard"],
            json!("yes"),
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(_, got, want)| normalise_number(got) != normalise_number(want))
        .map(|(what, got, want)| format!("{what}: rendered {got}, expected {want}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(
        strings(&c["args"]),
        [
            "run",
            "--leader-elect",
            "--gang-scheduler-name=volcano",
            "--kueue",
            "--concurrency=16",
            "--cluster-domain=example.org"
        ]
    );
}

fn normalise_number(v: &Value) -> Value {
    numbers_as_floats(v.clone())
}

#[test]
fn watched_namespaces_get_a_role_each_and_no_cluster_role_over_tfjobs() {
    let defaults = rendered(&[]);
    let cluster_rules = find(&defaults, "ClusterRole", "tfjob-operator")["rules"]
        .as_array()
        .unwrap()
        .clone();
    let docs = rendered(&["--values", &values_file("watch-namespaces-values.yaml")]);
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "tfjob-operator"),
        "a ClusterRole over TFJobs with namespaces listed: {:?}",
        keys(&docs)
    );
    for ns in ["tfjob-team-a", "tfjob-team-b"] {
        let role = docs
            .iter()
            .find(|d| d["kind"] == "Role" && d["metadata"]["namespace"] == ns)
            .unwrap_or_else(|| panic!("no Role in {ns}: {:?}", keys(&docs)));
        // The ClusterRole's rules, less the cluster-scoped PriorityClasses.
        let namespaced: Vec<&Value> = cluster_rules
            .iter()
            .filter(|r| r["resources"] != json!(["priorityclasses"]))
            .collect();
        assert_eq!(
            role["rules"].as_array().unwrap().iter().collect::<Vec<_>>(),
            namespaced,
            "{ns}"
        );
        let binding = docs
            .iter()
            .find(|d| d["kind"] == "RoleBinding" && d["metadata"]["namespace"] == ns)
            .unwrap_or_else(|| panic!("no RoleBinding in {ns}"));
        assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "tfjob-operator", "namespace": "kubeflow"}])
        );
    }
    // Gang scheduling reads PriorityClasses, which only a ClusterRole can grant.
    let pc = find(&docs, "ClusterRole", "tfjob-operator-priorityclasses");
    assert_eq!(
        pc["rules"],
        json!([{"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["list", "watch"]}])
    );
    find(
        &docs,
        "ClusterRoleBinding",
        "tfjob-operator-priorityclasses",
    );
    // The leader's Lease stays in the release's namespace.
    find(&docs, "Role", "tfjob-operator-leader-election");
    assert_eq!(
        strings(&container(&docs)["args"]),
        [
            "run",
            "--leader-elect",
            "--namespace=tfjob-team-a",
            "--namespace=tfjob-team-b",
            "--gang-scheduler-name=scheduler-plugins",
            "--scheduler-plugins-name=my-coscheduler"
        ]
    );
}

#[test]
fn minimal_values_render_no_crd_service_account_metrics_service_or_lease_role() {
    let docs = rendered(&["--values", &values_file("minimal-values.yaml")]);
    let kinds: Vec<String> = keys(&docs);
    for absent in [
        "CustomResourceDefinition",
        "ServiceAccount",
        "Service",
        "Role",
    ] {
        assert!(
            !docs.iter().any(|d| d["kind"] == absent),
            "{absent} rendered: {kinds:?}"
        );
    }
    let deployment = find(&docs, "Deployment", "tfjob-operator");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"],
        "tfjob-runner"
    );
    assert_eq!(strings(&container(&docs)["args"]), ["run"]);
    assert_eq!(
        find(&docs, "ClusterRoleBinding", "tfjob-operator")["subjects"][0]["name"],
        "tfjob-runner"
    );
}

#[test]
fn the_schema_refuses_misspelled_and_ill_typed_values_naming_them() {
    // (--set, what the message must name)
    let cases = [
        ("imagee.tag=1.0", "imagee"),
        ("image.tagg=1.0", "tagg"),
        ("replica=3", "replica"),
        ("replicas=two", "replicas"),
        ("podSecurityContext.runAsNonroot=true", "runAsNonroot"),
        ("securityContext.readOnlyRootFS=true", "readOnlyRootFS"),
        ("logFormat=yaml", "logFormat"),
        ("crds.enable=false", "enable"),
        ("metrics.serviceMonitor.enable=true", "enable"),
        ("watchNamespaces[0]=Team_A", "watchNamespaces"),
        ("image.pullPolicy=IfNotThere", "pullPolicy"),
    ];
    for (helm_name, helm) in helms() {
        for (set, named) in cases {
            let err = template(helm, &["--set", set])
                .err()
                .unwrap_or_else(|| panic!("{helm_name}: --set {set} was accepted"));
            assert!(
                err.contains("schema") && err.contains(named),
                "{helm_name}: --set {set}: the error does not name {named}:\n{err}"
            );
        }
    }
}

#[test]
fn more_than_one_replica_needs_leader_election() {
    let err = template(helm4(), &["--set", "leaderElection.enabled=false"])
        .expect_err("2 replicas without leader election were rendered");
    assert!(err.contains("needs leaderElection.enabled"), "{err}");
    rendered(&[
        "--set",
        "leaderElection.enabled=false",
        "--set",
        "replicas=1",
    ]);
}

/// Every leaf of values.yaml (maps of our own, not Kubernetes objects) is in the schema and in
/// docs/install.md's table of values.
#[test]
fn every_value_is_in_the_schema_and_in_the_docs_table() {
    let values: Value =
        serde_saphyr::from_str(include_str!("../../charts/tfjob-operator/values.yaml")).unwrap();
    let schema: Value = serde_json::from_str(include_str!(
        "../../charts/tfjob-operator/values.schema.json"
    ))
    .unwrap();
    let docs = include_str!("../../docs/install.md");
    // Values holding Kubernetes objects or free maps: one row for the whole value.
    let whole = [
        "resources",
        "podSecurityContext",
        "securityContext",
        "nodeSelector",
        "affinity",
        "podLabels",
        "podAnnotations",
        "serviceAccount.annotations",
        "metrics.serviceMonitor.labels",
        "metrics.prometheusRule.labels",
        "metrics.dashboard.labels",
    ];
    let mut leaves = Vec::new();
    fn walk(v: &Value, path: String, whole: &[&str], out: &mut Vec<String>) {
        match v.as_object() {
            Some(map) if !whole.contains(&path.as_str()) => {
                for (k, v) in map {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(v, p, whole, out);
                }
            }
            _ => out.push(path),
        }
    }
    walk(&values, String::new(), &whole, &mut leaves);
    let mut missing = Vec::new();
    for leaf in &leaves {
        let mut s = &schema;
        for part in leaf.split('.') {
            s = &s["properties"][part];
        }
        if s.is_null() {
            missing.push(format!("{leaf}: not in values.schema.json"));
        }
        if !docs.contains(&format!("| `{leaf}` |")) {
            missing.push(format!("{leaf}: no row `| `{leaf}` |` in docs/install.md"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    // And the schema has no value values.yaml lacks (it would be undocumented).
    let top: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    let given: Vec<&String> = values.as_object().unwrap().keys().collect();
    let mut top_sorted = top.clone();
    top_sorted.sort();
    let mut given_sorted = given.clone();
    given_sorted.sort();
    assert_eq!(top_sorted, given_sorted);
}
