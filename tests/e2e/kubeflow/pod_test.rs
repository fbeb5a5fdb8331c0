//! Kubeflow's `pkg/controller.v1/tensorflow/pod_test.go`, case by case (see `super`).

use super::*;

/// pod_test.go "Test ClusterSpec / should generate desired cluster spec": worker 0's
/// `TF_CONFIG`, byte for byte, with and without a cluster domain (the operator's
/// `--cluster-domain`, Kubeflow's `CUSTOM_CLUSTER_DOMAIN`); a job of one replica gets none.
#[tokio::test]
async fn cluster_spec() {
    // (cluster domain, job, PS, evaluators, expected TF_CONFIG with <ns> for the namespace)
    let cases = [
        (None, "local-tfjob", 0, 0, None),
        (Some("tf.training.com"), "local-tfjob", 0, 0, None),
        (
            Some("tf.training.org"),
            "test-tfjob",
            1,
            0,
            Some(
                r#"{"cluster":{"ps":["test-tfjob-ps-0.<ns>.svc.tf.training.org:2222"],"worker":["test-tfjob-worker-0.<ns>.svc.tf.training.org:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#,
            ),
        ),
        (
            Some("tf.training.io"),
            "test-tfjob",
            1,
            1,
            Some(
                r#"{"cluster":{"evaluator":["test-tfjob-evaluator-0.<ns>.svc.tf.training.io:2222"],"ps":["test-tfjob-ps-0.<ns>.svc.tf.training.io:2222"],"worker":["test-tfjob-worker-0.<ns>.svc.tf.training.io:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#,
            ),
        ),
        (
            None,
            "test-tfjob",
            1,
            1,
            Some(
                r#"{"cluster":{"evaluator":["test-tfjob-evaluator-0.<ns>.svc:2222"],"ps":["test-tfjob-ps-0.<ns>.svc:2222"],"worker":["test-tfjob-worker-0.<ns>.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#,
            ),
        ),
    ];
    // One namespace and operator per cluster domain.
    let mut clusters: BTreeMap<Option<&str>, TestCluster> = BTreeMap::new();
    for (domain, ..) in cases {
        if clusters.contains_key(&domain) {
            continue;
        }
        let test = format!("kf-cluster-spec-{}", domain.map_or("none", |d| &d[12..]));
        let mut c = TestCluster::without_operator(&test).await;
        match domain {
            Some(d) => c.start_operator_with(&["--cluster-domain", d]),
            None => c.start_operator(),
        }
        clusters.insert(domain, c);
    }
    for (domain, name, ps, evaluators, expected) in cases {
        let c = &clusters[&domain];
        let mut replicas = vec![("Worker", 1, "Never")];
        if ps > 0 {
            replicas.push(("PS", ps, "Never"));
        }
        if evaluators > 0 {
            replicas.push(("Evaluator", evaluators, "Never"));
        }
        c.create(long_job(name, &replicas)).await;
        let pod = until_pod(c, &format!("{name}-worker-0")).await;
        let expected = expected.map(|e| e.replace("<ns>", &c.namespace));
        assert_eq!(tf_config(&pod), expected, "domain {domain:?}, job {name}");
    }
}

/// pod_test.go "Test IsDistributed / should returns correctly": a job is distributed (its
/// pods get `TF_CONFIG`) unless it has exactly one replica. Kubeflow's (0 workers, 1 PS) is
/// a job nobody can complete: **documented difference** (README, "What we do differently":
/// invalid specs, jobs that could never succeed are refused up front; docs/behaviour.md §3) — the API server refuses it.
#[tokio::test]
async fn is_distributed() {
    let c = TestCluster::start("kf-distributed").await;
    for (name, replicas, distributed) in [
        ("w1", vec![("Worker", 1, "Never")], false),
        (
            "w1-ps1",
            vec![("Worker", 1, "Never"), ("PS", 1, "Never")],
            true,
        ),
        (
            "chief1-w1",
            vec![("Worker", 1, "Never"), ("Chief", 1, "Never")],
            true,
        ),
    ] {
        c.create(long_job(name, &replicas)).await;
        let first = if name.starts_with("chief") {
            "chief"
        } else {
            "worker"
        };
        let pod = until_pod(&c, &format!("{name}-{first}-0")).await;
        assert_eq!(tf_config(&pod).is_some(), distributed, "{name}");
    }
    let ps_only: TFJob =
        serde_json::from_value(long_job("ps1", &[("PS", 1, "Never")])).expect("a TFJob");
    let refused = c.jobs().create(&PostParams::default(), &ps_only).await;
    match refused {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{s:?}");
            assert!(
                s.message.contains(
                    "a Chief, a Master or a Worker with at least 1 replica must decide the job's success"
                ),
                "{}",
                s.message
            );
        }
        other => panic!("a job of one PS was not refused: {other:?}"),
    }
}

