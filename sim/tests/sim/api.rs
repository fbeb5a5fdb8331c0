//! API semantics of the simulator, checked through kube-rs and raw HTTP: resourceVersions,
//! metadata, generation, optimistic concurrency, status isolation, finalizers, deletion
//! options, garbage collection, patches, errors, CRDs, namespaces, events, drained bodies.

use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).expect("cm")
}

fn owned_cm(name: &str, owner: &ConfigMap) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner.name_any(), "uid": owner.uid().expect("uid")
    }]}})).expect("cm")
}

fn rv(o: &impl ResourceExt) -> u64 {
    o.resource_version()
        .expect("rv")
        .parse()
        .expect("numeric rv")
}

async fn gone(api: &Api<ConfigMap>, name: &str) -> bool {
    matches!(api.get_opt(name).await, Ok(None))
}

#[tokio::test]
async fn one_resource_version_across_kinds_and_list_rv_is_current() {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let ws = widgets(&client, "default").await;
    let a = cms
        .create(&PostParams::default(), &cm("a"))
        .await
        .expect("cm");
    let w = ws
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .expect("widget");
    let b = cms
        .create(&PostParams::default(), &cm("b"))
        .await
        .expect("cm");
    assert!(
        rv(&a) < rv(&w) && rv(&w) < rv(&b),
        "{} {} {}",
        rv(&a),
        rv(&w),
        rv(&b)
    );
    let list = ws.list(&ListParams::default()).await.expect("list");
    let list_rv: u64 = list
        .metadata
        .resource_version
        .expect("list rv")
        .parse()
        .expect("num");
    assert_eq!(
        list_rv,
        rv(&b),
        "a list's RV is the global one, even if the last write was another kind"
    );
    assert_eq!(list_rv, sim.store().resource_version());
}

#[tokio::test]
async fn create_sets_uid_timestamp_and_generates_names() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut c = cm("");
    c.metadata.name = None;
    c.metadata.generate_name = Some("gen-".into());
    let a = cms
        .create(&PostParams::default(), &c)
        .await
        .expect("create a");
    let b = cms
        .create(&PostParams::default(), &c)
        .await
        .expect("create b");
    assert!(
        a.name_any().starts_with("gen-") && a.name_any().len() == 9,
        "{}",
        a.name_any()
    );
    assert_ne!(a.name_any(), b.name_any());
    assert_ne!(a.uid(), b.uid());
    assert!(a.metadata.creation_timestamp.is_some());
    assert_eq!(a.namespace().as_deref(), Some("default"));
    let err = api_error(
        cms.create(&PostParams::default(), &cm(""))
            .await
            .expect_err("no name"),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
}

