//! The install manifests: `kubectl kustomize config/default` renders the operator alone (never
//! the CRD or the namespace, so uninstalling cannot lose jobs), `config/crd`, `config/namespace`
//! and `config/prometheus` the rest; the Deployment is hardened as docs/install.md says, users get
//! TFJobs through aggregated roles; `config/kueue` adds the Kueue mode. Needs `kubectl` (CI
//! installs it).

use std::process::Command;

use serde_json::Value;

fn kustomize(dir: &str) -> Vec<Value> {
    let out = Command::new("kubectl")
        .args(["kustomize", dir])
        .output()
        .expect("kubectl must be installed to test the kustomize config (see .ci/run)");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    serde_saphyr::from_multiple::<Value>(&text).expect("kustomize output is YAML")
}

fn find<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}

/// YAML tools print `minimum: 0.0` as `0`; the API server reads both as the same number.
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

fn find_named<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn kinds(docs: &[Value]) -> Vec<&str> {
    docs.iter().filter_map(|d| d["kind"].as_str()).collect()
}

#[test]
fn default_config_is_the_operator_alone_never_the_crd_or_the_namespace() {
    let docs = kustomize("config/default");
    let kinds = kinds(&docs);
    for kind in [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
        "Deployment",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    // `kubectl delete -k config/default` deletes what it rendered: never every TFJob (the
    // CRD) nor a namespace Kubeflow shares.
    for kind in ["CustomResourceDefinition", "Namespace"] {
        assert!(
            !kinds.contains(&kind),
            "{kind} in config/default: {kinds:?}"
        );
    }
    for namespaced in [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
    ] {
        assert_eq!(
            find(&docs, namespaced)["metadata"]["namespace"],
            "kubeflow",
            "{namespaced}"
        );
    }
}

#[test]
fn crd_and_namespace_install_on_their_own() {
    let crd_docs = kustomize("config/crd");
    assert_eq!(kinds(&crd_docs), ["CustomResourceDefinition"]);
    let crd = &crd_docs[0];
    assert_eq!(crd["metadata"]["name"], "tfjobs.kubeflow.org");
    let generated = serde_json::to_value(tfjob_operator::crd::schema::crd()).unwrap();
    assert_eq!(
        numbers_as_floats(crd["spec"].clone()),
        numbers_as_floats(generated["spec"].clone()),
        "config/crd must install the generated CRD"
    );
    let ns = kustomize("config/namespace");
    assert_eq!(kinds(&ns), ["Namespace"]);
    assert_eq!(ns[0]["metadata"]["name"], "kubeflow");
}

#[test]
fn metrics_service_and_service_monitor_reach_the_metrics_port() {
    let docs = kustomize("config/default");
    let deployment = find(&docs, "Deployment");
    let service = find_named(&docs, "Service", "tfjob-operator-metrics");
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&pod_labels[k], v, "the Service selects the operator's pods");
    }
    let port = &service["spec"]["ports"][0];
    assert_eq!(
        (port["name"].as_str(), port["port"].as_i64()),
        (Some("metrics"), Some(8080))
    );
    let container_ports = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
        .as_array()
        .unwrap();
    assert!(
        container_ports
            .iter()
            .any(|p| p["name"] == port["targetPort"] && p["containerPort"] == 8080),
        "targets the container's metrics port"
    );
    let monitor = kustomize("config/prometheus");
    assert_eq!(kinds(&monitor), ["ServiceMonitor"]);
    let m = &monitor[0];
    assert_eq!(m["metadata"]["namespace"], "kubeflow");
    for (k, v) in m["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(
            &service["metadata"]["labels"][k], v,
            "the monitor selects the Service"
        );
    }
    assert_eq!(m["spec"]["endpoints"][0]["port"], "metrics");
    assert_eq!(m["spec"]["endpoints"][0]["path"], "/metrics");
}

