//! Deletion as watchers see it, matching the generic registry store of the real API server:
//! a pod is always deleted gracefully, so even with a zero grace period watchers get a MODIFIED
//! that sets `deletionTimestamp` and then the DELETED; other kinds without finalizers go in one
//! DELETED; the same holds for pods deleted by the garbage collector, by namespace deletion and
//! by the kubelet at the end of a grace period.

use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use tfjob_sim::Options;
use tfjob_sim::store::WriteOptions;

/// (type, deletionTimestamp set, deletionGracePeriodSeconds, finalizers) of one event.
type Seen = (String, bool, Option<i64>, usize);

fn seen(ev: &Value) -> Seen {
    let md = &ev["object"]["metadata"];
    (
        ev["type"].as_str().unwrap_or("").to_string(),
        md["deletionTimestamp"].is_string(),
        md["deletionGracePeriodSeconds"].as_i64(),
        md["finalizers"].as_array().map_or(0, Vec::len),
    )
}

fn ev(kind: &str, deleting: bool, grace: Option<i64>, finalizers: usize) -> Seen {
    (kind.to_string(), deleting, grace, finalizers)
}

/// A pod stored as the scheduler and kubelet would have left it (no loop runs in these sims).
fn put_pod(
    sim: &tfjob_sim::SimHandle,
    ns: &str,
    name: &str,
    node: &str,
    phase: &str,
    extra: Value,
) {
    let rt = sim.store().lookup("", "v1", "pods").expect("pods");
    let mut pod = json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "main", "image": "img"}], "terminationGracePeriodSeconds": 5},
        "status": {"phase": phase},
    });
    if !node.is_empty() {
        pod["spec"]["nodeName"] = json!(node);
    }
    if let (Some(p), Some(e)) = (pod["metadata"].as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let internal = WriteOptions {
        internal: true,
        ..Default::default()
    };
    sim.store()
        .create(&rt, ns, pod, &internal)
        .expect("pod stored");
}

/// Every event of the object `name` in `path`'s watch replay from `from`.
async fn events_of(sim: &tfjob_sim::SimHandle, path: &str, from: u64, name: &str) -> Vec<Seen> {
    let url = format!("{path}?watch=true&resourceVersion={from}&timeoutSeconds=1");
    let r = raw_get(&sim.url(), &url).await;
    watch_events(&r.body)
        .iter()
        .filter(|e| e["object"]["metadata"]["name"] == name)
        .map(seen)
        .collect()
}

async fn delete(sim: &tfjob_sim::SimHandle, path: &str) -> RawResponse {
    let r = raw(
        &sim.url(),
        "DELETE",
        path,
        "application/json",
        "",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.status, 200, "DELETE {path}: {}", r.body);
    r
}

