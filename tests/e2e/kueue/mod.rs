//! End to end with a real Kueue (issue 20, docs/kueue.md): Kueue queues TFJobs by suspending
//! and resuming them (`spec.runPolicy.suspend`) and by injecting its flavor's node labels and
//! tolerations, its labels and its annotation into the pod templates; the operator must build
//! its pods from the templates as they are after admission, delete them on eviction, and
//! report `Succeeded`/`Failed` for the Workload to be finished.
//!
//! The same cases run in both of the test cluster's Kueue modes (`TESTCLUSTER_KUEUE_MODE`,
//! testcluster/kueue.sh): `builtin`, where Kueue's own `kubeflow.org/tfjob` integration does
//! the job's half of the work, and `external`, where the operator does it (`run --kueue`,
//! from `TFJOB_KUEUE` in the environment `testcluster/e2e` sets) and Kueue only knows
//! `externalFrameworks: ["TFJob.v1.kubeflow.org"]`. `external` adds the cases only that mode
//! has; `switch` changes the mode of a live cluster (run alone).
//!
//! Real tier only: `testcluster/up` runs Kueue v0.19.2 (unless `TESTCLUSTER_KUEUE=0`) with its
//! webhooks unregistered, so nothing defaults `suspend`: jobs are created suspended, as
//! Kueue's webhook would make them. On the simulator every test prints that it is skipped.
//! Each test has its own ResourceFlavors (with kwok nodes matching their labels and taints),
//! ClusterQueue and LocalQueue, so the tests run in parallel; jobs without the queue label
//! (every other test's) are never seen by Kueue.

mod external;
mod runbook;
mod switch;

use std::collections::BTreeMap;

use crate::support::{
    TestCluster, annotate, eventually, has_condition, job, record_pods, settle, until,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use tfjob_operator::crd::{ConditionType, TFJob};

const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
const PRIORITY_LABEL: &str = "kueue.x-k8s.io/priority-class";
const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";
const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";
/// The node label (and taint key) of the test's flavors.
const POOL: &str = "kueue.tfjob.dev/pool";
const RUN: &str = "sim.tfjob.dev/run-seconds";
const LONG: &str = "3600";
const LOCAL_QUEUE: &str = "user-queue";

/// Whether this run has the real tier with Kueue; prints why the test is skipped otherwise.
fn kueue_present(test: &str) -> bool {
    let real = crate::support::RealTier::from_env().is_some();
    let kueue = std::env::var("TESTCLUSTER_KUEUE").as_deref() == Ok("1");
    if !(real && kueue) {
        let why = if real {
            "this cluster runs no Kueue (TESTCLUSTER_KUEUE=0)"
        } else {
            "needs the real control plane with Kueue (testcluster/e2e)"
        };
        eprintln!("{test}: skipped: {why}");
    }
    real && kueue
}

fn kueue_api(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind),
        plural,
    )
}