/// pod_test.go "Test Restart Policy / should assign proper restart policy to pod": the pod's
/// `restartPolicy` is the replica's, `ExitCode` becoming `Never`.
#[tokio::test]
async fn restart_policy() {
    let c = TestCluster::start("kf-restart-policy").await;
    for (policy, expected) in [
        ("ExitCode", "Never"),
        ("Never", "Never"),
        ("Always", "Always"),
        ("OnFailure", "OnFailure"),
    ] {
        let name = format!("rp-{}", policy.to_lowercase());
        c.create(long_job(&name, &[("Worker", 1, policy)])).await;
        let pod = until_pod(&c, &format!("{name}-worker-0")).await;
        let got = pod.spec.and_then(|s| s.restart_policy);
        assert_eq!(got.as_deref(), Some(expected), "{policy}");
    }
}

/// pod_test.go "Test Exit Code / should delete designated Pod": under `ExitCode` a worker
/// exiting 130 (retryable) is deleted — and, here where the job goes on, recreated.
#[tokio::test]
async fn exit_code_deletes_the_pod() {
    let c = TestCluster::start("kf-exit-code").await;
    let pods = crate::support::record_pods(&c, "test-exit-code").await;
    let pod = "test-exit-code-worker-0";
    c.script_pod_in_turn(
        pod,
        &[
            &[("run-seconds", "0.3"), ("exit-code", "130")],
            &[("run-seconds", LONG)],
        ],
    );
    c.create(job("test-exit-code", &[("Worker", 1, "ExitCode")]))
        .await;
    let first = eventually("the first pod", || async {
        pods.uids_of(pod).first().cloned()
    })
    .await;
    c.until_pod_uid(pod, Some(&first)).await;
    until(&c.pods(), pod, "the first pod gone", |p| {
        p.filter(|p| p.metadata.uid.as_deref() == Some(first.as_str()))
            .is_none()
            .then_some(())
    })
    .await;
    c.until_event(
        "test-exit-code",
        "ExitedWithCode",
        &format!("Pod: {}.{pod} exited with code 130", c.namespace),
    )
    .await;
}

/// pod_test.go "Test Unretryable Exit Code / should set the job status to Failed": under
/// `ExitCode` a worker exiting 1 fails the job: `Failed=True`, reason `TFJobFailed`, message
/// `job "<name>" is failing because "Worker" replica(s) failed.` (Kubeflow's words, `%q` and
/// all).
#[tokio::test]
async fn unretryable_exit_code_fails_the_job() {
    let c = TestCluster::start("kf-noretry").await;
    let name = "test-noretry-exit-code";
    ends(&c, &format!("{name}-worker-0"), "0.3", "1");
    c.create(job(name, &[("Worker", 1, "ExitCode")])).await;
    let failed = c.until_condition(name, ConditionType::Failed).await;
    let message = format!("job \"{name}\" is failing because \"Worker\" replica(s) failed.");
    assert!(
        conditions(&failed).contains(&cond("Failed", true, "TFJobFailed", &message)),
        "{:#?}",
        conditions(&failed)
    );
    c.until_event(name, "TFJobFailed", &message).await;
}

/// pod_test.go "Test Scale Down / should delete redundant Pods": `enableDynamicWorker`, 3
/// worker pods, the spec asks for 2: worker 2 is deleted.
#[tokio::test]
async fn scale_down_deletes_redundant_pods() {
    let c = TestCluster::start("kf-scale-down").await;
    let mut spec = long_job("test-scale-down", &[("Worker", 3, "Never")]);
    spec["spec"]["enableDynamicWorker"] = json!(true);
    c.create(spec).await;
    let all = [
        "test-scale-down-worker-0",
        "test-scale-down-worker-1",
        "test-scale-down-worker-2",
    ];
    c.until_pods_are("test-scale-down", &all).await;
    c.merge_patch_job(
        "test-scale-down",
        json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}}),
    )
    .await;
    c.until_pods_are("test-scale-down", &all[..2]).await;
    settle().await;
    let job = c.jobs().get("test-scale-down").await.expect("the job");
    assert!(
        !present(&job, ConditionType::Failed),
        "{:#?}",
        conditions(&job)
    );
}

