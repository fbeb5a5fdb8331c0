//! `fieldValidation` on create, update and patch, as the real handlers answer it: Strict refuses
//! unknown fields (400 for bodies, 422 for patches), Warn (also the default) answers with one
//! `Warning` header per field and drops them, Ignore drops them silently.

use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};

const WIDGETS: &str = "/apis/sim.test/v1/namespaces/default/widgets";
const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

async fn send(
    sim: &tfjob_sim::SimHandle,
    method: &str,
    path: &str,
    ct: &str,
    body: &Value,
) -> RawResponse {
    raw(
        &sim.url(),
        method,
        path,
        ct,
        &body.to_string(),
        Duration::from_secs(5),
    )
    .await
}

fn warnings(r: &RawResponse) -> Vec<String> {
    r.headers
        .lines()
        .filter_map(|l| {
            l.strip_prefix("warning: ")
                .or_else(|| l.strip_prefix("Warning: "))
        })
        .map(String::from)
        .collect()
}

fn stored_spec(sim: &tfjob_sim::SimHandle, name: &str) -> Value {
    sim.object("sim.test/v1", "widgets", "default", name)
        .map(|o| o["spec"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn create_and_update_of_custom_resources_follow_the_directive() {
    let (sim, client) = start().await;
    widgets(&client, "default").await;
    let body = |name: &str| {
        json!({"apiVersion": "sim.test/v1", "kind": "Widget",
        "metadata": {"name": name, "labelz": {"a": "b"}}, "spec": {"size": 1, "sizee": 2}})
    };
    let strict_message = "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"metadata.labelz\", unknown field \"spec.sizee\"";
    let warned = vec![
        r#"299 - "unknown field \"metadata.labelz\"""#.to_string(),
        r#"299 - "unknown field \"spec.sizee\"""#.to_string(),
    ];
    // (query, status, warnings, stored)
    let cases = [
        ("?fieldValidation=Strict", 400, vec![], false),
        ("?fieldValidation=Warn", 201, warned.clone(), true),
        ("", 201, warned.clone(), true),
        ("?fieldValidation=Ignore", 201, vec![], true),
    ];
    for (i, (query, status, want_warnings, stored)) in cases.into_iter().enumerate() {
        let name = format!("w{i}");
        let r = send(
            &sim,
            "POST",
            &format!("{WIDGETS}{query}"),
            JSON,
            &body(&name),
        )
        .await;
        assert_eq!(r.status, status, "{query}: {}", r.body);
        assert_eq!(warnings(&r), want_warnings, "{query}");
        if status == 400 {
            let s = r.json();
            assert_eq!(
                (s["reason"].as_str(), s["message"].as_str()),
                (Some("BadRequest"), Some(strict_message))
            );
        }
        if stored {
            assert_eq!(
                stored_spec(&sim, &name),
                json!({"size": 1}),
                "{query}: pruned"
            );
        } else {
            assert!(
                sim.object("sim.test/v1", "widgets", "default", &name)
                    .is_none()
            );
        }
    }
    // PUT: the same answers (UpdateOptions).
    let mut current = send(&sim, "GET", &format!("{WIDGETS}/w1"), JSON, &Value::Null)
        .await
        .json();
    current["spec"]["colour"] = json!("red");
    let r = send(
        &sim,
        "PUT",
        &format!("{WIDGETS}/w1?fieldValidation=Strict"),
        JSON,
        &current,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.json()["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("strict decoding error: unknown field \"spec.colour\""))
    );
    let r = send(&sim, "PUT", &format!("{WIDGETS}/w1"), JSON, &current).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(warnings(&r), [r#"299 - "unknown field \"spec.colour\"""#]);
    // An unknown directive is refused before anything else.
    let r = send(
        &sim,
        "POST",
        &format!("{WIDGETS}?fieldValidation=strict"),
        JSON,
        &body("x"),
    )
    .await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
}

#[tokio::test]
async fn patches_are_checked_after_they_apply() {
    let (sim, client) = start().await;
    widgets(&client, "default").await;
    let w = json!({"apiVersion": "sim.test/v1", "kind": "Widget", "metadata": {"name": "p"}, "spec": {"size": 1}});
    send(&sim, "POST", WIDGETS, JSON, &w).await;
    let path = format!("{WIDGETS}/p");
    let patch = json!({"spec": {"sizee": 3, "size": 2}});
    let r = send(
        &sim,
        "PATCH",
        &format!("{path}?fieldValidation=Strict"),
        MERGE,
        &patch,
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.body);
    let s = r.json();
    let message = s["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{message}"
    );
    assert!(
        message.ends_with("\": strict decoding error: unknown field \"spec.sizee\""),
        "{message}"
    );
    assert_eq!(s["details"]["causes"][0]["field"], "patch");
    assert_eq!(
        stored_spec(&sim, "p"),
        json!({"size": 1}),
        "nothing applied"
    );
    let r = send(&sim, "PATCH", &path, MERGE, &patch).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(warnings(&r), [r#"299 - "unknown field \"spec.sizee\"""#]);
    assert_eq!(stored_spec(&sim, "p"), json!({"size": 2}));
}

#[tokio::test]
async fn built_in_kinds_are_checked_at_their_known_fields() {
    let (sim, _client) = start().await;
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"metadata": {"name": "p"}, "spec": {"restartPolcy": "Never",
        "containers": [{"name": "c", "image": "i", "imagePullPolcy": "Always", "resources": {"any": {}}}]}});
    let r = send(
        &sim,
        "POST",
        &format!("{pods}?fieldValidation=Strict"),
        JSON,
        &pod,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.containers[0].imagePullPolcy\", unknown field \"spec.restartPolcy\""
    );
    let r = send(&sim, "POST", pods, JSON, &pod).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(warnings(&r).len(), 2);
    let stored = sim
        .object("v1", "pods", "default", "p")
        .unwrap_or(Value::Null);
    assert!(stored["spec"].get("restartPolcy").is_none());
    assert_eq!(
        stored["spec"]["containers"][0]["resources"],
        json!({"any": {}}),
        "deeper parts are not checked"
    );
}

/// Raw JSON with repeated keys, as only a hand-written body or a non-Go client sends them
/// (kubectl's YAML reader already refuses them).
async fn send_text(
    sim: &tfjob_sim::SimHandle,
    method: &str,
    path: &str,
    ct: &str,
    body: &str,
) -> RawResponse {
    raw(&sim.url(), method, path, ct, body, Duration::from_secs(5)).await
}

#[tokio::test]
async fn duplicate_fields_are_reported_before_unknown_ones_as_the_real_decoder_does() {
    let (sim, client) = start().await;
    widgets(&client, "default").await;
    let body = |name: &str| {
        format!(
            r#"{{"apiVersion":"sim.test/v1","kind":"Widget","metadata":{{"name":"{name}","name":"{name}"}},"spec":{{"size":1,"size":2,"sizee":3}}}}"#
        )
    };
    // The words of a v1.34 API server (testcluster), for a TFJob body of the same shape.
    let strict = send_text(
        &sim,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Strict"),
        JSON,
        &body("d0"),
    )
    .await;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert_eq!(
        strict.json()["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: duplicate field \"metadata.name\", duplicate field \"spec.size\", unknown field \"spec.sizee\""
    );
    let warn = send_text(&sim, "POST", WIDGETS, JSON, &body("d1")).await;
    assert_eq!(warn.status, 201, "{}", warn.body);
    assert_eq!(
        warnings(&warn),
        [
            r#"299 - "duplicate field \"metadata.name\"""#,
            r#"299 - "duplicate field \"spec.size\"""#,
            r#"299 - "unknown field \"spec.sizee\"""#,
        ]
    );
    assert_eq!(
        stored_spec(&sim, "d1"),
        json!({"size": 2}),
        "the last value is kept"
    );
    let ignore = send_text(
        &sim,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Ignore"),
        JSON,
        &body("d2"),
    )
    .await;
    assert_eq!((ignore.status, warnings(&ignore).len()), (201, 0));

    // A merge patch repeating a key: reported at the object's path, then the unknown field.
    let patch = r#"{"spec":{"size":4,"size":5,"colour":"red"}}"#;
    let r = send_text(
        &sim,
        "PATCH",
        &format!("{WIDGETS}/d1?fieldValidation=Strict"),
        MERGE,
        patch,
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.body);
    let message = r.json()["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.ends_with(
            "strict decoding error: duplicate field \"spec.size\", unknown field \"spec.colour\""
        ),
        "{message}"
    );
    let r = send_text(&sim, "PATCH", &format!("{WIDGETS}/d1"), MERGE, patch).await;
    assert_eq!(
        warnings(&r),
        [
            r#"299 - "duplicate field \"spec.size\"""#,
            r#"299 - "unknown field \"spec.colour\"""#
        ]
    );
    assert_eq!(stored_spec(&sim, "d1"), json!({"size": 5}));
}
