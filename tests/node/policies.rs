//! The failure and success policies (docs/behaviour.md §6.3, §6.8, §7.3) on real TensorFlow:
//! an eviction through the Eviction API restarting a synchronous job once without charging
//! `max-job-restarts: "0"`; a failure rule failing a ParameterServerStrategy job at once on its
//! PS's exit code; success waiting for an evaluator that runs past the chief; and
//! `cleanPodPolicy: None` keeping the pods, with their logs, when the backoff limit fails the
//! job. Each prints `kubectl get tfjob -w -o wide` of its job.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster::{
    Namespace, Node, Replica, condition, finished, report, reports, tf_job, wait_for,
};
use crate::recovery::{Fault, JOB, fault_run};

/// `kubectl get tfjob NAME -w -o wide` into a file until dropped.
struct Watch {
    child: Child,
    file: PathBuf,
}

impl Watch {
    fn start(node: &Node, ns: &Namespace, name: &str) -> Watch {
        let file = node.scratch.join(format!("{}-{name}-watch", ns.name));
        let out = std::fs::File::create(&file).expect("watch file");
        let child = Command::new(&node.kubectl)
            .arg("--kubeconfig")
            .arg(&node.kubeconfig)
            .args(["-n", &ns.name, "get", "tfjob", name, "-w", "-o", "wide"])
            .stdout(out)
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl get -w");
        Watch { child, file }
    }

