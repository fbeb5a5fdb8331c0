//! Fault injection for the operator's fault suite: writes stored but answered with an error,
//! delayed watch delivery (reordering across kinds, never within a stream), and clients frozen
//! after their N-th write.
mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use tfjob_sim::FaultRule;

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
