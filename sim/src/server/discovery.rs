//! Discovery documents (`/version`, `/api`, `/apis`, `/apis/<group>`, resource lists with
//! short names and categories), as every client reads them (pure: built from the registry).
use serde_json::{Value, json};

use crate::store::Registry;

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

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

pub fn api_group_list(reg: &Registry) -> Value {
    let gs: Vec<Value> = reg
        .groups()
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

pub fn api_group(reg: &Registry, group: &str) -> Option<Value> {
    let gs = reg.groups();
    let vs = gs.get(group)?;
    let mut g = group_json(group, vs);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
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
    for t in reg.served(group, version) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(resource_list(&reg, "nope.io", "v1").is_none());
    }
}