/// What one test set up in Kueue: flavors (each with a kwok node of its own), a ClusterQueue
/// over them and LocalQueue `user-queue` in the test's namespace. Cluster-scoped objects and
/// nodes are removed when the test ends, however it ends.
struct Queue {
    client: kube::Client,
    namespace: String,
    /// The ClusterQueue's name (also the prefix of flavor, node and priority class names).
    name: String,
    nodes: Vec<String>,
    cluster_scoped: Vec<(&'static str, String)>,
}

/// A flavor: its name suffix and its quota (cpu, memory) in the ClusterQueue.
struct Flavor {
    suffix: &'static str,
    cpu: &'static str,
    memory: &'static str,
}

impl Queue {
    /// Flavors `<name>-<suffix>` with `nodeLabels {POOL: <flavor>}` and a toleration of the
    /// taint `POOL=<flavor>:NoSchedule` of node `<flavor>`; a ClusterQueue (preemption within
    /// it of lower priorities) over them in order; the LocalQueue.
    async fn new(c: &TestCluster, flavors: &[Flavor]) -> Self {
        // One name per run, so objects a killed run left behind never get in the way.
        let name = format!("{}-{}", c.namespace, std::process::id() % 100_000);
        let mut q = Queue {
            client: c.client.clone(),
            namespace: c.namespace.clone(),
            name: name.clone(),
            nodes: Vec::new(),
            cluster_scoped: Vec::new(),
        };
        for f in flavors {
            let flavor = q.flavor(f.suffix);
            let _ = node_command(&["remove", &flavor, "--gc-now"]);
            let pool = format!("{POOL}={flavor}");
            node_command(&[
                "add",
                &flavor,
                "--cpu",
                "16",
                "--memory",
                "64Gi",
                "--label",
                &pool,
                "--taint",
                &format!("{pool}:NoSchedule"),
            ])
            .unwrap_or_else(|e| panic!("node add {flavor}: {e}"));
            q.nodes.push(flavor.clone());
            q.apply_cluster(
                "ResourceFlavor",
                "resourceflavors",
                json!({
                    "metadata": {"name": flavor},
                    "spec": {
                        "nodeLabels": {POOL: flavor},
                        "tolerations": [{"key": POOL, "operator": "Equal", "value": flavor, "effect": "NoSchedule"}]
                    }
                }),
            )
            .await;
        }
        q.apply_cluster_queue(flavors).await;
        let local = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE},
            "spec": {"clusterQueue": name}
        });
        q.apply(&q.local_queues(), LOCAL_QUEUE, local).await;
        q
    }

    fn flavor(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.name)
    }

    /// The ClusterQueue with these flavors and quotas (creates or replaces its spec).
    async fn apply_cluster_queue(&mut self, flavors: &[Flavor]) {
        let flavors: Vec<Value> = flavors
            .iter()
            .map(|f| {
                json!({"name": self.flavor(f.suffix), "resources": [
                    {"name": "cpu", "nominalQuota": f.cpu},
                    {"name": "memory", "nominalQuota": f.memory}
                ]})
            })
            .collect();
        let cq = json!({
            "metadata": {"name": self.name},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": flavors}]
            }
        });
        self.apply_cluster("ClusterQueue", "clusterqueues", cq)
            .await;
    }

    /// A WorkloadPriorityClass `<name>-<suffix>` of `value`; returns its name.
    async fn priority_class(&mut self, suffix: &str, value: i32) -> String {
        let name = format!("{}-{suffix}", self.name);
        self.apply_cluster(
            "WorkloadPriorityClass",
            "workloadpriorityclasses",
            json!({"metadata": {"name": name}, "value": value}),
        )
        .await;
        name
    }

    async fn apply_cluster(&mut self, kind: &str, plural: &'static str, mut obj: Value) {
        obj["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
        obj["kind"] = json!(kind);
        let name = obj["metadata"]["name"].as_str().expect("name").to_string();
        let api = Api::<DynamicObject>::all_with(self.client.clone(), &kueue_api(kind, plural));
        self.apply(&api, &name, obj).await;
        if !self
            .cluster_scoped
            .iter()
            .any(|(p, n)| *p == plural && *n == name)
        {
            self.cluster_scoped.push((plural, name));
        }
    }

    async fn apply(&self, api: &Api<DynamicObject>, name: &str, obj: Value) {
        let obj: DynamicObject = serde_json::from_value(obj).expect("Kueue object");
        api.patch(
            name,
            &PatchParams::apply("e2e-kueue").force(),
            &Patch::Apply(&obj),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {name}: {e}"));
    }

    fn local_queues(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &kueue_api("LocalQueue", "localqueues"),
        )
    }

    fn workloads(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &kueue_api("Workload", "workloads"),
        )
    }

    fn cluster_queues(&self) -> Api<DynamicObject> {
        Api::all_with(
            self.client.clone(),
            &kueue_api("ClusterQueue", "clusterqueues"),
        )
    }

    /// One flavor, `a`, with room for any test's job (8 CPUs, 32Gi).
    async fn roomy(c: &TestCluster) -> Self {
        let a = Flavor {
            suffix: "a",
            cpu: "8",
            memory: "32Gi",
        };
        Queue::new(c, &[a]).await
    }

    /// The name of the Workload Kueue made for TFJob `job`, once it exists.
    async fn workload_name_of(&self, job: &TFJob) -> String {
        let workload = self.workload_of(job).await;
        workload.metadata.name.expect("workload name")
    }

    /// The Workload Kueue made for TFJob `job` (owned by it), once it exists.
    async fn workload_of(&self, job: &TFJob) -> DynamicObject {
        let uid = job.metadata.uid.clone().expect("job uid");
        let what = format!(
            "the Workload of {}",
            job.metadata.name.as_deref().unwrap_or("")
        );
        eventually(&what, || async {
            let list = self.workloads().list(&Default::default()).await.ok()?;
            list.items.into_iter().find(|w| {
                w.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.uid == uid && o.kind == "TFJob")
            })
        })
        .await
    }

    /// The Workload named `name` once `check` holds for it.
    async fn until_workload(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&DynamicObject) -> bool,
    ) -> DynamicObject {
        until(&self.workloads(), name, what, |w| {
            w.filter(|w| check(w)).cloned()
        })
        .await
    }

    /// Waits until the ClusterQueue reserves and admits nothing and every flavor's usage is 0.
    async fn until_quota_free(&self) -> DynamicObject {
        until(
            &self.cluster_queues(),
            &self.name,
            "the quota released",
            |cq| {
                let status = &cq?.data["status"];
                let zero = |key: &str| status[key].as_i64().unwrap_or(0) == 0;
                let unused = ["flavorsReservation", "flavorsUsage"].iter().all(|k| {
                    status[*k].as_array().into_iter().flatten().all(|f| {
                        f["resources"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .all(|r| quantity_is_zero(&r["total"]))
                    })
                });
                (zero("reservingWorkloads") && zero("admittedWorkloads") && unused)
                    .then(|| cq.cloned())
                    .flatten()
            },
        )
        .await
    }

    /// Waits until the ClusterQueue has admitted `n` workloads.
    async fn until_admitted(&self, n: i64) {
        until(
            &self.cluster_queues(),
            &self.name,
            &format!("{n} admitted"),
            |cq| (cq?.data["status"]["admittedWorkloads"].as_i64() == Some(n)).then_some(()),
        )
        .await
    }

    /// Sets the Workload's `spec.active` (false = deactivate: Kueue evicts it).
    async fn set_active(&self, workload: &str, active: bool) {
        self.workloads()
            .patch(
                workload,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"active": active}})),
            )
            .await
            .unwrap_or_else(|e| panic!("setting active={active} on {workload}: {e}"));
    }
}

