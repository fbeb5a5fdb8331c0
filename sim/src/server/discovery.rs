//! Discovery documents (`/version`, `/api`, `/apis`, resource lists), a minimal OpenAPI v3
//! that tells kubectl the server validates fields itself, and an empty OpenAPI v2 in the media
//! type the client asked for (pure: built from the registry).
use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::store::{Registry, ResourceType};

pub fn version() -> Value {
    json!({
        "major": "1", "minor": "34", "gitVersion": "v1.34.0-tfjob-sim", "gitCommit": "0000000",
        "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24",
        "compiler": "gc", "platform": "linux/amd64",
    })
}

pub fn api_versions(addr: &str) -> Value {
    json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}],
    })
}

/// Group name → versions served (preferred first), non-core groups only.
fn groups(reg: &Registry) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in reg.all().filter(|t| !t.group.is_empty()) {
        let vs = out.entry(t.group.clone()).or_default();
        for v in &t.versions {
            if !vs.contains(v) {
                vs.push(v.clone());
            }
        }
    }
    out
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

pub fn api_group_list(reg: &Registry) -> Value {
    let gs: Vec<Value> = groups(reg)
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

pub fn api_group(reg: &Registry, group: &str) -> Option<Value> {
    let gs = groups(reg);
    let vs = gs.get(group)?;
    let mut g = group_json(group, vs);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

fn served<'a>(
    reg: &'a Registry,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'a ResourceType> {
    reg.all()
        .filter(move |t| t.group == group && t.versions.iter().any(|v| v == version))
}

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// APIResourceList for `/api/v1` or `/apis/<group>/<version>` (None if nothing is served).
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for t in served(reg, group, version) {
        let mut r = json!({
            "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind,
            "verbs": VERBS, "storageVersionHash": "",
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        for sub in &t.subresources {
            let (kind, verbs) = match sub.as_str() {
                "status" => (t.kind.as_str(), vec!["get", "patch", "update"]),
                "log" => ("Pod", vec!["get"]),
                "eviction" => ("Eviction", vec!["create"]),
                _ => (t.kind.as_str(), vec!["update"]),
            };
            resources.push(json!({
                "name": format!("{}/{sub}", t.plural), "singularName": "", "namespaced": t.namespaced,
                "kind": kind, "verbs": verbs,
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// Content type of protobuf OpenAPI v2 answers. Clients ask for the deprecated
/// `...spec.v2@v1.0+protobuf`, but kube-openapi's handler always answers with this name: `@` is
/// not a token character, and Go's `mime.ParseMediaType` in client-go refuses it ("mime:
/// unexpected content after media subtype").
pub const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`, negotiated like kube-openapi's `RegisterOpenAPIVersionedService`: the Accept
/// clauses by preference (q), the first one matching JSON or either protobuf name wins; None
/// = 406 Not Acceptable. The document is empty either way (no schemas are served): an empty
/// protobuf message, or a JSON swagger document without paths.
pub fn openapi_v2(accept: &str) -> Option<(&'static str, Vec<u8>)> {
    let accept = if accept.trim().is_empty() {
        "*/*"
    } else {
        accept
    };
    let mut clauses: Vec<(f64, usize, String)> = accept
        .split(',')
        .enumerate()
        .map(|(i, c)| {
            let mut parts = c.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            (q, i, media)
        })
        .filter(|(q, _, _)| *q > 0.0)
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let json_doc = || {
        let doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": {}});
        (
            "application/json",
            serde_json::to_vec(&doc).unwrap_or_default(),
        )
    };
    for (_, _, media) in clauses {
        let (ty, sub) = media.split_once('/').unwrap_or((media.as_str(), ""));
        if ty != "application" && ty != "*" {
            continue;
        }
        match sub {
            "json" | "*" => return Some(json_doc()),
            "com.github.proto-openapi.spec.v2@v1.0+protobuf"
            | "com.github.proto-openapi.spec.v2.v1.0+protobuf" => {
                return Some((OPENAPI_V2_PROTOBUF, Vec::new()));
            }
            _ => {}
        }
    }
    None
}

/// `/openapi/v3`: one entry per group-version.
pub fn openapi_v3_root(reg: &Registry, hash: u64) -> Value {
    let mut paths = serde_json::Map::new();
    paths.insert(
        "api/v1".into(),
        json!({"serverRelativeURL": format!("/openapi/v3/api/v1?hash={hash:016X}")}),
    );
    for (g, vs) in groups(reg) {
        for v in vs {
            let key = format!("apis/{g}/{v}");
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash:016X}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// A group-version's OpenAPI v3 document: the object paths with their PATCH operation tagged
/// with the GVK and a `fieldValidation` parameter (kubectl checks this to choose server-side
/// field validation). No schemas: kubectl then builds patches from its compiled-in types.
pub fn openapi_v3_group_version(reg: &Registry, gv_path: &str) -> Option<Value> {
    let (group, version) = match gv_path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), v.to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    let mut paths = serde_json::Map::new();
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    for t in served(reg, &group, &version) {
        let ns = if t.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let gvk = json!({"group": group, "version": version, "kind": t.kind});
        let params = json!([
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        ]);
        let op =
            json!({"x-kubernetes-group-version-kind": gvk, "parameters": params, "responses": {}});
        let item = json!({"get": {"x-kubernetes-group-version-kind": gvk, "responses": {}}, "put": op, "patch": op, "delete": op});
        paths.insert(format!("{prefix}{ns}/{}/{{name}}", t.plural), item);
        paths.insert(
            format!("{prefix}{ns}/{}", t.plural),
            json!({"post": op, "get": op}),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths, "components": {"schemas": {}},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_v2_answers_the_media_type_asked_for() {
        // (Accept, content type answered; None = 406)
        let cases = [
            (
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
                Some(OPENAPI_V2_PROTOBUF),
            ),
            (
                "application/com.github.proto-openapi.spec.v2.v1.0+protobuf, application/json",
                Some(OPENAPI_V2_PROTOBUF),
            ),
            (
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf;q=0.5, application/json",
                Some("application/json"),
            ),
            ("application/json", Some("application/json")),
            ("", Some("application/json")),
            ("*/*", Some("application/json")),
            ("text/html", None),
        ];
        for (accept, want) in cases {
            assert_eq!(openapi_v2(accept).map(|(ct, _)| ct), want, "{accept}");
        }
        assert!(!OPENAPI_V2_PROTOBUF.contains('@'));
    }

    #[test]
    fn core_discovery_lists_pods_with_status_and_short_names() {
        let reg = Registry::with_builtins();
        let l = resource_list(&reg, "", "v1").unwrap_or_default();
        let res = l["resources"].as_array().cloned().unwrap_or_default();
        let pods = res
            .iter()
            .find(|r| r["name"] == "pods")
            .cloned()
            .unwrap_or_default();
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["namespaced"], true);
        assert!(res.iter().any(|r| r["name"] == "pods/status"));
        let groups = api_group_list(&reg);
        let names: Vec<&str> = groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "apiextensions.k8s.io",
                "coordination.k8s.io",
                "events.k8s.io"
            ]
        );
        assert!(openapi_v3_group_version(&reg, "api/v1").is_some());
        assert!(resource_list(&reg, "nope.io", "v1").is_none());
    }
}
