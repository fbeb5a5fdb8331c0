//! The pod simulator loop: schedules pods onto the simulated nodes, feeds each pod to the pure
//! kubelet state machine and writes the status it returns, finishes graceful deletions, and
//! simulates node loss (a background task over the store; no network I/O).
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::TryRecvError;

mod control;
mod events;
mod nodes;

pub(crate) use control::Control;
pub(crate) use nodes::{lose_node, node_ip, node_object};

use crate::controllers::kubelet;
use crate::store::{
    ApiError, DeleteOptions, ResourceId, ResourceType, Store, Sub, WriteOptions, meta,
};

/// How long a deleted pod takes to go away in fast-deletion mode.
pub const FAST_DELETION: Duration = Duration::from_millis(50);

type PodKey = (String, String);

/// Loop settings.
#[derive(Clone, Debug)]
pub struct LoopOptions {
    pub nodes: Vec<String>,
    pub fast_deletion: bool,
    /// Container restart back-off: (initial, max).
    pub crash_loop_backoff: (Duration, Duration),
    /// From the containers' end to the pod's terminal phase.
    pub phase_lag: Duration,
}

struct Loop {
    store: Arc<Store>,
    ctl: Arc<Control>,
    opts: LoopOptions,
    pods: ResourceType,
    due: BTreeMap<PodKey, Timestamp>,
    /// When fast deletion first saw each terminating pod (by uid).
    terminating: BTreeMap<String, Timestamp>,
    /// The kubelet's memory of container restarts (not in any status, as on a real node).
    backoff: kubelet::CrashBackoff,
    next_ip: u32,
    next_node: usize,
}

/// Run until `shutdown` flips.
pub async fn run(
    store: Arc<Store>,
    ctl: Arc<Control>,
    opts: LoopOptions,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let Some(pods) = store.lookup("", "v1", "pods") else {
        return;
    };
    let mut rx = store.subscribe();
    let (initial, max) = opts.crash_loop_backoff;
    let mut l = Loop {
        backoff: kubelet::CrashBackoff::new(initial, max),
        store,
        ctl,
        opts,
        pods,
        due: BTreeMap::new(),
        terminating: BTreeMap::new(),
        next_ip: 2,
        next_node: 0,
    };
    l.resync();
    let pods_id = ResourceId::new("", "pods");
    loop {
        l.process_due();
        let next = l.due.values().min().copied();
        let sleep = next.map(|t| {
            Duration::try_from(t.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO)
        });
        tokio::select! {
            ev = rx.recv() => match ev {
                Ok(ev) => if ev.resource == pods_id { l.touch(&ev.object) },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => l.resync(),
                Err(_) => return,
            },
            _ = tokio::time::sleep(sleep.unwrap_or(Duration::from_secs(3600))) => {}
            _ = l.ctl.wake.notified() => l.resync(),
            _ = shutdown.changed() => return,
        }
        loop {
            match rx.try_recv() {
                Ok(ev) if ev.resource == pods_id => l.touch(&ev.object),
                Ok(_) => {}
                Err(TryRecvError::Lagged(_)) => l.resync(),
                Err(_) => break,
            }
        }
    }
}

impl Loop {
    fn touch(&mut self, pod: &Value) {
        let key = (
            meta::namespace(pod).to_string(),
            meta::name(pod).to_string(),
        );
        self.due.insert(key, Timestamp::now());
    }
    fn resync(&mut self) {
        let (pods, _) = self.store.list(&self.pods, None, |_| true);
        for p in pods {
            self.touch(&p);
        }
    }
    fn process_due(&mut self) {
        let now = Timestamp::now();
        let ready: Vec<PodKey> = self
            .due
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in ready {
            self.due.remove(&key);
            if let Some(next) = self.process(&key, now) {
                self.due.insert(key, next);
            }
        }
    }

    fn write(&self, pod: &Value, sub: Sub, f: impl FnOnce(&mut Value)) -> Result<(), ApiError> {
        let uid = meta::uid(pod).to_string();
        let opts = WriteOptions {
            internal: true,
            sub,
            ..Default::default()
        };
        self.store.write(
            &self.pods,
            meta::namespace(pod),
            meta::name(pod),
            &opts,
            |cur| {
                let cur = cur
                    .filter(|c| meta::uid(c) == uid)
                    .ok_or_else(|| ApiError::internal("pod replaced"))?;
                let mut new = cur.clone();
                f(&mut new);
                Ok(new)
            },
        )?;
        Ok(())
    }

