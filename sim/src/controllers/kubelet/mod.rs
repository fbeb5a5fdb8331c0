//! The simulated kubelet: a pure pod state machine (no I/O; the server's loop calls `step`).
//!
//! A pod's state lives in its `.status`, the restart back-off in a [`CrashBackoff`] the caller
//! keeps (like the real kubelet's in-memory one), so `step` is a function of (pod, script,
//! back-off, now): scheduled → containers `ContainerCreating` (for `start-seconds`) → running
//! and ready (for `run-seconds`, or until deleted: unscripted parameter servers and
//! evaluators) → each container exits with its scripted code and shows
//! `terminated`. restartPolicy Never ends the pod Succeeded/Failed; OnFailure restarts failed
//! containers in place, Always restarts on any exit: at the next look the container runs again
//! (restartCount+1, `lastState.terminated`) or, within its back-off, waits as
//! `CrashLoopBackOff` until the back-off has passed. Eviction and never-starting containers are
//! scripted too. As on a real node (v1.34, measured: testcluster/README.md, "The real kubelet
//! and `sim/`"), the terminal phase follows the containers' end in a later status write
//! (`phase_lag`), and a deleted pod gets its containers' end and terminal phase in one last
//! status ([`kill`]) before the kubelet's final delete.

pub mod backoff;
mod script;
mod status;

pub use backoff::CrashBackoff;
pub use script::{PREFIX, Script};
pub use status::sim_log;

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use status::{
    completed_init_container, condition, hex_id, image_id, never_start_message, qos_class,
    waiting_container,
};

/// What the kubelet does to a pod: the new `.status` (None = unchanged), when to look again
/// (None = never: the pod is final or waits forever) and the events it records.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub status: Option<Value>,
    pub next_at: Option<Timestamp>,
    pub events: Vec<Event>,
}

impl Step {
    /// Nothing changes and nothing is due.
    pub fn idle() -> Self {
        Step {
            status: None,
            next_at: None,
            events: Vec::new(),
        }
    }
}

/// A core/v1 Event the kubelet records about the pod, in the real kubelet's words.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl Event {
    fn normal(reason: &'static str, message: String) -> Self {
        Event {
            type_: "Normal",
            reason,
            message,
        }
    }
}

fn after(t: Timestamp, seconds: f64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs_f64(seconds))
        .unwrap_or(t)
}

fn time_at(v: &Value) -> Option<Timestamp> {
    v.as_str()?.parse().ok()
}

fn is_terminal(phase: &str) -> bool {
    matches!(phase, "Succeeded" | "Failed")
}

/// Advances `pod` (already bound to the node of `host_ip`, its InternalIP, with `pod_ip`
/// allocated) to its state at `now`,
/// recording container restarts in `backoff`. A pod whose containers have all ended for good
/// keeps its phase for `phase_lag` after the last end (the real kubelet writes the terminal
/// phase about 1 s after the `terminated` state).
pub fn step(
    pod: &Value,
    script: &Script,
    backoff: &mut CrashBackoff,
    host_ip: &str,
    pod_ip: &str,
    phase_lag: Duration,
    now: Timestamp,
) -> Step {
    let old = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    if is_terminal(old["phase"].as_str().unwrap_or_default()) {
        return Step::idle();
    }
    let mut status = if old.get("startTime").is_some() {
        old.clone()
    } else {
        initial_status(pod, script, host_ip, pod_ip, now)
    };
    let start_time = time_at(&status["startTime"]).unwrap_or(now);
    let evicting = script.evict && running_ends(&status).is_some_and(|end| end <= now);
    let mut next = Vec::new();
    let mut events = Vec::new();
    if evicting {
        evict(&mut status);
    } else if script.never_start.is_none() {
        let mut ctx = Ctx {
            pod,
            script,
            backoff,
            now,
            start_time,
            events: Vec::new(),
        };
        if let Some(list) = status
            .get_mut("containerStatuses")
            .and_then(Value::as_array_mut)
        {
            for cs in list.iter_mut() {
                next.extend(advance_container(cs, &mut ctx));
            }
        }
        events = ctx.events;
        let phase = pod_phase(pod, &status);
        if !is_terminal(phase) {
            status["phase"] = json!(phase);
        } else {
            // The phase lags the containers' end: the status with `terminated` first, the
            // terminal phase in a later write.
            let due = last_end(&status).map(|end| backoff::after(end, phase_lag));
            match due.filter(|due| now < *due) {
                Some(due) => next.push(due),
                None => finish_pod(&mut status, phase),
            }
        }
    }
    finish_conditions(&old, &mut status, now);
    let next_at = next.into_iter().min();
    Step {
        status: (status != old).then_some(status),
        next_at,
        events,
    }
}

