//! The simulated cluster around the API: pod scheduling and lifecycle, graceful deletion,
//! node loss, services, fault injection and counters, a kube-runtime Controller end to end,
//! and scale (10k custom resources, 50k pods).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;
use tfjob_sim::store::{Store, StoreOptions, WriteOptions};
use tfjob_sim::{FaultRule, Options};

fn pod(name: &str, annotations: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "img"}]}
    }))
    .expect("pod")
}

async fn phase_of(pods: &Api<Pod>, name: &str, want: &str) -> Pod {
    eventually(10, &format!("pod {name} {want}"), || async {
        let p = pods.get(name).await.ok()?;
        (p.status.as_ref()?.phase.as_deref() == Some(want)).then_some(p)
    })
    .await
}

#[tokio::test]
async fn pods_are_scheduled_run_and_end_as_scripted() {
    let (sim, client) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    pods.create(
        &PostParams::default(),
        &pod("ok", json!({"sim.tfjob.dev/run-seconds": "0.3"})),
    )
    .await
    .expect("ok");
    sim.script_pod(
        "default",
        "bad",
        [("run-seconds", "0.2"), ("exit-code", "3")],
    );
    pods.create(&PostParams::default(), &pod("bad", json!({})))
        .await
        .expect("bad");
    let running = phase_of(&pods, "ok", "Running").await;
    let spec = running.spec.as_ref().expect("spec");
    assert!(
        sim.nodes()
            .contains(spec.node_name.as_ref().expect("nodeName"))
    );
    let st = running.status.as_ref().expect("status");
    assert!(st.pod_ip.is_some() && st.host_ip.is_some(), "{st:?}");
    let done = phase_of(&pods, "ok", "Succeeded").await;
    let cs = &done
        .status
        .expect("status")
        .container_statuses
        .expect("containers")[0];
    assert_eq!(
        cs.state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code),
        Some(0)
    );
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::default_namespaced(pods.clone().into_client());
    let lp = ListParams::default().fields("involvedObject.name=ok,reason=Scheduled");
    let scheduled = events.list(&lp).await.expect("events");
    assert_eq!(scheduled.items.len(), 1, "the scheduler records Scheduled");
    let failed = phase_of(&pods, "bad", "Failed").await;
    let cs = &failed
        .status
        .expect("status")
        .container_statuses
        .expect("containers")[0];
    assert_eq!(
        cs.state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code),
        Some(3),
        "script_pod overrides"
    );
}

