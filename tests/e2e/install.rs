//! What installing gives users, on a real control plane (RBAC and the aggregation controller;
//! the simulator has neither): through the aggregated ClusterRoles of `config/rbac`, whoever
//! holds Kubernetes' `edit` in a namespace may create and delete TFJobs there, whoever holds
//! `view` may only read them. (That uninstalling keeps the CRD, the namespace and the jobs is
//! checked by `testcluster/e2e` itself, after every test: it removes the operator's RBAC.)

use std::process::Command;

use crate::support::TestCluster;

/// `kubectl auth can-i VERB tfjobs.kubeflow.org -n NS --as USER`.
fn can_i(c: &TestCluster, user: &str, verb: &str) -> bool {
    let real = c.real.as_ref().expect("real tier");
    let out = Command::new(&real.kubectl)
        .arg("--kubeconfig")
        .arg(&real.admin_kubeconfig)
        .args([
            "auth",
            "can-i",
            verb,
            "tfjobs.kubeflow.org",
            "-n",
            &c.namespace,
            "--as",
            user,
        ])
        .output()
        .expect("running kubectl auth can-i");
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

fn kubectl(c: &TestCluster, args: &[&str]) {
    let real = c.real.as_ref().expect("real tier");
    let out = Command::new(&real.kubectl)
        .arg("--kubeconfig")
        .arg(&real.admin_kubeconfig)
        .args(args)
        .output()
        .expect("running kubectl");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn users_with_edit_or_view_get_tfjobs_through_the_aggregated_roles() {
    let c = TestCluster::without_operator("install-roles").await;
    if c.simulated() {
        return eprintln!(
            "skipped: needs RBAC and the ClusterRole aggregation controller (real tier)"
        );
    }
    let ns = c.namespace.clone();
    for (user, role) in [("alice", "edit"), ("bob", "view")] {
        kubectl(
            &c,
            &[
                "-n",
                &ns,
                "create",
                "rolebinding",
                &format!("{user}-{role}"),
                &format!("--clusterrole={role}"),
                &format!("--user={user}"),
            ],
        );
    }
    // The aggregation controller folds the rules in asynchronously.
    crate::support::eventually("the TFJob rules aggregated into edit and view", || async {
        (can_i(&c, "alice", "create") && can_i(&c, "bob", "list")).then_some(())
    })
    .await;
    for (user, verb, allowed) in [
        ("alice", "create", true),
        ("alice", "delete", true),
        ("alice", "patch", true),
        ("bob", "get", true),
        ("bob", "watch", true),
        ("bob", "create", false),
        ("bob", "delete", false),
        ("carol", "get", false),
    ] {
        assert_eq!(can_i(&c, user, verb), allowed, "{user} {verb}");
    }
}