/// The last status the kubelet writes for a deleted pod, at the end of its containers (None:
/// the kubelet never ran it, or it already ended). Each running container is stopped: with
/// the script's `sigterm-exit-code` if it has one (the process exits on SIGTERM), otherwise
/// SIGKILLed at the end of the grace period, 137 `Error`; the pod turns `Failed` if any
/// container failed, else `Succeeded`, whatever its restart policy, in this same write (as on
/// a real node, where the final delete follows at once).
pub fn kill(pod: &Value, script: &Script, now: Timestamp) -> Step {
    let old = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    if old.get("startTime").is_none() || is_terminal(old["phase"].as_str().unwrap_or_default()) {
        return Step::idle();
    }
    let mut status = old.clone();
    let mut events = Vec::new();
    let code = script.sigterm_exit_code.unwrap_or(137);
    if let Some(list) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for cs in list.iter_mut() {
            let Some(started) = time_at(&cs["state"]["running"]["startedAt"]) else {
                continue;
            };
            let name = cs["name"].as_str().unwrap_or_default().to_string();
            events.push(Event::normal(
                "Killing",
                format!("Stopping container {name}"),
            ));
            let reason = if code == 0 { "Completed" } else { "Error" };
            terminate(cs, pod, script, code, reason, started, now);
        }
    }
    let list = status["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let all_succeeded = list
        .iter()
        .all(|cs| cs["state"]["terminated"]["exitCode"] == 0);
    finish_pod(
        &mut status,
        if all_succeeded { "Succeeded" } else { "Failed" },
    );
    finish_conditions(&old, &mut status, now);
    Step {
        status: Some(status),
        next_at: None,
        events,
    }
}

/// The latest `finishedAt` of the containers' `terminated` states.
fn last_end(status: &Value) -> Option<Timestamp> {
    let list = status.get("containerStatuses")?.as_array()?;
    list.iter()
        .filter_map(|cs| time_at(cs.pointer("/state/terminated/finishedAt")?))
        .max()
}

/// The pod reaches its terminal `phase`; a container that ended keeps `restartCount` but no
/// `lastState` (measured on the real kubelet). One deleted while waiting in a back-off keeps
/// its `lastState`: its only exit code (not measured).
fn finish_pod(status: &mut Value, phase: &str) {
    status["phase"] = json!(phase);
    if let Some(list) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for cs in list
            .iter_mut()
            .filter(|cs| cs["state"]["terminated"].is_object())
        {
            cs["lastState"] = json!({});
        }
    }
}

struct Ctx<'a> {
    pod: &'a Value,
    script: &'a Script,
    backoff: &'a mut CrashBackoff,
    now: Timestamp,
    start_time: Timestamp,
    events: Vec<Event>,
}

impl Ctx<'_> {
    fn policy(&self) -> &str {
        self.pod
            .pointer("/spec/restartPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Always")
    }
    fn backoff_key(&self, cs: &Value) -> String {
        let uid = self
            .pod
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        CrashBackoff::key(uid, cs["name"].as_str().unwrap_or_default())
    }
    /// `format.Pod`: `name_namespace(uid)`.
    fn pod_ref(&self) -> String {
        let get = |p: &str| {
            self.pod
                .pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        format!(
            "{}_{}({})",
            get("/metadata/name"),
            get("/metadata/namespace"),
            get("/metadata/uid")
        )
    }
}