/// A held pod is bound but not started; one patch that sets its script and drops the hold
/// starts it (the harness's per-pod scripts, the same on the real tier's kwok).
#[tokio::test]
async fn a_held_pod_starts_only_when_released_with_its_script() {
    let (_sim, client) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let held = pod("held", json!({"sim.tfjob.dev/hold": ""}));
    pods.create(&PostParams::default(), &held)
        .await
        .expect("create");
    let bound = eventually(10, "held pod bound", || async {
        let p = pods.get("held").await.ok()?;
        p.spec.as_ref()?.node_name.as_ref()?;
        Some(p)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let still = pods.get("held").await.expect("get");
    assert_eq!(still.status, bound.status, "a held pod gets no status");
    assert!(
        still.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Running"),
        "{:?}",
        still.status
    );
    let release = json!({"metadata": {"annotations": {
        "sim.tfjob.dev/hold": null,
        "sim.tfjob.dev/run-seconds": "0.1",
        "sim.tfjob.dev/exit-code": "3"
    }}});
    pods.patch("held", &PatchParams::default(), &Patch::Merge(release))
        .await
        .expect("release");
    let failed = phase_of(&pods, "held", "Failed").await;
    let code = failed.status.unwrap().container_statuses.unwrap()[0]
        .state
        .as_ref()
        .unwrap()
        .terminated
        .as_ref()
        .unwrap()
        .exit_code;
    assert_eq!(code, 3, "the script attached on release was run");
}

#[tokio::test]
async fn deleting_a_running_pod_is_graceful_then_fast() {
    let (_sim, client) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    pods.create(
        &PostParams::default(),
        &pod("g", json!({"sim.tfjob.dev/run-seconds": "60"})),
    )
    .await
    .expect("create");
    phase_of(&pods, "g", "Running").await;
    let started = Instant::now();
    pods.delete("g", &DeleteParams::default())
        .await
        .expect("delete");
    let p = pods.get("g").await.expect("terminating, still there");
    assert!(p.metadata.deletion_timestamp.is_some());
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
    eventually(5, "pod removed", || async {
        matches!(pods.get_opt("g").await, Ok(None)).then_some(())
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "fast deletion mode"
    );
    // A pod that never ran goes at once.
    let (_sim2, client2) = start_with(Options {
        kubelet: false,
        ..Default::default()
    })
    .await;
    let pods2: Api<Pod> = Api::default_namespaced(client2);
    pods2
        .create(&PostParams::default(), &pod("p", json!({})))
        .await
        .expect("create");
    pods2
        .delete("p", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(pods2.get_opt("p").await.expect("get").is_none());
}

#[tokio::test]
async fn slow_deletion_honours_the_grace_period() {
    let (_sim, client) = start_with(Options {
        fast_deletion: false,
        ..Default::default()
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    pods.create(
        &PostParams::default(),
        &pod("s", json!({"sim.tfjob.dev/run-seconds": "60"})),
    )
    .await
    .expect("create");
    phase_of(&pods, "s", "Running").await;
    pods.delete(
        "s",
        &DeleteParams {
            grace_period_seconds: Some(3),
            ..Default::default()
        },
    )
    .await
    .expect("delete");
    // Well inside the grace period even on a loaded machine.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        pods.get_opt("s").await.expect("get").is_some(),
        "still within its grace period"
    );
    eventually(15, "pod removed after grace", || async {
        matches!(pods.get_opt("s").await, Ok(None)).then_some(())
    })
    .await;
}

/// The last states a watch shows of pod `name` until it is deleted, the deleted one last.
async fn until_deleted(pods: &Api<Pod>, name: &str, rv: &str) -> Vec<(String, Pod)> {
    let params = kube::api::WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut events = pods.watch(&params, rv).await.expect("watch").boxed();
    let mut seen = Vec::new();
    while let Some(Ok(event)) = tokio::time::timeout(Duration::from_secs(15), events.next())
        .await
        .expect("a watch event within 15 s")
    {
        match event {
            kube::api::WatchEvent::Modified(p) => seen.push(("MODIFIED".to_string(), p)),
            kube::api::WatchEvent::Deleted(p) => {
                seen.push(("DELETED".to_string(), p));
                return seen;
            }
            _ => {}
        }
    }
    seen
}

/// The `DisruptionTarget` condition of a pod: (reason, message).
fn disruption_target(pod: &Pod) -> Option<(String, String)> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == "DisruptionTarget")?;
    (c.status == "True").then_some((c.reason.clone()?, c.message.clone()?))
}

/// As pod GC does for a pod whose node is gone: Failed with `DisruptionTarget`
/// `DeletionByPodGC`, then deleted with grace 0; and no new pod lands on the node.
#[tokio::test]
async fn node_loss_fails_its_pods_as_pod_gc_does_and_stops_scheduling_there() {
    let (sim, client) = start_with(Options {
        nodes: 2,
        ..Default::default()
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    pods.create(
        &PostParams::default(),
        &pod("n", json!({"sim.tfjob.dev/run-seconds": "60"})),
    )
    .await
    .expect("create");
    let p = phase_of(&pods, "n", "Running").await;
    let rv = p.resource_version().unwrap_or_default();
    let node = p.spec.expect("spec").node_name.expect("node");
    sim.lose_node(&node);
    let seen = until_deleted(&pods, "n", &rv).await;
    let want = Some((
        "DeletionByPodGC".to_string(),
        "PodGC: node no longer exists".to_string(),
    ));
    let (first, last) = (&seen[0].1, &seen[seen.len() - 1]);
    assert!(
        first.metadata.deletion_timestamp.is_none(),
        "marked before the delete"
    );
    assert_eq!(disruption_target(first), want);
    assert_eq!(last.0, "DELETED");
    for pod in [first, &last.1] {
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Failed")
        );
    }
    for i in 0..4 {
        let name = format!("after-{i}");
        pods.create(
            &PostParams::default(),
            &pod(&name, json!({"sim.tfjob.dev/run-seconds": "60"})),
        )
        .await
        .expect("create");
        let p = phase_of(&pods, &name, "Running").await;
        assert_ne!(
            p.spec.expect("spec").node_name.as_deref(),
            Some(node.as_str())
        );
    }
}

/// As the Eviction API does: `DisruptionTarget` `EvictionByEvictionAPI` first, then a
/// graceful delete; the kubelet ends the pod keeping the condition (it owns others only).
#[tokio::test]
async fn an_eviction_marks_the_pod_then_deletes_it_and_the_kubelet_keeps_the_mark() {
    let (_sim, client) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let script =
        json!({"sim.tfjob.dev/run-seconds": "60", "sim.tfjob.dev/sigterm-exit-code": "143"});
    pods.create(&PostParams::default(), &pod("e", script))
        .await
        .expect("create");
    let p = phase_of(&pods, "e", "Running").await;
    let rv = p.resource_version().unwrap_or_default();
    pods.evict("e", &kube::api::EvictParams::default())
        .await
        .expect("evict");
    let seen = until_deleted(&pods, "e", &rv).await;
    let want = Some((
        "EvictionByEvictionAPI".to_string(),
        "Eviction API: evicting".to_string(),
    ));
    let (first, last) = (&seen[0].1, &seen[seen.len() - 1].1);
    assert_eq!(disruption_target(first), want, "marked first");
    assert!(
        first.metadata.deletion_timestamp.is_none(),
        "before the delete"
    );
    assert_eq!(disruption_target(last), want, "kept to the end: {seen:#?}");
    assert_eq!(
        last.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Failed"),
        "SIGTERM's 143 fails it"
    );
}

#[tokio::test]
async fn services_get_a_cluster_ip_unless_headless() {
    let (_sim, client) = start().await;
    let svcs: Api<Service> = Api::default_namespaced(client);
    let svc = |name: &str, ip: Option<&str>| -> Service {
        let mut spec = json!({"selector": {"app": name}, "ports": [{"port": 2222}]});
        if let Some(ip) = ip {
            spec["clusterIP"] = json!(ip);
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("svc")
    };
    let a = svcs
        .create(&PostParams::default(), &svc("a", None))
        .await
        .expect("a");
    let b = svcs
        .create(&PostParams::default(), &svc("b", None))
        .await
        .expect("b");
    let h = svcs
        .create(&PostParams::default(), &svc("h", Some("None")))
        .await
        .expect("headless");
    let ip = |s: &Service| {
        s.spec
            .as_ref()
            .and_then(|s| s.cluster_ip.clone())
            .unwrap_or_default()
    };
    assert!(ip(&a).starts_with("198.19.") && ip(&b).starts_with("198.19."));
    assert_ne!(ip(&a), ip(&b));
    assert_eq!(ip(&h), "None");
}

#[tokio::test]
async fn injected_errors_latency_and_request_counters() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let cm = |n: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": n}})).expect("cm")
    };
    let before = sim.requests();
    sim.set_fault(FaultRule::error(
        Some("create"),
        Some("configmaps"),
        500,
        1.0,
    ));
    let err = cms
        .create(&PostParams::default(), &cm("x"))
        .await
        .expect_err("500");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 500),
        "{err}"
    );
    sim.clear_faults();
    sim.set_fault(FaultRule::error(Some("get"), None, 429, 1.0));
    let r = raw(
        &sim.url(),
        "GET",
        "/api/v1/namespaces/default/configmaps/x",
        "application/json",
        "",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.status, 429);
    assert!(
        r.headers.to_ascii_lowercase().contains("retry-after: 1"),
        "{}",
        r.headers
    );
    sim.clear_faults();
    sim.set_fault(FaultRule::latency(
        Some("list"),
        Some("configmaps"),
        Duration::from_millis(300),
    ));
    let t = Instant::now();
    cms.list(&ListParams::default()).await.expect("list");
    assert!(t.elapsed() >= Duration::from_millis(300));
    sim.clear_faults();
    cms.create(&PostParams::default(), &cm("y"))
        .await
        .expect("create");
    cms.patch(
        "y",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "b"}})),
    )
    .await
    .expect("patch");
    let d = sim.requests().since(&before);
    assert_eq!(
        d.count(Some("create"), Some("configmaps")),
        2,
        "failed requests count too"
    );
    assert_eq!(d.count(Some("patch"), Some("configmaps")), 1);
    assert_eq!(d.count(Some("get"), None), 1);
    assert_eq!(d.by_user_agent("raw-test"), 1);
    assert_eq!(sim.writes_since(&before), 3);
    // A 50% rate hits about half.
    sim.set_fault(FaultRule::error(Some("get"), Some("configmaps"), 500, 0.5));
    let mut failures = 0;
    for _ in 0..100 {
        failures += usize::from(cms.get("y").await.is_err());
    }
    assert!((25..=75).contains(&failures), "{failures}");
}

