//! Watch semantics: replay from a resourceVersion, 410 as an ERROR event, bookmarks, streaming
//! initial events, timeouts, selector transitions, dropped watches with kube-runtime's watcher.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tfjob_sim::Options;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("cm")
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn watch_from_a_resource_version_replays_exactly_the_later_events() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let a = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("a");
    let from = a.resource_version().expect("rv");
    cms.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .expect("b");
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .expect("patch");
    cms.delete("b", &Default::default()).await.expect("delete");
    let path = format!("{CMS}?watch=true&resourceVersion={from}&timeoutSeconds=1");
    let r = raw_get(&sim.url(), &path).await;
    let evs = watch_events(&r.body);
    let got: Vec<(String, String)> = evs
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").into(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .into(),
            )
        })
        .collect();
    let want = [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
        .map(|(t, n)| (t.to_string(), n.to_string()));
    assert_eq!(got, want);
    let rvs: Vec<u64> = evs
        .iter()
        .map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or("0")
                .parse()
                .unwrap_or(0)
        })
        .collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");
}

#[tokio::test]
async fn too_old_resource_version_is_an_error_event_with_410() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let a = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("a");
    cms.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .expect("b");
    sim.compact_history();
    let path = format!(
        "{CMS}?watch=true&resourceVersion={}",
        a.resource_version().expect("rv")
    );
    let r = raw_get(&sim.url(), &path).await;
    assert_eq!(
        r.status, 200,
        "the HTTP answer is 200, the error is in the stream"
    );
    let evs = watch_events(&r.body);
    assert_eq!(evs.len(), 1, "{evs:?}");
    assert_eq!(evs[0]["type"], "ERROR");
    assert_eq!(
        (
            evs[0]["object"]["code"].clone(),
            evs[0]["object"]["reason"].clone()
        ),
        (json!(410), json!("Expired"))
    );
}

