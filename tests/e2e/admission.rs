//! End to end on the real tier: the ValidatingAdmissionPolicy of `config/admission` refuses a
//! TFJob with bad `tfjob-operator.dev/` annotations at `kubectl apply`, with the operator's
//! field paths, and lets a good one in (docs/install.md). The policy is applied as shipped and
//! bound to this test's namespace only, so other tests' jobs meet the operator's own check, as
//! on a cluster without the policy. The simulator evaluates no admission policy: there the
//! test says it is skipped (`tests/offline/admission.rs` evaluates the policy's CEL offline).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::json;

use crate::support::{TestCluster, job};

const POLICY: &str = "tfjob-operator-settings";

/// A job's annotations, and what kubectl must say of it (None: it is accepted).
type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `kubectl ARGS` against the real tier, off the async runtime.
async fn kubectl(program: &Path, config: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(program);
    cmd.arg("--kubeconfig").arg(config).args(args);
    tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("kubectl task")
        .expect("running kubectl")
}

#[tokio::test]
async fn bad_annotations_are_refused_at_apply_by_the_admission_policy() {
    let c = TestCluster::without_operator("admission").await;
    let Some(real) = c.real.clone() else {
        eprintln!(
            "bad_annotations_are_refused_at_apply_by_the_admission_policy: skipped: the \
             simulator evaluates no ValidatingAdmissionPolicy"
        );
        return;
    };
    let (program, config) = (real.kubectl.clone(), real.admin_kubeconfig.clone());
    let run = |args: Vec<String>| {
        let (program, config) = (program.clone(), config.clone());
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl(&program, &config, &args).await
        }
    };
    let dir = std::env::temp_dir().join(format!("tfjob-e2e-admission-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = repo("config/admission/policy.yaml");
    let out = run(vec![
        "apply".into(),
        "-f".into(),
        policy.display().to_string(),
    ])
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": format!("{POLICY}-{}", c.namespace)},
        "spec": {
            "policyName": POLICY,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": c.namespace}}}
        }
    });
    let binding_file = dir.join("binding.json");
    std::fs::write(&binding_file, binding.to_string()).unwrap();
    let apply_binding = vec![
        "apply".into(),
        "-f".into(),
        binding_file.display().to_string(),
    ];
    assert!(run(apply_binding).await.status.success());

    // (annotations, what kubectl must say; None: accepted)
    let rules_ok =
        "- {replicaTypes: [PS], action: FailJob}\n- {disruption: true, action: RestartReplica}\n";
    let cases: [Case; 5] = [
        (
            &[("tfjob-operator.dev/restart-scop", "Job")],
            Some(
                "metadata.annotations[tfjob-operator.dev/restart-scop]: Unsupported value: \"tfjob-operator.dev/restart-scop\": not a setting of tfjob-operator; supported: tfjob-operator.dev/restart-scope, ",
            ),
        ),
        (
            &[("tfjob-operator.dev/max-job-restarts", "-1")],
            Some(
                "metadata.annotations[tfjob-operator.dev/max-job-restarts]: Invalid value: \"-1\": must be an integer between 0 and 2147483647",
            ),
        ),
        (
            &[(
                "tfjob-operator.dev/failure-rules",
                "- {action: FailJob}\n- {exitCodes: [300], action: FailJob}",
            )],
            Some(
                "metadata.annotations[tfjob-operator.dev/failure-rules][1]: Invalid value: \"- {exitCodes: [300], action: FailJob}\": a rule is one line of the form",
            ),
        ),
        (
            &[(
                "tfjob-operator.dev/failure-rules",
                "- {exitCodes: [143-129], action: FailJob}",
            )],
            Some(
                "metadata.annotations[tfjob-operator.dev/failure-rules][0]: Invalid value: \"- {exitCodes: [143-129], action: FailJob}\": an exit code range goes from low to high",
            ),
        ),
        (
            &[
                ("tfjob-operator.dev/failure-rules", rules_ok),
                ("tfjob-operator.dev/restart-scope", "Job"),
            ],
            None,
        ),
    ];
    for (i, (pairs, want)) in cases.iter().enumerate() {
        let mut spec = job(
            &format!("adm-{i}"),
            &[("PS", 1, "Never"), ("Worker", 1, "Never")],
        );
        for (k, v) in pairs.iter() {
            spec["metadata"]["annotations"][*k] = json!(v);
        }
        let file = dir.join(format!("job-{i}.json"));
        std::fs::write(&file, spec.to_string()).unwrap();
        let apply = |dry_run: bool| {
            let mut args = vec!["-n".to_string(), c.namespace.clone(), "apply".into()];
            args.extend(["-f".into(), file.display().to_string()]);
            if dry_run {
                args.push("--dry-run=server".into());
            }
            run(args)
        };
        // The API server loads a new policy within moments: wait for it to refuse.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let out = loop {
            let out = apply(want.is_some()).await;
            if want.is_none() || !out.status.success() || tokio::time::Instant::now() > deadline {
                break out;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        match want {
            Some(message) => {
                assert!(!out.status.success(), "case {i} accepted: {pairs:?}");
                assert!(
                    stderr.contains(&format!("ValidatingAdmissionPolicy '{POLICY}'"))
                        && stderr.contains(message),
                    "case {i}: kubectl said:\n{stderr}\nwanted: {message}"
                );
            }
            None => assert!(out.status.success(), "case {i} refused:\n{stderr}"),
        }
    }
    let binding_name = format!("{POLICY}-{}", c.namespace);
    let delete = |kind: &str, name: String| {
        run(vec![
            "delete".into(),
            kind.into(),
            name,
            "--ignore-not-found".into(),
        ])
    };
    assert!(
        delete("validatingadmissionpolicybinding", binding_name)
            .await
            .status
            .success()
    );
    assert!(
        delete("validatingadmissionpolicy", POLICY.into())
            .await
            .status
            .success()
    );
}