impl Drop for Queue {
    /// Removes the test's jobs first (their Workloads hold the ClusterQueue's finalizer), then
    /// its cluster-scoped Kueue objects and its nodes; only the Workloads' going is waited for,
    /// in the external mode.
    fn drop(&mut self) {
        let kubectl = crate::support::RealTier::from_env()
            .map(|t| t.kubectl)
            .unwrap_or_else(|| "kubectl".into());
        let _ = std::process::Command::new(&kubectl)
            .args([
                "-n",
                &self.namespace,
                "delete",
                "tfjobs",
                "--all",
                "--wait=false",
            ])
            .output();
        // In the external mode the test's operator releases the Workloads of deleted jobs:
        // wait for that while it still runs (it stops with the test), else they keep their
        // finalizer and the namespace cannot go.
        if std::env::var("TESTCLUSTER_KUEUE_MODE").as_deref() == Ok("external") {
            let _ = std::process::Command::new(&kubectl)
                .args([
                    "-n",
                    &self.namespace,
                    "wait",
                    "--for=delete",
                    "workloads.kueue.x-k8s.io",
                    "--all",
                    "--timeout=30s",
                ])
                .output();
        }
        for (plural, name) in self.cluster_scoped.iter().rev() {
            let _ = std::process::Command::new(&kubectl)
                .args([
                    "delete",
                    &format!("{plural}.kueue.x-k8s.io"),
                    name,
                    "--wait=false",
                ])
                .output();
        }
        for node in &self.nodes {
            let _ = node_command(&["remove", node, "--gc-now"]);
        }
    }
}

