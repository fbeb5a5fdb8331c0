//! The cases only the external mode has (docs/kueue.md, "The operator as Kueue's external
//! framework"): the operator makes and follows the Workload itself, so what Kueue's webhook
//! and reconciler did for a TFJob is the operator's to do. Real tier, external mode only
//! (`TESTCLUSTER_KUEUE_MODE=external testcluster/e2e kueue`); elsewhere each test prints that it
//! is skipped.

use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionType, TFJob};

use super::{
    Flavor, LOCAL_QUEUE, LONG, PRIORITY_LABEL, QUEUE_LABEL, Queue, assert_injected,
    kueue_condition, kueue_present, kueue_true, queued_job, suspended, until_bound_pods,
    until_stopped,
};
use crate::support::{
    TestCluster, condition, eventually, has_condition, record_pods, settle, until,
};

/// Whether this run's operator is Kueue's external framework; prints why not otherwise.
fn external(test: &str) -> bool {
    if !kueue_present(test) {
        return false;
    }
    let mode = std::env::var("TESTCLUSTER_KUEUE_MODE").unwrap_or_default();
    if mode != "external" {
        eprintln!(
            "{test}: skipped: Kueue runs its built-in TFJob integration here (TESTCLUSTER_KUEUE_MODE={mode:?}, not external)"
        );
    }
    mode == "external"
}

/// One flavor with no room: nothing is admitted until `make_room`.
async fn full_queue(c: &TestCluster) -> Queue {
    Queue::new(
        c,
        &[Flavor {
            suffix: "a",
            cpu: "0",
            memory: "0",
        }],
    )
    .await
}

async fn make_room(q: &mut Queue) {
    q.apply_cluster_queue(&[Flavor {
        suffix: "a",
        cpu: "8",
        memory: "32Gi",
    }])
    .await;
}

/// No webhook defaults `suspend` for an external framework. A queued job created without it
/// gets not a single pod before admission: the watch sees none and the operator creates none
/// (audit log) while it waits; it shows `Suspended` (the Kueue side also sets `suspend:
/// true`, as Kueue's reconciler does); once admitted, every pod it gets carries the flavor.
#[tokio::test]
async fn a_job_queued_without_suspend_makes_no_pod_before_admission() {
    if !external("a_job_queued_without_suspend_makes_no_pod_before_admission") {
        return;
    }
    let c = TestCluster::start("kueue-nosuspend").await;
    let mut q = full_queue(&c).await;
    let pods = record_pods(&c, "eager").await;
    let before = c.mark();
    let mut spec = queued_job("eager", &[("Worker", 2, LONG)]);
    spec["spec"]["runPolicy"] = json!({});
    let created = c.create(spec).await;
    // (the CRD defaults `suspend` to false)
    assert_ne!(suspended(&created), Some(true));
    let workload = q.workload_of(&created).await;
    let wl = workload.metadata.name.clone().expect("workload name");
    assert!(wl.starts_with("tfjob-eager-"), "Kueue's name: {wl}");
    let waiting = until(&c.jobs(), "eager", "suspended by the Kueue side", |j| {
        j.filter(|j| suspended(j) == Some(true) && has_condition(j, ConditionType::Suspended))
            .cloned()
    })
    .await;
    let shown = condition(&waiting, ConditionType::Suspended).unwrap();
    assert_eq!(shown.reason.as_deref(), Some("TFJobSuspended"));
    settle().await;
    let early: Vec<_> = pods.seen().into_iter().map(|p| p.metadata.name).collect();
    assert!(early.is_empty(), "a pod before admission: {early:?}");
    let requests = c.operator_requests_since(&before);
    assert_eq!(
        requests.count(Some("create"), Some("pods")),
        0,
        "{requests:#?}"
    );
    assert!(!kueue_true(
        &q.workloads().get(&wl).await.unwrap(),
        "Admitted"
    ));

    make_room(&mut q).await;
    let running = until_bound_pods(&c, "eager", 2).await;
    for pod in &running {
        assert_injected(pod, &q.flavor("a"), &q.name, &wl);
    }
    c.until_condition("eager", ConditionType::Running).await;
    for pod in pods.seen() {
        let selector = pod.spec.and_then(|s| s.node_selector).unwrap_or_default();
        assert_eq!(
            selector.get(super::POOL),
            Some(&q.flavor("a")),
            "{:?}",
            pod.metadata.name
        );
    }
}