const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn a_pod_deletion_is_an_update_then_a_removal_other_kinds_one_event() {
    let (sim, _client) = start_with(Options {
        kubelet: false,
        ..Default::default()
    })
    .await;
    // (pod, node, phase, query of the DELETE, events)
    let cases = [
        (
            "unscheduled",
            "",
            "Pending",
            "",
            vec![
                ev("MODIFIED", true, Some(0), 0),
                ev("DELETED", true, Some(0), 0),
            ],
        ),
        (
            "finished",
            "sim-node-0",
            "Succeeded",
            "",
            vec![
                ev("MODIFIED", true, Some(0), 0),
                ev("DELETED", true, Some(0), 0),
            ],
        ),
        (
            "forced",
            "sim-node-0",
            "Running",
            "?gracePeriodSeconds=0",
            vec![
                ev("MODIFIED", true, Some(0), 0),
                ev("DELETED", true, Some(0), 0),
            ],
        ),
        (
            "graceful",
            "sim-node-0",
            "Running",
            "",
            vec![ev("MODIFIED", true, Some(5), 0)],
        ),
    ];
    for (name, node, phase, query, want) in cases {
        put_pod(&sim, "default", name, node, phase, json!({}));
        let from = sim.store().resource_version();
        let r = delete(&sim, &format!("{PODS}/{name}{query}")).await;
        assert_eq!(r.json()["kind"], "Pod", "pods answer with the object");
        assert_eq!(events_of(&sim, PODS, from, name).await, want, "{name}");
    }

    // The kubelet's final delete of a terminating pod (grace 0, uid precondition) shortens the
    // grace period (MODIFIED) and removes it (DELETED).
    let from = sim.store().resource_version();
    delete(&sim, &format!("{PODS}/graceful?gracePeriodSeconds=0")).await;
    assert_eq!(
        events_of(&sim, PODS, from, "graceful").await,
        [
            ev("MODIFIED", true, Some(0), 0),
            ev("DELETED", true, Some(0), 0)
        ]
    );

    // A finalizer holds a zero-grace pod; removing it deletes the pod, and watchers get its
    // last stored state (finalizer included), as etcd's previous value.
    put_pod(
        &sim,
        "default",
        "held",
        "",
        "Pending",
        json!({"finalizers": ["sim.test/hold"]}),
    );
    let from = sim.store().resource_version();
    delete(&sim, &format!("{PODS}/held")).await;
    let patch = r#"{"metadata":{"finalizers":null}}"#;
    let r = raw(
        &sim.url(),
        "PATCH",
        &format!("{PODS}/held"),
        "application/merge-patch+json",
        patch,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        events_of(&sim, PODS, from, "held").await,
        [
            ev("MODIFIED", true, Some(0), 1),
            ev("DELETED", true, Some(0), 1)
        ]
    );

    // Kinds without graceful deletion: one DELETED, and a Status answer.
    let cms = "/api/v1/namespaces/default/configmaps";
    let body = r#"{"metadata":{"name":"c"}}"#;
    raw(
        &sim.url(),
        "POST",
        cms,
        "application/json",
        body,
        Duration::from_secs(5),
    )
    .await;
    let from = sim.store().resource_version();
    let r = delete(&sim, &format!("{cms}/c")).await;
    assert_eq!(r.json()["kind"], "Status");
    assert_eq!(
        events_of(&sim, cms, from, "c").await,
        [ev("DELETED", false, None, 0)]
    );
}

#[tokio::test]
async fn pods_deleted_by_gc_and_namespace_deletion_also_get_two_events() {
    let (sim, _client) = start_with(Options {
        kubelet: false,
        ..Default::default()
    })
    .await;
    let all_pods = "/api/v1/pods";
    let from = sim.store().resource_version();

    // Garbage collection of a pod whose owner is gone.
    let cms = "/api/v1/namespaces/default/configmaps";
    let owner = raw(
        &sim.url(),
        "POST",
        cms,
        "application/json",
        r#"{"metadata":{"name":"owner"}}"#,
        Duration::from_secs(5),
    )
    .await
    .json();
    let owned = json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner["metadata"]["uid"]}]});
    put_pod(&sim, "default", "owned", "", "Pending", owned);
    delete(&sim, &format!("{cms}/owner")).await;

    // Namespace deletion of its pods.
    let nss = "/api/v1/namespaces";
    raw(
        &sim.url(),
        "POST",
        nss,
        "application/json",
        r#"{"metadata":{"name":"doomed"}}"#,
        Duration::from_secs(5),
    )
    .await;
    put_pod(&sim, "doomed", "inside", "", "Pending", json!({}));
    delete(&sim, &format!("{nss}/doomed")).await;

    for name in ["owned", "inside"] {
        eventually(10, name, || async {
            let (a, b) = (
                sim.object("v1", "pods", "default", name),
                sim.object("v1", "pods", "doomed", name),
            );
            (a.is_none() && b.is_none()).then_some(())
        })
        .await;
        assert_eq!(
            events_of(&sim, all_pods, from, name).await,
            [
                ev("ADDED", false, None, 0),
                ev("MODIFIED", true, Some(0), 0),
                ev("DELETED", true, Some(0), 0)
            ],
            "{name}"
        );
    }
}