#[tokio::test]
async fn bookmarks_and_streamed_initial_events() {
    let opts = Options {
        bookmark_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let (sim, client) = start_with(opts).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    for n in ["a", "b"] {
        cms.create(&PostParams::default(), &cm(n, json!({})))
            .await
            .expect("create");
    }
    let path = format!(
        "{CMS}?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
    );
    let r = raw_get(&sim.url(), &path).await;
    let evs = watch_events(&r.body);
    let types: Vec<&str> = evs
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(&types[..3], ["ADDED", "ADDED", "BOOKMARK"], "{types:?}");
    assert_eq!(
        evs[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert!(
        types[3..].iter().filter(|t| **t == "BOOKMARK").count() >= 3,
        "periodic bookmarks: {types:?}"
    );
    let last_rv = evs
        .last()
        .map(|e| e["object"]["metadata"]["resourceVersion"].clone());
    assert_eq!(
        last_rv,
        Some(json!(sim.store().resource_version().to_string()))
    );
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream() {
    let (sim, _client) = start().await;
    let started = std::time::Instant::now();
    let r = raw(
        &sim.url(),
        "GET",
        &format!("{CMS}?watch=1&timeoutSeconds=1"),
        "application/json",
        "",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(r.status, 200);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[tokio::test]
async fn selectors_turn_modifications_into_added_and_deleted() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let base = cms
        .create(&PostParams::default(), &cm("other", json!({})))
        .await
        .expect("create");
    cms.create(&PostParams::default(), &cm("s", json!({})))
        .await
        .expect("create");
    let pp = PatchParams::default();
    cms.patch(
        "s",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": "x"}}})),
    )
    .await
    .expect("label on");
    cms.patch("other", &pp, &Patch::Merge(json!({"data": {"a": "b"}})))
        .await
        .expect("unrelated");
    cms.patch(
        "s",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": null}}})),
    )
    .await
    .expect("label off");
    let path = format!(
        "{CMS}?watch=true&labelSelector=app%3Dx&resourceVersion={}&timeoutSeconds=1",
        base.resource_version().expect("rv")
    );
    let evs = watch_events(&raw_get(&sim.url(), &path).await.body);
    let types: Vec<&str> = evs
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types, ["ADDED", "DELETED"]);
    let path = format!(
        "{CMS}?watch=true&fieldSelector=metadata.name%3Dother&resourceVersion={}&timeoutSeconds=1",
        base.resource_version().expect("rv")
    );
    let evs = watch_events(&raw_get(&sim.url(), &path).await.body);
    let names: Vec<&str> = evs
        .iter()
        .map(|e| e["object"]["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["other"]);
}

/// Each line names its event type before its object, as the API server writes it: a client
/// that reads the type first (kube's) then decodes the object straight, without buffering it.
#[tokio::test]
async fn a_watch_line_gives_its_type_before_its_object() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &cm("order", json!({})))
        .await
        .expect("create");
    let body = raw_get(&sim.url(), &format!("{CMS}?watch=true&timeoutSeconds=1"))
        .await
        .body;
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "no event in {body:?}");
    for line in lines {
        assert!(line.starts_with(r#"{"type":"#), "{line}");
    }
}

/// The next object, skipping (and logging) the errors the watcher reports before it recovers.
async fn next(
    s: &mut futures::stream::BoxStream<'static, Result<ConfigMap, watcher::Error>>,
) -> Option<ConfigMap> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), s.next())
            .await
            .expect("event in time")
        {
            Some(Ok(c)) => return Some(c),
            Some(Err(e)) => eprintln!("watcher error (it retries): {e}"),
            None => return None,
        }
    }
}

#[tokio::test]
async fn kube_watcher_survives_dropped_watches_restarts_and_compaction() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut stream = watcher(cms.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let mut seen: Vec<String> = Vec::new();
    // Wait until the watch itself delivers (w1 is created after the initial list was seen).
    cms.create(&PostParams::default(), &cm("w0", json!({})))
        .await
        .expect("w0");
    seen.push(
        next(&mut stream)
            .await
            .map(|c| c.name_any())
            .unwrap_or_default(),
    );
    cms.create(&PostParams::default(), &cm("w1", json!({})))
        .await
        .expect("w1");
    while !seen.contains(&"w1".to_string()) {
        seen.push(
            next(&mut stream)
                .await
                .map(|c| c.name_any())
                .unwrap_or_default(),
        );
    }
    // Drop the watch and keep re-watches failing while w2 is written and history compacted:
    // the re-watch from the old resourceVersion then gets 410 and the watcher re-lists.
    sim.set_fault(tfjob_sim::FaultRule::error(
        Some("watch"),
        Some("configmaps"),
        500,
        1.0,
    ));
    sim.restart();
    tokio::time::sleep(Duration::from_millis(200)).await;
    cms.create(&PostParams::default(), &cm("w2", json!({})))
        .await
        .expect("w2");
    sim.compact_history();
    let lists_before = sim.requests().count(Some("list"), Some("configmaps"));
    sim.clear_faults();
    while !seen.contains(&"w2".to_string()) {
        seen.push(
            next(&mut stream)
                .await
                .map(|c| c.name_any())
                .unwrap_or_default(),
        );
    }
    let lists = sim.requests().count(Some("list"), Some("configmaps"));
    assert!(
        lists > lists_before,
        "the 410 after compaction made the watcher re-list"
    );
    // Still live after all that.
    cms.create(&PostParams::default(), &cm("w3", json!({})))
        .await
        .expect("w3");
    while !seen.contains(&"w3".to_string()) {
        seen.push(
            next(&mut stream)
                .await
                .map(|c| c.name_any())
                .unwrap_or_default(),
        );
    }
}

#[tokio::test]
async fn kube_watcher_with_streaming_lists_sees_existing_and_new_objects() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(&PostParams::default(), &cm("before", json!({})))
        .await
        .expect("before");
    let config = watcher::Config::default().streaming_lists();
    let mut stream = watcher(cms.clone(), config).applied_objects().boxed();
    let mut seen: Vec<String> = Vec::new();
    while !seen.contains(&"before".to_string()) {
        seen.push(
            next(&mut stream)
                .await
                .map(|c| c.name_any())
                .unwrap_or_default(),
        );
    }
    cms.create(&PostParams::default(), &cm("after", json!({})))
        .await
        .expect("after");
    while !seen.contains(&"after".to_string()) {
        seen.push(
            next(&mut stream)
                .await
                .map(|c| c.name_any())
                .unwrap_or_default(),
        );
    }
}
