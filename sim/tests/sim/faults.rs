//! Fault injection for the operator's fault suite: writes stored but answered with an error,
//! delayed watch delivery (reordering across kinds, never within a stream), and clients frozen
//! after their N-th write.

use std::time::{Duration, Instant};

use crate::common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tfjob_sim::{FaultRule, Options};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn send(
    sim: &tfjob_sim::SimHandle,
    method: &str,
    path: &str,
    ct: &str,
    body: &str,
) -> RawResponse {
    raw(&sim.url(), method, path, ct, body, Duration::from_secs(5)).await
}

/// (type, name) of the events a watch from `from` replays.
async fn replay(sim: &tfjob_sim::SimHandle, path: &str, from: u64) -> Vec<(String, String)> {
    let url = format!("{path}?watch=true&resourceVersion={from}&timeoutSeconds=1");
    watch_events(&raw_get(&sim.url(), &url).await.body)
        .iter()
        .map(|e| {
            let name = e["object"]["metadata"]["name"].as_str().unwrap_or("");
            (
                e["type"].as_str().unwrap_or("").to_string(),
                name.to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn error_after_write_stores_the_write_and_sends_its_events_but_answers_500() {
    let (sim, _client) = start().await;
    send(
        &sim,
        "POST",
        CMS,
        "application/json",
        r#"{"metadata":{"name":"old"}}"#,
    )
    .await;
    // (verb, method, path, content type, body, expected event, object afterwards)
    let cases = [
        (
            "create",
            "POST",
            CMS.to_string(),
            "application/json",
            r#"{"metadata":{"name":"new"}}"#,
            ("ADDED", "new"),
            ("new", true),
        ),
        (
            "patch",
            "PATCH",
            format!("{CMS}/old"),
            "application/merge-patch+json",
            r#"{"data":{"k":"v"}}"#,
            ("MODIFIED", "old"),
            ("old", true),
        ),
        (
            "delete",
            "DELETE",
            format!("{CMS}/old"),
            "application/json",
            "",
            ("DELETED", "old"),
            ("old", false),
        ),
    ];
    for (verb, method, path, ct, body, (event, name), (obj, exists)) in cases {
        sim.clear_faults();
        sim.set_fault(FaultRule::error_after_write(
            Some(verb),
            Some("configmaps"),
            500,
            1.0,
        ));
        let from = sim.store().resource_version();
        let r = send(&sim, method, &path, ct, body).await;
        assert_eq!(r.status, 500, "{verb}: {}", r.body);
        assert_eq!(r.json()["reason"], "InternalError", "{verb}");
        assert_eq!(
            sim.object("v1", "configmaps", "default", obj).is_some(),
            exists,
            "{verb}: the write took effect"
        );
        assert_eq!(
            replay(&sim, CMS, from).await,
            [(event.to_string(), name.to_string())],
            "{verb}: watchers saw it"
        );
        if verb == "patch" {
            let stored = sim
                .object("v1", "configmaps", "default", "old")
                .unwrap_or(Value::Null);
            assert_eq!(stored["data"]["k"], "v");
        }
    }
    // A request that fails on its own keeps its own answer (nothing was written).
    sim.set_fault(FaultRule::error_after_write(
        Some("create"),
        Some("configmaps"),
        500,
        1.0,
    ));
    let r = send(
        &sim,
        "POST",
        CMS,
        "application/json",
        r#"{"metadata":{"name":"new"}}"#,
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.body);
    // Reads are unaffected by a write rule.
    let r = send(&sim, "GET", &format!("{CMS}/new"), "application/json", "").await;
    assert_eq!(r.status, 200);
}

/// (arrival, type, name, resourceVersion) of each event of one watch stream.
type Arrival = (Instant, String, String, u64);

/// Record the events of `api`'s watch from `from` until `until`.
async fn record<K>(api: Api<K>, from: String, until: Instant) -> Vec<Arrival>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + kube::Resource,
{
    let wp = WatchParams::default().timeout(30);
    let mut stream = api.watch(&wp, &from).await.expect("watch").boxed();
    let mut out = Vec::new();
    while let Ok(Some(ev)) = tokio::time::timeout_at(until.into(), stream.next()).await {
        let (kind, meta) = match ev.expect("event") {
            WatchEvent::Added(o) => ("ADDED", o.meta().clone()),
            WatchEvent::Modified(o) => ("MODIFIED", o.meta().clone()),
            WatchEvent::Deleted(o) => ("DELETED", o.meta().clone()),
            WatchEvent::Bookmark(b) => (
                "BOOKMARK",
                ObjectMeta {
                    resource_version: Some(b.metadata.resource_version),
                    ..Default::default()
                },
            ),
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        };
        let rv = meta
            .resource_version
            .unwrap_or_default()
            .parse()
            .unwrap_or(0);
        out.push((
            Instant::now(),
            kind.to_string(),
            meta.name.unwrap_or_default(),
            rv,
        ));
    }
    out
}

fn arrival_of(events: &[Arrival], name: &str) -> Instant {
    events
        .iter()
        .find(|e| e.2 == name)
        .map(|e| e.0)
        .unwrap_or_else(|| panic!("{name} never arrived: {events:?}"))
}

#[tokio::test]
async fn delayed_watch_events_reorder_kinds_but_never_one_stream() {
    let (sim, client) = start_with(Options {
        kubelet: false,
        bookmark_interval: Duration::from_millis(30),
        ..Default::default()
    })
    .await;
    sim.set_watch_delay(
        Some("configmaps"),
        Duration::from_millis(300),
        Duration::from_millis(500),
    );
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let svcs: Api<Service> = Api::default_namespaced(client.clone());
    let from = sim.store().resource_version().to_string();
    let until = Instant::now() + Duration::from_millis(2500);
    let cm_stream = tokio::spawn(record(cms.clone(), from.clone(), until));
    let svc_stream = tokio::spawn(record(svcs.clone(), from, until));
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 0..4 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("c{i}")}})).expect("cm");
        cms.create(&PostParams::default(), &cm).await.expect("cm");
        let svc: Service = serde_json::from_value(
            json!({"metadata": {"name": format!("s{i}")}, "spec": {"ports": [{"port": 80}]}}),
        )
        .expect("svc");
        svcs.create(&PostParams::default(), &svc)
            .await
            .expect("svc");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cm_events = cm_stream.await.expect("cm stream");
    let svc_events = svc_stream.await.expect("svc stream");

    // Across kinds: each service, written after its configmap, arrives before it.
    for i in 0..4 {
        assert!(
            arrival_of(&svc_events, &format!("s{i}")) < arrival_of(&cm_events, &format!("c{i}")),
            "s{i} before c{i}"
        );
    }
    // Within the delayed stream: resourceVersion order, and no bookmark passes an event that
    // is still to come (a client resuming from it would miss that event).
    let objects: Vec<&Arrival> = cm_events.iter().filter(|e| e.1 != "BOOKMARK").collect();
    let names: Vec<&str> = objects.iter().map(|e| e.2.as_str()).collect();
    assert_eq!(names, ["c0", "c1", "c2", "c3"]);
    for (i, e) in cm_events.iter().enumerate() {
        let later_min = cm_events[i + 1..]
            .iter()
            .filter(|l| l.1 != "BOOKMARK")
            .map(|l| l.3)
            .min();
        assert!(
            later_min.is_none_or(|m| m > e.3),
            "{e:?} then {later_min:?}: {cm_events:?}"
        );
    }
    assert!(
        cm_events.iter().any(|e| e.1 == "BOOKMARK"),
        "bookmarks still flow: {cm_events:?}"
    );

    // Cleared: delivery is prompt again.
    sim.clear_watch_delays();
    let from = sim.store().resource_version().to_string();
    let until = Instant::now() + Duration::from_millis(400);
    let stream = tokio::spawn(record(cms.clone(), from, until));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let created = Instant::now();
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "prompt"}})).expect("cm");
    cms.create(&PostParams::default(), &cm).await.expect("cm");
    let got = stream.await.expect("stream");
    assert!(arrival_of(&got, "prompt") - created < Duration::from_millis(140));
}