#[tokio::test]
async fn generation_follows_spec_changes_and_deletion() {
    let (_sim, client) = start().await;
    let ws = widgets(&client, "default").await;
    let w = ws
        .create(&PostParams::default(), &widget("g", 1))
        .await
        .expect("create");
    assert_eq!(w.metadata.generation, Some(1));
    let pp = PatchParams::default();
    let w = ws
        .patch(
            "g",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .expect("label");
    assert_eq!(
        w.metadata.generation,
        Some(1),
        "metadata changes keep the generation"
    );
    let w = ws
        .patch_status("g", &pp, &Patch::Merge(json!({"status": {"state": "x"}})))
        .await
        .expect("status");
    assert_eq!(
        w.metadata.generation,
        Some(1),
        "status changes keep the generation"
    );
    let w = ws
        .patch("g", &pp, &Patch::Merge(json!({"spec": {"size": 2}})))
        .await
        .expect("spec");
    assert_eq!(w.metadata.generation, Some(2));
    let w = ws
        .patch(
            "g",
            &pp,
            &Patch::Merge(json!({"metadata": {"finalizers": ["sim.test/hold"]}})),
        )
        .await
        .expect("fin");
    assert_eq!(w.metadata.generation, Some(2));
    ws.delete("g", &DeleteParams::default())
        .await
        .expect("delete");
    let w = ws.get("g").await.expect("still there");
    assert!(w.metadata.deletion_timestamp.is_some());
    assert_eq!(
        w.metadata.generation,
        Some(3),
        "deletion start bumps the generation"
    );
}

#[tokio::test]
async fn stale_put_and_duplicate_create_conflict() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let first = cms
        .create(&PostParams::default(), &cm("c"))
        .await
        .expect("create");
    let err = api_error(
        cms.create(&PostParams::default(), &cm("c"))
            .await
            .expect_err("dup"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    let mut newer = first.clone();
    newer.data = Some([("k".to_string(), "2".to_string())].into());
    cms.replace("c", &PostParams::default(), &newer)
        .await
        .expect("replace with current rv");
    let err = api_error(
        cms.replace("c", &PostParams::default(), &first)
            .await
            .expect_err("stale"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("the object has been modified"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn no_op_update_keeps_the_resource_version() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let c = cms
        .create(&PostParams::default(), &cm("n"))
        .await
        .expect("create");
    let same = cms
        .patch(
            "n",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .expect("patch");
    assert_eq!(c.resource_version(), same.resource_version());
}

#[tokio::test]
async fn status_subresource_is_isolated() {
    let (_sim, client) = start().await;
    let ws = widgets(&client, "default").await;
    let mut w = widget("s", 1);
    w.data["status"] = json!({"state": "forged"});
    let created = ws.create(&PostParams::default(), &w).await.expect("create");
    assert!(
        created.data.get("status").is_none(),
        "create drops .status of a CR with the status subresource"
    );
    let pp = PatchParams::default();
    let w = ws
        .patch(
            "s",
            &pp,
            &Patch::Merge(json!({"status": {"state": "main"}, "spec": {"size": 5}})),
        )
        .await
        .expect("main");
    assert!(
        w.data.get("status").is_none(),
        "writes to the object never change .status"
    );
    assert_eq!(w.data["spec"]["size"], 5);
    let w = ws
        .patch_status(
            "s",
            &pp,
            &Patch::Merge(json!({"status": {"state": "ok"}, "spec": {"size": 9}})),
        )
        .await
        .expect("status");
    assert_eq!(w.data["status"]["state"], "ok");
    assert_eq!(
        w.data["spec"]["size"], 5,
        "writes to /status change only .status"
    );
    let mut full = w.clone();
    full.data["status"]["state"] = json!("via-put");
    full.data["spec"]["size"] = json!(7);
    let w = ws
        .replace("s", &PostParams::default(), &full)
        .await
        .expect("put");
    assert_eq!(
        (
            w.data["status"]["state"].clone(),
            w.data["spec"]["size"].clone()
        ),
        (json!("ok"), json!(7))
    );
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut c = cm("f");
    c.metadata.finalizers = Some(vec!["sim.test/hold".into()]);
    cms.create(&PostParams::default(), &c)
        .await
        .expect("create");
    cms.delete("f", &DeleteParams::default())
        .await
        .expect("delete");
    let held = cms.get("f").await.expect("held by finalizer");
    assert!(held.metadata.deletion_timestamp.is_some());
    // The JSON-patch `test` of a missing path compares against null (kube-runtime relies on it).
    let patch: json_patch_value::Ops = vec![
        json!({"op": "test", "path": "/metadata/labels", "value": null}),
        json!({"op": "remove", "path": "/metadata/finalizers/0"}),
    ];
    let patch: json_patch::Patch = serde_json::from_value(json!(patch)).expect("patch");
    cms.patch("f", &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .expect("remove finalizer");
    assert!(
        gone(&cms, "f").await,
        "removing the last finalizer deletes the object"
    );
}

mod json_patch_value {
    pub type Ops = Vec<serde_json::Value>;
}

#[tokio::test]
async fn delete_preconditions_conflict() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let c = cms
        .create(&PostParams::default(), &cm("p"))
        .await
        .expect("create");
    let dp = |uid: Option<String>, rv: Option<String>| DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: rv,
        }),
        ..Default::default()
    };
    let err = api_error(
        cms.delete("p", &dp(Some("other".into()), None))
            .await
            .expect_err("uid"),
    );
    assert_eq!(err.code, 409);
    assert!(
        err.message.contains("Precondition failed: UID"),
        "{}",
        err.message
    );
    let err = api_error(
        cms.delete("p", &dp(None, Some("1".into())))
            .await
            .expect_err("rv"),
    );
    assert_eq!(err.code, 409);
    cms.delete("p", &dp(c.uid(), c.resource_version()))
        .await
        .expect("matching preconditions");
    assert!(gone(&cms, "p").await);
}

#[tokio::test]
async fn background_gc_follows_owner_uid_not_name() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("owner");
    cms.create(&PostParams::default(), &owned_cm("child", &owner))
        .await
        .expect("child");
    cms.delete("owner", &DeleteParams::default())
        .await
        .expect("delete owner");
    // Re-create the owner under the same name at once: the child belongs to the old uid.
    cms.create(&PostParams::default(), &cm("owner"))
        .await
        .expect("owner again");
    eventually(5, "child collected", || async {
        gone(&cms, "child").await.then_some(())
    })
    .await;
    assert!(cms.get_opt("owner").await.expect("get").is_some());
}

#[tokio::test]
async fn orphan_policy_keeps_dependents_and_strips_owner_refs() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let owner = cms
        .create(&PostParams::default(), &cm("o"))
        .await
        .expect("owner");
    cms.create(&PostParams::default(), &owned_cm("kid", &owner))
        .await
        .expect("child");
    cms.delete(
        "o",
        &DeleteParams {
            propagation_policy: Some(PropagationPolicy::Orphan),
            ..Default::default()
        },
    )
    .await
    .expect("delete");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kid = cms.get("kid").await.expect("child survives");
    assert!(kid.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let owner = cms
        .create(&PostParams::default(), &cm("fg"))
        .await
        .expect("owner");
    let mut kid = owned_cm("fg-kid", &owner);
    kid.metadata.finalizers = Some(vec!["sim.test/hold".into()]);
    cms.create(&PostParams::default(), &kid)
        .await
        .expect("child");
    cms.delete("fg", &DeleteParams::foreground())
        .await
        .expect("delete");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let o = cms.get("fg").await.expect("owner waits for its dependent");
    assert!(o.finalizers().iter().any(|f| f == "foregroundDeletion"));
    cms.patch(
        "fg-kid",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
    eventually(5, "owner gone", || async {
        gone(&cms, "fg").await.then_some(())
    })
    .await;
}

#[tokio::test]
async fn errors_are_status_objects_with_reason_and_code() {
    let (sim, _client) = start().await;
    let url = sim.url();
    let t = Duration::from_secs(5);
    let r = raw(
        &url,
        "GET",
        "/api/v1/namespaces/default/pods/nope",
        "application/json",
        "",
        t,
    )
    .await;
    let s = r.json();
    assert_eq!(
        (r.status, s["kind"].clone(), s["reason"].clone()),
        (404, json!("Status"), json!("NotFound"))
    );
    assert_eq!(s["message"], "pods \"nope\" not found");
    assert_eq!(s["details"], json!({"name": "nope", "kind": "pods"}));
    let r = raw(
        &url,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        "{not json",
        t,
    )
    .await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (400, json!("BadRequest"))
    );
    let body = json!({"metadata": {"name": "x", "namespace": "other"}}).to_string();
    let r = raw(
        &url,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        &body,
        t,
    )
    .await;
    assert_eq!(r.status, 400, "namespace mismatch: {}", r.body);
    let body = json!({"metadata": {"name": "Bad_Name"}}).to_string();
    let r = raw(
        &url,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        &body,
        t,
    )
    .await;
    let s = r.json();
    assert_eq!((r.status, s["reason"].clone()), (422, json!("Invalid")));
    assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
    let r = raw(
        &url,
        "GET",
        "/api/v1/namespaces/default/configmaps?labelSelector=a+in+(b",
        "application/json",
        "",
        t,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = raw(
        &url,
        "POST",
        "/api/v1/namespaces/missing/configmaps",
        "application/json",
        &json!({"metadata": {"name": "x"}}).to_string(),
        t,
    )
    .await;
    assert_eq!(
        (r.status, r.json()["message"].clone()),
        (404, json!("namespaces \"missing\" not found"))
    );
}

#[tokio::test]
async fn list_with_selectors_and_pages() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    for i in 0..7 {
        let mut c = cm(&format!("l{i}"));
        c.metadata.labels = Some(
            [(
                "parity".to_string(),
                if i % 2 == 0 { "even" } else { "odd" }.to_string(),
            )]
            .into(),
        );
        cms.create(&PostParams::default(), &c)
            .await
            .expect("create");
    }
    let even = cms
        .list(&ListParams::default().labels("parity=even"))
        .await
        .expect("list");
    assert_eq!(even.items.len(), 4);
    let named = cms
        .list(&ListParams::default().fields("metadata.name=l3"))
        .await
        .expect("list");
    assert_eq!(
        named.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(),
        ["l3"]
    );
    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(3);
    loop {
        let page = cms.list(&lp).await.expect("page");
        seen.extend(page.items.iter().map(|c| c.name_any()));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    assert_eq!(seen, (0..7).map(|i| format!("l{i}")).collect::<Vec<_>>());
    let all: Api<ConfigMap> = Api::all(client);
    assert_eq!(
        all.list(&ListParams::default().labels("parity"))
            .await
            .expect("all")
            .items
            .len(),
        7
    );
}

#[tokio::test]
async fn crd_registers_its_resource_in_discovery_and_is_established() {
    let (sim, client) = start().await;
    widgets(&client, "default").await;
    let t = Duration::from_secs(5);
    let r = raw(
        &sim.url(),
        "GET",
        "/apis/sim.test/v1",
        "application/json",
        "",
        t,
    )
    .await;
    let res = r.json()["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let w = res
        .iter()
        .find(|r| r["name"] == "widgets")
        .expect("widgets listed");
    assert_eq!(
        (
            w["kind"].clone(),
            w["namespaced"].clone(),
            w["shortNames"].clone()
        ),
        (json!("Widget"), json!(true), json!(["wd"]))
    );
    assert_eq!(w["categories"], json!(["all", "simtest"]));
    assert!(res.iter().any(|r| r["name"] == "widgets/status"));
    let crd = sim
        .object(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            "widgets.sim.test",
        )
        .expect("crd");
    let conds = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for t in ["Established", "NamesAccepted"] {
        assert!(
            conds
                .iter()
                .any(|c| c["type"] == t && c["status"] == "True"),
            "{t}: {conds:?}"
        );
    }
    let discovery = kube::Discovery::new(client.clone())
        .run()
        .await
        .expect("kube discovery");
    assert!(discovery.groups().any(|g| g.name() == "sim.test"));
    let mut bad = widget_crd();
    bad["metadata"]["name"] = json!("wrong.name");
    let r = raw(
        &sim.url(),
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        &bad.to_string(),
        t,
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.body);
}

#[tokio::test]
async fn non_structural_crd_schema_is_rejected() {
    let (sim, _client) = start().await;
    let mut crd = widget_crd();
    // Not structural: a property without a type.
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
        json!({"properties": {"x": {}}});
    let r = raw(
        &sim.url(),
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        &crd.to_string(),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (422, json!("Invalid")),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn deleting_a_crd_or_a_namespace_deletes_what_it_holds() {
    let (sim, client) = start().await;
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "tmp"}})).expect("ns"),
    )
    .await
    .expect("ns");
    let ws = widgets(&client, "tmp").await;
    ws.create(&PostParams::default(), &widget("w1", 1))
        .await
        .expect("w1");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "tmp");
    cms.create(&PostParams::default(), &cm("c1"))
        .await
        .expect("c1");
    nss.delete("tmp", &DeleteParams::default())
        .await
        .expect("delete ns");
    eventually(5, "namespace gone", || async {
        matches!(nss.get_opt("tmp").await, Ok(None)).then_some(())
    })
    .await;
    assert!(sim.object("v1", "configmaps", "tmp", "c1").is_none());
    assert!(sim.object("sim.test/v1", "widgets", "tmp", "w1").is_none());
    let ws = widgets(&client, "default").await;
    ws.create(&PostParams::default(), &widget("w2", 1))
        .await
        .expect("w2");
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> = Api::all(client);
    crds.delete("widgets.sim.test", &DeleteParams::default())
        .await
        .expect("delete crd");
    eventually(5, "crd gone", || async {
        matches!(crds.get_opt("widgets.sim.test").await, Ok(None)).then_some(())
    })
    .await;
    assert!(
        sim.store().lookup("sim.test", "v1", "widgets").is_none(),
        "resource no longer served"
    );
}

