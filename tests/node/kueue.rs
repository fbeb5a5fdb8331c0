//! Real TensorFlow queued through Kueue with the operator as Kueue's external framework
//! (docs/kueue.md): `node-e2e` starts Kueue v0.19.2 in the external mode beside the real node.

use serde_json::{Value, json};

use crate::cluster::{Node, Replica, condition, finished, report, reports, tf_job, wait_for};

/// Kueue's queue objects of one test (cluster-scoped ones deleted when it ends).
struct Queue<'a> {
    node: &'a Node,
    name: String,
}

impl Drop for Queue<'_> {
    fn drop(&mut self) {
        for kind in [
            "clusterqueues.kueue.x-k8s.io",
            "resourceflavors.kueue.x-k8s.io",
        ] {
            let _ = self
                .node
                .try_kubectl(&["delete", kind, &self.name, "--wait=false"]);
        }
    }
}

fn kueue(kind: &str, metadata: Value, spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": metadata, "spec": spec})
}

/// A 2-worker MultiWorkerMirroredStrategy job with the queue label and no `suspend`: the
/// operator holds it, makes its Workload, resumes it once Kueue admits it; TensorFlow trains
/// across both workers; the job succeeds and its Workload is `Finished` (`Succeeded`).
#[test]
fn a_queued_mwms_job_is_admitted_trains_and_finishes_its_workload() {
    let Some(node) = Node::here("kueue_external") else {
        return;
    };
    if std::env::var("TESTCLUSTER_KUEUE_MODE").as_deref() != Ok("external") {
        eprintln!("kueue_external: skipped: the node's Kueue is not in the external mode");
        return;
    }
    let ns = node.namespace("kueue");
    let queue = Queue {
        node: &node,
        name: ns.name.clone(),
    };
    node.apply(&kueue(
        "ResourceFlavor",
        json!({"name": queue.name}),
        json!({}),
    ));
    let flavor = json!({"name": queue.name, "resources": [
        {"name": "cpu", "nominalQuota": "1"}, {"name": "memory", "nominalQuota": "2Gi"}]});
    node.apply(&kueue(
        "ClusterQueue",
        json!({"name": queue.name}),
        json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns.name}},
               "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [flavor]}]}),
    ));
    node.apply(&kueue(
        "LocalQueue",
        json!({"name": "tf-queue", "namespace": ns.name}),
        json!({"clusterQueue": queue.name}),
    ));
    let _operator = node.operator(&ns.name, &["--kueue"]);
    let worker = Replica::new("Worker", 2, "Never", &["mwms", "--steps", "20"]);
    let mut job = tf_job(&node, &ns.name, "queued", &[worker]);
    job["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "tf-queue"});
    // Worker 1 finishes a moment after worker 0: its pod (and log) stays.
    job["spec"]["runPolicy"] = json!({"cleanPodPolicy": "None"});
    node.apply(&job);

    let workload = wait_for("the job's Workload", 60, || {
        let list = ns.get(&["workloads.kueue.x-k8s.io"]);
        let first = list["items"].as_array()?.first()?.clone();
        Some(first["metadata"]["name"].as_str()?.to_string())
    });
    assert!(workload.starts_with("tfjob-queued-"), "{workload}");
    let done = ns.wait_finished("queued", 240);
    assert_eq!(
        finished(&done),
        Some("Succeeded"),
        "{}\n{}",
        done["status"],
        ns.describe()
    );
    let finished_workload = wait_for("the Workload finished", 60, || {
        let w = ns.get(&["workloads.kueue.x-k8s.io", &workload]);
        (condition(&w, "Finished")?["status"] == "True").then_some(w)
    });
    assert_eq!(
        condition(&finished_workload, "Finished").unwrap()["reason"],
        "Succeeded"
    );
    assert_eq!(
        condition(&finished_workload, "Admitted").unwrap()["status"],
        "True"
    );
    ns.wait_pods_finished(60);

    let mut sums = Vec::new();
    for i in 0..2 {
        let pod = format!("queued-worker-{i}");
        let labels = ns.get(&["pod", &pod])["metadata"]["labels"].clone();
        assert_eq!(labels["kueue.x-k8s.io/podset"], "worker", "{pod}: {labels}");
        let log = ns.logs(&pod, false);
        let r = reports(&log);
        assert_eq!(
            report(&r, "strategy", &log)["num_replicas_in_sync"],
            2,
            "{pod}"
        );
        let done = report(&r, "done", &log);
        assert_eq!(done["steps"], 20, "{pod}");
        sums.push(done["weights_sha256"].as_str().unwrap().to_string());
    }
    assert_eq!(sums[0], sums[1], "the two workers' final weights differ");
}