/// pod_test.go "Test Scale Up / should create missing Pods": `enableDynamicWorker`, 1 worker
/// pod, the spec asks for 3: two more are created.
#[tokio::test]
async fn scale_up_creates_missing_pods() {
    let c = TestCluster::start("kf-scale-up").await;
    let mut spec = long_job("test-scale-up", &[("Worker", 1, "Never")]);
    spec["spec"]["enableDynamicWorker"] = json!(true);
    c.create(spec).await;
    c.until_pods_are("test-scale-up", &["test-scale-up-worker-0"])
        .await;
    c.merge_patch_job(
        "test-scale-up",
        json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 3}}}}),
    )
    .await;
    c.until_pods_are(
        "test-scale-up",
        &[
            "test-scale-up-worker-0",
            "test-scale-up-worker-1",
            "test-scale-up-worker-2",
        ],
    )
    .await;
}

/// pod_test.go "TestIsWorker0Completed / should match expected result": whether worker 0 has
/// completed (phase Succeeded, exit code 0) is what decides success without a chief. Seen
/// from outside, each row is the job's outcome:
/// - worker 0 running (beside a PS) → not completed: the job runs;
/// - worker 0 succeeded → completed: Succeeded;
/// - only a Master, or only a Chief (Kubeflow's helper answers true: no worker to wait
///   for) → it is their pod that decides: Succeeded once it succeeds;
/// - worker 0 succeeded, worker 1 failed → completed: Succeeded. Kubeflow's status code then
///   also sets Failed for the failed worker; we never show both (**documented difference**,
///   "A finished job is finished … Succeeded and Failed are never both True");
/// - worker 0 failed, worker 1 running → not completed: the job fails (restartPolicy Never).
#[tokio::test]
async fn is_worker0_completed() {
    let c = TestCluster::start("kf-worker0").await;
    let none = json!({"cleanPodPolicy": "None"});
    let mut spec = long_job("w0-0", &[("Worker", 1, "Never"), ("PS", 1, "Never")]);
    spec["spec"]["runPolicy"] = none.clone();
    c.create(spec).await;
    c.create(job("w0-1", &[("Worker", 1, "Never")])).await;
    c.create(job("w0-2", &[("Master", 1, "Never")])).await;
    c.create(job("w0-3", &[("Chief", 1, "Never")])).await;
    ends(&c, "w0-4-worker-0", "0.3", "0");
    ends(&c, "w0-4-worker-1", "1.5", "1");
    let mut spec = job("w0-4", &[("Worker", 2, "Never")]);
    spec["spec"]["runPolicy"] = none.clone();
    c.create(spec).await;
    ends(&c, "w0-5-worker-0", "0.3", "1");
    c.script_pod("w0-5-worker-1", &[("run-seconds", LONG)]);
    c.create(job("w0-5", &[("Worker", 2, "Never")])).await;

    for name in ["w0-1", "w0-2", "w0-3", "w0-4"] {
        c.until_condition(name, ConditionType::Succeeded).await;
    }
    c.until_condition("w0-5", ConditionType::Failed).await;
    c.until_condition("w0-0", ConditionType::Running).await;
    // Worker 1 of w0-4 fails after the job succeeded: it changes nothing.
    c.until_pod_phase("w0-4-worker-1", "Failed").await;
    settle().await;
    let running = c.jobs().get("w0-0").await.expect("the job");
    assert!(!present(&running, ConditionType::Succeeded), "w0-0");
    let both = c.jobs().get("w0-4").await.expect("the job");
    assert!(has_condition(&both, ConditionType::Succeeded), "w0-4");
    assert!(
        !present(&both, ConditionType::Failed),
        "w0-4: {:#?}",
        conditions(&both)
    );
    let failed = c.jobs().get("w0-5").await.expect("the job");
    assert!(!present(&failed, ConditionType::Succeeded), "w0-5");
}
