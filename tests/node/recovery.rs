//! Whole-job restart (`tfjob-operator.dev/restart-scope: Job`, docs/behaviour.md §6.7) on real
//! TensorFlow, against today's outcome of the same fault without the annotation.
//!
//! Two MultiWorkerMirroredStrategy workers checkpoint every step to a hostPath directory their
//! pods share (one node), and restore from it when they start; every report of every run is
//! appended to a file there too, with its wall-clock time, so the runs of pods deleted by a
//! restart stay readable. A fault hits worker 1 at its step 5: its TensorFlow process
//! SIGKILLed from this machine (137), an exit 1 of the script's own (once: a marker file), or
//! `kubectl delete pod`. The 137-without case is `killed::..._exit_code`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::cluster::{Namespace, Node, Replica, condition, finished, tf_job, wait_for};

pub(crate) const JOB: &str = "resume";
/// The step of worker 1 at (or just after) which the fault hits.
const FAULT_STEP: i64 = 5;
/// Steps per run: enough that a deleted pod, which trains on through its 2 s grace period
/// (TensorFlow ignores SIGTERM), leaves some to resume.
const STEPS: i64 = 18;
const ANNOTATION: &str = "tfjob-operator.dev/restart-scope";
const ATTEMPT_LABEL: &str = "tfjob-operator.dev/restart-attempt";

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fault {
    /// SIGKILL to worker 1's TensorFlow process (exit code 137).
    Killed,
    /// Worker 1's script exits 1 after step 5, on its first run only.
    Exit1,
    /// `kubectl delete pod resume-worker-1` (as a preemption or a user would).
    Deleted,
    /// Worker 1 evicted through the Eviction API (as `kubectl drain` does).
    Evicted,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// One pod as a poll saw it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PodState {
    pub name: String,
    uid: String,
    /// Its restart-attempt label (absent without the annotation).
    pub attempt: Option<String>,
    phase: String,
    restarts: i64,
    pub state: String,
}

fn pod_state(p: &Value) -> PodState {
    let cs = &p["status"]["containerStatuses"][0];
    let s = &cs["state"];
    let state = if !s["terminated"].is_null() {
        format!("terminated:{}", s["terminated"]["exitCode"])
    } else if !s["waiting"].is_null() {
        format!("waiting:{}", s["waiting"]["reason"].as_str().unwrap_or(""))
    } else if !s["running"].is_null() {
        "running".into()
    } else {
        "none".into()
    };
    PodState {
        name: p["metadata"]["name"].as_str().unwrap_or("").into(),
        uid: p["metadata"]["uid"].as_str().unwrap_or("").into(),
        attempt: p["metadata"]["labels"][ATTEMPT_LABEL]
            .as_str()
            .map(String::from),
        phase: p["status"]["phase"].as_str().unwrap_or("").into(),
        restarts: cs["restartCount"].as_i64().unwrap_or(0),
        state: if p["metadata"]["deletionTimestamp"].is_null() {
            state
        } else {
            format!("{state},terminating")
        },
    }
}

/// One process of one pod, from the reports file.
#[derive(Debug)]
struct ProcessRun {
    task: i64,
    /// Wall-clock times of its first and last report.
    first: f64,
    last: f64,
    /// The step it started from (its `start` report), if it got that far.
    start: Option<i64>,
    /// Wall-clock time of its first training step.
    first_step: Option<f64>,
    steps: Vec<i64>,
    done: bool,
}

/// What a fault led to.
pub(crate) struct Outcome {
    pub end: Option<&'static str>,
    pub job: Value,
    /// Seconds after the fault, the job's pods (polled every 0.3 s; kept when they changed).
    timeline: Vec<(f64, Vec<PodState>)>,
    /// The messages of `Restarting=True` conditions seen, in order.
    restarting: Vec<String>,
    /// The uids of the pods before the fault, by name.
    uids: BTreeMap<String, String>,
    /// Wall-clock time of the fault.
    fault_at: f64,
    runs: Vec<ProcessRun>,
    pods: Vec<PodState>,
    events: String,
    /// `kubectl get tfjob -w -o wide` from the job's creation to its end.
    pub watch: String,
    pub describe: String,
    seconds: f64,
}

/// The job's shared directory (under the node's scratch directory), removed when dropped.
struct Shared(PathBuf);