/// (type, deletionGracePeriodSeconds, phase, exit code) of one event of a pod.
type Ended = (String, Option<i64>, String, Option<i64>);

async fn ends_of(sim: &tfjob_sim::SimHandle, from: u64, name: &str) -> Vec<Ended> {
    let url = format!("{PODS}?watch=true&resourceVersion={from}&timeoutSeconds=1");
    let r = raw_get(&sim.url(), &url).await;
    watch_events(&r.body)
        .iter()
        .filter(|e| e["object"]["metadata"]["name"] == name)
        .map(|e| {
            let o = &e["object"];
            (
                e["type"].as_str().unwrap_or("").to_string(),
                o["metadata"]["deletionGracePeriodSeconds"].as_i64(),
                o["status"]["phase"].as_str().unwrap_or("").to_string(),
                o["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"].as_i64(),
            )
        })
        .collect()
}

/// Item 1 of testcluster/README.md ("The real kubelet and `sim/`"): deleting a running pod,
/// watchers see the delete (MODIFIED, the request's grace), ONE status write with the
/// container's `terminated` state and the terminal phase (137 and Failed when PID 1 ignores
/// SIGTERM, even under restartPolicy Always; the script's `sigterm-exit-code` otherwise), then
/// the kubelet's grace-0 delete (MODIFIED), then DELETED. A container that ignores SIGTERM ends
/// at the end of the grace period (slow mode), one that handles it at once; fast mode ends
/// either after ~50 ms.
#[tokio::test]
async fn the_kubelet_ends_a_deleted_pod_then_removes_it() {
    let ended = |phase: &str, code: i64| {
        [
            ("MODIFIED".to_string(), Some(2), "Running".to_string(), None),
            ("MODIFIED".into(), Some(2), phase.into(), Some(code)),
            ("MODIFIED".into(), Some(0), phase.into(), Some(code)),
            ("DELETED".into(), Some(0), phase.into(), Some(code)),
        ]
    };
    // (fast deletion, restart policy, extra annotations, phase, exit code, removed within)
    let cases = [
        (true, "Always", json!({}), "Failed", 137, 0.0..1.5),
        // The grace period ends at `deletionTimestamp`, stored in whole seconds (as metav1.Time
        // is): 1-2 s after a delete with grace 2.
        (false, "Always", json!({}), "Failed", 137, 1.0..4.0),
        (
            false,
            "Never",
            json!({"sim.tfjob.dev/sigterm-exit-code": "0"}),
            "Succeeded",
            0,
            0.0..0.8,
        ),
    ];
    for (fast, policy, extra, phase, code, within) in cases {
        let (sim, _client) = start_with(Options {
            fast_deletion: fast,
            ..Default::default()
        })
        .await;
        let mut pod = json!({"metadata": {"name": "runner", "annotations": {"sim.tfjob.dev/run-seconds": "60"}},
            "spec": {"restartPolicy": policy, "containers": [{"name": "main", "image": "img"}]}});
        if let (Some(a), Some(e)) = (
            pod["metadata"]["annotations"].as_object_mut(),
            extra.as_object(),
        ) {
            a.extend(e.clone());
        }
        let body = pod.to_string();
        raw(
            &sim.url(),
            "POST",
            PODS,
            "application/json",
            &body,
            Duration::from_secs(5),
        )
        .await;
        eventually(10, "running", || async {
            let p = sim.object("v1", "pods", "default", "runner")?;
            (p["status"]["phase"] == "Running").then_some(())
        })
        .await;
        let from = sim.store().resource_version();
        let started = std::time::Instant::now();
        delete(&sim, &format!("{PODS}/runner?gracePeriodSeconds=2")).await;
        eventually(10, "removed", || async {
            sim.object("v1", "pods", "default", "runner")
                .is_none()
                .then_some(())
        })
        .await;
        let took = started.elapsed().as_secs_f64();
        assert!(within.contains(&took), "{policy} {extra}: {took}s");
        assert_eq!(
            ends_of(&sim, from, "runner").await,
            ended(phase, code),
            "{policy} {extra}"
        );
    }
}