fn initial_status(pod: &Value, script: &Script, host: &str, pod_ip: &str, now: Timestamp) -> Value {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| match &script.never_start {
            Some(reason) => {
                let message = never_start_message(reason, c["image"].as_str().unwrap_or_default());
                waiting_container(c, reason, Some(&message))
            }
            None => waiting_container(c, "ContainerCreating", None),
        })
        .collect();
    let uid = pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let init = pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut status = json!({
        "phase": "Pending",
        "hostIP": host, "hostIPs": [{"ip": host}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": now.to_string(),
        "qosClass": qos_class(pod),
        "containerStatuses": statuses,
    });
    if !init.is_empty() {
        let done: Vec<Value> = init
            .iter()
            .map(|c| completed_init_container(uid, c, now))
            .collect();
        status["initContainerStatuses"] = json!(done);
    }
    status
}

/// The earliest end of a running container's run, for eviction.
fn running_ends(status: &Value) -> Option<Timestamp> {
    let list = status.get("containerStatuses")?.as_array()?;
    list.iter()
        .filter_map(|cs| time_at(cs.pointer("/state/running/startedAt")?))
        .min()
}

fn evict(status: &mut Value) {
    status["phase"] = json!("Failed");
    status["reason"] = json!("Evicted");
    status["message"] =
        json!("The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi. ");
    if let Some(list) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for cs in list {
            cs["ready"] = json!(false);
            cs["started"] = json!(false);
        }
    }
}

/// Moves one container status forward as far as `now` allows; returns its next event time.
fn advance_container(cs: &mut Value, ctx: &mut Ctx) -> Option<Timestamp> {
    for _ in 0..4 {
        let state = cs["state"].clone();
        if state["waiting"]["reason"] == "ContainerCreating" {
            let ready_at = after(ctx.start_time, ctx.script.start_seconds);
            if ctx.now < ready_at {
                return Some(ready_at);
            }
            start_container(cs, ctx);
        } else if let Some(started) = time_at(&state["running"]["startedAt"]) {
            // A run without an end (an unscripted PS) lasts until the pod is deleted.
            let end = after(started, ctx.script.run_seconds?);
            if ctx.now < end {
                return Some(end);
            }
            exit_container(cs, ctx, started);
            // The exit is its own status (`terminated`, what watchers see as Error or
            // Completed); the kubelet decides about a restart at its next look.
            return restarts(ctx.policy(), &cs["state"]["terminated"]).then_some(ctx.now);
        } else if restarts(ctx.policy(), &state["terminated"]) {
            let finished = time_at(&state["terminated"]["finishedAt"]).unwrap_or(ctx.now);
            // Within a back-off the exit stays visible as `terminated` until the wait is nearly
            // over (the real kubelet: ~10 s of a 10 s back-off), then `CrashLoopBackOff`.
            if let Some(wait) = ctx.backoff.waiting(&ctx.backoff_key(cs), finished, ctx.now) {
                let shown = backoff::after(finished, wait.mul_f64(TERMINATED_SHOWN));
                if ctx.now < shown {
                    return Some(shown);
                }
            }
            cs["lastState"] = json!({"terminated": state["terminated"]});
            if let Some(wait) = back_off(cs, ctx, finished) {
                return Some(wait);
            }
            restart_container(cs, ctx, finished);
        } else if state["waiting"]["reason"] == "CrashLoopBackOff" {
            let finished = time_at(&cs["lastState"]["terminated"]["finishedAt"]).unwrap_or(ctx.now);
            if let Some(wait) = back_off(cs, ctx, finished) {
                return Some(wait);
            }
            restart_container(cs, ctx, finished);
        } else {
            return None;
        }
    }
    Some(ctx.now)
}

/// Whether a container that ended as `terminated` is restarted under the pod's policy.
fn restarts(policy: &str, terminated: &Value) -> bool {
    match terminated["exitCode"].as_i64() {
        None => false,
        Some(code) => policy == "Always" || (policy == "OnFailure" && code != 0),
    }
}

