//! The simulated kubelet: a pure pod state machine (no I/O; the server's loop calls `step`).
//!
//! All state lives in the pod's `.status`, so `step` is a function of (pod, script, now):
//! scheduled → containers `ContainerCreating` (for `start-seconds`) → running and ready (for
//! `run-seconds`) → each container exits with its scripted code. restartPolicy Never ends the
//! pod Succeeded/Failed; OnFailure restarts failed containers in place (CrashLoopBackOff for a
//! shortened back-off, then running with restartCount+1 and `lastState.terminated`); Always
//! restarts on any exit. Eviction and never-starting containers are scripted too.

mod script;
mod status;

pub use script::{PREFIX, Script};

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use status::{
    completed_init_container, condition, hex_id, host_ip, image_id, never_start_message, qos_class,
    waiting_container,
};

/// The sim's CrashLoopBackOff delay (the real kubelet starts at 10s; tests want speed).
pub const BACKOFF_SECONDS: f64 = 0.1;

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

/// Advances `pod` (already bound to `node`, with `pod_ip` allocated) to its state at `now`.
pub fn step(pod: &Value, script: &Script, node: &str, pod_ip: &str, now: Timestamp) -> Step {
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
        let ctx = Ctx {
            pod,
            script,
            now,
            start_time,
        };
        if let Some(list) = status
            .get_mut("containerStatuses")
            .and_then(Value::as_array_mut)
        {
            for cs in list.iter_mut() {
                next.extend(advance_container(cs, &ctx));
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
    now: Timestamp,
    start_time: Timestamp,
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
fn advance_container(cs: &mut Value, ctx: &Ctx) -> Option<Timestamp> {
    for _ in 0..4 {
        let state = cs["state"].clone();
        if state["waiting"]["reason"] == "ContainerCreating" {
            let ready_at = after(ctx.start_time, ctx.script.start_seconds);
            if ctx.now < ready_at {
                return Some(ready_at);
            }
            start_container(cs, ctx);
        } else if let Some(started) = time_at(&state["running"]["startedAt"]) {
            let end = after(started, ctx.script.run_seconds);
            if ctx.now < end {
                return Some(end);
            }
            exit_container(cs, ctx, started);
        } else if state["waiting"]["reason"] == "CrashLoopBackOff" {
            let finished = time_at(&cs["lastState"]["terminated"]["finishedAt"]).unwrap_or(ctx.now);
            let until = after(finished, BACKOFF_SECONDS);
            if ctx.now < until {
                return Some(until);
            }
            cs["restartCount"] = json!(cs["restartCount"].as_u64().unwrap_or(0) + 1);
            start_container(cs, ctx);
        } else {
            return None;
        }
    }
    Some(ctx.now)
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
    let terminated = json!({"terminated": {
        "exitCode": code, "reason": reason, "startedAt": started.to_string(),
        "finishedAt": ctx.now.to_string(), "containerID": cs["containerID"],
    }});
    cs["ready"] = json!(false);
    cs["started"] = json!(false);
    let policy = ctx
        .pod
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    let restarts = policy == "Always" || (policy == "OnFailure" && code != 0);
    if restarts {
        let pod_name = ctx
            .pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let message = format!("back-off 10s restarting failed container={name} pod={pod_name}");
        cs["lastState"] = terminated;
        cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
    } else {
        cs["state"] = terminated;
    }
}

fn set_phase(pod: &Value, status: &mut Value) {
    let list = status["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let creating = list
        .iter()
        .any(|cs| cs["state"]["waiting"]["reason"] == "ContainerCreating");
    let codes: Option<Vec<i64>> = list
        .iter()
        .map(|cs| cs["state"]["terminated"]["exitCode"].as_i64())
        .collect();
    let policy = pod
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    let phase = match codes {
        _ if creating => "Pending",
        Some(codes) if !codes.is_empty() && policy != "Always" => {
            if codes.iter().all(|c| *c == 0) {
                "Succeeded"
            } else {
                "Failed"
            }
        }
        _ => "Running",
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
