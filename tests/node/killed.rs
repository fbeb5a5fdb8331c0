//! A worker killed mid-training (SIGKILL to its TensorFlow process, as the OOM killer or a
//! crash would), under Never, Always and ExitCode, for jobs without any opt-in annotation:
//! what happens today; the baseline `recovery.rs` measures whole-job restart against (it has
//! OnFailure's in-place restarts).

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
    /// Every change of a worker pod seen (polled every 0.3 s from the kill on).
    timeline: Vec<Change>,
    /// Worker 0's log of its run before its first restart (read while it was the previous
    /// run: the kubelet keeps one dead container per container).
    worker0_previous: String,
    events: String,
    /// Seconds from the kill to the job's end.
    seconds: f64,
}

/// One worker pod's state at one moment.
#[derive(Clone, Debug, PartialEq)]
struct Change {
    seconds: f64,
    worker: usize,
    /// The pod was recreated (another uid than before the kill).
    recreated: bool,
    phase: String,
    restarts: i64,
    /// `running`, `waiting:<reason>`, `terminated:<exit code>:<reason>`, or `gone`.
    state: String,
}

fn state_of(pod: &Value) -> String {
    let s = &pod["status"]["containerStatuses"][0]["state"];
    if !s["terminated"].is_null() {
        format!(
            "terminated:{}:{}",
            s["terminated"]["exitCode"],
            s["terminated"]["reason"].as_str().unwrap_or("")
        )
    } else if !s["waiting"].is_null() {
        format!("waiting:{}", s["waiting"]["reason"].as_str().unwrap_or(""))
    } else if !s["running"].is_null() {
        "running".into()
    } else {
        "none".into()
    }
}

