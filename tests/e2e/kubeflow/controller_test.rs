//! Kubeflow's `pkg/controller.v1/tensorflow/tfjob_controller_test.go`, `tensorflow_test.go`
//! and `util_test.go`, case by case (see `super`).

use super::*;

/// A child of a "Test Normal Path" row that exists before the operator's first pass.
#[derive(Clone, Copy, Debug)]
enum Existing {
    /// Stays Pending (`start-seconds`).
    Pending,
    Running,
    /// Exits 0 at once.
    Succeeded,
}

/// A "Test Normal Path" row: the pods (type, index, phase) and services (type, index) that
/// exist before the operator's first pass, then what the pass must show.
struct NormalRow {
    kubeflow: &'static str,
    workers: i32,
    ps: i32,
    pods: Vec<(&'static str, i32, Existing)>,
    services: Vec<(&'static str, i32)>,
    /// Pods and services the operator creates (as many of each).
    creations: usize,
    /// Expected (active, succeeded, failed) of Worker and PS.
    worker: (i32, i32, i32),
    ps_counts: (i32, i32, i32),
    /// The condition that must be True, and its reason, if any.
    condition: Option<(ConditionType, &'static str)>,
}

/// `(t, i, phase)` for each index of `is`.
fn pods_of(t: &'static str, is: &[i32], phase: Existing) -> Vec<(&'static str, i32, Existing)> {
    is.iter().map(|&i| (t, i, phase)).collect()
}

fn services_of(workers: &[i32], ps: &[i32]) -> Vec<(&'static str, i32)> {
    let w = workers.iter().map(|&i| ("worker", i));
    w.chain(ps.iter().map(|&i| ("ps", i))).collect()
}

fn normal_rows() -> Vec<NormalRow> {
    use Existing::*;
    let row = |kubeflow, workers, ps| NormalRow {
        kubeflow,
        workers,
        ps,
        pods: Vec::new(),
        services: Vec::new(),
        creations: 0,
        worker: (0, 0, 0),
        ps_counts: (0, 0, 0),
        condition: None,
    };
    let all = [0, 1, 2, 3];
    vec![
        NormalRow {
            creations: 1,
            ..row("Local TFJob is created", 1, 0)
        },
        NormalRow {
            creations: 6,
            ..row("Distributed TFJob (4 workers, 2 PS) is created", 4, 2)
        },
        NormalRow {
            pods: [
                pods_of("worker", &all, Pending),
                pods_of("ps", &[0, 1], Pending),
            ]
            .concat(),
            services: services_of(&all, &[0, 1]),
            ..row(
                "Distributed TFJob (4 workers, 2 PS) is created and all replicas are pending",
                4,
                2,
            )
        },
        NormalRow {
            pods: [
                pods_of("worker", &all, Running),
                pods_of("ps", &[0, 1], Running),
            ]
            .concat(),
            services: services_of(&all, &[0, 1]),
            worker: (4, 0, 0),
            ps_counts: (2, 0, 0),
            condition: Some((ConditionType::Running, "TFJobRunning")),
            ..row(
                "Distributed TFJob (4 workers, 2 PS) is created and all replicas are running",
                4,
                2,
            )
        },
        NormalRow {
            pods: [
                pods_of("worker", &[0, 1], Pending),
                pods_of("ps", &[0], Pending),
            ]
            .concat(),
            services: services_of(&[0, 1], &[0]),
            creations: 3,
            ..row(
                "Distributed TFJob (4 workers, 2 PS) is created, 2 workers, 1 PS are pending",
                4,
                2,
            )
        },
        NormalRow {
            pods: [
                pods_of("worker", &[0, 1], Pending),
                pods_of("ps", &[0], Pending),
                pods_of("worker", &[2], Running),
            ]
            .concat(),
            services: services_of(&[0, 1, 2], &[0]),
            creations: 2,
            worker: (1, 0, 0),
            condition: Some((ConditionType::Running, "TFJobRunning")),
            ..row(
                "Distributed TFJob (4 workers, 2 PS) is created, 2 workers, 1 PS are pending, 1 worker is running",
                4,
                2,
            )
        },
        NormalRow {
            pods: [
                pods_of("worker", &[0, 1], Pending),
                pods_of("ps", &[0], Pending),
                pods_of("worker", &[2], Succeeded),
            ]
            .concat(),
            services: services_of(&[0, 1, 2], &[0]),
            creations: 2,
            worker: (0, 1, 0),
            ..row(
                "Distributed TFJob (4 workers, 2 PS) is created, 2 workers, 1 PS are pending, 1 worker is succeeded",
                4,
                2,
            )
        },
        NormalRow {
            pods: [
                pods_of("worker", &all, Succeeded),
                pods_of("ps", &[0, 1], Succeeded),
            ]
            .concat(),
            services: services_of(&all, &[0, 1]),
            worker: (0, 4, 0),
            ps_counts: (0, 2, 0),
            condition: Some((ConditionType::Succeeded, "TFJobSucceeded")),
            ..row("Distributed TFJob (4 workers, 2 PS) is succeeded", 4, 2)
        },
    ]
}

/// tfjob_controller_test.go "Test Normal Path / should create desired Pods and Services":
/// each row's children exist (in the row's phases) before the operator's first pass, as
/// Kubeflow's fixture makes them; the pass creates exactly the missing pods and services,
/// owned by the job, and the status counts and condition are the row's. The pods the
/// operator creates stay Pending (`start-seconds`), so the counts are the row's own.
#[tokio::test]
async fn normal_path() {
    let mut c = TestCluster::without_operator("kf-normal").await;
    let rows = normal_rows();
    let mut before = Vec::new();
    for (n, row) in rows.iter().enumerate() {
        let name = format!("test-case-norm-{n}");
        for (t, count) in [("worker", row.workers), ("ps", row.ps)] {
            for i in 0..count {
                c.script_pod(&format!("{name}-{t}-{i}"), &[("start-seconds", LONG)]);
            }
        }
        let mut replicas = vec![("Worker", row.workers, "Never")];
        if row.ps > 0 {
            replicas.push(("PS", row.ps, "Never"));
        }
        let job = c.create(job(&name, &replicas)).await;
        for &(t, i, phase) in &row.pods {
            let script: &[(&str, &str)] = match phase {
                Existing::Pending => &[("start-seconds", LONG)],
                Existing::Running => &[("run-seconds", LONG)],
                Existing::Succeeded => &[("run-seconds", "0.1")],
            };
            existing_pod(&c, &job, t, i, script).await;
        }
        for &(t, i) in &row.services {
            existing_service(&c, &job, t, i).await;
        }
        for &(t, i, phase) in &row.pods {
            let phase = format!("{phase:?}");
            c.until_pod_phase(&format!("{name}-{t}-{i}"), &phase).await;
        }
        before.push((job, children(&c, &name).await));
    }
    c.start_operator();

    let mut problems = Vec::new();
    for (row, (job, (pods_before, services_before))) in rows.iter().zip(&before) {
        let name = job.metadata.name.clone().unwrap_or_default();
        let total = (row.workers + row.ps) as usize;
        let status = until_job(&c, &name, "the row's status", |j| {
            counts(j, ReplicaType::Worker).unwrap_or_default() == row.worker
                && (row.ps == 0 || counts(j, ReplicaType::Ps).unwrap_or_default() == row.ps_counts)
                && row.condition.is_none_or(|(t, _)| has_condition(j, t))
                && j.status.as_ref().is_some_and(|s| !s.conditions.is_empty())
        })
        .await;
        eventually(&format!("{name}: {total} pods and services"), || async {
            let (p, s) = children(&c, &name).await;
            (p.len() == total && s.len() == total).then_some(())
        })
        .await;
        settle().await;
        let (pods, services) = children(&c, &name).await;
        let created = (
            pods.difference(pods_before).count(),
            services.difference(services_before).count(),
        );
        if created != (row.creations, row.creations) {
            problems.push(format!(
                "{}: created {created:?}, want {}",
                row.kubeflow, row.creations
            ));
        }
        if !pods_before.is_subset(&pods) || !services_before.is_subset(&services) {
            problems.push(format!("{}: an existing child was replaced", row.kubeflow));
        }
        if let Some((t, reason)) = row.condition {
            let found = condition(&status, t).and_then(|c| c.reason.clone());
            if found.as_deref() != Some(reason) {
                problems.push(format!("{}: {t:?} reason {found:?}", row.kubeflow));
            }
        }
        if row.condition.is_none()
            && (present(&status, ConditionType::Succeeded)
                || present(&status, ConditionType::Failed))
        {
            problems.push(format!(
                "{}: finished {:?}",
                row.kubeflow,
                conditions(&status)
            ));
        }
        // "needCheckStartTime": a running job has its startTime.
        if row
            .condition
            .is_some_and(|(t, _)| t == ConditionType::Running)
            && status
                .status
                .as_ref()
                .and_then(|s| s.start_time.as_ref())
                .is_none()
        {
            problems.push(format!("{}: no startTime", row.kubeflow));
        }
        assert_owned(&c, job).await;
    }
    assert!(
        problems.is_empty(),
        "rows that differ:\n{}",
        problems.join("\n")
    );
}

/// The job of "TFJob with suspend semantics": chief 1, worker 1, named `test-job`.
fn suspend_job() -> Value {
    long_job("test-job", &[("Chief", 1, "Never"), ("Worker", 1, "Never")])
}

/// tfjob_controller_test.go "TFJob with suspend semantics / Shouldn't create resources if
/// TFJob is suspended".
#[tokio::test]
async fn suspended_creates_nothing() {
    let c = TestCluster::start("kf-suspended").await;
    let mut spec = suspend_job();
    spec["spec"]["runPolicy"] = json!({"suspend": true});
    c.create(spec).await;
    let job = c
        .until_condition("test-job", ConditionType::Suspended)
        .await;
    settle().await;
    let job_now = c.jobs().get("test-job").await.expect("the job");
    assert_eq!(job_now.status, job.status, "the status kept changing");
    assert!(job_now.status.as_ref().unwrap().start_time.is_none());
    assert!(c.pod_names("test-job").await.is_empty());
    assert!(c.service_names("test-job").await.is_empty());
    assert_eq!(
        conditions(&job_now),
        [
            cond(
                "Created",
                true,
                "TFJobCreated",
                "TFJob test-job is created."
            ),
            cond(
                "Suspended",
                true,
                "TFJobSuspended",
                "TFJob test-job is suspended."
            ),
        ]
    );
}

/// tfjob_controller_test.go "TFJob with suspend semantics / Should delete resources after
/// TFJob is suspended; Should resume TFJob after TFJob is unsuspended".
#[tokio::test]
async fn suspend_then_resume() {
    let c = TestCluster::start("kf-suspend-resume").await;
    let ns = c.namespace.clone();
    c.create(suspend_job()).await;
    let running = cond(
        "Running",
        true,
        "TFJobRunning",
        &format!("TFJob {ns}/test-job is running."),
    );
    let created = cond(
        "Created",
        true,
        "TFJobCreated",
        "TFJob test-job is created.",
    );
    let job = until_job(&c, "test-job", "both pods running", |j| {
        counts(j, ReplicaType::Chief).is_some_and(|n| n.0 == 1)
            && counts(j, ReplicaType::Worker).is_some_and(|n| n.0 == 1)
            && has_condition(j, ConditionType::Running)
    })
    .await;
    assert_eq!(conditions(&job), [created.clone(), running.clone()]);
    let start_before = job
        .status
        .as_ref()
        .unwrap()
        .start_time
        .clone()
        .expect("startTime");

    c.merge_patch_job(
        "test-job",
        json!({"spec": {"runPolicy": {"suspend": true}}}),
    )
    .await;
    for name in ["test-job-chief-0", "test-job-worker-0"] {
        c.until_gone(&c.pods(), name, "pod deleted on suspend")
            .await;
        c.until_gone(&c.services(), name, "service deleted on suspend")
            .await;
    }
    let suspended = until_job(&c, "test-job", "suspended, nothing active", |j| {
        has_condition(j, ConditionType::Suspended)
            && counts(j, ReplicaType::Chief).is_some_and(|n| n.0 == 0)
            && counts(j, ReplicaType::Worker).is_some_and(|n| n.0 == 0)
    })
    .await;
    settle().await;
    assert!(c.pod_names("test-job").await.is_empty());
    assert!(c.service_names("test-job").await.is_empty());
    let now = c.jobs().get("test-job").await.expect("the job");
    assert_eq!(now.status, suspended.status, "the status kept changing");
    assert_eq!(
        now.status.as_ref().unwrap().start_time.as_ref(),
        Some(&start_before)
    );
    let message = "TFJob test-job is suspended.";
    assert_eq!(
        conditions(&now),
        [
            created.clone(),
            cond("Running", false, "TFJobSuspended", message),
            cond("Suspended", true, "TFJobSuspended", message),
        ]
    );

    // startTime has whole seconds: make sure the resumed one can differ.
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.merge_patch_job(
        "test-job",
        json!({"spec": {"runPolicy": {"suspend": false}}}),
    )
    .await;
    for name in ["test-job-chief-0", "test-job-worker-0"] {
        until_pod(&c, name).await;
        until_service(&c, name).await;
    }
    let resumed = until_job(&c, "test-job", "resumed and running", |j| {
        has_condition(j, ConditionType::Running)
    })
    .await;
    assert_eq!(
        conditions(&resumed),
        [
            created,
            cond(
                "Suspended",
                false,
                "TFJobResumed",
                "TFJob test-job is resumed."
            ),
            running,
        ]
    );
    let start_after = resumed
        .status
        .as_ref()
        .unwrap()
        .start_time
        .clone()
        .expect("startTime");
    assert_ne!(start_after, start_before, "startTime not updated on resume");
}

/// tfjob_controller_test.go "TFJob with suspend semantics / Should not reconcile a job while
/// managed by external controller": `managedBy: kueue.x-k8s.io/multikueue`, suspended, then
/// unsuspended: no startTime, no children, no conditions, ever.
#[tokio::test]
async fn managed_by_external_controller_is_left_alone() {
    let c = TestCluster::start("kf-managed-by").await;
    let mut spec = suspend_job();
    spec["spec"]["runPolicy"] = json!({"managedBy": "kueue.x-k8s.io/multikueue", "suspend": true});
    c.create(spec).await;
    let untouched = || async {
        settle().await;
        let job = c.jobs().get("test-job").await.expect("the job");
        let status = job.status.clone().unwrap_or_default();
        assert!(status.start_time.is_none(), "{status:?}");
        assert!(status.conditions.is_empty(), "{status:?}");
        assert!(c.pod_names("test-job").await.is_empty());
        assert!(c.service_names("test-job").await.is_empty());
    };
    untouched().await;
    c.merge_patch_job(
        "test-job",
        json!({"spec": {"runPolicy": {"suspend": false}}}),
    )
    .await;
    untouched().await;
}

// ---------------------------------------------------------------------------------------
// tensorflow_test.go, util_test.go

/// tensorflow_test.go "TestConvertClusterSpecToSparseClusterSpec": with
/// `enableDynamicWorker`, worker 0 sees only itself among the workers and every PS; PS 0
/// sees no worker and only itself.
#[tokio::test]
async fn sparse_cluster_spec() {
    let c = TestCluster::start("kf-sparse").await;
    let ns = &c.namespace;
    let mut spec = long_job("test-tfjob", &[("Worker", 2, "Never"), ("PS", 2, "Never")]);
    spec["spec"]["enableDynamicWorker"] = json!(true);
    c.create(spec).await;
    let parsed = |pod: &Pod| -> Value {
        serde_json::from_str(&tf_config(pod).expect("TF_CONFIG")).expect("JSON")
    };
    let worker = parsed(&until_pod(&c, "test-tfjob-worker-0").await);
    assert_eq!(
        worker["cluster"],
        json!({"worker": {"0": format!("test-tfjob-worker-0.{ns}.svc:2222")},
            "ps": [format!("test-tfjob-ps-0.{ns}.svc:2222"), format!("test-tfjob-ps-1.{ns}.svc:2222")]})
    );
    let ps = parsed(&until_pod(&c, "test-tfjob-ps-0").await);
    assert_eq!(
        ps["cluster"],
        json!({"worker": {}, "ps": [format!("test-tfjob-ps-0.{ns}.svc:2222")]})
    );
}

// util_test.go "TestGenOwnerReference" (uid, name, apiVersion of the controller reference)
// is checked on every child by `assert_owned`, above. "TestGenLabels" turns a job name with
// "/" into "-" in the job-name label: no TFJob name can hold a "/" (the API server refuses
// it), so a user never meets it.
