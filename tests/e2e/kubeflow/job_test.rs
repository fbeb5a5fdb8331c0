//! Kubeflow's `pkg/controller.v1/tensorflow/job_test.go`, case by case (see `super`).

use super::*;

/// job_test.go "Test Add TFJob / should get the exact TFJob": a job created beside a decoy
/// is the one read back, and each gets exactly its own children.
#[tokio::test]
async fn add_tfjob_gets_the_exact_tfjob() {
    let c = TestCluster::start("kf-add").await;
    c.create(long_job("test-case-12", &[("Worker", 1, "Never")]))
        .await;
    c.create(long_job(
        "decoy-case-34",
        &[("Worker", 2, "Never"), ("PS", 3, "Never")],
    ))
    .await;
    let job = c.jobs().get("test-case-12").await.expect("the job");
    assert_eq!(job.metadata.name.as_deref(), Some("test-case-12"));
    c.until_pods_are("test-case-12", &["test-case-12-worker-0"])
        .await;
    c.until_pods_are(
        "decoy-case-34",
        &[
            "decoy-case-34-ps-0",
            "decoy-case-34-ps-1",
            "decoy-case-34-ps-2",
            "decoy-case-34-worker-0",
            "decoy-case-34-worker-1",
        ],
    )
    .await;
    assert_eq!(
        c.service_names("test-case-12").await,
        ["test-case-12-worker-0"]
    );
}

/// job_test.go "Test Copy Labels and Annotation / should copy labels and annotation from the
/// spec to generated Pods".
#[tokio::test]
async fn copy_labels_and_annotation_to_pods() {
    let c = TestCluster::start("kf-copy").await;
    let mut spec = long_job("test-copy-labels-anno", &[("Worker", 1, "Never")]);
    annotate(&mut spec, "Worker", "annotation1", "1");
    spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"]["labels"] =
        json!({"label1": "1"});
    c.create(spec).await;
    let pod = until_pod(&c, "test-copy-labels-anno-worker-0").await;
    let annotations = pod.metadata.annotations.unwrap_or_default();
    let labels = pod.metadata.labels.unwrap_or_default();
    assert_eq!(
        annotations.get("annotation1").map(String::as_str),
        Some("1")
    );
    assert_eq!(labels.get("label1").map(String::as_str), Some("1"));
    // The operator's own labels are there beside them.
    for (k, v) in replica_labels("test-copy-labels-anno", "worker", 0, true) {
        assert_eq!(labels.get(&k), Some(&v), "{k}");
    }
}

/// job_test.go "Test Delete Pods and Services / it should clean associated Pods and Services
/// according to clean policy": a Succeeded job with 4 workers and 2 PS; pods and services
/// left by each policy. Kubeflow's fixture marks the job Succeeded while all six pods run;
/// here the same status is written with the operator stopped, then the operator starts.
#[tokio::test]
async fn delete_pods_and_services_by_clean_pod_policy() {
    let mut c = TestCluster::without_operator("kf-clean").await;
    // (description, job, policy, the pods run on, expected children remaining)
    let cases = [
        (
            "4 workers and 2 ps is running, policy is all",
            "del-0",
            "All",
            true,
            0,
        ),
        (
            "4 workers and 2 ps is running, policy is running",
            "del-1",
            "Running",
            true,
            0,
        ),
        (
            "4 workers and 2 ps is succeeded, policy is running",
            "del-2",
            "Running",
            false,
            6,
        ),
        (
            "4 workers and 2 ps is succeeded, policy is None",
            "del-3",
            "None",
            false,
            6,
        ),
    ];
    for (_, name, policy, running, _) in cases {
        let mut spec = job(name, &[("Worker", 4, "Never"), ("PS", 2, "Never")]);
        spec["spec"]["runPolicy"] = json!({"cleanPodPolicy": policy});
        if running {
            annotate(&mut spec, "Worker", RUN, LONG);
            annotate(&mut spec, "PS", RUN, LONG);
        } else {
            // Worker 0 decides success: it ends last, so all six have succeeded by then.
            ends(&c, &format!("{name}-worker-0"), "1.5", "0");
        }
        c.create(spec).await;
    }
    c.start_operator();
    // The succeeded cases succeed by themselves (worker 0 exits 0, the rest too); the running
    // ones are marked Succeeded once all six pods run, the operator stopped meanwhile.
    for (_, name, _, running, _) in cases {
        if running {
            until_job(&c, name, "all six pods running", |j| {
                counts(j, ReplicaType::Worker).is_some_and(|n| n.0 == 4)
                    && counts(j, ReplicaType::Ps).is_some_and(|n| n.0 == 2)
            })
            .await;
        } else {
            c.until_condition(name, ConditionType::Succeeded).await;
        }
    }
    c.stop_operator().await;
    for (_, name, _, running, _) in cases {
        if running {
            write_status(&c, name, |s| {
                let list = s["conditions"].as_array_mut().expect("conditions");
                for cd in list.iter_mut().filter(|cd| cd["type"] == "Running") {
                    cd["status"] = json!("False");
                }
                list.push(status_condition("Succeeded", "True", "TFJobSucceeded", ""));
            })
            .await;
        }
    }
    c.start_operator();
    for (description, name, _, _, remaining) in cases {
        let what = format!("{description}: {remaining} pods and services left");
        eventually(&what, || async {
            let (pods, services) = (c.pod_names(name).await, c.service_names(name).await);
            (pods.len() == remaining && services.len() == remaining).then_some(())
        })
        .await;
    }
    // What stays must still be there once the operator had time to do more.
    settle().await;
    for (description, name, _, _, remaining) in cases {
        assert_eq!(c.pod_names(name).await.len(), remaining, "{description}");
        assert_eq!(
            c.service_names(name).await.len(),
            remaining,
            "{description}"
        );
    }
}