#[tokio::test]
async fn recorded_events_show_as_core_events_of_their_object() {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let c = cms
        .create(&PostParams::default(), &cm("ev"))
        .await
        .expect("cm");
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "sim-test".into(),
            instance: None,
        },
    );
    let ev = Event {
        type_: EventType::Normal,
        reason: "Poked".into(),
        note: Some("poked it".into()),
        action: "Poke".into(),
        secondary: None,
    };
    recorder
        .publish(&ev, &c.object_ref(&()))
        .await
        .expect("publish");
    recorder
        .publish(&ev, &c.object_ref(&()))
        .await
        .expect("publish again (series patch)");
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(client);
    let fields = format!(
        "involvedObject.name=ev,involvedObject.kind=ConfigMap,involvedObject.uid={}",
        c.uid().expect("uid")
    );
    let list = core
        .list(&ListParams::default().fields(&fields))
        .await
        .expect("list");
    assert_eq!(list.items.len(), 1, "{list:?}");
    let e = &list.items[0];
    assert_eq!(
        (e.reason.as_deref(), e.message.as_deref()),
        (Some("Poked"), Some("poked it"))
    );
    assert_eq!(e.reporting_component.as_deref(), Some("sim-test"));
    assert_eq!(e.series.as_ref().and_then(|s| s.count), Some(2));
}

