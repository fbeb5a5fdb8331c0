//! kubectl's requests through kube-rs and raw HTTP: strategic merge patch and server-side apply
//! (with managed fields), and Table watches.
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn strategic_merge_on_custom_resources_is_415_and_apply_needs_a_field_manager() {
    let (_sim, client) = start().await;
    let ws = widgets(&client, "default").await;
    ws.create(&PostParams::default(), &widget("sm", 1))
        .await
        .expect("create");
    let err = api_error(
        ws.patch(
            "sm",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 2}})),
        )
        .await
        .expect_err("415"),
    );
    assert_eq!(
        (err.code, err.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
    let applied = json!({"apiVersion": "sim.test/v1", "kind": "Widget", "metadata": {"name": "sm"}, "spec": {"note": "hi"}});
    let err = api_error(
        ws.patch("sm", &PatchParams::default(), &Patch::Apply(&applied))
            .await
            .expect_err("no manager"),
    );
    assert_eq!(err.code, 422);
    assert!(err.message.contains("fieldManager"), "{}", err.message);
    let w = ws
        .patch("sm", &PatchParams::apply("tester"), &Patch::Apply(&applied))
        .await
        .expect("apply");
    assert_eq!(w.data["spec"]["note"], "hi");
    assert!(
        w.managed_fields()
            .iter()
            .any(|m| m.manager.as_deref() == Some("tester"))
    );
    let created = ws.patch("fresh", &PatchParams::apply("tester"), &Patch::Apply(json!({
        "apiVersion": "sim.test/v1", "kind": "Widget", "metadata": {"name": "fresh"}, "spec": {"size": 3}
    }))).await.expect("apply creates");
    assert!(created.uid().is_some());
    let pods: Api<Pod> = Api::default_namespaced(client);
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "sp"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod");
    pods.patch(
        "sp",
        &PatchParams::default(),
        &Patch::Strategic(json!({"metadata": {"labels": {"a": "b"}}})),
    )
    .await
    .expect("strategic on a built-in kind");
}

#[tokio::test]
async fn table_watch_for_kubectl_get_watch() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "t"}})).expect("cm"),
    )
    .await
    .expect("create");
    let addr = sim.addr();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET {CMS}?watch=true&timeoutSeconds=1 HTTP/1.1\r\nHost: sim\r\nAccept: application/json;as=Table;v=v1;g=meta.k8s.io\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf);
    let split = text.find("\r\n\r\n").expect("headers");
    let evs = watch_events(&dechunk(&text[..split], &buf[split + 4..]));
    assert_eq!(evs[0]["object"]["kind"], "Table");
    assert_eq!(evs[0]["object"]["rows"][0]["cells"][0], "t");
}