/// `testcluster/node ARGS`: its stderr on failure.
fn node_command(args: &[&str]) -> Result<(), String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/testcluster/node");
    let out = std::process::Command::new(script)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn quantity_is_zero(q: &Value) -> bool {
    match q {
        Value::Null => true,
        Value::String(s) => {
            s.trim_start_matches('0').is_empty() || s == "0" || s.parse::<f64>() == Ok(0.0)
        }
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Status True of condition `t` of a Kueue object (metav1.Condition), with its reason.
fn kueue_condition(obj: &DynamicObject, t: &str) -> Option<(String, String)> {
    obj.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
}

fn kueue_true(obj: &DynamicObject, t: &str) -> bool {
    kueue_condition(obj, t).is_some_and(|(s, _)| s == "True")
}

/// A job for the queue: created suspended with the queue label, every pod asking for 1 CPU
/// and 1Gi, replicas `(type, count, run-seconds)`.
fn queued_job(name: &str, replicas: &[(&str, i32, &str)]) -> Value {
    let types: Vec<(&str, i32, &str)> =
        replicas.iter().map(|(t, n, _)| (*t, *n, "Never")).collect();
    let mut spec = job(name, &types);
    for (t, _, run) in replicas {
        annotate(&mut spec, t, RUN, run);
        spec["spec"]["tfReplicaSpecs"][t]["template"]["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": "1", "memory": "1Gi"}});
    }
    spec["metadata"]["labels"] = json!({QUEUE_LABEL: LOCAL_QUEUE});
    spec["spec"]["runPolicy"] = json!({"suspend": true});
    spec
}

/// The pod templates of the job as stored, by replica type.
fn templates(job: &TFJob) -> Vec<(String, Value)> {
    let value = serde_json::to_value(job).expect("TFJob as JSON");
    value["spec"]["tfReplicaSpecs"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(t, spec)| (t.clone(), spec["template"].clone()))
        .collect()
}

fn suspended(job: &TFJob) -> Option<bool> {
    job.spec.run_policy.as_ref().and_then(|r| r.suspend)
}

/// The live (not terminating) pods of `job`, once there are `n`, all bound to a node.
async fn until_bound_pods(c: &TestCluster, job: &str, n: usize) -> Vec<Pod> {
    let lp =
        kube::api::ListParams::default().labels(&format!("training.kubeflow.org/job-name={job}"));
    eventually(&format!("{n} bound pods of {job}"), || async {
        let pods: Vec<Pod> = c
            .pods()
            .list(&lp)
            .await
            .ok()?
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        let bound = pods
            .iter()
            .all(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()));
        (pods.len() == n && bound).then_some(pods)
    })
    .await
}

/// Checks that a pod carries what Kueue injected for `flavor` and `workload`.
fn assert_injected(pod: &Pod, flavor: &str, cluster_queue: &str, workload: &str) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let replica_type = labels
        .get("training.kubeflow.org/replica-type")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        labels.get(PODSET_LABEL),
        Some(&replica_type),
        "{name}: {labels:?}"
    );
    assert_eq!(
        labels.get(CLUSTER_QUEUE_LABEL).map(String::as_str),
        Some(cluster_queue),
        "{name}: {labels:?}"
    );
    assert_eq!(
        labels.get(LOCAL_QUEUE_LABEL).map(String::as_str),
        Some(LOCAL_QUEUE),
        "{name}: {labels:?}"
    );
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get(WORKLOAD_ANNOTATION).map(String::as_str),
        Some(workload),
        "{name}: {annotations:?}"
    );
    let spec = pod.spec.as_ref().expect("pod spec");
    let selector = spec.node_selector.clone().unwrap_or_default();
    assert_eq!(
        selector,
        BTreeMap::from([(POOL.to_string(), flavor.to_string())]),
        "{name}: nodeSelector"
    );
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    assert!(
        tolerations.iter().any(|t| t.key.as_deref() == Some(POOL)
            && t.value.as_deref() == Some(flavor)
            && t.operator.as_deref() == Some("Equal")
            && t.effect.as_deref() == Some("NoSchedule")),
        "{name}: tolerations {tolerations:?}"
    );
    assert_eq!(spec.node_name.as_deref(), Some(flavor), "{name}: its node");
}

