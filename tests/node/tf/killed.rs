//! A worker killed mid-training (SIGKILL to its TensorFlow process, as the OOM killer or a
//! crash would), under each restartPolicy, for jobs without any opt-in annotation: what
//! happens today. This is the baseline that whole-job restart will be measured against.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{Namespace, Node, Replica, condition, finished, reports, tf_job, wait_for};

/// What a kill led to.
#[derive(Debug)]
struct Outcome {
    /// The job's end (`Succeeded`/`Failed`), or `None` if it had not ended by the limit.
    end: Option<&'static str>,
    job: Value,
    /// Per worker: (pod uid before the kill, pod after).
    workers: Vec<(String, Value)>,
    events: String,
    /// Seconds from the kill to the job's end.
    seconds: f64,
}

/// Runs a 2-worker MWMS job with POLICY, kills worker 1's TensorFlow process at its 3rd step,
/// and waits for the job to end (at most LIMIT seconds).
fn kill_worker_1(node: &Node, ns: &Namespace, policy: &'static str, limit: u64) -> Outcome {
    let worker = Replica::new("Worker", 2, policy, &["mwms", "--steps", "40", "--step-seconds", "0.5"]);
    node.apply(&tf_job(node, &ns.name, "kill", &[worker]));
    wait_for("worker 1 at its 3rd step", 180, || {
        let log = ns.try_kubectl(&["logs", "kill-worker-1", "-c", "tensorflow"]).ok()?;
        (reports(&log).iter().filter(|r| r["event"] == "step").count() >= 3).then_some(())
    });
    let uids: Vec<String> = (0..2)
        .map(|i| ns.get(&["pod", &format!("kill-worker-{i}")])["metadata"]["uid"].as_str().unwrap().to_string())
        .collect();
    let pid = node.container_pid(&ns.name, "kill-worker-1", "tensorflow");
    node.signal(pid, "KILL");
    let killed = Instant::now();
    let mut end = None;
    let mut job = Value::Null;
    while killed.elapsed() < Duration::from_secs(limit) {
        job = ns.get(&["tfjob", "kill"]);
        end = finished(&job);
        if end.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let seconds = killed.elapsed().as_secs_f64();
    let workers = (0..2)
        .map(|i| {
            let pod = ns
                .try_kubectl(&["get", "pod", &format!("kill-worker-{i}"), "-o", "json"])
                .map(|s| serde_json::from_str(&s).unwrap())
                .unwrap_or(Value::Null);
            (uids[i].clone(), pod)
        })
        .collect();
    let events = ns
        .try_kubectl(&["get", "events", "--sort-by", ".lastTimestamp", "-o", "custom-columns=REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message"])
        .unwrap_or_default();
    let outcome = Outcome { end, job, workers, events, seconds };
    eprintln!("{policy}: {outcome:#?}\n{}", ns.describe());
    outcome
}

fn run(policy: &'static str, test: &str, limit: u64) -> Option<Outcome> {
    let node = Node::get(test)?;
    let ns = node.namespace(&format!("kill-{}", policy.to_lowercase()));
    let _operator = node.operator(&ns.name, &[]);
    Some(kill_worker_1(&node, &ns, policy, limit))
}

#[test]
fn worker_killed_mid_training_restart_policy_never() {
    let Some(o) = run("Never", "worker_killed_mid_training_restart_policy_never", 120) else {
        return;
    };
    let _ = (condition(&o.job, "Failed"), o.seconds, &o.workers, &o.events, o.end);
}

#[test]
fn worker_killed_mid_training_restart_policy_on_failure() {
    let Some(o) = run("OnFailure", "worker_killed_mid_training_restart_policy_on_failure", 180) else {
        return;
    };
    let _ = o;
}

#[test]
fn worker_killed_mid_training_restart_policy_always() {
    let Some(o) = run("Always", "worker_killed_mid_training_restart_policy_always", 180) else {
        return;
    };
    let _ = o;
}

#[test]
fn worker_killed_mid_training_restart_policy_exit_code() {
    let Some(o) = run("ExitCode", "worker_killed_mid_training_restart_policy_exit_code", 180) else {
        return;
    };
    let _ = o;
}
