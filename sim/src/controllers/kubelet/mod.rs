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
//! scripted too.

pub mod backoff;
mod script;
mod status;

pub use backoff::CrashBackoff;
pub use script::{PREFIX, Script};

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use status::{
    completed_init_container, condition, hex_id, host_ip, image_id, never_start_message, qos_class,
    waiting_container,
};

/// What the kubelet does to a pod: the new `.status` (None = unchanged) and when to look again
/// (None = never: the pod is final or waits forever).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub status: Option<Value>,
    pub next_at: Option<Timestamp>,
}

fn after(t: Timestamp, seconds: f64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs_f64(seconds))
        .unwrap_or(t)
}

fn time_at(v: &Value) -> Option<Timestamp> {
    v.as_str()?.parse().ok()
}

/// Advances `pod` (already bound to `node`, with `pod_ip` allocated) to its state at `now`,
/// recording container restarts in `backoff`.
pub fn step(
    pod: &Value,
    script: &Script,
    backoff: &mut CrashBackoff,
    node: &str,
    pod_ip: &str,
    now: Timestamp,
) -> Step {
    let old = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    if matches!(old["phase"].as_str(), Some("Succeeded" | "Failed")) {
        return Step {
            status: None,
            next_at: None,
        };
    }
    let mut status = if old.get("startTime").is_some() {
        old.clone()
    } else {
        initial_status(pod, script, node, pod_ip, now)
    };
    let start_time = time_at(&status["startTime"]).unwrap_or(now);
    let evicting = script.evict && running_ends(&status).is_some_and(|end| end <= now);
    let mut next = Vec::new();
    if evicting {
        evict(&mut status);
    } else if script.never_start.is_none() {
        let mut ctx = Ctx {
            pod,
            script,
            backoff,
            now,
            start_time,
        };
        if let Some(list) = status
            .get_mut("containerStatuses")
            .and_then(Value::as_array_mut)
        {
            for cs in list.iter_mut() {
                next.extend(advance_container(cs, &mut ctx));
            }
        }
        set_phase(pod, &mut status);
    }
    finish_conditions(&old, &mut status, now);
    let next_at = next.into_iter().min();
    Step {
        status: (status != old).then_some(status),
        next_at,
    }
}

struct Ctx<'a> {
    pod: &'a Value,
    script: &'a Script,
    backoff: &'a mut CrashBackoff,
    now: Timestamp,
    start_time: Timestamp,
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

fn initial_status(pod: &Value, script: &Script, node: &str, pod_ip: &str, now: Timestamp) -> Value {
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
    let host = host_ip(node);
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

/// Within its back-off, the container waits as `CrashLoopBackOff` (the kubelet's message);
/// returns when the back-off ends, or None when it may restart now.
fn back_off(cs: &mut Value, ctx: &Ctx, finished: Timestamp) -> Option<Timestamp> {
    let wait = ctx
        .backoff
        .waiting(&ctx.backoff_key(cs), finished, ctx.now)?;
    let message = format!(
        "back-off {} restarting failed container={} pod={}",
        backoff::go_duration(wait),
        cs["name"].as_str().unwrap_or_default(),
        ctx.pod_ref()
    );
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

fn start_container(cs: &mut Value, ctx: &Ctx) {
    let image = cs["image"].as_str().unwrap_or_default().to_string();
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
    cs["state"] = json!({"terminated": {
        "exitCode": code, "reason": reason, "startedAt": started.to_string(),
        "finishedAt": ctx.now.to_string(), "containerID": cs["containerID"],
    }});
    cs["ready"] = json!(false);
    cs["started"] = json!(false);
}

/// The pod phase from its container states, as the kubelet's `getPhase`: a container waiting
/// after an exit counts as stopped; all stopped means Succeeded if all exited 0 and the policy
/// is not Always, Failed under Never, otherwise Running (restarting).
fn set_phase(pod: &Value, status: &mut Value) {
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
    let phase = if waiting > 0 || list.is_empty() {
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
    };
    status["phase"] = json!(phase);
}

fn finish_conditions(old: &Value, status: &mut Value, now: Timestamp) {
    let done = matches!(status["phase"].as_str(), Some("Succeeded" | "Failed"));
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
    let (reason, msg) = if done && !evicted {
        (Some("PodCompleted"), None)
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
            if done && !evicted {
                Some("PodCompleted")
            } else {
                None
            },
            None,
            now,
        ),
        condition(old, "Ready", ready, reason, msg, now),
        condition(old, "ContainersReady", ready, reason, msg, now),
        condition(old, "PodScheduled", true, None, None, now),
    ];
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