/// Runs a 2-worker MWMS job with POLICY, kills worker 1's TensorFlow process at its 3rd step,
/// and watches until the job ends or STOP says enough was seen (at most LIMIT seconds).
fn kill_worker_1(
    node: &Node,
    ns: &Namespace,
    policy: &'static str,
    limit: u64,
    stop: impl Fn(&[Change]) -> bool,
) -> Outcome {
    let worker = Replica::new(
        "Worker",
        2,
        policy,
        &["mwms", "--steps", "12", "--step-seconds", "0.3"],
    );
    node.apply(&tf_job(node, &ns.name, "kill", &[worker]));
    wait_for("worker 1 at its 3rd step", 180, || {
        let log = ns
            .try_kubectl(&["logs", "kill-worker-1", "-c", "tensorflow"])
            .ok()?;
        (reports(&log)
            .iter()
            .filter(|r| r["event"] == "step")
            .count()
            >= 3)
            .then_some(())
    });
    let uids: Vec<String> = (0..2)
        .map(|i| {
            ns.get(&["pod", &format!("kill-worker-{i}")])["metadata"]["uid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let pid = node.container_pid(&ns.name, "kill-worker-1", "tensorflow");
    node.signal(pid, "KILL");
    let killed = Instant::now();
    let mut end = None;
    let mut job = Value::Null;
    let mut timeline: Vec<Change> = Vec::new();
    let mut worker0_previous = String::new();
    while killed.elapsed() < Duration::from_secs(limit) {
        let pods = ns.get(&["pods"]);
        for (i, uid) in uids.iter().enumerate() {
            let name = format!("kill-worker-{i}");
            let pod = pods["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["metadata"]["name"] == name.as_str());
            let change = match pod {
                Some(p) => Change {
                    seconds: killed.elapsed().as_secs_f64(),
                    worker: i,
                    recreated: p["metadata"]["uid"].as_str() != Some(uid.as_str()),
                    phase: p["status"]["phase"].as_str().unwrap_or("").into(),
                    restarts: p["status"]["containerStatuses"][0]["restartCount"]
                        .as_i64()
                        .unwrap_or(0),
                    state: state_of(p),
                },
                None => Change {
                    seconds: killed.elapsed().as_secs_f64(),
                    worker: i,
                    recreated: false,
                    phase: String::new(),
                    restarts: 0,
                    state: "gone".into(),
                },
            };
            let last = timeline.iter().rev().find(|c| c.worker == i);
            let same = last.is_some_and(|l| {
                (l.recreated, &l.phase, l.restarts, &l.state)
                    == (
                        change.recreated,
                        &change.phase,
                        change.restarts,
                        &change.state,
                    )
            });
            if !same {
                timeline.push(change);
            }
        }
        if worker0_previous.is_empty()
            && timeline
                .iter()
                .any(|c| c.worker == 0 && c.restarts == 1 && c.state == "running")
        {
            worker0_previous = ns
                .try_kubectl(&["logs", "kill-worker-0", "-c", "tensorflow", "--previous"])
                .unwrap_or_default();
        }
        job = ns.get(&["tfjob", "kill"]);
        end = finished(&job);
        if end.is_some() || stop(&timeline) {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    if end.is_none() {
        // Stopped by STOP: look again a moment later, so a job about to end is seen ending.
        std::thread::sleep(Duration::from_secs(3));
        job = ns.get(&["tfjob", "kill"]);
        end = finished(&job);
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
        .try_kubectl(&[
            "get",
            "events",
            "--sort-by",
            ".lastTimestamp",
            "-o",
            "custom-columns=REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message",
        ])
        .unwrap_or_default();
    let outcome = Outcome {
        end,
        job,
        workers,
        timeline,
        worker0_previous,
        events,
        seconds,
    };
    eprintln!("{policy}: {}", outcome.summary());
    outcome
}

impl Outcome {
    /// What happened, compactly (printed by every test: the baseline on record).
    fn summary(&self) -> String {
        let mut s = format!(
            "job {:?} {:.1} s after the kill; conditions:",
            self.end, self.seconds
        );
        for c in self.job["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            s += &format!(" {}={}({})", c["type"], c["status"], c["reason"]);
        }
        s += &format!(
            "\n  replicaStatuses: {}",
            self.job["status"]["replicaStatuses"]
        );
        for (i, (uid, pod)) in self.workers.iter().enumerate() {
            let cs = &pod["status"]["containerStatuses"][0];
            s += &format!(
                "\n  worker {i}: same pod: {}, phase {}, restartCount {}, state {}, lastState {}",
                pod["metadata"]["uid"].as_str() == Some(uid.as_str()),
                pod["status"]["phase"],
                cs["restartCount"],
                cs["state"],
                cs["lastState"]
            );
        }
        s += "\n  timeline (s after the kill):";
        for c in &self.timeline {
            s += &format!(
                "\n    {:6.1} worker {}{}: {} restarts {} {}",
                c.seconds,
                c.worker,
                if c.recreated { " (recreated)" } else { "" },
                c.phase,
                c.restarts,
                c.state
            );
        }
        let errors: Vec<&str> = self
            .worker0_previous
            .lines()
            .filter(|l| l.contains("Error"))
            .collect();
        s += &format!(
            "\n  worker 0's run before its restart ended with:\n    {}",
            errors[errors.len().saturating_sub(2)..].join("\n    ")
        );
        s + "\n  events:\n" + &self.events
    }
}

fn run(
    policy: &'static str,
    test: &str,
    limit: u64,
    stop: impl Fn(&[Change]) -> bool,
) -> Option<(Outcome, String)> {
    let node = Node::here(test)?;
    let ns = node.namespace(&format!("kill-{}", policy.to_lowercase()));
    let _operator = node.operator(&ns.name, &[]);
    let outcome = kill_worker_1(&node, &ns, policy, limit, stop);
    // Worker 0's current run.
    let current = ns
        .try_kubectl(&["logs", "kill-worker-0", "-c", "tensorflow"])
        .unwrap_or_default();
    Some((outcome, current))
}

impl Outcome {
    /// The states worker I went through, in order.
    fn states(&self, i: usize) -> Vec<&Change> {
        self.timeline.iter().filter(|c| c.worker == i).collect()
    }

    /// The first termination of worker I after the kill (`terminated:<code>:<reason>`).
    fn first_exit(&self, i: usize) -> &str {
        self.states(i)
            .into_iter()
            .find(|c| c.state.starts_with("terminated:"))
            .map(|c| c.state.as_str())
            .unwrap_or_else(|| panic!("worker {i} never terminated: {}", self.summary()))
    }

    fn max_restarts(&self, i: usize) -> i64 {
        self.states(i).iter().map(|c| c.restarts).max().unwrap_or(0)
    }

    fn recreated(&self, i: usize) -> bool {
        self.states(i).iter().any(|c| c.recreated)
    }

    fn has_event(&self, reason: &str, text: &str) -> bool {
        self.events
            .lines()
            .any(|l| l.starts_with(reason) && l.contains(text))
    }
}

/// Never: the killed worker's pod fails (137) and with it the job, at once; the operator
/// deletes the surviving worker (cleanPodPolicy Running). Nothing restarts.
#[test]
fn worker_killed_mid_training_restart_policy_never() {
    let test = "worker_killed_mid_training_restart_policy_never";
    let Some((o, _)) = run("Never", test, 120, |_| false) else {
        return;
    };
    assert_eq!(o.end, Some("Failed"), "{}", o.summary());
    assert!(o.seconds < 30.0, "{}", o.summary());
    let failed = condition(&o.job, "Failed").unwrap();
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .ends_with("has failed because 1 Worker replica(s) failed."),
        "{failed}"
    );
    assert_eq!(o.first_exit(1), "terminated:137:Error");
    assert!(
        o.has_event("ExitedWithCode", "kill-worker-1 exited with code 137"),
        "{}",
        o.summary()
    );
    assert_eq!(
        (o.max_restarts(0), o.max_restarts(1)),
        (0, 0),
        "{}",
        o.summary()
    );
    assert!(!o.recreated(0) && !o.recreated(1), "{}", o.summary());
    assert_eq!(o.workers[1].1["status"]["phase"], "Failed");
    assert!(
        o.has_event("SuccessfulDeletePod", "kill-worker-0"),
        "{}",
        o.summary()
    );
}

// OnFailure: folded into `recovery::worker_exits_1_on_failure_without_job_restart` (the
// kubelet restarts a worker in place whatever its exit code; that test's workers checkpoint,
// so their new runs resume where these retrained from step 0).

/// Always: as OnFailure would, both restart in place (137, then worker 0's 1), retrain and exit 0,
/// and their pods stay Running: under Always a pod never Succeeds, so the job never ends (it
/// would not without the kill either). The kubelet then restarts both again after a
/// CrashLoopBackOff (seen 15 s later; not waited for here).
#[test]
fn worker_killed_mid_training_restart_policy_always() {
    let test = "worker_killed_mid_training_restart_policy_always";
    // Enough: both workers exited 0 after their restart.
    let retrained = |t: &[Change]| {
        (0..2).all(|i| {
            t.iter()
                .any(|c| c.worker == i && c.restarts >= 1 && c.state == "terminated:0:Completed")
        })
    };
    let Some((o, _)) = run("Always", test, 240, retrained) else {
        return;
    };
    assert_eq!(o.end, None, "{}", o.summary());
    assert!(retrained(&o.timeline), "{}", o.summary());
    assert_eq!(o.first_exit(1), "terminated:137:Error");
    assert_eq!(
        o.first_exit(0),
        "terminated:1:Error",
        "worker 0 must fail when its peer dies"
    );
    assert!(
        !o.recreated(0) && !o.recreated(1),
        "the operator recreated a pod: {}",
        o.summary()
    );
    for (_, pod) in &o.workers {
        assert_eq!(pod["status"]["phase"], "Running", "{}", o.summary());
    }
    assert_eq!(
        condition(&o.job, "Running").unwrap()["status"],
        "True",
        "{}",
        o.summary()
    );
}

/// ExitCode: 137 is retryable, so the operator deletes and recreates the killed worker's pod
/// (TFJobRestarting); about 10 s later worker 0's TensorFlow exits 1 (its peer is gone), a
/// permanent code, and the job fails.
#[test]
fn worker_killed_mid_training_restart_policy_exit_code() {
    let test = "worker_killed_mid_training_restart_policy_exit_code";
    let Some((o, _)) = run("ExitCode", test, 120, |_| false) else {
        return;
    };
    assert_eq!(o.end, Some("Failed"), "{}", o.summary());
    assert_eq!(o.first_exit(1), "terminated:137:Error");
    assert!(
        o.recreated(1),
        "worker 1's pod was not recreated: {}",
        o.summary()
    );
    assert!(
        o.has_event("TFJobRestarting", "Worker replica(s) failed"),
        "{}",
        o.summary()
    );
    assert_eq!(
        o.first_exit(0),
        "terminated:1:Error",
        "worker 0 must fail when its peer dies"
    );
    assert!(!o.recreated(0), "{}", o.summary());
    assert!(
        o.has_event("ExitedWithCode", "kill-worker-0 exited with code 1"),
        "{}",
        o.summary()
    );
    // Kubeflow's words for a permanent exit code under ExitCode.
    let failed = condition(&o.job, "Failed").unwrap();
    assert_eq!(
        failed["message"], "job \"kill\" is failing because \"Worker\" replica(s) failed.",
        "{failed}"
    );
    assert_eq!(
        o.job["status"]["replicaStatuses"]["Worker"]["restarts"],
        1,
        "{}",
        o.summary()
    );
}
