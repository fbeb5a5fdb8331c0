//! The TFJobs every operator is given, and a watch that counts the finished ones. Pods are
//! bound to the kwok node by their template (no scheduler in the way: its binding rate would
//! be measured, not the operators') and play out per `testcluster/stages`: Running at once,
//! then Succeeded `sim.tfjob.dev/run-seconds` after their start. I/O (the watch).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

use super::cluster::{Cluster, NODE};

/// Run time of pods that must outlive the measurement (a day).
pub const RUNS_ON: f64 = 86_400.0;

/// `{prefix}-{i}` for `count` jobs of `workers` workers each.
pub fn many(prefix: &str, count: usize, workers: u32, run_seconds: f64) -> Vec<Value> {
    (0..count)
        .map(|i| tfjob(&format!("{prefix}-{i:05}"), workers, run_seconds))
        .collect()
}

/// A TFJob of `workers` workers that each run `run_seconds` and exit 0.
pub fn tfjob(name: &str, workers: u32, run_seconds: f64) -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"Worker": {
            "replicas": workers,
            "restartPolicy": "Never",
            "template": {
                "metadata": {"annotations": {"sim.tfjob.dev/run-seconds": run_seconds.to_string()}},
                "spec": {
                    "nodeName": NODE,
                    "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0"}]
                }
            }
        }}}
    })
}

/// Counts the jobs of a namespace whose status says `Succeeded`, from a watch; stops with it.
pub struct Finished {
    count: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Finished {
    pub fn watch(cluster: &Cluster, namespace: &str) -> Self {
        let api = cluster.tfjobs(namespace);
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        let task = tokio::spawn(async move {
            let mut done = BTreeSet::new();
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(Ok(job)) = events.next().await {
                if succeeded(&job.data) {
                    done.insert(job.metadata.name.unwrap_or_default());
                    seen.store(done.len(), Ordering::Relaxed);
                }
            }
        });
        Self { count, task }
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

impl Drop for Finished {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn succeeded(job: &Value) -> bool {
    job["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Succeeded" && c["status"] == "True")
    })
}