#[tokio::test]
async fn a_watcher_dropped_with_events_in_flight_gets_them_on_its_re_watch() {
    let (sim, client) = start_with(Options {
        kubelet: false,
        ..Default::default()
    })
    .await;
    sim.set_watch_delay(None, Duration::from_millis(200), Duration::from_millis(200));
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut stream = watcher(cms.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let first: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "first"}})).expect("cm");
    cms.create(&PostParams::default(), &first)
        .await
        .expect("cm");
    let mut seen = Vec::new();
    while !seen.contains(&"first".to_string()) {
        let next = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
        seen.push(
            next.ok()
                .flatten()
                .and_then(Result::ok)
                .map(|c| c.name_any())
                .unwrap_or_default(),
        );
    }
    for n in ["a", "b"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": n}})).expect("cm");
        cms.create(&PostParams::default(), &cm).await.expect("cm");
    }
    sim.drop_watches(); // a and b are still in flight
    for n in ["a", "b"] {
        while !seen.contains(&n.to_string()) {
            let next = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
            let name = next
                .ok()
                .flatten()
                .and_then(Result::ok)
                .map(|c| c.name_any());
            seen.push(name.unwrap_or_else(|| panic!("{n} lost: {seen:?}")));
        }
    }
}

fn client_as(sim: &tfjob_sim::SimHandle, user_agent: &'static str) -> Client {
    let mut config = kube::Config::new(sim.url().parse().expect("url"));
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(user_agent),
    ));
    Client::try_from(config).expect("client")
}