/// Preemption by a higher-priority job: the lower job is suspended, and once its pods are
/// gone its quota is given back as Kueue's reconciler gives it (`QuotaReserved` False
/// `Pending`, no admission, `Admitted` False, `Requeued` True `Preempted`); the higher job runs.
#[tokio::test]
async fn preemption_gives_the_lower_jobs_quota_back() {
    if !external("preemption_gives_the_lower_jobs_quota_back") {
        return;
    }
    let c = TestCluster::start("kueue-release").await;
    let mut q = Queue::new(
        &c,
        &[Flavor {
            suffix: "a",
            cpu: "2",
            memory: "8Gi",
        }],
    )
    .await;
    let low = q.priority_class("low", 100).await;
    let high = q.priority_class("high", 1000).await;
    let mut spec = queued_job("low", &[("Worker", 2, LONG)]);
    spec["metadata"]["labels"][PRIORITY_LABEL] = json!(low);
    let low_job = c.create(spec).await;
    let low_wl = q.workload_name_of(&low_job).await;
    c.until_condition("low", ConditionType::Running).await;

    let mut spec = queued_job("high", &[("Worker", 2, LONG)]);
    spec["metadata"]["labels"][PRIORITY_LABEL] = json!(high);
    let high_job = c.create(spec).await;
    until_stopped(&c, "low").await;
    c.until_pods_are("low", &[]).await;
    let released = q
        .until_workload(&low_wl, "its quota given back", |w| {
            !kueue_true(w, "QuotaReserved") && w.data["status"]["admission"].is_null()
        })
        .await;
    assert_eq!(
        kueue_condition(&released, "QuotaReserved"),
        Some(("False".into(), "Pending".into()))
    );
    assert_eq!(
        kueue_condition(&released, "Admitted"),
        Some(("False".into(), "NoReservation".into()))
    );
    assert_eq!(
        kueue_condition(&released, "Requeued"),
        Some(("True".into(), "Preempted".into()))
    );
    assert_eq!(
        kueue_condition(&released, "Evicted"),
        Some(("True".into(), "Preempted".into()))
    );
    let high_wl = q.workload_name_of(&high_job).await;
    q.until_workload(&high_wl, "admitted", |w| kueue_true(w, "Admitted"))
        .await;
    c.until_condition("high", ConditionType::Running).await;
    q.until_admitted(1).await;
}

const SCOPE: &str = "tfjob-operator.dev/restart-scope";