/// The flavor Kueue assigned to every podset of the Workload (all the same in these tests).
fn assigned_flavors(workload: &DynamicObject) -> Vec<String> {
    workload.data["status"]["admission"]["podSetAssignments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a["flavors"]["cpu"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Waits until the job is suspended with no pods, its every `replicaStatuses[*].active` 0 and
/// its `Suspended` condition True; returns it.
async fn until_stopped(c: &TestCluster, name: &str) -> TFJob {
    until(&c.jobs(), name, "suspended with no active replicas", |j| {
        let j = j?;
        let status = j.status.as_ref()?;
        let inactive = !status.replica_statuses.is_empty()
            && status
                .replica_statuses
                .values()
                .all(|r| r.active.unwrap_or(0) == 0);
        (suspended(j) == Some(true) && inactive && has_condition(j, ConditionType::Suspended))
            .then(|| j.clone())
    })
    .await
}

/// Admission: Kueue resumes the suspended job (`suspend` true → false) and the operator's
/// pods carry the flavor's nodeSelector and toleration (so they land on the flavor's node),
/// Kueue's podset and queue labels and its workload annotation.
#[tokio::test]
async fn admission_resumes_the_job_and_its_pods_carry_what_kueue_injected() {
    if !kueue_present("admission_resumes_the_job_and_its_pods_carry_what_kueue_injected") {
        return;
    }
    let c = TestCluster::start("kueue-admit").await;
    let q = Queue::roomy(&c).await;
    let created = c
        .create(queued_job("adm", &[("PS", 1, LONG), ("Worker", 2, LONG)]))
        .await;
    assert_eq!(suspended(&created), Some(true));
    let pods = record_pods(&c, "adm").await;
    let workload = q.workload_of(&created).await;
    let wl = workload.metadata.name.clone().expect("workload name");
    let workload = q
        .until_workload(&wl, "admitted", |w| kueue_true(w, "Admitted"))
        .await;
    let flavor = q.flavor("a");
    assert_eq!(
        assigned_flavors(&workload),
        [flavor.clone(), flavor.clone()]
    );
    let job = until(&c.jobs(), "adm", "resumed by Kueue", |j| {
        j.filter(|j| suspended(j) == Some(false)).cloned()
    })
    .await;
    // Kueue wrote the flavor into the templates when it resumed the job.
    for (t, template) in templates(&job) {
        assert_eq!(template["spec"]["nodeSelector"][POOL], json!(flavor), "{t}");
    }
    let running = until_bound_pods(&c, "adm", 3).await;
    for pod in &running {
        assert_injected(pod, &flavor, &q.name, &wl);
    }
    c.until_condition("adm", ConditionType::Running).await;
    // No pod was made from the templates before admission: every pod seen carried the flavor.
    for pod in pods.seen() {
        let selector = pod.spec.and_then(|s| s.node_selector).unwrap_or_default();
        assert_eq!(selector.get(POOL), Some(&flavor), "{:?}", pod.metadata.name);
    }
    let job = c.jobs().get("adm").await.unwrap();
    assert!(!has_condition(&job, ConditionType::Suspended));
}

/// A job that finishes: the operator's `Succeeded` makes Kueue finish the Workload and free
/// the quota.
#[tokio::test]
async fn a_job_that_succeeds_finishes_its_workload_and_frees_the_quota() {
    if !kueue_present("a_job_that_succeeds_finishes_its_workload_and_frees_the_quota") {
        return;
    }
    let c = TestCluster::start("kueue-finish").await;
    let q = Queue::roomy(&c).await;
    let created = c
        .create(queued_job("fin", &[("PS", 1, LONG), ("Worker", 2, "2")]))
        .await;
    let wl = q.workload_name_of(&created).await;
    c.until_condition("fin", ConditionType::Succeeded).await;
    let workload = q
        .until_workload(&wl, "finished", |w| kueue_true(w, "Finished"))
        .await;
    assert_eq!(
        kueue_condition(&workload, "Finished"),
        Some(("True".into(), "Succeeded".into()))
    );
    q.until_quota_free().await;
}

/// A job that fails: Kueue finishes its Workload as failed, with the operator's message.
#[tokio::test]
async fn a_job_that_fails_finishes_its_workload_as_failed() {
    if !kueue_present("a_job_that_fails_finishes_its_workload_as_failed") {
        return;
    }
    let c = TestCluster::start("kueue-fail").await;
    let q = Queue::roomy(&c).await;
    let mut spec = queued_job("bad", &[("Worker", 1, "1")]);
    annotate(&mut spec, "Worker", "sim.tfjob.dev/exit-code", "1");
    let created = c.create(spec).await;
    let wl = q.workload_name_of(&created).await;
    let job = c.until_condition("bad", ConditionType::Failed).await;
    let failed = crate::support::condition(&job, ConditionType::Failed).unwrap();
    let workload = q
        .until_workload(&wl, "finished", |w| kueue_true(w, "Finished"))
        .await;
    let finished = workload.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Finished")
        .unwrap()
        .clone();
    assert_eq!(finished["reason"], "Failed");
    assert_eq!(finished["message"].as_str(), failed.message.as_deref());
    q.until_quota_free().await;
}

/// Deactivation (an eviction): Kueue suspends the job and restores its templates; the pods
/// go, every `replicaStatuses[*].active` is 0, and Kueue releases the quota.
#[tokio::test]
async fn deactivation_suspends_deletes_the_pods_zeroes_active_and_frees_the_quota() {
    if !kueue_present("deactivation_suspends_deletes_the_pods_zeroes_active_and_frees_the_quota") {
        return;
    }
    let c = TestCluster::start("kueue-evict").await;
    let q = Queue::roomy(&c).await;
    let created = c
        .create(queued_job("ev", &[("PS", 1, LONG), ("Worker", 2, LONG)]))
        .await;
    let wl = q.workload_name_of(&created).await;
    until_bound_pods(&c, "ev", 3).await;
    let running = until(&c.jobs(), "ev", "3 active pods", |j| {
        let s = j?.status.as_ref()?;
        let active: i32 = s.replica_statuses.values().filter_map(|r| r.active).sum();
        (active == 3).then(|| j.cloned()).flatten()
    })
    .await;
    assert!(has_condition(&running, ConditionType::Running));

    q.set_active(&wl, false).await;
    let job = until_stopped(&c, "ev").await;
    c.until_pods_are("ev", &[]).await;
    assert!(c.service_names("ev").await.is_empty());
    let suspended_condition = crate::support::condition(&job, ConditionType::Suspended).unwrap();
    assert_eq!(
        suspended_condition.reason.as_deref(),
        Some("TFJobSuspended")
    );
    assert!(!has_condition(&job, ConditionType::Running));
    // Kueue put the templates back as they were before admission.
    for (t, template) in templates(&job) {
        assert_eq!(template["spec"]["nodeSelector"], Value::Null, "{t}");
        assert_eq!(
            template["metadata"]["labels"][PODSET_LABEL],
            Value::Null,
            "{t}"
        );
    }
    let workload = q
        .until_workload(&wl, "evicted", |w| {
            kueue_condition(w, "Evicted") == Some(("True".into(), "Deactivated".into()))
                && !kueue_true(w, "QuotaReserved")
        })
        .await;
    assert!(!kueue_true(&workload, "Admitted"));
    q.until_quota_free().await;
    // It stays stopped: nothing restarts the pods while the Workload is inactive.
    settle().await;
    assert!(c.pod_names("ev").await.is_empty());
}

/// Re-admission after an eviction with another flavor: the new pods carry the new flavor's
/// nodeSelector and toleration (and land on its node), none the old one's.
#[tokio::test]
async fn readmission_with_another_flavor_gives_the_new_pods_its_node_selector() {
    if !kueue_present("readmission_with_another_flavor_gives_the_new_pods_its_node_selector") {
        return;
    }
    let c = TestCluster::start("kueue-readmit").await;
    let a = Flavor {
        suffix: "a",
        cpu: "8",
        memory: "32Gi",
    };
    let b = Flavor {
        suffix: "b",
        cpu: "8",
        memory: "32Gi",
    };
    let mut q = Queue::new(&c, &[a, b]).await;
    let created = c
        .create(queued_job("re", &[("PS", 1, LONG), ("Worker", 2, LONG)]))
        .await;
    let wl = q.workload_name_of(&created).await;
    let first = until_bound_pods(&c, "re", 3).await;
    let (fa, fb) = (q.flavor("a"), q.flavor("b"));
    for pod in &first {
        assert_injected(pod, &fa, &q.name, &wl);
    }

    q.set_active(&wl, false).await;
    until_stopped(&c, "re").await;
    c.until_pods_are("re", &[]).await;
    // The eviction ends when its quota is given back (once no pod is left); reactivated before
    // that, the Workload would still show its old admission.
    q.until_workload(&wl, "its quota given back", |w| {
        !kueue_true(w, "QuotaReserved") && w.data["status"]["admission"].is_null()
    })
    .await;
    // Flavor a has no room any more: the next admission takes b.
    q.apply_cluster_queue(&[
        Flavor {
            suffix: "a",
            cpu: "0",
            memory: "0",
        },
        Flavor {
            suffix: "b",
            cpu: "8",
            memory: "32Gi",
        },
    ])
    .await;
    q.set_active(&wl, true).await;
    let workload = q
        .until_workload(&wl, "admitted again", |w| kueue_true(w, "Admitted"))
        .await;
    assert_eq!(assigned_flavors(&workload), [fb.clone(), fb.clone()]);
    let second = until_bound_pods(&c, "re", 3).await;
    for pod in &second {
        assert_injected(pod, &fb, &q.name, &wl);
    }
    let old: Vec<_> = first.iter().map(|p| p.metadata.uid.clone()).collect();
    assert!(second.iter().all(|p| !old.contains(&p.metadata.uid)));
    c.until_condition("re", ConditionType::Running).await;
}

/// Preemption: a higher-priority job takes the quota of a running lower-priority one; the
/// lower job is suspended with its pods gone and every `active` 0, the higher one runs.
#[tokio::test]
async fn a_higher_priority_job_preempts_a_running_lower_priority_one() {
    if !kueue_present("a_higher_priority_job_preempts_a_running_lower_priority_one") {
        return;
    }
    let c = TestCluster::start("kueue-preempt").await;
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
    until_bound_pods(&c, "low", 2).await;
    c.until_condition("low", ConditionType::Running).await;
    q.until_admitted(1).await;

    let mut spec = queued_job("high", &[("Worker", 2, LONG)]);
    spec["metadata"]["labels"][PRIORITY_LABEL] = json!(high);
    let high_job = c.create(spec).await;
    let high_wl = q.workload_of(&high_job).await;
    assert_eq!(high_wl.data["spec"]["priority"], json!(1000));

    let low_after = until_stopped(&c, "low").await;
    assert!(!has_condition(&low_after, ConditionType::Running));
    c.until_pods_are("low", &[]).await;
    let evicted = q
        .until_workload(&low_wl, "preempted", |w| {
            kueue_condition(w, "Evicted") == Some(("True".into(), "Preempted".into()))
        })
        .await;
    assert_eq!(
        kueue_condition(&evicted, "Preempted"),
        Some(("True".into(), "InClusterQueue".into()))
    );
    let high_name = high_wl.metadata.name.expect("workload name");
    q.until_workload(&high_name, "admitted", |w| kueue_true(w, "Admitted"))
        .await;
    let pods = until_bound_pods(&c, "high", 2).await;
    for pod in &pods {
        assert_injected(pod, &q.flavor("a"), &q.name, &high_name);
    }
    c.until_condition("high", ConditionType::Running).await;
    // The low job waits, suspended, for quota.
    settle().await;
    let low_now = c.jobs().get("low").await.unwrap();
    assert_eq!(suspended(&low_now), Some(true));
    assert!(c.pod_names("low").await.is_empty());
}

/// `managedBy: kueue.x-k8s.io/multikueue`: on a MultiKueue manager cluster the job runs on a
/// worker cluster and Kueue copies its status back; here Kueue admits and resumes it, and the
/// operator must leave it alone all the same: no pods, no services, no status, no writes.
/// The status Kueue would copy back is then written as MultiKueue does, and stays as written.
#[tokio::test]
async fn a_multikueue_job_admitted_by_kueue_is_left_alone_by_the_operator() {
    if !kueue_present("a_multikueue_job_admitted_by_kueue_is_left_alone_by_the_operator") {
        return;
    }
    let c = TestCluster::start("kueue-mk").await;
    let q = Queue::roomy(&c).await;
    let mut spec = queued_job("mk", &[("Worker", 2, LONG)]);
    spec["spec"]["runPolicy"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    let before = c.mark();
    let created = c.create(spec).await;
    let wl = q.workload_name_of(&created).await;
    q.until_workload(&wl, "admitted", |w| kueue_true(w, "Admitted"))
        .await;
    until(&c.jobs(), "mk", "resumed by Kueue", |j| {
        j.filter(|j| suspended(j) == Some(false)).cloned()
    })
    .await;
    settle().await;
    let job = c.jobs().get("mk").await.unwrap();
    assert_eq!(job.status, None);
    assert!(c.pod_names("mk").await.is_empty());
    assert!(c.service_names("mk").await.is_empty());
    let writes = c.operator_requests_since(&before);
    assert_eq!(writes.writes(), 0, "the operator wrote: {writes:#?}");

    // MultiKueue copies the worker's status to the manager's job; Kueue finishes the Workload.
    let status = json!({"status": {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "copied"},
            {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded", "message": "done on the worker"}
        ],
        "replicaStatuses": {"Worker": {"succeeded": 2}}
    }});
    c.jobs()
        .patch_status("mk", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("writing the copied status");
    let workload = q
        .until_workload(&wl, "finished", |w| kueue_true(w, "Finished"))
        .await;
    assert_eq!(
        workload.data["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Finished")
            .unwrap()["message"],
        "done on the worker"
    );
    settle().await;
    let after = c.jobs().get("mk").await.unwrap();
    assert_eq!(after.status, job_status(&status));
    assert_eq!(c.operator_requests_since(&before).writes(), 0);
    assert!(c.pod_names("mk").await.is_empty());
}

fn job_status(patch: &Value) -> Option<tfjob_operator::crd::TFJobStatus> {
    serde_json::from_value(patch["status"].clone()).ok()
}

/// A job without the queue label is not Kueue's: no Workload, and the operator runs it
/// unsuspended to success as on a cluster without Kueue.
#[tokio::test]
async fn a_job_without_the_queue_label_is_left_to_the_operator() {
    if !kueue_present("a_job_without_the_queue_label_is_left_to_the_operator") {
        return;
    }
    let c = TestCluster::start("kueue-none").await;
    let q = Queue::roomy(&c).await;
    let mut spec = queued_job("plain", &[("Worker", 1, "1")]);
    spec["metadata"]["labels"] = json!({});
    spec["spec"]["runPolicy"] = json!({});
    c.create(spec).await;
    let job = c.until_condition("plain", ConditionType::Succeeded).await;
    assert_ne!(suspended(&job), Some(true));
    let workloads = q.workloads().list(&Default::default()).await.unwrap();
    assert!(workloads.items.is_empty(), "{:?}", workloads.items);
}
