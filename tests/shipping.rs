//! The install manifests: `kubectl kustomize config/default` renders everything the operator
//! needs, and the Deployment is hardened as the README says. Needs `kubectl` (CI installs it).

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

#[test]
fn default_config_renders_namespace_crd_rbac_and_deployment() {
    let docs = kustomize("config/default");
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    for kind in [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let crd = find(&docs, "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "tfjobs.kubeflow.org");
    let generated = serde_json::to_value(tfjob_operator::crd::schema::crd()).unwrap();
    assert_eq!(
        numbers_as_floats(crd["spec"].clone()),
        numbers_as_floats(generated["spec"].clone()),
        "config/ must install the generated CRD"
    );
    for namespaced in ["ServiceAccount", "Role", "RoleBinding", "Deployment"] {
        assert_eq!(
            find(&docs, namespaced)["metadata"]["namespace"],
            "kubeflow",
            "{namespaced}"
        );
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
    let rules = find(&docs, "ClusterRole")["rules"]
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