/// The share of a restart back-off during which the exit still shows as `terminated`.
const TERMINATED_SHOWN: f64 = 0.9;

/// Within its back-off, the container waits as `CrashLoopBackOff` (the kubelet's message and
/// its `BackOff` event); returns when the back-off ends, or None when it may restart now.
fn back_off(cs: &mut Value, ctx: &mut Ctx, finished: Timestamp) -> Option<Timestamp> {
    let wait = ctx
        .backoff
        .waiting(&ctx.backoff_key(cs), finished, ctx.now)?;
    let message = format!(
        "back-off {} restarting failed container={} pod={}",
        backoff::go_duration(wait),
        cs["name"].as_str().unwrap_or_default(),
        ctx.pod_ref()
    );
    if cs["state"]["waiting"]["reason"] != "CrashLoopBackOff" {
        ctx.events.push(Event {
            type_: "Warning",
            reason: "BackOff",
            message: format!(
                "Back-off restarting failed container {} in pod {}",
                cs["name"].as_str().unwrap_or_default(),
                ctx.pod_ref()
            ),
        });
    }
    cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
    cs["ready"] = json!(false);
    cs["started"] = json!(false);
    Some(backoff::after(finished, wait))
}

fn restart_container(cs: &mut Value, ctx: &mut Ctx, finished: Timestamp) {
    ctx.backoff.next(&ctx.backoff_key(cs), finished, ctx.now);
    cs["restartCount"] = json!(cs["restartCount"].as_u64().unwrap_or(0) + 1);
    start_container(cs, ctx);
}

fn container_id(ctx: &Ctx, cs: &Value) -> String {
    let uid = ctx
        .pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = cs["name"].as_str().unwrap_or_default();
    format!(
        "containerd://{}",
        hex_id(&[uid, name, &cs["restartCount"].to_string()])
    )
}

/// The container runs; the kubelet records `Pulled` (the sim's images are always present),
/// `Created` and `Started`.
fn start_container(cs: &mut Value, ctx: &mut Ctx) {
    let image = cs["image"].as_str().unwrap_or_default().to_string();
    let name = cs["name"].as_str().unwrap_or_default().to_string();
    ctx.events.extend([
        Event::normal(
            "Pulled",
            format!("Container image \"{image}\" already present on machine"),
        ),
        Event::normal("Created", format!("Created container: {name}")),
        Event::normal("Started", format!("Started container {name}")),
    ]);
    cs["imageID"] = json!(image_id(&image));
    cs["containerID"] = json!(container_id(ctx, cs));
    cs["state"] = json!({"running": {"startedAt": ctx.now.to_string()}});
    cs["ready"] = json!(true);
    cs["started"] = json!(true);
}

fn exit_container(cs: &mut Value, ctx: &Ctx, started: Timestamp) {
    let name = cs["name"].as_str().unwrap_or_default().to_string();
    let attempt = u32::try_from(cs["restartCount"].as_u64().unwrap_or(0)).unwrap_or(u32::MAX);
    let code = ctx.script.exit_code_for(&name, attempt);
    let reason = match code {
        0 => "Completed",
        137 if ctx.script.oom => "OOMKilled",
        _ => "Error",
    };
    terminate(cs, ctx.pod, ctx.script, code, reason, started, ctx.now);
}

/// The container ended with `code`: its `terminated` state, with the termination message the
/// kubelet would copy.
fn terminate(
    cs: &mut Value,
    pod: &Value,
    script: &Script,
    code: i32,
    reason: &str,
    started: Timestamp,
    now: Timestamp,
) {
    let mut terminated = json!({
        "exitCode": code, "reason": reason, "startedAt": started.to_string(),
        "finishedAt": now.to_string(), "containerID": cs["containerID"],
    });
    let name = cs["name"].as_str().unwrap_or_default();
    if let Some(m) = termination_message(pod, name, script, code) {
        terminated["message"] = json!(m);
    }
    cs["state"] = json!({ "terminated": terminated });
    cs["ready"] = json!(false);
    cs["started"] = json!(false);
}

