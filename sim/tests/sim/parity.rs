//! Behaviour first seen on a real kube-apiserver and matched here: port name validation of pods
//! and services, pod status transitions out of `terminated`, the events.k8s.io note limit,
//! `remainingItemCount` only without selectors, the DELETE answer of custom resources.

use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use tfjob_sim::Options;

async fn send(
    sim: &tfjob_sim::SimHandle,
    method: &str,
    path: &str,
    ct: &str,
    body: &Value,
) -> RawResponse {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    raw(&sim.url(), method, path, ct, &body, Duration::from_secs(5)).await
}

const JSON: &str = "application/json";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn pod(name: &str, policy: &str, port_name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"restartPolicy": policy, "containers": [
        {"name": "tensorflow", "image": "img", "ports": [{"name": port_name, "containerPort": 2222}]}]}})
}

#[tokio::test]
async fn port_names_are_validated_like_the_real_server() {
    let (sim, _client) = start_with(Options {
        kubelet: false,
        ..Default::default()
    })
    .await;
    let svcs = "/api/v1/namespaces/default/services";
    let svc =
        |name: &str, ports: Value| json!({"metadata": {"name": name}, "spec": {"ports": ports}});
    // (path, body, expected status, expected message)
    let cases = [
        (PODS, pod("ok", "Never", "tfjob-port"), 201, ""),
        (
            PODS,
            pod("bad", "Never", "customPort"),
            422,
            "Pod \"bad\" is invalid: spec.containers[0].ports[0].name: Invalid value: \"customPort\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        ),
        (
            PODS,
            pod("long", "Never", "a-port-name-too-long"),
            422,
            "Pod \"long\" is invalid: spec.containers[0].ports[0].name: Invalid value: \"a-port-name-too-long\": must be no more than 15 characters",
        ),
        (
            svcs,
            svc("ok", json!([{"name": "tfjob-port", "port": 2222}])),
            201,
            "",
        ),
        (
            svcs,
            svc("bad", json!([{"name": "tfjob_port", "port": 2222}])),
            422,
            "Service \"bad\" is invalid: spec.ports[0].name: Invalid value: \"tfjob_port\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        (
            svcs,
            svc("two", json!([{"name": "a", "port": 1}, {"port": 2}])),
            422,
            "Service \"two\" is invalid: spec.ports[1].name: Required value",
        ),
    ];
    for (path, body, status, message) in cases {
        let r = send(&sim, "POST", path, JSON, &body).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        if status == 422 {
            let s = r.json();
            assert_eq!(
                (s["reason"].as_str(), s["message"].as_str()),
                (Some("Invalid"), Some(message))
            );
            assert_eq!(
                s["details"]["causes"][0]["reason"]
                    .as_str()
                    .map(|r| r.starts_with("FieldValue")),
                Some(true)
            );
        }
    }
}

#[tokio::test]
async fn a_terminated_container_may_not_run_again_unless_its_policy_restarts_it() {
    let (sim, _client) = start_with(Options {
        kubelet: false,
        ..Default::default()
    })
    .await;
    let terminated = |code: i64| {
        json!({"containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 0,
        "image": "img", "imageID": "", "state": {"terminated": {"exitCode": code}}}]})
    };
    let running = json!({"containerStatuses": [{"name": "tensorflow", "ready": true, "restartCount": 1,
        "image": "img", "imageID": "", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]});
    // (restartPolicy, exit code, accepted)
    let cases = [
        ("Never", 0, false),
        ("Never", 2, false),
        ("OnFailure", 0, false),
        ("OnFailure", 2, true),
        ("Always", 0, true),
    ];
    for (i, (policy, code, accepted)) in cases.into_iter().enumerate() {
        let name = format!("p{i}");
        send(&sim, "POST", PODS, JSON, &pod(&name, policy, "x")).await;
        let status = format!("{PODS}/{name}/status");
        let merge = "application/merge-patch+json";
        let r = send(
            &sim,
            "PATCH",
            &status,
            merge,
            &json!({"status": terminated(code)}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let r = send(
            &sim,
            "PATCH",
            &status,
            merge,
            &json!({"status": running.clone()}),
        )
        .await;
        if accepted {
            assert_eq!(r.status, 200, "{policy} {code}: {}", r.body);
        } else {
            assert_eq!(r.status, 422, "{policy} {code}: {}", r.body);
            assert_eq!(
                r.json()["message"],
                format!(
                    "Pod \"{name}\" is invalid: status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"
                )
            );
        }
    }
}

#[tokio::test]
async fn an_events_v1_note_over_1024_bytes_is_refused() {
    let (sim, _client) = start().await;
    let path = "/apis/events.k8s.io/v1/namespaces/default/events";
    let event = |name: &str, note: String| {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name}, "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "sim-test", "reportingInstance": "sim-test-0", "action": "Poke",
        "reason": "Poked", "type": "Normal", "note": note,
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "default"}})
    };
    // (note length, accepted)
    for (len, accepted) in [(1024, true), (1025, false)] {
        let name = format!("e{len}");
        let r = send(&sim, "POST", path, JSON, &event(&name, "x".repeat(len))).await;
        if accepted {
            assert_eq!(r.status, 201, "{}", r.body);
        } else {
            assert_eq!(r.status, 422, "{}", r.body);
            assert_eq!(
                r.json()["message"],
                format!(
                    "Event \"{name}\" is invalid: message: Invalid value: \"\": can have at most 1024 characters"
                )
            );
        }
    }
}

#[tokio::test]
async fn remaining_item_count_only_without_selectors_and_custom_resources_delete_to_a_status() {
    let (sim, client) = start().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    for i in 0..5 {
        let body = json!({"metadata": {"name": format!("c{i}"), "labels": {"app": "x"}}});
        send(&sim, "POST", cms, JSON, &body).await;
    }
    // (query, remainingItemCount)
    let cases = [
        ("?limit=2", Some(3)),
        ("?limit=2&labelSelector=app%3Dx", None),
        ("?limit=2&fieldSelector=metadata.namespace%3Ddefault", None),
    ];
    for (query, remaining) in cases {
        let list = send(&sim, "GET", &format!("{cms}{query}"), JSON, &Value::Null)
            .await
            .json();
        assert!(list["metadata"]["continue"].is_string(), "{query}");
        assert_eq!(
            list["metadata"]["remainingItemCount"].as_i64(),
            remaining,
            "{query}"
        );
    }

    let ws = widgets(&client, "default").await;
    let w = ws
        .create(&kube::api::PostParams::default(), &widget("w", 1))
        .await
        .expect("widget");
    let uid = w.metadata.uid.clone().unwrap_or_default();
    let r = send(
        &sim,
        "DELETE",
        "/apis/sim.test/v1/namespaces/default/widgets/w",
        JSON,
        &Value::Null,
    )
    .await;
    assert_eq!(r.status, 200);
    let want = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": "w", "group": "sim.test", "kind": "widgets", "uid": uid}});
    assert_eq!(r.json(), want);
}