#[derive(Clone)]
struct Ctx {
    client: Client,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ReconcileError(#[from] kube::Error);

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let api: Api<ConfigMap> =
        Api::namespaced(ctx.client.clone(), &cm.namespace().unwrap_or_default());
    if cm.annotations().get("sim.test/seen").is_none() {
        let patch = json!({"metadata": {"annotations": {"sim.test/seen": cm.name_any()}}});
        api.patch(
            &cm.name_any(),
            &PatchParams::apply("sim-test-controller"),
            &Patch::Merge(patch),
        )
        .await?;
    }
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_kube_runtime_controller_runs_end_to_end() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::all(client.clone());
    let ctx = Arc::new(Ctx {
        client: client.clone(),
    });
    let controller = Controller::new(cms, watcher::Config::default())
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_secs(1)),
            ctx,
        )
        .for_each(|_| async {});
    let handle = tokio::spawn(controller);
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for i in 0..5 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("c{i}")}})).expect("cm");
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    for i in 0..5 {
        let name = format!("c{i}");
        eventually(10, "annotation written by the controller", || async {
            let c = api.get(&name).await.ok()?;
            (c.annotations().get("sim.test/seen") == Some(&name)).then_some(())
        })
        .await;
    }
    handle.abort();
}

#[tokio::test]
async fn holds_ten_thousand_custom_resources_and_fifty_thousand_pods() {
    let store = Store::new(StoreOptions::default());
    let opts = WriteOptions::default();
    let ns = store.lookup("", "v1", "namespaces").expect("namespaces");
    store
        .create(&ns, "", json!({"metadata": {"name": "default"}}), &opts)
        .expect("ns");
    let crds = store
        .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .expect("crds");
    store.create(&crds, "", widget_crd(), &opts).expect("crd");
    let widgets = store
        .lookup(GROUP, "v1", "widgets")
        .expect("widgets served");
    let pods = store.lookup("", "v1", "pods").expect("pods");
    let started = Instant::now();
    for i in 0..10_000 {
        let w = json!({"apiVersion": "sim.test/v1", "kind": "Widget", "metadata": {"name": format!("w{i}"), "labels": {"shard": (i % 10).to_string()}}, "spec": {"size": i}});
        store.create(&widgets, "default", w, &opts).expect("widget");
    }
    for i in 0..50_000 {
        let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}"), "labels": {"job": format!("j{}", i % 100)}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        store.create(&pods, "default", p, &opts).expect("pod");
    }
    let created = started.elapsed();
    let t = Instant::now();
    let sel = tfjob_sim::selector::LabelSelector::parse("job=j7").expect("selector");
    let (some_pods, _) = store.list(&pods, Some("default"), |p| {
        sel.matches(tfjob_sim::store::meta::labels(p))
    });
    let sel = tfjob_sim::selector::LabelSelector::parse("shard in (1,2)").expect("selector");
    let (some_widgets, rv) = store.list(&widgets, None, |w| {
        sel.matches(tfjob_sim::store::meta::labels(w))
    });
    let listed = t.elapsed();
    assert_eq!((some_pods.len(), some_widgets.len()), (500, 2_000));
    assert!(rv > 60_000);
    eprintln!("created 60k objects in {created:?}, two selector lists in {listed:?}");
    assert!(
        created < Duration::from_secs(60) && listed < Duration::from_secs(5),
        "{created:?} {listed:?}"
    );
}