#[tokio::test]
async fn request_bodies_are_drained_on_keep_alive_connections() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(&PostParams::default(), &cm("d"))
        .await
        .expect("create");
    let mut s = tokio::net::TcpStream::connect(sim.addr())
        .await
        .expect("connect");
    // A DELETE of a missing object, with a body, then a GET on the same connection.
    let body =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
            .to_string();
    s.write_all(&request_bytes(
        "DELETE",
        "/api/v1/namespaces/default/configmaps/missing",
        "application/json",
        &body,
        false,
    ))
    .await
    .expect("w1");
    s.write_all(&request_bytes(
        "GET",
        "/api/v1/namespaces/default/configmaps/d",
        "application/json",
        "",
        true,
    ))
    .await
    .expect("w2");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf);
    let statuses: Vec<&str> = text
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| &text[i..i + 12])
        .collect();
    assert_eq!(statuses, ["HTTP/1.1 404", "HTTP/1.1 200"], "{text}");
    assert!(text.contains("\"name\":\"d\""));
}

#[tokio::test]
async fn kube_client_sees_the_same_store() {
    let (sim, client) = start().await;
    let _: Client = client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    cms.create(&PostParams::default(), &cm("x"))
        .await
        .expect("create in kube-system");
    assert!(sim.object("v1", "configmaps", "kube-system", "x").is_some());
}

#[tokio::test]
async fn leases_can_be_created_renewed_and_conflict_when_stale() {
    use k8s_openapi::api::coordination::v1::Lease;
    let (_sim, client) = start().await;
    let leases: Api<Lease> = Api::namespaced(client, "kube-system");
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                 "renewTime": "2024-01-01T00:00:00.000000Z"}
    }))
    .expect("lease");
    let first = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("create");
    let mut renewed = first.clone();
    renewed.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    let renewed = leases
        .replace("leader", &PostParams::default(), &renewed)
        .await
        .expect("renew");
    assert_eq!(
        renewed.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("b")
    );
    let err = api_error(
        leases
            .replace("leader", &PostParams::default(), &first)
            .await
            .expect_err("stale"),
    );
    assert_eq!(err.code, 409);
}
