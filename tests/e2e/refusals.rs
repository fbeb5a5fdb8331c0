//! End to end: what hardened clusters refuse, and what users are told (docs/behaviour.md §13) —
//! a ResourceQuota too small for a job, a namespace deleted under a running job, and the
//! operator's own pod under Pod Security `restricted`. On the real tier these are the real
//! quota admission and controller, namespace lifecycle admission and controller, and Pod
//! Security admission (and OwnerReferencesPermissionEnforcement throughout: a 403 for missing
//! rights fails every test).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{TestCluster, annotate, job, until};
use k8s_openapi::api::core::v1::{Namespace, Pod, ResourceQuota, ServiceAccount};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionType, JobCondition, TFJob};

const RUN: &str = "sim.tfjob.dev/run-seconds";

/// The job's `ReplicaFailure` condition, if any.
fn replica_failure(job: &TFJob) -> Option<JobCondition> {
    let status = job.status.as_ref()?;
    status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::ReplicaFailure)
        .cloned()
}

/// `kubectl ARGS` as the cluster's admin; stdout. Off the async runtime: the simulator and
/// the operator share it.
async fn kubectl(c: &TestCluster, args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("tfjob-e2e-refusals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let (program, config) = match &c.real {
        Some(real) => (real.kubectl.clone(), real.admin_kubeconfig.clone()),
        None => {
            let config = dir.join(format!("{}.kubeconfig", c.namespace));
            c.sim().write_kubeconfig(&config).expect("a kubeconfig");
            ("kubectl".into(), config)
        }
    };
    let mut cmd = Command::new(program);
    cmd.arg("--kubeconfig").arg(config).args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("kubectl task")
        .expect("kubectl must be installed (see .ci/run)");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A quota of one pod against a job of two workers: the second worker is refused; the job's
/// `ReplicaFailure` condition and one `FailedCreatePod` event series say so in the API server's
/// words (also in `kubectl describe`); once the quota is raised the job goes on within the
/// retry backoff's cap and the condition is gone.
#[tokio::test]
async fn a_quota_refusal_is_told_in_kubernetes_words_and_the_job_starts_once_it_is_raised() {
    let mut c = TestCluster::without_operator("quota").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(c.client.clone(), &c.namespace);
    let tiny = json!({"metadata": {"name": "tiny"}, "spec": {"hard": {"pods": "1"}}});
    quotas
        .create(
            &PostParams::default(),
            &serde_json::from_value(tiny).unwrap(),
        )
        .await
        .expect("creating the quota");
    // Until the quota controller has recorded the hard limits, the admission refuses every pod.
    until(&quotas, "tiny", "quota counted", |q| {
        let hard = q?.status.as_ref()?.hard.as_ref()?.get("pods").cloned()?;
        (hard.0 == "1").then_some(())
    })
    .await;
    const CAP: Duration = Duration::from_secs(2);
    c.start_operator_with(&["--max-error-backoff", "2"]);
    let mut spec = job("qjob", &[("Worker", 2, "Never")]);
    annotate(&mut spec, "Worker", RUN, "3600");
    c.create(spec).await;

    let stuck = until(&c.jobs(), "qjob", "ReplicaFailure", |j| {
        j.and_then(replica_failure)
    })
    .await;
    // The two creates race for the one pod the quota allows: either may lose.
    let refused = ["qjob-worker-0", "qjob-worker-1"]
        .into_iter()
        .find(|p| {
            stuck
                .message
                .as_deref()
                .is_some_and(|m| m.contains(&format!("pod {p}:")))
        })
        .unwrap_or_else(|| panic!("the condition names no worker: {stuck:?}"));
    let refusal = format!(
        "Error creating pod {refused}: pods \"{refused}\" is forbidden: exceeded quota: tiny, \
         requested: pods=1, used: pods=1, limited: pods=1 (Forbidden)"
    );
    assert_eq!(stuck.status, tfjob_operator::crd::ConditionStatus::True);
    assert_eq!(stuck.reason.as_deref(), Some("FailedCreatePod"));
    assert_eq!(stuck.message.as_deref(), Some(refusal.as_str()));

    // Retried at 0.5, 1, 2, 2, ... s (and whenever the running worker changes): one event
    // series whose count grows, never a second event.
    let series = crate::support::eventually("the refusal repeated 7 times", || async {
        let failed: Vec<_> = c
            .events_about("qjob")
            .await
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("FailedCreatePod"))
            .collect();
        assert_eq!(failed.len(), 1, "one event series per refusal: {failed:#?}");
        let count = failed[0].series.as_ref().map_or(1, |s| s.count);
        (count >= 7).then(|| failed[0].clone())
    })
    .await;
    assert_eq!(series.note.as_deref(), Some(refusal.as_str()));
    assert_eq!(series.type_.as_deref(), Some("Warning"));

    let described = kubectl(&c, &["-n", &c.namespace, "describe", "tfjob", "qjob"]).await;
    assert!(described.contains("ReplicaFailure"), "{described}");
    assert!(described.contains("exceeded quota: tiny"), "{described}");
    for rust in ["ApiError", "Status {", "Some(", "ListMeta"] {
        assert!(!described.contains(rust), "{rust:?} in:\n{described}");
    }
    eprintln!("kubectl describe tfjob qjob, stuck on the quota:\n{described}");

    let raised = json!({"spec": {"hard": {"pods": "2"}}});
    let at = Instant::now();
    quotas
        .patch("tiny", &PatchParams::default(), &Patch::Merge(&raised))
        .await
        .expect("raising the quota");
    c.until_pods_are("qjob", &["qjob-worker-0", "qjob-worker-1"])
        .await;
    let took = at.elapsed();
    eprintln!("quota raised: the refused pod was created {took:?} later (backoff cap {CAP:?})");
    // After 7 failed passes in a row an uncapped backoff would wait 32 s.
    assert!(
        took < CAP + Duration::from_secs(8),
        "{took:?} after the quota was raised (cap {CAP:?})"
    );
    until(&c.jobs(), "qjob", "ReplicaFailure removed", |j| {
        j.filter(|j| replica_failure(j).is_none()).map(|_| ())
    })
    .await;
    c.until_condition("qjob", ConditionType::Running).await;
    let described = kubectl(&c, &["-n", &c.namespace, "describe", "tfjob", "qjob"]).await;
    assert!(!described.contains("ReplicaFailure"), "{described}");
    eprintln!("kubectl describe tfjob qjob, the quota raised:\n{described}");
}