/// Two synchronous workers under whole-job restart, worker 1 killed (137) after 6 s (long
/// enough for `PodsReady` to turn True first) and worker 0 exiting 1 after it; their next
/// pods run with `next`.
fn restarting_job(c: &TestCluster, name: &str, next: &[(&str, &str)]) -> Value {
    c.script_pod_in_turn(
        &format!("{name}-worker-1"),
        &[&[("run-seconds", "6"), ("exit-code", "137")], next],
    );
    c.script_pod_in_turn(
        &format!("{name}-worker-0"),
        &[&[("run-seconds", "6.5"), ("exit-code", "1")], next],
    );
    let mut spec = queued_job(name, &[("Worker", 2, LONG)]);
    spec["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = json!("ExitCode");
    spec["metadata"]["annotations"] = json!({SCOPE: "Job"});
    spec
}

fn pods_ready(w: &kube::api::DynamicObject) -> Option<(String, String)> {
    kueue_condition(w, "PodsReady")
}

/// `waitForPodsReady` and a whole-job restart that recovers within Kueue's
/// `recoveryTimeout` (20 s here): `PodsReady` True `Started`, lost (False `WaitForRecovery`)
/// while the job restarts, True `Recovered` once it runs again; never evicted.
#[tokio::test]
async fn a_whole_job_restart_that_recovers_in_time_is_not_evicted() {
    if !external("a_whole_job_restart_that_recovers_in_time_is_not_evicted") {
        return;
    }
    let c = TestCluster::start("kueue-recover").await;
    let q = Queue::roomy(&c).await;
    let spec = restarting_job(&c, "sync", &[("run-seconds", LONG)]);
    let created = c.create(spec).await;
    let wl = q.workload_name_of(&created).await;
    q.until_workload(&wl, "PodsReady Started", |w| {
        pods_ready(w) == Some(("True".into(), "Started".into()))
    })
    .await;
    q.until_workload(&wl, "readiness lost", |w| {
        pods_ready(w) == Some(("False".into(), "WaitForRecovery".into()))
    })
    .await;
    let recovered = q
        .until_workload(&wl, "PodsReady Recovered", |w| {
            pods_ready(w) == Some(("True".into(), "Recovered".into()))
        })
        .await;
    assert!(
        !kueue_true(&recovered, "Evicted"),
        "{:?}",
        recovered.data["status"]
    );
    let job = c.until_condition("sync", ConditionType::Running).await;
    assert_eq!(job.status.as_ref().and_then(|s| s.restart_attempt), Some(1));
    assert_eq!(suspended(&job), Some(false));
}

/// The same restart whose next pods never start: after `recoveryTimeout` Kueue evicts the
/// Workload (`PodsReadyTimeout`); the job is suspended, its pods go and its quota is given
/// back.
#[tokio::test]
async fn a_whole_job_restart_that_does_not_recover_is_evicted() {
    if !external("a_whole_job_restart_that_does_not_recover_is_evicted") {
        return;
    }
    let c = TestCluster::start("kueue-norecover").await;
    let q = Queue::roomy(&c).await;
    let spec = restarting_job(&c, "stuck", &[("never-start", "ImagePullBackOff")]);
    let created = c.create(spec).await;
    let wl = q.workload_name_of(&created).await;
    q.until_workload(&wl, "readiness lost", |w| {
        pods_ready(w) == Some(("False".into(), "WaitForRecovery".into()))
    })
    .await;
    q.until_workload(&wl, "evicted for not recovering", |w| {
        kueue_condition(w, "Evicted") == Some(("True".into(), "PodsReadyTimeout".into()))
    })
    .await;
    until_stopped(&c, "stuck").await;
    c.until_pods_are("stuck", &[]).await;
    q.until_quota_free().await;
}

/// Deletes cluster-scoped PriorityClasses when the test ends.
struct PriorityClasses(Api<PriorityClass>, Vec<String>);

impl PriorityClasses {
    async fn create(&mut self, name: String, value: i32) -> String {
        let class: PriorityClass =
            serde_json::from_value(json!({"metadata": {"name": name}, "value": value})).unwrap();
        let _ = self.0.delete(&name, &DeleteParams::default()).await;
        self.0
            .create(&PostParams::default(), &class)
            .await
            .unwrap_or_else(|e| panic!("PriorityClass {name}: {e}"));
        self.1.push(name.clone());
        name
    }
}

impl Drop for PriorityClasses {
    fn drop(&mut self) {
        let kubectl = crate::support::RealTier::from_env()
            .map(|t| t.kubectl)
            .unwrap_or_else(|| "kubectl".into());
        for name in &self.1 {
            let _ = std::process::Command::new(&kubectl)
                .args(["delete", "priorityclass", name, "--wait=false"])
                .output();
        }
    }
}

/// The Workload's priority from each of the three sources, in Kueue's order: the
/// `kueue.x-k8s.io/priority-class` label (a WorkloadPriorityClass) before
/// `runPolicy.schedulingPolicy.priorityClass` before the templates' `priorityClassName`.
#[tokio::test]
async fn the_priority_comes_from_each_source_in_kueues_order() {
    if !external("the_priority_comes_from_each_source_in_kueues_order") {
        return;
    }
    let c = TestCluster::start("kueue-priority").await;
    let mut q = full_queue(&c).await;
    let wpc = q.priority_class("wpc", 500).await;
    let mut classes = PriorityClasses(Api::all(c.client.clone()), Vec::new());
    let policy = classes.create(format!("{}-policy", q.name), 300).await;
    let template = classes.create(format!("{}-template", q.name), 200).await;
    let job = |name: &str, label: bool, in_policy: bool| {
        let mut spec = queued_job(name, &[("Worker", 1, LONG)]);
        spec["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] =
            json!(template);
        if in_policy {
            spec["spec"]["runPolicy"]["schedulingPolicy"] = json!({"priorityClass": policy});
        }
        if label {
            spec["metadata"]["labels"][PRIORITY_LABEL] = json!(wpc);
        }
        spec
    };
    let cases = [
        ("all", true, true, 500, "WorkloadPriorityClass", &wpc),
        ("policy", false, true, 300, "PriorityClass", &policy),
        ("template", false, false, 200, "PriorityClass", &template),
    ];
    for (name, label, in_policy, value, kind, class) in cases {
        let created = c.create(job(name, label, in_policy)).await;
        let w = q.workload_of(&created).await;
        assert_eq!(w.data["spec"]["priority"], json!(value), "{name}");
        assert_eq!(
            w.data["spec"]["priorityClassRef"]["kind"],
            json!(kind),
            "{name}"
        );
        assert_eq!(
            w.data["spec"]["priorityClassRef"]["name"],
            json!(class),
            "{name}"
        );
    }
}

/// Kueue's webhook refuses a new queue name while the job runs; there is no webhook here, so
/// the operator refuses to act on it: the job keeps running in its queue, its Workload is
/// not moved, and the job says so (`ChangeRefused`, a Warning event) until the label is put
/// back.
#[tokio::test]
async fn a_running_jobs_queue_name_change_is_refused() {
    if !external("a_running_jobs_queue_name_change_is_refused") {
        return;
    }
    let c = TestCluster::start("kueue-requeue").await;
    let q = Queue::roomy(&c).await;
    let other = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                       "metadata": {"name": "other-queue"}, "spec": {"clusterQueue": q.name}});
    q.apply(&q.local_queues(), "other-queue", other).await;
    let created = c.create(queued_job("mover", &[("Worker", 2, LONG)])).await;
    let wl = q.workload_name_of(&created).await;
    let pods = until_bound_pods(&c, "mover", 2).await;
    c.until_condition("mover", ConditionType::Running).await;
    let relabel = |queue: &str| json!({"metadata": {"labels": {QUEUE_LABEL: queue}}});
    c.jobs()
        .patch(
            "mover",
            &PatchParams::default(),
            &Patch::Merge(relabel("other-queue")),
        )
        .await
        .unwrap();
    let refused = c
        .until_condition("mover", ConditionType::ChangeRefused)
        .await;
    let shown = condition(&refused, ConditionType::ChangeRefused).unwrap();
    let message = format!(
        "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other-queue\": field is immutable while the job is not suspended; it stays in LocalQueue \"{LOCAL_QUEUE}\""
    );
    assert_eq!(shown.reason.as_deref(), Some("QueueNameImmutable"));
    assert_eq!(shown.message.as_deref(), Some(message.as_str()));
    c.until_event("mover", "QueueNameImmutable", &message).await;
    settle().await;
    let w = q.workloads().get(&wl).await.unwrap();
    assert_eq!(w.data["spec"]["queueName"], json!(LOCAL_QUEUE));
    assert!(kueue_true(&w, "Admitted"));
    let job = c.jobs().get("mover").await.unwrap();
    assert_eq!(suspended(&job), Some(false));
    assert!(has_condition(&job, ConditionType::Running));
    let now = until_bound_pods(&c, "mover", 2).await;
    let uids = |p: &[k8s_openapi::api::core::v1::Pod]| {
        let mut u: Vec<_> = p.iter().map(|p| p.metadata.uid.clone()).collect();
        u.sort();
        u
    };
    assert_eq!(uids(&now), uids(&pods), "the pods were not touched");

    c.jobs()
        .patch(
            "mover",
            &PatchParams::default(),
            &Patch::Merge(relabel(LOCAL_QUEUE)),
        )
        .await
        .unwrap();
    until(&c.jobs(), "mover", "the refusal gone", |j| {
        j.filter(|j| condition(j, ConditionType::ChangeRefused).is_none())
            .cloned()
    })
    .await;
}

