//! Taking over Kubeflow's TFJob CRD with the chart, with helm 3 and with helm 4 (real tier
//! only), as docs/install.md ("Taking over with Helm") tells users: Kubeflow's own CRD
//! (training-operator v1.9.4's, applied server-side as its manifests are) and a TFJob; a plain
//! `helm install` refuses to adopt the CRD, helm 4 with `--take-ownership` alone reports the
//! conflict with Kubeflow's field manager; with the documented flags the CRD becomes crds/'s,
//! labelled as the release's and kept on uninstall with the TFJob; installed again under the
//! same name, the release adopts it without any flag. Runs alone: it swaps the CRD every test
//! uses. (With pods running through it, on a real node: `tests/node/helm.rs`.)

use serde_json::Value;

use crate::chart::{CHART, ROOT, kubectl, run, tool};
use crate::support::faults::alone;
use crate::support::{RealTier, TestCluster, job, sim_options};

const CRD: &str = "tfjobs.kubeflow.org";

/// Puts crds/'s CRD back, without any release's metadata, whatever happened.
struct RestoreCrd(RealTier);

impl Drop for RestoreCrd {
    fn drop(&mut self) {
        let ours = format!("{ROOT}/crds/kubeflow.org_tfjobs.yaml");
        if let Err(e) = kubectl(&self.0, &["replace", "-f", &ours], None) {
            eprintln!("could not put crds/'s CRD back: {e}");
        }
    }
}

fn live_crd(real: &RealTier) -> Value {
    let text =
        kubectl(real, &["get", "crd", CRD, "-o", "json"], None).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&text).expect("CRD JSON")
}

/// The live CRD's spec is crds/'s (the API server adds `conversion` and `names.listKind`).
fn crd_is_ours(real: &RealTier) -> Result<(), String> {
    let mut live = live_crd(real)["spec"].clone();
    let ours: Value =
        serde_saphyr::from_str(include_str!("../../crds/kubeflow.org_tfjobs.yaml")).unwrap();
    let live = live.as_object_mut().unwrap();
    live.remove("conversion");
    live["names"].as_object_mut().unwrap().remove("listKind");
    let same = |a: &Value, b: &Value| numbers(a) == numbers(b);
    match ["group", "names", "scope", "versions"]
        .iter()
        .find(|f| !same(&live[**f], &ours["spec"][**f]))
    {
        Some(f) => Err(format!("the CRD's spec.{f} is not crds/'s")),
        None => Ok(()),
    }
}

fn numbers(v: &Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map(Value::from)
            .unwrap_or(Value::Number(n.clone())),
        Value::Array(a) => Value::Array(a.iter().map(numbers).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), numbers(v))).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn chart_takes_over_kubeflows_crd_with_helm_3_and_4_keeps_it_and_adopts_it_again() {
    let _alone = alone().await;
    let c = TestCluster::without_operator_on("chart-takeover", sim_options()).await;
    let Some(real) = c.real.clone() else {
        return eprintln!("skipped: needs a real API server and Kubeflow's CRD (real tier)");
    };
    let _restore = RestoreCrd(real.clone());
    let ns = c.namespace.clone();
    let kubeflow_crd = tool("TFJOB_KUBEFLOW_TFJOB_CRD");
    let kubeflow_crd = kubeflow_crd.to_str().unwrap();
    let kubeconfig = real.admin_kubeconfig.to_str().unwrap().to_string();
    c.create(job("kept", &[("Worker", 1, "Never")])).await;
    // (helm, the flags docs/install.md gives, the error without the last of them)
    let cases: [(&str, &[&str], &str); 2] = [
        (
            "TFJOB_HELM3",
            &["--take-ownership"],
            "cannot be imported into the current release",
        ),
        (
            "TFJOB_HELM4",
            &["--take-ownership", "--force-conflicts"],
            "conflict",
        ),
    ];
    for (var, flags, refusal) in cases {
        let helm = tool(var);
        // Kubeflow's CRD in place of ours, as its manifests install it.
        kubectl(&real, &["replace", "-f", kubeflow_crd], None).unwrap_or_else(|e| panic!("{e}"));
        kubectl(
            &real,
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "-f",
                kubeflow_crd,
            ],
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            crd_is_ours(&real).is_err(),
            "{var}: Kubeflow's CRD is not in place"
        );
        let release = ns.as_str();
        let install = |extra: &[&str]| {
            let mut args = vec![
                "install",
                release,
                CHART,
                "--namespace",
                &ns,
                "--kubeconfig",
                &kubeconfig,
                "--set",
                "replicas=0",
            ];
            args.extend_from_slice(extra);
            run(&helm, &args, None)
        };
        let uninstall = || {
            run(
                &helm,
                &[
                    "uninstall",
                    release,
                    "--namespace",
                    &ns,
                    "--kubeconfig",
                    &kubeconfig,
                    "--wait",
                ],
                None,
            )
            .unwrap_or_else(|e| panic!("{var}: {e}"))
        };
        // Without the last flag the CRD is not taken (nor changed).
        let err = install(&flags[..flags.len() - 1]).expect_err("installed over Kubeflow's CRD");
        assert!(err.contains(refusal), "{var}: {err}");
        assert!(
            crd_is_ours(&real).is_err(),
            "{var}: the refused install changed the CRD"
        );
        let _ = run(
            &helm,
            &[
                "uninstall",
                release,
                "--namespace",
                &ns,
                "--kubeconfig",
                &kubeconfig,
            ],
            None,
        );
        // As documented: the CRD becomes ours, the release's, kept.
        install(flags).unwrap_or_else(|e| panic!("{var}: {e}"));
        crd_is_ours(&real).unwrap_or_else(|e| panic!("{var}: {e}"));
        let meta = &live_crd(&real)["metadata"];
        assert_eq!(
            meta["annotations"]["meta.helm.sh/release-name"], release,
            "{var}"
        );
        assert_eq!(
            meta["annotations"]["helm.sh/resource-policy"], "keep",
            "{var}"
        );
        // Uninstalled: the CRD and the TFJob stay.
        let out = uninstall();
        assert!(
            out.contains("kept due to the resource policy"),
            "{var}: {out}"
        );
        crd_is_ours(&real).unwrap_or_else(|e| panic!("{var}, after uninstall: {e}"));
        kubectl(&real, &["-n", &ns, "get", "tfjob", "kept"], None)
            .unwrap_or_else(|e| panic!("{var}: {e}"));
        // Installed again under the same name: adopted, no flag needed.
        install(&[]).unwrap_or_else(|e| panic!("{var}, installing again: {e}"));
        uninstall();
    }
}