/// job_test.go "Test Active Deadline Seconds / clean desired Pods and Services according to
/// TFJob config": 4 workers and 2 PS running, cleanPodPolicy All; without a deadline all six
/// stay, with `activeDeadlineSeconds: 2` none do once it passed.
#[tokio::test]
async fn active_deadline_seconds_cleans_pods_and_services() {
    let c = TestCluster::start("kf-ads").await;
    for (name, ads) in [("test-ads-0", None), ("test-ads-1", Some(2))] {
        let mut spec = long_job(name, &[("Worker", 4, "Never"), ("PS", 2, "Never")]);
        spec["spec"]["runPolicy"] = json!({"cleanPodPolicy": "All", "activeDeadlineSeconds": ads});
        c.create(spec).await;
    }
    let failed = c.until_condition("test-ads-1", ConditionType::Failed).await;
    assert_eq!(
        crate::support::reason_and_message(&failed, ConditionType::Failed),
        Some((
            "TFJobFailed".into(),
            "Job test-ads-1 has failed because it was active longer than specified deadline".into()
        ))
    );
    eventually("no child of test-ads-1 left", || async {
        let (pods, services) = children(&c, "test-ads-1").await;
        (pods.is_empty() && services.is_empty()).then_some(())
    })
    .await;
    // The job without a deadline ran as long, and keeps all six.
    let unset = c.jobs().get("test-ads-0").await.expect("the job");
    assert!(!has_condition(&unset, ConditionType::Failed));
    assert_eq!(c.pod_names("test-ads-0").await.len(), 6);
    assert_eq!(c.service_names("test-ads-0").await.len(), 6);
}

/// job_test.go "Test Backoff For On Failure(": 4 workers restarted once each (OnFailure), 2 PS
/// running, `backoffLimit: 4`, cleanPodPolicy All; Kubeflow fails the job as the fourth restart
/// is counted (restarts ≥ limit) and deletes all six pods and services.
///
/// **Documented difference** (README, "What we do differently": `backoffLimit`;
/// docs/behaviour.md §6.4): our limit is Kubernetes Job's count of retries — `backoffLimit: 4`
/// lets four restarts happen and the failure that would need a fifth fails the job. So with
/// limit 4 the job goes on (and succeeds); with limit 3 the fourth restart fails it, as
/// Kubeflow's limit 4 does, and everything is deleted.
#[tokio::test]
async fn backoff_for_on_failure() {
    let c = TestCluster::start("kf-bof").await;
    for (name, limit) in [("test-bof-4", 4), ("test-bof-3", 3)] {
        let mut spec = job(name, &[("Worker", 4, "OnFailure"), ("PS", 2, "Never")]);
        spec["spec"]["runPolicy"] = json!({"backoffLimit": limit, "cleanPodPolicy": "All"});
        // Each worker's container fails once (after 2 s), is restarted in place by the
        // kubelet and then exits 0 (after 2 s more); the PS serve meanwhile.
        annotate(&mut spec, "Worker", RUN, "2");
        annotate(&mut spec, "Worker", "sim.tfjob.dev/fail-times", "1");
        annotate(&mut spec, "Worker", "sim.tfjob.dev/exit-code", "1");
        annotate(&mut spec, "PS", RUN, LONG);
        c.create(spec).await;
    }
    let within = c
        .until_condition("test-bof-4", ConditionType::Succeeded)
        .await;
    let total: i32 = within
        .status
        .iter()
        .flat_map(|s| s.replica_statuses.values())
        .filter_map(|r| r.restarts)
        .sum();
    assert_eq!(total, 4, "four restarts, each within backoffLimit 4");
    assert!(!present(&within, ConditionType::Failed));

    let past = c.until_condition("test-bof-3", ConditionType::Failed).await;
    assert_eq!(
        crate::support::reason_and_message(&past, ConditionType::Failed),
        Some((
            "TFJobFailed".into(),
            "Job test-bof-3 has failed because it has reached the specified backoff limit".into()
        ))
    );
    assert!(!present(&past, ConditionType::Succeeded));
    eventually("no child of test-bof-3 left", || async {
        let (pods, services) = children(&c, "test-bof-3").await;
        (pods.is_empty() && services.is_empty()).then_some(())
    })
    .await;
}