fn named(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("cm")
}

fn stored_with_prefix(sim: &tfjob_sim::SimHandle, prefix: &str) -> usize {
    let rt = sim
        .store()
        .lookup("", "v1", "configmaps")
        .expect("configmaps");
    sim.store()
        .list(&rt, None, |o| {
            o["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .0
        .len()
}

#[tokio::test]
async fn a_client_frozen_after_its_nth_write_gets_no_more_answers_until_unfrozen() {
    let (sim, _client) = start_with(Options {
        kubelet: false,
        ..Default::default()
    })
    .await;
    let a: Api<ConfigMap> = Api::default_namespaced(client_as(&sim, "tfjob-operator-a/0.1"));
    let b: Api<ConfigMap> = Api::default_namespaced(client_as(&sim, "tfjob-operator-b/0.1"));
    let pp = PostParams::default();
    let from = sim.store().resource_version().to_string();
    let a_watch = tokio::spawn(record(
        a.clone(),
        from,
        Instant::now() + Duration::from_secs(6),
    ));
    tokio::time::sleep(Duration::from_millis(100)).await;

    sim.freeze_after_writes("operator-a", 2);
    // Four writes at once: exactly two take effect and are answered, two hang.
    let writes = (0..4).map(|i| {
        let (a, pp) = (a.clone(), pp.clone());
        async move {
            tokio::time::timeout(
                Duration::from_secs(2),
                a.create(&pp, &named(&format!("a{i}"))),
            )
            .await
        }
    });
    let results = futures::future::join_all(writes).await;
    let answered = results.iter().filter(|r| matches!(r, Ok(Ok(_)))).count();
    let hung = results.iter().filter(|r| r.is_err()).count();
    assert_eq!((answered, hung), (2, 2), "{results:?}");
    assert_eq!(stored_with_prefix(&sim, "a"), 2);
    assert_eq!(sim.writes_by("operator-a"), 2);
    // Reads hang too; other clients are served.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), a.get("a0"))
            .await
            .is_err()
    );
    b.create(&pp, &named("b1")).await.expect("b is served");
    assert_eq!(
        (sim.writes_by("operator-b"), sim.writes_by("tfjob-operator")),
        (1, 3)
    );

    sim.unfreeze();
    a.get("b1").await.expect("a is served again");
    a.create(&pp, &named("a-after"))
        .await
        .expect("a writes again");
    // The requests held during the freeze were never carried out.
    assert_eq!(stored_with_prefix(&sim, "a"), 3);
    // a's watch delivered nothing written while a was frozen, and ended at the unfreeze.
    let seen = a_watch.await.expect("a's watch");
    assert!(
        !seen.iter().any(|e| e.2 == "b1" || e.2 == "a-after"),
        "{seen:?}"
    );
}