#[test]
fn users_get_tfjobs_through_the_roles_they_hold() {
    let docs = kustomize("config/default");
    // (role, aggregated into, verbs)
    let cases = [
        (
            "tfjob-operator-tfjobs-edit",
            vec![
                "rbac.authorization.k8s.io/aggregate-to-admin",
                "rbac.authorization.k8s.io/aggregate-to-edit",
                "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit",
            ],
            vec![
                "get",
                "list",
                "watch",
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection",
            ],
        ),
        (
            "tfjob-operator-tfjobs-view",
            vec![
                "rbac.authorization.k8s.io/aggregate-to-view",
                "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-view",
            ],
            vec!["get", "list", "watch"],
        ),
    ];
    for (name, labels, verbs) in cases {
        let role = find_named(&docs, "ClusterRole", name);
        // (Besides app.kubernetes.io/name, as every object of config/default.)
        let aggregation: Vec<(&String, &Value)> = role["metadata"]["labels"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.contains("/aggregate-to-"))
            .collect();
        let got: Vec<&String> = aggregation.iter().map(|(k, _)| *k).collect();
        assert_eq!(got, labels, "{name}");
        assert!(aggregation.iter().all(|(_, v)| *v == "true"));
        let rules = role["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1, "{name}");
        assert_eq!(rules[0]["apiGroups"], serde_json::json!(["kubeflow.org"]));
        assert_eq!(
            rules[0]["resources"],
            serde_json::json!(["tfjobs", "tfjobs/status"])
        );
        assert_eq!(rules[0]["verbs"], serde_json::json!(verbs), "{name}");
    }
}

#[test]
fn deployment_is_non_root_read_only_with_probes_and_leader_election() {
    let docs = kustomize("config/default");
    let pod = &find(&docs, "Deployment")["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(
        c["resources"]["requests"]["memory"].is_string()
            && c["resources"]["limits"]["memory"].is_string()
    );
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(args, ["run", "--leader-elect"]);
}

#[test]
fn cluster_role_grants_only_what_the_operator_calls() {
    let docs = kustomize("config/default");
    let rules = find_named(&docs, "ClusterRole", "tfjob-operator")["rules"]
        .as_array()
        .unwrap()
        .clone();
    let grants: Vec<(String, Vec<String>)> = rules
        .iter()
        .flat_map(|r| {
            let verbs: Vec<String> = r["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            r["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |res| (res.as_str().unwrap().to_string(), verbs.clone()))
        })
        .collect();
    let expected = [
        ("tfjobs", vec!["get", "list", "watch", "delete"]),
        ("tfjobs/status", vec!["update"]),
        // Needed to set blockOwnerDeletion under OwnerReferencesPermissionEnforcement.
        ("tfjobs/finalizers", vec!["update"]),
        ("pods", vec!["get", "list", "watch", "create", "delete"]),
        ("services", vec!["get", "list", "watch", "create", "delete"]),
        ("events", vec!["create", "patch"]),
        // Gang scheduling: Volcano's and scheduler-plugins' PodGroups, PriorityClass values.
        (
            "podgroups",
            vec!["list", "watch", "create", "patch", "delete"],
        ),
        ("priorityclasses", vec!["list", "watch"]),
    ];
    assert_eq!(grants.len(), expected.len(), "{grants:?}");
    for (resource, verbs) in expected {
        let got = grants
            .iter()
            .find(|(r, _)| r == resource)
            .unwrap_or_else(|| panic!("{resource} not granted"));
        assert_eq!(got.1, verbs, "{resource}");
    }
    assert!(
        !rules
            .iter()
            .any(|r| r["verbs"].as_array().unwrap().iter().any(|v| v == "*")),
        "no wildcards"
    );
}

/// The shipped binary's allocator is a cargo feature (off for the demo and the tests, whose
/// cold build it would lengthen); the image's build must turn it on, or the operator keeps a
/// big job's memory for good (BENCHMARKS.md). `testcluster/node-e2e` builds the image's binary
/// the same way and runs it.
#[test]
fn the_image_is_built_with_the_jemalloc_allocator() {
    let dockerfile = include_str!("../../Dockerfile");
    let build = dockerfile
        .lines()
        .find(|l| l.starts_with("RUN cargo build"))
        .expect("the Dockerfile's build stage runs cargo build");
    assert!(build.contains("--features jemalloc"), "{build}");
    let manifest = include_str!("../../Cargo.toml");
    assert!(
        manifest.contains("jemalloc = [\"dep:tikv-jemallocator\"]"),
        "the jemalloc feature is gone from Cargo.toml"
    );
}

/// (resource, verbs) for every resource a ClusterRole's rules name.
fn grants_of(role: &Value) -> Vec<(String, Vec<String>)> {
    let rules = role["rules"].as_array().unwrap();
    rules
        .iter()
        .flat_map(|r| {
            let verbs: Vec<String> = r["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            r["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |res| (res.as_str().unwrap().to_string(), verbs.clone()))
        })
        .collect()
}

/// `config/kueue` (docs/kueue.md): the operator of config/default, one more ClusterRole with
/// exactly what the Kueue mode calls (src/kueue/), bound to the operator's ServiceAccount,
/// and `--kueue` on the operator; the operator's own ClusterRole unchanged.
#[test]
fn the_kueue_config_adds_the_kueue_rules_and_the_flag_only() {
    let docs = kustomize("config/kueue");
    let default = kustomize("config/default");
    assert_eq!(
        find_named(&docs, "ClusterRole", "tfjob-operator"),
        find_named(&default, "ClusterRole", "tfjob-operator")
    );
    let grants = grants_of(find_named(&docs, "ClusterRole", "tfjob-operator-kueue"));
    let expected = [
        (
            "workloads",
            vec!["get", "list", "watch", "create", "patch", "delete"],
        ),
        ("workloads/status", vec!["patch"]),
        ("tfjobs", vec!["get", "patch"]),
        ("resourceflavors", vec!["get"]),
        ("workloadpriorityclasses", vec!["get"]),
        ("priorityclasses", vec!["get", "list"]),
    ];
    let expected: Vec<(String, Vec<String>)> = expected
        .iter()
        .map(|(r, v)| (r.to_string(), v.iter().map(|v| v.to_string()).collect()))
        .collect();
    assert_eq!(grants, expected);
    let binding = find_named(&docs, "ClusterRoleBinding", "tfjob-operator-kueue");
    assert_eq!(binding["roleRef"]["name"], "tfjob-operator-kueue");
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "tfjob-operator", "namespace": "kubeflow"}])
    );
    let args = &find(&docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(
        args,
        &serde_json::json!(["run", "--leader-elect", "--kueue"])
    );
    assert_eq!(docs.len(), default.len() + 2, "{:?}", kinds(&docs));
}