/// job_test.go "Test TTL Seconds After Finished / should delete job when expired time is up":
/// a succeeded and a failed job, each with a TTL of 3 s (cleanPodPolicy None), are deleted.
#[tokio::test]
async fn ttl_seconds_after_finished_deletes_the_job() {
    let c = TestCluster::start("kf-ttl").await;
    for (name, code) in [("test-ttl-0", "0"), ("test-ttl-1", "1")] {
        let mut spec = job(name, &[("Worker", 1, "Never")]);
        spec["spec"]["runPolicy"] = json!({"ttlSecondsAfterFinished": 3, "cleanPodPolicy": "None"});
        ends(&c, &format!("{name}-worker-0"), "0.3", code);
        c.create(spec).await;
    }
    let c = &c;
    let jobs = join_all(
        [
            ("test-ttl-0", ConditionType::Succeeded),
            ("test-ttl-1", ConditionType::Failed),
        ]
        .map(|(name, t)| async move {
            let done = c.until_condition(name, t).await;
            let completed = done
                .status
                .as_ref()
                .unwrap()
                .completion_time
                .clone()
                .unwrap()
                .0;
            c.until_gone(&c.jobs(), name, "the TFJob deleted by its TTL")
                .await;
            let after = Timestamp::now().duration_since(completed).as_secs_f64();
            // completionTime has whole seconds: up to 1 s of slack below the TTL.
            assert!(after >= 2.0, "{name} deleted {after}s after completionTime");
        }),
    );
    jobs.await;
}