/// The container states one pod went through, from a watch replay: "running#<restarts>",
/// "terminated:<reason>#<restarts>" or "waiting:<message>".
async fn container_history(sim: &tfjob_sim::SimHandle, name: &str) -> Vec<String> {
    let path = "/api/v1/namespaces/default/pods?watch=true&resourceVersion=1&timeoutSeconds=1";
    let r = raw_get(&sim.url(), path).await;
    let mut out: Vec<String> = Vec::new();
    for ev in watch_events(&r.body) {
        let pod = &ev["object"];
        if pod["metadata"]["name"] != name {
            continue;
        }
        let cs = &pod["status"]["containerStatuses"][0];
        let n = cs["restartCount"].as_u64().unwrap_or(0);
        let state = &cs["state"];
        let s = if state.get("running").is_some() {
            format!("running#{n}")
        } else if let Some(t) = state.get("terminated") {
            format!("terminated:{}#{n}", t["reason"].as_str().unwrap_or(""))
        } else if let Some(w) = state.get("waiting") {
            format!(
                "waiting:{}",
                w["message"]
                    .as_str()
                    .unwrap_or(w["reason"].as_str().unwrap_or(""))
            )
        } else {
            continue;
        };
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

#[tokio::test]
async fn crashed_containers_restart_at_once_then_after_the_kubelets_doubling_back_off() {
    let (sim, client) = start_with(Options {
        crash_loop_backoff: (Duration::from_millis(200), Duration::from_millis(400)),
        ..Default::default()
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let mut p = pod(
        "crashy",
        json!({"sim.tfjob.dev/run-seconds": "0.05", "sim.tfjob.dev/exit-code": "1", "sim.tfjob.dev/fail-times": "4"}),
    );
    p.spec.as_mut().expect("spec").restart_policy = Some("OnFailure".into());
    let started = Instant::now();
    let created = pods.create(&PostParams::default(), &p).await.expect("pod");
    let done = phase_of(&pods, "crashy", "Succeeded").await;
    assert!(
        started.elapsed() >= Duration::from_millis(200 + 400 + 400),
        "{:?}",
        started.elapsed()
    );
    let uid = created.metadata.uid.unwrap_or_default();
    let wait = |d: &str| {
        format!("waiting:back-off {d} restarting failed container=main pod=crashy_default({uid})")
    };
    let history = container_history(&sim, "crashy").await;
    let want = [
        "running#0".to_string(),
        "terminated:Error#0".into(),
        "running#1".into(),
        "terminated:Error#1".into(),
        wait("200ms"),
        "running#2".into(),
        "terminated:Error#2".into(),
        wait("400ms"),
        "running#3".into(),
        "terminated:Error#3".into(),
        wait("400ms"),
        "running#4".into(),
        "terminated:Completed#4".into(),
    ];
    assert_eq!(history, want);
    let restarts = done
        .status
        .and_then(|s| s.container_statuses)
        .map(|c| c[0].restart_count);
    assert_eq!(restarts, Some(4));
}

#[tokio::test]
async fn the_default_back_off_is_the_real_kubelets_ten_seconds() {
    let (sim, client) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let mut p = pod(
        "slowcrash",
        json!({"sim.tfjob.dev/run-seconds": "0.05", "sim.tfjob.dev/exit-code": "1"}),
    );
    p.spec.as_mut().expect("spec").restart_policy = Some("Always".into());
    pods.create(&PostParams::default(), &p).await.expect("pod");
    // Item 6 of testcluster/README.md: the second exit stays `terminated` for most of the
    // 10 s back-off (9 s here), then `CrashLoopBackOff` until the restart.
    let waiting = eventually(15, "CrashLoopBackOff", || async {
        let pod = pods.get("slowcrash").await.ok()?;
        let cs = pod.status?.container_statuses?.into_iter().next()?;
        let w = cs.state?.waiting?;
        let exited = cs.last_state?.terminated?.finished_at?.0;
        (w.reason.as_deref() == Some("CrashLoopBackOff")).then_some((
            cs.restart_count,
            w.message,
            exited,
        ))
    })
    .await;
    assert_eq!(waiting.0, 1, "the first restart is immediate");
    assert!(waiting.1.is_some_and(|m| {
        m.starts_with("back-off 10s restarting failed container=main pod=slowcrash_default(")
    }));
    let shown = jiff::Timestamp::now().duration_since(waiting.2);
    assert!(
        shown >= jiff::SignedDuration::from_secs(8),
        "terminated for {shown:?} before CrashLoopBackOff"
    );
    // (the restart follows 1 s after CrashLoopBackOff appears, and may already have)
    let history = container_history(&sim, "slowcrash").await;
    let want = [
        "running#0",
        "terminated:Error#0",
        "running#1",
        "terminated:Error#1",
    ];
    assert_eq!(history[..4], want, "{history:?}");
    assert!(
        history[4].starts_with("waiting:back-off 10s"),
        "{history:?}"
    );
}

/// Items 7 and 8 of testcluster/README.md ("The real kubelet and `sim/`"): the binding writes
/// `nodeName` and `PodScheduled` alone (a MODIFIED without container statuses) before the
/// kubelet's first status, which keeps that condition's time; the kubelet records `Pulled`,
/// `Created`, `Started` and, on deletion, `Killing`, in the real kubelet's words.
#[tokio::test]
async fn item7_8_the_binding_brings_pod_scheduled_and_the_kubelet_records_its_events() {
    let (sim, client) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    pods.create(
        &PostParams::default(),
        &pod("ev", json!({"sim.tfjob.dev/run-seconds": "60"})),
    )
    .await
    .expect("create");
    phase_of(&pods, "ev", "Running").await;
    pods.delete("ev", &DeleteParams::default())
        .await
        .expect("delete");
    eventually(5, "pod removed", || async {
        matches!(pods.get_opt("ev").await, Ok(None)).then_some(())
    })
    .await;

    let path = "/api/v1/namespaces/default/pods?watch=true&resourceVersion=1&timeoutSeconds=1";
    let r = raw_get(&sim.url(), path).await;
    let seen: Vec<serde_json::Value> = watch_events(&r.body)
        .into_iter()
        .filter(|e| e["object"]["metadata"]["name"] == "ev")
        .map(|e| e["object"].clone())
        .collect();
    let bound = &seen[1];
    assert!(bound["spec"]["nodeName"].is_string(), "{bound}");
    let conditions = bound["status"]["conditions"]
        .as_array()
        .expect("conditions");
    assert_eq!(conditions.len(), 1, "{bound}");
    assert_eq!(
        (&conditions[0]["type"], &conditions[0]["status"]),
        (&json!("PodScheduled"), &json!("True"))
    );
    assert!(bound["status"]["containerStatuses"].is_null(), "{bound}");
    let kubelet_first = &seen[2];
    let scheduled = kubelet_first["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == "PodScheduled"))
        .expect("PodScheduled kept");
    assert_eq!(
        scheduled["lastTransitionTime"],
        conditions[0]["lastTransitionTime"]
    );

    let r = raw_get(&sim.url(), "/api/v1/namespaces/default/events").await;
    // The list is by name; the order of recording is the resourceVersions'.
    let mut items = r.json()["items"].as_array().cloned().unwrap_or_default();
    items.sort_by_key(|e| {
        e["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
    });
    let events: Vec<(String, String, String)> = items
        .iter()
        .filter(|e| e["involvedObject"]["name"] == "ev")
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("type"), s("reason"), s("message"))
        })
        .collect();
    let node = bound["spec"]["nodeName"].as_str().unwrap_or_default();
    let ev = |r: &str, m: &str| ("Normal".to_string(), r.to_string(), m.to_string());
    let want = [
        ev(
            "Scheduled",
            &format!("Successfully assigned default/ev to {node}"),
        ),
        ev(
            "Pulled",
            "Container image \"img\" already present on machine",
        ),
        ev("Created", "Created container: main"),
        ev("Started", "Started container main"),
        ev("Killing", "Stopping container main"),
    ];
    assert_eq!(events, want);
}