/// `terminated.message` as the kubelet fills it: the content of `/dev/termination-log` (the
/// script's `termination-message`), else, under `terminationMessagePolicy:
/// FallbackToLogsOnError` and a non-zero exit, the log's tail (the sim's log is one line, the
/// one its `pods/log` serves); None when neither.
fn termination_message(pod: &Value, container: &str, script: &Script, code: i32) -> Option<String> {
    if let Some(m) = script
        .termination_message
        .as_ref()
        .filter(|m| !m.is_empty())
    {
        return Some(m.clone());
    }
    let spec = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["name"] == container))?;
    let fallback = spec["terminationMessagePolicy"] == "FallbackToLogsOnError";
    let get = |p: &str| pod.pointer(p).and_then(Value::as_str).unwrap_or_default();
    (fallback && code != 0)
        .then(|| sim_log(get("/metadata/namespace"), get("/metadata/name"), container))
}

/// The pod phase from its container states, as the kubelet's `getPhase`: a container waiting
/// after an exit counts as stopped; all stopped means Succeeded if all exited 0 and the policy
/// is not Always, Failed under Never, otherwise Running (restarting).
fn pod_phase(pod: &Value, status: &Value) -> &'static str {
    let list = status["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for cs in &list {
        let state = &cs["state"];
        if state.get("running").is_some() {
            running += 1;
        } else if let Some(t) = state.get("terminated") {
            stopped += 1;
            succeeded += usize::from(t["exitCode"] == 0);
        } else if cs["lastState"].get("terminated").is_some() {
            stopped += 1;
        } else {
            waiting += 1;
        }
    }
    let policy = pod
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if waiting > 0 || list.is_empty() {
        "Pending"
    } else if running > 0 || policy == "Always" {
        // Running, or every container restarting.
        "Running"
    } else if stopped == succeeded {
        "Succeeded"
    } else if policy == "Never" {
        "Failed"
    } else {
        "Running"
    }
}

/// The pod's conditions in the kubelet's order. A finished pod's Ready and ContainersReady
/// say `PodCompleted` (Succeeded; `Initialized` too) or `PodFailed` (Failed; `Initialized`
/// without a reason), as the real kubelet writes them.
fn finish_conditions(old: &Value, status: &mut Value, now: Timestamp) {
    let phase = status["phase"].as_str().unwrap_or_default();
    let done = is_terminal(phase);
    let succeeded = phase == "Succeeded";
    let evicted = status["reason"] == "Evicted";
    let list = status["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let unready: Vec<&str> = list
        .iter()
        .filter(|cs| cs["ready"] != true)
        .filter_map(|cs| cs["name"].as_str())
        .collect();
    let message = format!("containers with unready status: [{}]", unready.join(" "));
    let (reason, msg) = if succeeded {
        (Some("PodCompleted"), None)
    } else if done && !evicted {
        (Some("PodFailed"), None)
    } else if unready.is_empty() {
        (None, None)
    } else {
        (Some("ContainersNotReady"), Some(message.as_str()))
    };
    let ready = unready.is_empty() && !done;
    let mut conditions = vec![
        condition(old, "PodReadyToStartContainers", !done, None, None, now),
        condition(
            old,
            "Initialized",
            true,
            succeeded.then_some("PodCompleted"),
            None,
            now,
        ),
        condition(old, "Ready", ready, reason, msg, now),
        condition(old, "ContainersReady", ready, reason, msg, now),
        condition(old, "PodScheduled", true, None, None, now),
    ];
    // A condition the kubelet does not own stays as the component that set it wrote it.
    if let Some(set) = crate::controllers::disruption::of(old).filter(|_| !evicted) {
        conditions.insert(0, set);
    }
    if evicted {
        let m = "The node was low on resource: memory.";
        conditions.insert(
            0,
            condition(
                old,
                "DisruptionTarget",
                true,
                Some("TerminationByKubelet"),
                Some(m),
                now,
            ),
        );
    }
    status["conditions"] = json!(conditions);
}

#[cfg(test)]
mod tests;
