//! Built without the `kubectl` feature, kubectl's requests get a Status naming what is left
//! out (406 for Tables, 415 for strategic merge and apply patches, 404 for the OpenAPI
//! documents), and every other request is served as before.
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// One request with the given extra header lines; (status code, body as JSON).
async fn send(url: &str, method: &str, path: &str, headers: &str, body: &str) -> (u16, Value) {
    let mut s = tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
        .await
        .expect("connect");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: sim\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf);
    let (head, rest) = text.split_once("\r\n\r\n").expect("headers");
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok());
    let body = dechunk(head, rest.as_bytes());
    (
        status.expect("status code"),
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}")),
    )
}

fn assert_names_the_feature(status: &Value, what: &str) {
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(what) && message.contains("cargo feature `kubectl`"),
        "{status}"
    );
}

#[tokio::test]
async fn kubectl_requests_get_a_status_naming_the_missing_feature() {
    let (sim, client) = start().await;
    let url = sim.url();
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let cm = serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "v"}}));
    cms.create(&PostParams::default(), &cm.expect("cm"))
        .await
        .expect("create");

    let table = "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json\r\n";
    for path in [
        CMS.to_string(),
        format!("{CMS}/c"),
        format!("{CMS}?watch=true"),
    ] {
        let (code, status) = send(&url, "GET", &path, table, "").await;
        assert_eq!(
            (code, status["reason"].as_str()),
            (406, Some("NotAcceptable")),
            "{path}"
        );
        assert_names_the_feature(&status, "Table output");
    }
    for path in ["/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1"] {
        let (code, status) = send(&url, "GET", path, "", "").await;
        assert_eq!(code, 404, "{path}");
        assert_names_the_feature(&status, "OpenAPI");
    }
    let patches = [
        (
            "application/strategic-merge-patch+json",
            "strategic merge patch",
        ),
        ("application/apply-patch+yaml", "server-side apply"),
    ];
    for (media, what) in patches {
        let headers = format!("Content-Type: {media}\r\n");
        let path = format!("{CMS}/c?fieldManager=t");
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "w"}});
        let (code, status) = send(&url, "PATCH", &path, &headers, &body.to_string()).await;
        assert_eq!(code, 415, "{media}");
        assert_names_the_feature(&status, what);
    }
    // An unknown patch type lists only the two served.
    let headers = "Content-Type: application/x-unknown\r\n";
    let (code, status) = send(&url, "PATCH", &format!("{CMS}/c"), headers, "{}").await;
    assert_eq!(code, 415);
    assert!(
        status["message"].as_str().unwrap_or_default().ends_with(
            "accepted media types include: application/json-patch+json, application/merge-patch+json"
        ),
        "{status}"
    );

    // The rest is served: plain reads, merge patches, discovery.
    let patched = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "merged"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(patched.data.unwrap_or_default()["k"], "merged");
    let (code, list) = send(&url, "GET", CMS, "Accept: application/json\r\n", "").await;
    assert_eq!((code, list["kind"].as_str()), (200, Some("ConfigMapList")));
    let (code, v1) = send(&url, "GET", "/api/v1", "", "").await;
    assert_eq!((code, v1["kind"].as_str()), (200, Some("APIResourceList")));
}