    /// What the watch printed, once it shows `end` (or after 3 s).
    fn until(&self, end: &str) -> String {
        let read = || std::fs::read_to_string(&self.file).unwrap_or_default();
        for _ in 0..30 {
            if read().contains(end) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        read()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// MWMS, `restart-scope: Job` and `max-job-restarts: "0"`: worker 1 evicted through the
/// Eviction API at its step 5. A disruption is not charged: the job restarts once, resumes
/// from its checkpoint and succeeds.
#[test]
fn eviction_restarts_a_synchronous_job_once_uncharged() {
    let test = "eviction_restarts_a_synchronous_job_once_uncharged";
    let Some(node) = Node::here(test) else {
        return;
    };
    let ns = node.namespace("evicted");
    let _operator = node.operator(&ns.name, &[]);
    let annotations = json!({
        "tfjob-operator.dev/restart-scope": "Job",
        "tfjob-operator.dev/max-job-restarts": "0",
    });
    let o = fault_run(
        &node,
        &ns,
        "ExitCode",
        Fault::Evicted,
        annotations,
        240,
        &mut |_, _| {},
    );
    eprintln!("--- kubectl get tfjob {JOB} -w -o wide:\n{}", o.watch);
    o.assert_one_job_restart("was disrupted (EvictionByEvictionAPI): a disruption, not charged");
    let workers = &o.job["status"]["replicaStatuses"]["Worker"];
    assert!(workers["restarts"].is_null(), "charged: {}", o.summary());
    assert_eq!(workers["unchargedRestarts"], 1, "{}", o.summary());
}

/// ParameterServerStrategy with `- {replicaTypes: [PS], exitCodes: [3], action: FailJob}`: the
/// PS exits 3 mid-training (its restart policy, OnFailure, would restart it) and the job fails
/// at once, naming the rule; the PS is not restarted.
#[test]
fn failure_rule_fails_the_job_on_the_ps_exit_code_at_once() {
    let Some(node) = Node::here("failure_rule_ps_exit") else {
        return;
    };
    let ns = node.namespace("rule-ps");
    let _operator = node.operator(&ns.name, &[]);
    let shared = node.scratch.join(&ns.name);
    let train = ["ps", "--steps", "200", "--step-seconds", "0.3"];
    let replicas = [("Chief", 1), ("PS", 1), ("Worker", 2)].map(|(kind, n)| {
        let mut args = train.to_vec();
        if kind == "PS" {
            args.extend(["--ps-exit", "8:3"]);
        }
        let mut r = Replica::new(kind, n, "OnFailure", &args);
        r.shared = Some(shared.clone());
        r
    });
    let mut job = tf_job(&node, &ns.name, "ruled", &replicas);
    job["metadata"]["annotations"] = json!({"tfjob-operator.dev/failure-rules":
        "- {replicaTypes: [PS], exitCodes: [3], action: FailJob}\n"});
    // The pods stay to be read (they go with the namespace).
    job["spec"]["runPolicy"] = json!({"cleanPodPolicy": "None"});
    node.apply(&job);
    let watch = Watch::start(&node, &ns, "ruled");
    let done = ns.wait_finished("ruled", 240);
    eprintln!(
        "--- kubectl get tfjob ruled -w -o wide:\n{}",
        watch.until("Failed")
    );
    assert_eq!(
        finished(&done),
        Some("Failed"),
        "{}\n{}",
        done["status"],
        ns.describe()
    );
    let failed = condition(&done, "Failed").unwrap();
    assert_eq!(
        failed["message"],
        format!(
            "TFJob {}/ruled has failed because PS replica(s) failed: pod ruled-ps-0 exited with \
             code 3 (Error) (tfjob-operator.dev/failure-rules[0]: FailJob)",
            ns.name
        ),
        "{done}"
    );
    // The PS said it exits; the chief was still training then.
    let log = ns.logs("ruled-ps-0", false);
    assert_eq!(report(&reports(&log), "exit", &log)["code"], 3);
    let chief = ns.logs("ruled-chief-0", false);
    let steps = reports(&chief)
        .iter()
        .filter(|r| r["event"] == "step")
        .count();
    assert!(steps < 200, "the chief had finished: {steps} steps");
    // At once: the job failed within seconds of the PS's end, and the PS never restarted.
    let ps = ns.get(&["pod", "ruled-ps-0"]);
    let status = &ps["status"]["containerStatuses"][0];
    assert_eq!(status["restartCount"], 0, "{ps}");
    assert_eq!(
        ps["spec"]["restartPolicy"], "Never",
        "with rules the kubelet restarts nothing"
    );
    let ended: jiff::Timestamp = status["state"]["terminated"]["finishedAt"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let failed_at: jiff::Timestamp = failed["lastTransitionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let after = (failed_at - ended).total(jiff::Unit::Second).unwrap();
    eprintln!(
        "failed {after:.1} s after the PS ended: {}",
        failed["message"]
    );
    assert!(after < 5.0, "failed {after:.1} s after the PS ended");
    let _ = std::fs::remove_dir_all(shared);
}

/// ParameterServerStrategy whose evaluator evaluates the chief's last checkpoint for 20 s after
/// the chief has ended. With `wait-for-evaluator-seconds` the job waits: the evaluator's last
/// evaluation (of the chief's final weights) is in its log, and the job succeeds after it.
#[test]
fn success_waits_for_the_evaluator_running_past_the_chief() {
    let Some(node) = Node::here("success_waits_for_the_evaluator") else {
        return;
    };
    let ns = node.namespace("evaluator");
    let _operator = node.operator(&ns.name, &[]);
    let shared = node.scratch.join(&ns.name);
    let replicas = [("Chief", 1), ("PS", 1), ("Worker", 2), ("Evaluator", 1)].map(|(kind, n)| {
        let mut args = vec!["ps", "--steps", "20", "--no-evaluator-wait"];
        if kind == "Evaluator" {
            args.extend(["--evaluate-seconds", "20"]);
        }
        let mut r = Replica::new(kind, n, "ExitCode", &args);
        r.shared = Some(shared.clone());
        r
    });
    let mut job = tf_job(&node, &ns.name, "evaluated", &replicas);
    job["metadata"]["annotations"] =
        json!({"tfjob-operator.dev/wait-for-evaluator-seconds": "300"});
    node.apply(&job);
    let watch = Watch::start(&node, &ns, "evaluated");
    let done = ns.wait_finished("evaluated", 300);
    eprintln!(
        "--- kubectl get tfjob evaluated -w -o wide:\n{}",
        watch.until("Succeeded")
    );
    assert_eq!(
        finished(&done),
        Some("Succeeded"),
        "{}\n{}",
        done["status"],
        ns.describe()
    );

    let log = ns.logs("evaluated-chief-0", false);
    let chief_done = report(&reports(&log), "done", &log).clone();
    let elog = ns.logs("evaluated-evaluator-0", false);
    let evaluator_reports = reports(&elog);
    let evaluated = report(&evaluator_reports, "evaluated", &elog);
    assert_eq!(
        evaluated["weights_sha256"], chief_done["weights_sha256"],
        "{elog}"
    );
    let end_of = |pod: &str| -> jiff::Timestamp {
        let p = ns.get(&["pod", pod]);
        let t = &p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"];
        t.as_str()
            .unwrap_or_else(|| panic!("{pod} did not end: {p}"))
            .parse()
            .unwrap()
    };
    let (chief_end, evaluator_end) = (end_of("evaluated-chief-0"), end_of("evaluated-evaluator-0"));
    let completed: jiff::Timestamp = done["status"]["completionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let seconds =
        |a: jiff::Timestamp, b: jiff::Timestamp| (b - a).total(jiff::Unit::Second).unwrap();
    eprintln!(
        "the chief ended, {:.1} s later the evaluator, {:.1} s later the job succeeded",
        seconds(chief_end, evaluator_end),
        seconds(evaluator_end, completed)
    );
    assert!(
        seconds(chief_end, evaluator_end) >= 15.0,
        "the evaluator ran past the chief"
    );
    assert!(
        completed >= evaluator_end,
        "succeeded before the evaluator ended"
    );
    let _ = std::fs::remove_dir_all(shared);
}

/// MWMS under OnFailure, `backoffLimit: 1`, `cleanPodPolicy: None`: worker 1 exits 1 at its
/// step 2 on every run, the kubelet restarts it in place until the limit fails the job; then
/// both pods are still there, not being deleted, and `kubectl logs` shows what they ran.
#[test]
fn clean_pod_policy_none_keeps_the_pods_and_their_logs_at_the_backoff_limit() {
    let Some(node) = Node::here("clean_pod_policy_none_backoff") else {
        return;
    };
    let ns = node.namespace("keep-pods");
    let _operator = node.operator(&ns.name, &[]);
    // The marker of `--exit-at` lives next to the reports file: in the container's own
    // filesystem, which a restart in place renews, so worker 1 fails on every run.
    let args = [
        "mwms",
        "--steps",
        "40",
        "--step-seconds",
        "0.3",
        "--reports",
        "/tmp/reports.jsonl",
        "--exit-at",
        "2",
    ];
    let mut job = tf_job(
        &node,
        &ns.name,
        "kept",
        &[Replica::new("Worker", 2, "OnFailure", &args)],
    );
    job["spec"]["runPolicy"] = json!({"backoffLimit": 1, "cleanPodPolicy": "None"});
    node.apply(&job);
    let watch = Watch::start(&node, &ns, "kept");
    let done = ns.wait_finished("kept", 300);
    eprintln!(
        "--- kubectl get tfjob kept -w -o wide:\n{}",
        watch.until("Failed")
    );
    assert_eq!(
        finished(&done),
        Some("Failed"),
        "{}\n{}",
        done["status"],
        ns.describe()
    );
    assert_eq!(
        condition(&done, "Failed").unwrap()["message"],
        "Job kept has failed because it has reached the specified backoff limit"
    );
    std::thread::sleep(Duration::from_secs(5));
    let pods: Vec<Value> = ns.get(&["pods"])["items"].as_array().unwrap().clone();
    let names: Vec<&str> = pods
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["kept-worker-0", "kept-worker-1"],
        "{}",
        ns.describe()
    );
    for p in &pods {
        assert!(
            p["metadata"]["deletionTimestamp"].is_null(),
            "being deleted: {p}"
        );
    }
    // Their logs: the last run's and the current one's (the kubelet keeps restarting them in
    // place, as OnFailure says; whichever it has at the moment).
    let logs = |pod: &str| {
        wait_for(&format!("kubectl logs {pod}"), 30, || {
            let run = |previous: bool| {
                let mut args = vec!["logs", pod, "-c", "tensorflow"];
                if previous {
                    args.push("--previous");
                }
                ns.try_kubectl(&args).unwrap_or_default()
            };
            let both = run(true) + &run(false);
            both.contains("TFJOB-TEST").then_some(both)
        })
    };
    for (i, pod) in ["kept-worker-0", "kept-worker-1"].iter().enumerate() {
        let log = logs(pod);
        let r = reports(&log);
        let tf_config = &report(&r, "tf_config", &log)["tf_config"];
        assert_eq!(tf_config["task"]["index"], i, "{log}");
        let first: Vec<&str> = log.lines().take(2).collect();
        eprintln!("--- kubectl logs {pod} (kept):\n{}", first.join("\n"));
    }
}