    /// A terminating pod, as the kubelet ends it: its containers stop (at once if the script
    /// says they exit on SIGTERM; otherwise SIGKILL at the end of the grace period; after
    /// ~50 ms either way in fast mode), one status write shows their end and the terminal
    /// phase, then the delete with grace 0. A pod with nothing running goes at once. On a lost
    /// node (no kubelet) the pod goes at the end of its grace period without a status.
    fn finish_deletion(&mut self, pod: &Value, now: Timestamp) -> Option<Timestamp> {
        let uid = meta::uid(pod).to_string();
        let first_seen = *self.terminating.entry(uid.clone()).or_insert(now);
        let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        let lost = self.ctl.is_lost(node);
        let effective = self.ctl.effective(pod);
        let script = kubelet::Script::from_pod(&effective).unwrap_or_default();
        let running = pod["status"]["containerStatuses"]
            .as_array()
            .is_some_and(|l| l.iter().any(|cs| cs["state"]["running"].is_object()));
        let grace_end = || {
            pod["metadata"]["deletionTimestamp"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(now)
        };
        let due = if self.opts.fast_deletion && (running || lost) {
            first_seen + FAST_DELETION
        } else if lost || (running && script.sigterm_exit_code.is_none()) {
            grace_end()
        } else {
            first_seen
        };
        if now < due {
            return Some(due);
        }
        self.terminating.remove(&uid);
        if !lost {
            let last = kubelet::kill(&effective, &script, now);
            self.record(pod, &last.events);
            if let Some(status) = last.status {
                let _ = self.write(pod, Sub::Status, |p| p["status"] = status);
            }
        }
        let opts = DeleteOptions {
            grace_seconds: Some(0),
            precondition_uid: Some(uid),
            ..Default::default()
        };
        let _ = self
            .store
            .delete(&self.pods, meta::namespace(pod), meta::name(pod), &opts);
        None
    }

    /// Records the kubelet's events about `pod`.
    fn record(&self, pod: &Value, list: &[kubelet::Event]) {
        for e in list {
            events::record(&self.store, pod, e.type_, e.reason, &e.message, "kubelet");
        }
    }

    /// The next node (round robin) that is not lost and carries every label of the pod's
    /// `nodeSelector` (the sim's nodes have the labels of `nodes::node_labels`).
    fn pick_node(&mut self, pod: &Value) -> Option<String> {
        let n = self.opts.nodes.len();
        let selector = pod["spec"]["nodeSelector"].as_object();
        for _ in 0..n {
            let node = self.opts.nodes[self.next_node % n].clone();
            self.next_node += 1;
            let labels = nodes::node_labels(&node);
            let fits = selector.is_none_or(|s| {
                s.iter().all(|(k, v)| {
                    labels
                        .get(k)
                        .is_some_and(|l| Some(l.as_str()) == v.as_str())
                })
            });
            if fits && !self.ctl.is_lost(&node) {
                return Some(node);
            }
        }
        None
    }

    /// No node fits the pod: it stays Pending with `PodScheduled` False, in the scheduler's
    /// words (written once; the sim's nodes never change, so nothing would requeue it).
    fn unschedulable(&mut self, pod: &Value, now: Timestamp) {
        if pod["status"]["conditions"].is_array() {
            return;
        }
        let n = self.opts.nodes.len();
        let message = format!(
            "0/{n} nodes are available: {n} node(s) didn't match Pod's node affinity/selector. \
             preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
        );
        let condition = json!({
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastProbeTime": null, "lastTransitionTime": now.to_string(),
        });
        let written = self.write(pod, Sub::Status, |p| {
            p["status"] = json!({"phase": "Pending", "conditions": [condition], "qosClass": "BestEffort"});
        });
        if written.is_ok() {
            events::record(
                &self.store,
                pod,
                "Warning",
                "FailedScheduling",
                &message,
                "default-scheduler",
            );
        }
    }

    /// Look at one pod; returns when to look again.
    fn process(&mut self, key: &PodKey, now: Timestamp) -> Option<Timestamp> {
        let pod = self.store.get(&self.pods, &key.0, &key.1)?;
        if meta::is_deleting(&pod) {
            return self.finish_deletion(&pod, now);
        }
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        if node.is_empty() {
            let Some(node) = self.pick_node(&pod) else {
                self.unschedulable(&pod, now);
                return None;
            };
            // The binding sets the node and `PodScheduled` in one write, before the kubelet's
            // first status (as the real scheduler's binding does).
            let scheduled = json!({"type": "PodScheduled", "status": "True",
                "lastProbeTime": null, "lastTransitionTime": now.to_string()});
            let bound = self.write(&pod, Sub::Main, |p| {
                p["spec"]["nodeName"] = json!(node);
                if !p["status"].is_object() {
                    p["status"] = json!({"phase": "Pending"});
                }
                p["status"]["conditions"] = json!([scheduled]);
            });
            if bound.is_ok() {
                let msg = format!("Successfully assigned {}/{} to {node}", key.0, key.1);
                events::record(
                    &self.store,
                    &pod,
                    "Normal",
                    "Scheduled",
                    &msg,
                    "default-scheduler",
                );
            }
            return None; // the write's event brings the pod back
        }
        if self.ctl.is_lost(&node) {
            return None;
        }
        let effective = self.ctl.effective(&pod);
        let script = match kubelet::Script::from_pod(&effective) {
            Ok(s) => s,
            Err(e) => {
                events::record(
                    &self.store,
                    &pod,
                    "Warning",
                    "InvalidSimScript",
                    &e,
                    "kubelet",
                );
                return None;
            }
        };
        if script.hold {
            return None; // released by a write that removes the hold, whose event brings it back
        }
        let ip = match pod["status"]["podIP"].as_str() {
            Some(ip) => ip.to_string(),
            None => {
                self.next_ip += 1;
                crate::addresses::POD_RANGE.nth(self.next_ip)
            }
        };
        // hostIP is the node's InternalIP, as on a real node.
        let host = node_ip(&self.opts.nodes, &node);
        let step = kubelet::step(
            &effective,
            &script,
            &mut self.backoff,
            &host,
            &ip,
            self.opts.phase_lag,
            now,
        );
        self.record(&pod, &step.events);
        if let Some(status) = step.status {
            let _ = self.write(&pod, Sub::Status, |p| p["status"] = status);
        }
        step.next_at
    }
}