/// A job deleted while it waits, and one deleted while it runs: each Workload goes (its
/// finalizer dropped, none stuck), and the running one's quota is freed.
#[tokio::test]
async fn a_job_deleted_while_queued_or_running_leaves_no_workload() {
    if !external("a_job_deleted_while_queued_or_running_leaves_no_workload") {
        return;
    }
    let c = TestCluster::start("kueue-delete").await;
    let q = Queue::new(
        &c,
        &[Flavor {
            suffix: "a",
            cpu: "2",
            memory: "8Gi",
        }],
    )
    .await;
    let running = c
        .create(queued_job("running", &[("Worker", 2, LONG)]))
        .await;
    q.workload_name_of(&running).await;
    c.until_condition("running", ConditionType::Running).await;
    let waiting = c
        .create(queued_job("waiting", &[("Worker", 2, LONG)]))
        .await;
    let waiting_wl = q.workload_name_of(&waiting).await;
    settle().await;
    assert!(!kueue_true(
        &q.workloads().get(&waiting_wl).await.unwrap(),
        "QuotaReserved"
    ));

    for (name, job) in [("waiting", &waiting), ("running", &running)] {
        c.jobs()
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
        let uid = job.metadata.uid.clone().unwrap();
        eventually(&format!("no Workload of {name}"), || async {
            let list = q.workloads().list(&ListParams::default()).await.ok()?;
            let left: Vec<_> = list
                .items
                .iter()
                .filter(|w| owned_by(w, &uid))
                .map(|w| (w.metadata.name.clone(), w.metadata.finalizers.clone()))
                .collect();
            left.is_empty().then_some(())
        })
        .await;
    }
    q.until_quota_free().await;
}