/// A namespace deleted under a running job: the operator tries at most one round of creates
/// into it (refused: the namespace is terminating), then creates nothing more and records no
/// events — counted from the API server's own record of requests.
#[tokio::test]
async fn a_terminating_namespace_gets_at_most_one_round_of_refused_creates() {
    let c = TestCluster::start("ns-refused").await;
    let mut spec = job("doomed", &[("PS", 1, "Never"), ("Worker", 2, "Never")]);
    annotate(&mut spec, "PS", RUN, "3600");
    annotate(&mut spec, "Worker", RUN, "3600");
    c.create(spec).await;
    c.until_condition("doomed", ConditionType::Running).await;
    c.until_pods_are(
        "doomed",
        &["doomed-ps-0", "doomed-worker-0", "doomed-worker-1"],
    )
    .await;
    // The creation's events are published behind its pass: out before the count starts.
    for reason in [
        "TFJobCreated",
        "SuccessfulCreatePod",
        "SuccessfulCreateService",
    ] {
        c.until_event_reason("doomed", reason).await;
    }

    let mark = c.mark();
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    namespaces
        .delete(&c.namespace, &DeleteParams::default())
        .await
        .expect("deleting the namespace");
    until(&namespaces, &c.namespace, "namespace removed", |n| {
        n.is_none().then_some(())
    })
    .await;
    // Late refusals would come from passes still queued: give them time to show.
    crate::support::settle().await;
    let requests = c.operator_requests_since(&mark);
    let creates = requests.count(Some("create"), None);
    eprintln!("namespace deleted: {creates} creates by the operator ({requests:?})");
    // Three pods and three services: one round of creates at most, and no event.
    assert!(creates <= 6, "{creates} creates: {requests:?}");
    assert_eq!(
        requests.count(Some("create"), Some("events")),
        0,
        "{requests:?}"
    );
}

/// The operator's own pod, as `config/default` ships it, passes Pod Security `restricted`
/// (a server-side dry run in a namespace enforcing it), and the check has teeth: the same pod
/// without its security settings is refused.
#[tokio::test]
async fn the_operator_pod_passes_pod_security_restricted() {
    let c = TestCluster::without_operator("pod-security").await;
    let restricted = format!("{}-restricted", c.namespace);
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    let ns = json!({"metadata": {"name": restricted,
        "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    let _ = namespaces
        .delete(&restricted, &DeleteParams::default())
        .await;
    crate::support::eventually("namespace created", || async {
        let ns = serde_json::from_value(ns.clone()).unwrap();
        namespaces.create(&PostParams::default(), &ns).await.ok()
    })
    .await;
    // The ServiceAccount admission wants the pod's account to exist.
    let accounts: Api<ServiceAccount> = Api::namespaced(c.client.clone(), &restricted);
    let account = json!({"metadata": {"name": "tfjob-operator"}});
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(account).unwrap(),
        )
        .await
        .expect("creating the operator's ServiceAccount");

    let rendered = kubectl(
        &c,
        &[
            "kustomize",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/default"),
        ],
    )
    .await;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&rendered).expect("kustomize output");
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("config/default has the Deployment");
    let mut template = deployment["spec"]["template"].clone();
    template["metadata"]["name"] = json!("tfjob-operator-dry-run");
    let pod: Pod = serde_json::from_value(template.clone()).expect("a pod");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), &restricted);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let admitted = pods.create(&dry_run, &pod).await;
    assert!(admitted.is_ok(), "the shipped pod is refused: {admitted:?}");

    template["spec"]["securityContext"] = json!({});
    template["spec"]["containers"][0]["securityContext"] = json!({});
    let bare: Pod = serde_json::from_value(template).expect("a pod");
    match pods.create(&dry_run, &bare).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403, "{s:?}");
            assert!(
                s.message
                    .contains("violates PodSecurity \"restricted:latest\""),
                "{}",
                s.message
            );
        }
        other => panic!("a pod without security settings was admitted: {other:?}"),
    }
    assert!(
        pods.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "dry runs store nothing"
    );
    let _ = namespaces
        .delete(&restricted, &DeleteParams::default())
        .await;
}
