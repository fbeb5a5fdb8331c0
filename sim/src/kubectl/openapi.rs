//! The OpenAPI documents kubectl fetches before it writes: a minimal OpenAPI v3 that tells it
//! the server validates fields itself, and an empty OpenAPI v2 in the media type it asked for
//! (pure: built from the registry).

use serde_json::{Value, json};

use crate::store::Registry;

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
    for (g, vs) in reg.groups() {
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
    for t in reg.served(&group, &version) {
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
    fn a_group_version_document_declares_field_validation_on_patch() {
        let reg = Registry::with_builtins();
        let doc = openapi_v3_group_version(&reg, "api/v1").unwrap_or_default();
        let pod = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(pod["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(
            pod["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "fieldValidation"))
        );
        assert!(openapi_v3_group_version(&reg, "apis/nope.io/v1").is_none());
    }
}