impl Drop for Shared {
    fn drop(&mut self) {
        if std::env::var_os("TFJOB_NODE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `kubectl get tfjob JOB -w -o wide` into a file until dropped.
struct Watch {
    child: Child,
    file: PathBuf,
}

impl Watch {
    fn start(node: &Node, ns: &Namespace, file: PathBuf) -> Watch {
        let out = std::fs::File::create(&file).expect("watch file");
        let child = Command::new(&node.kubectl)
            .arg("--kubeconfig")
            .arg(&node.kubeconfig)
            .args(["-n", &ns.name, "get", "tfjob", JOB, "-w", "-o", "wide"])
            .stdout(out)
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl get -w");
        Watch { child, file }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.file).unwrap_or_default()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_runs(file: &Path) -> Vec<ProcessRun> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut runs: BTreeMap<String, ProcessRun> = BTreeMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let time = r["time"].as_f64().unwrap();
        let run = runs
            .entry(r["run"].as_str().unwrap().to_string())
            .or_insert(ProcessRun {
                task: r["task"].as_i64().unwrap(),
                first: time,
                last: time,
                start: None,
                first_step: None,
                steps: Vec::new(),
                done: false,
            });
        run.last = time;
        match r["event"].as_str().unwrap() {
            "start" => run.start = r["step"].as_i64(),
            "step" => {
                run.first_step.get_or_insert(time);
                run.steps.push(r["step"].as_i64().unwrap());
            }
            "done" => run.done = true,
            _ => {}
        }
    }
    let mut runs: Vec<ProcessRun> = runs.into_values().collect();
    runs.sort_by(|a, b| a.first.total_cmp(&b.first));
    runs
}

/// Runs the 2-worker job with POLICY and ANNOTATIONS (an object, or null), hits worker 1 with
/// FAULT at its step 5, and watches until the job ends (at most LIMIT seconds after), handing
/// every poll's job and pods to ON_POLL.
pub(crate) fn fault_run(
    node: &Node,
    ns: &Namespace,
    policy: &'static str,
    fault: Fault,
    annotations: Value,
    limit: u64,
    on_poll: &mut dyn FnMut(&Value, &[PodState]),
) -> Outcome {
    let scope_job = !annotations.is_null();
    let shared = Shared(node.scratch.join(format!("{}-shared", ns.name)));
    let _ = std::fs::remove_dir_all(&shared.0);
    std::fs::create_dir_all(&shared.0).unwrap();
    let reports = shared.0.join("reports.jsonl");
    let steps = STEPS.to_string();
    let mut args = vec![
        "mwms",
        "--steps",
        &steps,
        "--step-seconds",
        "0.3",
        "--checkpoint",
        "/shared/checkpoint",
        "--reports",
        "/shared/reports.jsonl",
    ];
    if fault == Fault::Exit1 {
        args.extend(["--exit-at", "5"]);
    }
    let mut worker = Replica::new("Worker", 2, policy, &args);
    worker.shared = Some(shared.0.clone());
    let mut job = tf_job(node, &ns.name, JOB, &[worker]);
    if scope_job {
        job["metadata"]["annotations"] = annotations;
    }
    // The job succeeds when worker 0 does: worker 1, a moment behind, keeps its pod.
    job["spec"]["runPolicy"] = json!({"cleanPodPolicy": "None"});
    node.apply(&job);
    let watch = Watch::start(node, ns, node.scratch.join(format!("{}-watch", ns.name)));

    let worker1_at = |step: i64| {
        read_runs(&reports)
            .iter()
            .any(|r| r.task == 1 && r.steps.iter().any(|s| *s >= step))
    };
    wait_for("worker 1 at its step 5", 180, || {
        worker1_at(FAULT_STEP).then_some(())
    });
    let uids: BTreeMap<String, String> = (0..2)
        .map(|i| {
            let name = format!("{JOB}-worker-{i}");
            let uid = ns.get(&["pod", &name])["metadata"]["uid"]
                .as_str()
                .unwrap()
                .to_string();
            (name, uid)
        })
        .collect();
    let fault_at = match fault {
        Fault::Killed => {
            let pid = node.container_pid(&ns.name, "resume-worker-1", "tensorflow");
            let at = now();
            node.signal(pid, "KILL");
            at
        }
        Fault::Deleted => {
            let at = now();
            ns.kubectl(&["delete", "pod", "resume-worker-1", "--wait=false"]);
            at
        }
        Fault::Evicted => {
            let at = now();
            let path = format!(
                "/api/v1/namespaces/{}/pods/resume-worker-1/eviction",
                ns.name
            );
            let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "resume-worker-1", "namespace": ns.name}});
            node.kubectl_stdin(
                &["create", "--raw", &path, "-f", "-"],
                &eviction.to_string(),
            );
            at
        }
        // The script's own report of its exit.
        Fault::Exit1 => wait_for("worker 1's exit report", 30, || {
            let text = std::fs::read_to_string(&reports).ok()?;
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .find(|r| r["event"] == "exit")
                .and_then(|r| r["time"].as_f64())
        }),
    };
    let started = Instant::now();
    let since = |t: f64| t - fault_at;
    let mut timeline: Vec<(f64, Vec<PodState>)> = Vec::new();
    let mut restarting: Vec<String> = Vec::new();
    let mut end = None;
    let mut job = Value::Null;
    while started.elapsed() < Duration::from_secs(limit) {
        let pods: Vec<PodState> = ns.get(&["pods"])["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(pod_state)
            .collect();
        if timeline.last().map(|(_, p)| p) != Some(&pods) {
            timeline.push((since(now()), pods));
        }
        job = ns.get(&["tfjob", JOB]);
        on_poll(&job, timeline.last().map_or(&[][..], |(_, p)| p));
        if let Some(c) = condition(&job, "Restarting")
            && c["status"] == "True"
        {
            let m = c["message"].as_str().unwrap_or("").to_string();
            if !restarting.contains(&m) {
                restarting.push(m);
            }
        }
        end = finished(&job);
        if end.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let seconds = since(now());
    if end == Some("Succeeded") {
        ns.wait_pods_finished(60);
    }
    let pods = ns.get(&["pods"])["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(pod_state)
        .collect();
    let events = ns
        .try_kubectl(&[
            "get",
            "events",
            "--sort-by",
            ".lastTimestamp",
            "-o",
            "custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message",
        ])
        .unwrap_or_default();
    let describe = ns
        .try_kubectl(&["describe", "tfjob", JOB])
        .unwrap_or_else(|e| e);
    // The watch's last line (State: the end) arrives just after the status write that ended
    // the job.
    if let Some(end) = end {
        let shown = Instant::now();
        while !watch.output().contains(end) && shown.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let o = Outcome {
        end,
        job,
        timeline,
        restarting,
        uids,
        fault_at,
        runs: read_runs(&reports),
        pods,
        events,
        watch: watch.output(),
        describe,
        seconds,
    };
    eprintln!(
        "{policy}, {fault:?}, restart-scope {}: {}",
        if scope_job { "Job" } else { "absent" },
        o.summary()
    );
    o
}

impl Outcome {
    pub(crate) fn summary(&self) -> String {
        let mut s = format!(
            "job {:?} {:.1} s after the fault; status: {}\n  Restarting messages seen: {:?}",
            self.end, self.seconds, self.job["status"], self.restarting
        );
        s += "\n  runs (s after the fault: first report, first step, last report; task; start; steps):";
        for r in &self.runs {
            s += &format!(
                "\n    {:6.1} {:>6} {:6.1} worker {} start {:?} steps {:?}{}",
                r.first - self.fault_at,
                r.first_step
                    .map(|t| format!("{:.1}", t - self.fault_at))
                    .unwrap_or_default(),
                r.last - self.fault_at,
                r.task,
                r.start,
                r.steps,
                if r.done { " done" } else { "" }
            );
        }
        s += "\n  pods (s after the fault):";
        for (t, pods) in &self.timeline {
            s += &format!("\n    {t:6.1}");
            for p in pods {
                s += &format!(
                    " | {} {}attempt {} {} restarts {} {}",
                    p.name,
                    if self.uids.get(&p.name) == Some(&p.uid) {
                        ""
                    } else {
                        "(new) "
                    },
                    p.attempt.as_deref().unwrap_or("-"),
                    p.phase,
                    p.restarts,
                    p.state
                );
            }
        }
        s + "\n  events:\n" + &self.events
    }

    /// Processes started after the fault (the restart's, or the kubelet's restarts in place).
    fn new_runs(&self) -> Vec<&ProcessRun> {
        self.runs
            .iter()
            .filter(|r| r.first > self.fault_at)
            .collect()
    }

    /// Seconds from the fault to the first training step after it.
    fn resumed_after(&self) -> f64 {
        self.new_runs()
            .iter()
            .filter_map(|r| r.first_step)
            .min_by(f64::total_cmp)
            .unwrap_or_else(|| panic!("no step after the fault: {}", self.summary()))
            - self.fault_at
    }

    fn recreated(&self, name: &str) -> bool {
        self.timeline
            .iter()
            .flat_map(|(_, pods)| pods)
            .any(|p| p.name == name && self.uids.get(name) != Some(&p.uid))
    }

    fn max_restarts(&self, name: &str) -> i64 {
        self.timeline
            .iter()
            .flat_map(|(_, pods)| pods)
            .filter(|p| p.name == name)
            .map(|p| p.restarts)
            .max()
            .unwrap_or(0)
    }

    /// What every run with `restart-scope: Job` must show: one whole-job restart, named for
    /// worker 1 and WORDS; attempt 0 gone before attempt 1 ran; attempt 1 resumed from the
    /// checkpoint and succeeded. Returns the seconds from the fault to the resumed training.
    pub(crate) fn assert_one_job_restart(&self, words: &str) -> f64 {
        let s = self.summary();
        assert_eq!(self.end, Some("Succeeded"), "{s}");
        assert_eq!(self.job["status"]["restartAttempt"], 1, "{s}");
        assert!(
            self.restarting
                .iter()
                .any(|m| m.contains("pod resume-worker-1")
                    && m.contains(words)
                    && m.contains("every pod restarts as attempt 1")),
            "no Restarting condition naming resume-worker-1 and '{words}': {s}"
        );
        assert_eq!(self.pods.len(), 2, "{s}");
        for p in &self.pods {
            assert_eq!(p.attempt.as_deref(), Some("1"), "{s}");
            assert_eq!(p.phase, "Succeeded", "{s}");
        }
        // The pods: no poll saw both attempts.
        for (t, pods) in &self.timeline {
            let attempts: Vec<_> = pods.iter().map(|p| p.attempt.as_deref()).collect();
            assert!(
                !(attempts.contains(&Some("0")) && attempts.contains(&Some("1"))),
                "attempts 0 and 1 side by side {t:.1} s after the fault: {s}"
            );
        }
        // The processes: attempt 1's (both workers, once each) started after attempt 0's last
        // report, resumed from the same checkpointed step (past the first) and finished.
        let (old, new): (Vec<&ProcessRun>, Vec<&ProcessRun>) =
            self.runs.iter().partition(|r| r.first < self.fault_at);
        let new_tasks: Vec<i64> = new.iter().map(|r| r.task).collect();
        assert!(
            new_tasks == [0, 1] || new_tasks == [1, 0],
            "attempt 1's processes: {new_tasks:?}: {s}"
        );
        let old_last = old.iter().map(|r| r.last).fold(f64::MIN, f64::max);
        for r in &new {
            assert!(
                r.first > old_last,
                "worker {} of attempt 1 started before attempt 0's last report: {s}",
                r.task
            );
            assert!(r.done, "worker {} of attempt 1 did not finish: {s}", r.task);
        }
        let start = new[0].start.expect("attempt 1's start report");
        assert_eq!(new[1].start, Some(start), "{s}");
        assert!(start > 0, "attempt 1 trained from step 0: {s}");
        assert!(
            start >= FAULT_STEP,
            "attempt 1 resumed at step {start}, before the fault's step: {s}"
        );
        for r in &new {
            assert_eq!(r.steps, (start..STEPS).collect::<Vec<_>>(), "{s}");
        }
        let resumed = self.resumed_after();
        eprintln!("resumed training (step {start}) {resumed:.1} s after the fault");
        resumed
    }
}

fn annotated(policy: &'static str, fault: Fault, test: &str, words: &str) -> Option<Vec<f64>> {
    let node = Node::here(test)?;
    let runs: usize = std::env::var("TFJOB_NODE_RUNS")
        .ok()
        .map(|v| v.parse().expect("TFJOB_NODE_RUNS: a number of runs"))
        .unwrap_or(1);
    let mut times = Vec::new();
    for run in 0..runs {
        let ns = node.namespace(&format!("job-restart-{}", policy.to_lowercase()));
        let _operator = node.operator(&ns.name, &[]);
        let o = fault_run(
            &node,
            &ns,
            policy,
            fault,
            json!({ANNOTATION: "Job"}),
            240,
            &mut |_, _| {},
        );
        if run == 0 {
            eprintln!(
                "--- kubectl get tfjob {JOB} -w -o wide:\n{}--- kubectl describe tfjob {JOB}:\n{}",
                o.watch, o.describe
            );
        }
        times.push(o.assert_one_job_restart(words));
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    eprintln!(
        "{test}: seconds from the fault to training resumed, {runs} run(s): {times:.1?}; p50 {:.1}",
        sorted[(sorted.len() - 1) / 2]
    );
    Some(times)
}

/// 137 under ExitCode with `restart-scope: Job`: one whole-job restart, resumed from the
/// checkpoint, Succeeded (without it the job fails: `killed::..._exit_code`). With
/// TFJOB_NODE_RUNS=N it runs N times and prints each time to resumed training and the p50.
#[test]
fn job_restart_worker_killed_exit_code() {
    annotated(
        "ExitCode",
        Fault::Killed,
        "job_restart_worker_killed_exit_code",
        "exited with code 137",
    );
}

/// Exit 1 under OnFailure with `restart-scope: Job`: one whole-job restart, resumed.
#[test]
fn job_restart_worker_exits_1_on_failure() {
    annotated(
        "OnFailure",
        Fault::Exit1,
        "job_restart_worker_exits_1_on_failure",
        "exited with code 1",
    );
}

/// Worker 1's pod deleted under ExitCode with `restart-scope: Job`: one whole-job restart,
/// resumed. ExitCode, the policy Kubeflow recommends for TensorFlow: without the annotation a
/// deletion recreates only that pod and the peer's exit 1 then fails the job.
#[test]
fn job_restart_worker_deleted_exit_code() {
    annotated(
        "ExitCode",
        Fault::Deleted,
        "job_restart_worker_deleted_exit_code",
        "was deleted",
    );
}

/// Exit 1 under OnFailure without the annotation (today): the kubelet restarts worker 1 in
/// place, worker 0's TensorFlow then fails too (its peer is gone; TF notices when its
/// collective times out) and restarts in place; the operator recreates nothing and counts
/// both restarts; both new runs restore the checkpoint and the job succeeds. (Without a
/// checkpoint both would train from step 0 again, as `killed` once recorded.)
#[test]
fn worker_exits_1_on_failure_without_job_restart() {
    let test = "worker_exits_1_on_failure_without_job_restart";
    let Some(node) = Node::here(test) else {
        return;
    };
    let ns = node.namespace("replica-restart-onfailure");
    let _operator = node.operator(&ns.name, &[]);
    let o = fault_run(
        &node,
        &ns,
        "OnFailure",
        Fault::Exit1,
        Value::Null,
        240,
        &mut |_, _| {},
    );
    let s = o.summary();
    assert_eq!(o.end, Some("Succeeded"), "{s}");
    assert!(
        !o.recreated("resume-worker-0") && !o.recreated("resume-worker-1"),
        "the operator recreated a pod: {s}"
    );
    let (r0, r1) = (
        o.max_restarts("resume-worker-0"),
        o.max_restarts("resume-worker-1"),
    );
    assert!(r0 >= 1 && r1 >= 1, "both must restart in place: {s}");
    assert_eq!(
        o.job["status"]["replicaStatuses"]["Worker"]["restarts"],
        r0 + r1,
        "{s}"
    );
    assert!(o.job["status"]["restartAttempt"].is_null(), "{s}");
    let new = o.new_runs();
    assert_eq!(new.len(), 2, "one new run per worker: {s}");
    let starts: Vec<Option<i64>> = new.iter().map(|r| r.start).collect();
    assert!(
        starts[0] == starts[1] && starts[0] >= Some(FAULT_STEP),
        "both restored the checkpoint: {s}"
    );
    assert!(new.iter().all(|r| r.done), "{s}");
    eprintln!(
        "{test}: training resumed {:.1} s after the fault",
        o.resumed_after()
    );
}

/// Worker 1's pod deleted under ExitCode without the annotation (today): the operator
/// recreates that pod alone; worker 0's TensorFlow exits 1 (its peer is gone), a permanent
/// code, and the job fails.
#[test]
fn worker_deleted_exit_code_without_job_restart() {
    let test = "worker_deleted_exit_code_without_job_restart";
    let Some(node) = Node::here(test) else {
        return;
    };
    let ns = node.namespace("replica-restart-deleted");
    let _operator = node.operator(&ns.name, &[]);
    let o = fault_run(
        &node,
        &ns,
        "ExitCode",
        Fault::Deleted,
        Value::Null,
        120,
        &mut |_, _| {},
    );
    let s = o.summary();
    assert_eq!(o.end, Some("Failed"), "{s}");
    assert!(o.recreated("resume-worker-1"), "{s}");
    assert!(!o.recreated("resume-worker-0"), "{s}");
    assert!(
        o.timeline
            .iter()
            .flat_map(|(_, pods)| pods)
            .any(|p| p.name == "resume-worker-0" && p.state == "terminated:1"),
        "worker 0 must exit 1 when its peer is gone: {s}"
    );
    assert_eq!(
        condition(&o.job, "Failed").unwrap()["message"],
        format!("job \"{JOB}\" is failing because \"Worker\" replica(s) failed."),
        "{s}"
    );
}

/// An image that cannot be pulled (its registry is 127.0.0.1:1): the job shows `Stuck`,
/// naming the pod, the container and the kubelet's reason, and with
/// `startup-deadline-seconds: 8` fails 8 s after its pod was created.
#[test]
fn missing_image_stuck_then_startup_deadline() {
    let test = "missing_image_stuck_then_startup_deadline";
    let Some(node) = Node::here(test) else {
        return;
    };
    let ns = node.namespace("stuck");
    let _operator = node.operator(&ns.name, &[]);
    let mut job = tf_job(
        &node,
        &ns.name,
        "stuck",
        &[Replica::new("Worker", 1, "ExitCode", &["mwms"])],
    );
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] =
        json!("127.0.0.1:1/tfjob-missing:v1");
    job["metadata"]["annotations"] = json!({"tfjob-operator.dev/startup-deadline-seconds": "8"});
    let applied = Instant::now();
    node.apply(&job);
    let mut stuck: Option<(f64, String)> = None;
    let mut created: Option<jiff::Timestamp> = None;
    let (failed_after, failed_at, job) = wait_for("the job failed", 60, || {
        let j = ns.get(&["tfjob", "stuck"]);
        if created.is_none() {
            created = ns
                .try_kubectl(&["get", "pod", "stuck-worker-0", "-o", "json"])
                .ok()
                .and_then(|p| {
                    serde_json::from_str::<Value>(&p).unwrap()["metadata"]["creationTimestamp"]
                        .as_str()?
                        .parse()
                        .ok()
                });
        }
        if stuck.is_none()
            && let Some(c) = condition(&j, "Stuck")
            && c["status"] == "True"
        {
            let m = c["message"].as_str().unwrap().to_string();
            stuck = Some((applied.elapsed().as_secs_f64(), m));
        }
        (finished(&j) == Some("Failed"))
            .then(|| (applied.elapsed().as_secs_f64(), jiff::Timestamp::now(), j))
    });
    let (stuck_after, message) = stuck.unwrap_or_else(|| panic!("no Stuck: {}", ns.describe()));
    let created = created.expect("the pod's creationTimestamp");
    // The deadline counts from the pod's creationTimestamp, which the API server keeps in
    // whole seconds: the job fails up to 1 s sooner after the apply than 8 s.
    let after_created = (failed_at - created).total(jiff::Unit::Second).unwrap();
    eprintln!(
        "{test}: Stuck {stuck_after:.1} s after the apply: {message}\n  Failed {failed_after:.1} s after the apply, {after_created:.1} s after the pod's creationTimestamp ({created}): {}",
        condition(&job, "Failed").unwrap()["message"]
    );
    let prefix = "pod stuck-worker-0: container tensorflow is waiting: ";
    assert!(
        message.starts_with(&format!("{prefix}ErrImagePull: "))
            || message.starts_with(&format!("{prefix}ImagePullBackOff: ")),
        "{message}"
    );
    assert!(
        message.contains("127.0.0.1:1/tfjob-missing:v1"),
        "{message}"
    );
    let failed = condition(&job, "Failed").unwrap();
    assert_eq!(failed["reason"], "TFJobFailed", "{failed}");
    assert!(
        failed["message"].as_str().unwrap().starts_with(
            "Job stuck has failed because not every replica was running within 8 s of its \
             (re)start (tfjob-operator.dev/startup-deadline-seconds): pod stuck-worker-0"
        ),
        "{failed}"
    );
    assert!(
        (8.0..15.0).contains(&after_created),
        "failed {after_created:.1} s after the pod's creation, not about 8 s"
    );
    assert!(condition(&job, "Stuck").is_none_or(|c| c["status"] != "True"));
}