/// job_test.go "Test for controller.v1/common / TFJob is created and is cleaned up": when a
/// job is deleted for its TTL, and when it is left alone. Kubeflow's entries call
/// `CleanupJob` with a run policy and a status; each is the job a user would have then.
#[tokio::test]
async fn tfjob_is_created_and_is_cleaned_up() {
    let mut c = TestCluster::without_operator("kf-cleanup").await;
    let chief_and_workers = [("Chief", 1, "Never"), ("Worker", 2, "Never")];
    // "TFJob is removed since exceeded TTL (TTL is 180s)": finished a day ago (under an
    // earlier controller), so its TTL has long passed when the operator first sees it.
    let mut spec = job("ttl-180", &chief_and_workers);
    spec["spec"]["runPolicy"] = json!({"ttlSecondsAfterFinished": 180, "cleanPodPolicy": "None"});
    c.create(spec).await;
    let day_ago = (Timestamp::now() - SignedDuration::from_hours(24)).to_string();
    write_status(&c, "ttl-180", |s| {
        s["conditions"] = json!([
            status_condition(
                "Created",
                "True",
                "TFJobCreated",
                "TFJob ttl-180 is created."
            ),
            status_condition(
                "Succeeded",
                "True",
                "TFJobSucceeded",
                "TFJob ttl-180 successfully completed."
            ),
        ]);
        s["completionTime"] = json!(day_ago);
        s["startTime"] = json!(day_ago);
    })
    .await;
    // "TFJob shouldn't be removed since TTL is nil": finishes, stays.
    c.create(job("ttl-nil", &chief_and_workers)).await;
    // "No error with completionTime is nil if suspended": suspended, no TTL.
    let mut spec = long_job("suspended-nil", &chief_and_workers);
    spec["spec"]["runPolicy"] = json!({"suspend": true});
    c.create(spec).await;
    // "No error with TTL is set and completionTime is nil, if suspended".
    let mut spec = long_job("suspended-ttl-10", &chief_and_workers);
    spec["spec"]["runPolicy"] = json!({"suspend": true, "ttlSecondsAfterFinished": 10});
    c.create(spec).await;
    // "Error is occurred since completionTime is nil": TTL set, not finished (Kubeflow's
    // CleanupJob errs; the job stays, as here).
    let mut spec = long_job("running-ttl-10", &chief_and_workers);
    spec["spec"]["runPolicy"] = json!({"ttlSecondsAfterFinished": 10});
    c.create(spec).await;
    // "TFJob is removed since (TTL is 0s)".
    let mut spec = job("ttl-0", &chief_and_workers);
    spec["spec"]["runPolicy"] = json!({"ttlSecondsAfterFinished": 0});
    c.create(spec).await;
    c.start_operator();

    c.until_gone(
        &c.jobs(),
        "ttl-180",
        "deleted: finished a day ago, TTL 180 s",
    )
    .await;
    c.until_gone(&c.jobs(), "ttl-0", "deleted once finished: TTL 0")
        .await;
    c.until_condition("ttl-nil", ConditionType::Succeeded).await;
    c.until_condition("suspended-nil", ConditionType::Suspended)
        .await;
    c.until_condition("suspended-ttl-10", ConditionType::Suspended)
        .await;
    c.until_condition("running-ttl-10", ConditionType::Running)
        .await;
    settle().await;
    for name in [
        "ttl-nil",
        "suspended-nil",
        "suspended-ttl-10",
        "running-ttl-10",
    ] {
        let job = c.jobs().get_opt(name).await.expect("reading the job");
        assert!(
            job.is_some_and(|j| j.metadata.deletion_timestamp.is_none()),
            "{name} was removed"
        );
    }
}

/// job_test.go "Test for controller.v1/common / CreateNewService": "Succeeded to create
/// service" — the service of a replica: its name, labels, selector, port, headless, owner —
/// and "Failed to create service since containerPort is missing", which a user never meets:
/// Kubeflow's defaulting (`setTensorflowDefaultPort`) gives the `tensorflow` container
/// `tfjob-port: 2222` first, as ours does, so the service gets that port. ("Failed … since
/// Job's ownerReference is invalid" needs a job without uid, which no API server stores.)
#[tokio::test]
async fn create_new_service() {
    let c = TestCluster::start("kf-service").await;
    let created = c
        .create(long_job("test-tfjob", &[("Worker", 2, "Never")]))
        .await;
    let spec = long_job("no-port", &[("Worker", 1, "Never")]);
    let container = &spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0];
    assert!(container["ports"].is_null(), "the template names no port");
    c.create(spec).await;
    for (job, svc) in [
        ("test-tfjob", "test-tfjob-worker-0"),
        ("no-port", "no-port-worker-0"),
    ] {
        let s = until_service(&c, svc).await;
        let labels = replica_labels(job, "worker", 0, false);
        assert_eq!(s.metadata.labels.as_ref(), Some(&labels), "{svc}");
        let spec = s.spec.clone().expect("spec");
        assert_eq!(spec.selector.as_ref(), Some(&labels), "{svc}");
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "{svc}");
        // Kubeflow's service has no publishNotReadyAddresses: a documented difference (README,
        // "What we do differently": peers' DNS names; docs/behaviour.md §4).
        assert_eq!(spec.publish_not_ready_addresses, Some(true), "{svc}");
        // The API server's defaults (the simulator does not default every field).
        let defaulted = |v: Option<&str>, d: &str| {
            if c.simulated() {
                v.is_none_or(|v| v == d)
            } else {
                v == Some(d)
            }
        };
        assert!(
            defaulted(spec.type_.as_deref(), "ClusterIP"),
            "{svc}: {spec:?}"
        );
        let ports = spec.ports.clone().unwrap_or_default();
        assert_eq!(ports.len(), 1, "{svc}: {ports:?}");
        let p = &ports[0];
        assert_eq!(
            (p.name.as_deref(), p.port),
            (Some("tfjob-port"), 2222),
            "{svc}"
        );
        assert_eq!(
            p.target_port,
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(2222)),
            "{svc}"
        );
        assert!(defaulted(p.protocol.as_deref(), "TCP"), "{svc}: {p:?}");
    }
    assert_owned(&c, &created).await;
}