fn owned_by(w: &kube::api::DynamicObject, uid: &str) -> bool {
    w.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid)
}

/// A job MultiKueue would run elsewhere: the Kueue side makes, follows and finishes its
/// Workload as Kueue's reconciler does (its own User-Agent), while the TFJob controller
/// leaves the job alone (the shared case `a_multikueue_job_admitted_by_kueue_is_left_alone_by_the_operator`
/// checks no writes of it): split by agent in the audit log.
#[tokio::test]
async fn a_multikueue_job_gets_its_workload_from_the_kueue_side_only() {
    if !external("a_multikueue_job_gets_its_workload_from_the_kueue_side_only") {
        return;
    }
    let c = TestCluster::start("kueue-mkside").await;
    let q = Queue::roomy(&c).await;
    let mut spec = queued_job("mk", &[("Worker", 2, LONG)]);
    spec["spec"]["runPolicy"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    let log = c
        .real
        .as_ref()
        .and_then(|r| r.audit_log.clone())
        .expect("audit log");
    let offset = crate::support::real::audit_offset(&log);
    let created = c.create(spec).await;
    let wl = q.workload_name_of(&created).await;
    q.until_workload(&wl, "admitted", |w| kueue_true(w, "Admitted"))
        .await;
    until(&c.jobs(), "mk", "resumed", |j: Option<&TFJob>| {
        j.filter(|j| suspended(j) == Some(false)).cloned()
    })
    .await;
    settle().await;
    let writes = |agent: &str| {
        crate::support::real::audit_entries_since(&log, offset)
            .into_iter()
            .filter(|e| e.object_ref.namespace.as_deref() == Some(c.namespace.as_str()))
            .filter(|e| e.user_agent.starts_with(agent))
            .filter(|e| ["create", "update", "patch", "delete"].contains(&e.verb.as_str()))
            .map(|e| format!("{} {}", e.verb, e.resource()))
            .collect::<Vec<_>>()
    };
    let side = writes("tfjob-kueue/");
    assert!(side.contains(&"create workloads".to_string()), "{side:?}");
    assert!(side.contains(&"patch tfjobs".to_string()), "{side:?}");
    assert_eq!(writes("tfjob-operator/"), Vec::<String>::new());
    assert!(c.pod_names("mk").await.is_empty());
}
