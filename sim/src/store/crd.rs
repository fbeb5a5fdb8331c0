//! CustomResourceDefinitions: compile their schemas, turn them into served resources, set the
//! conditions the real controllers set, and drop the resource when the CRD goes (no I/O).
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::error::ApiError;
use super::meta;
use super::objects::{EventType, Inner, WatchEvent};
use super::resource::{Conversion, PrinterColumn, ResourceId, ResourceType};
use crate::schema::CompiledSchema;

const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
const CRD_GROUP: &str = "apiextensions.k8s.io";

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn invalid(name: &str, causes: Vec<(String, String, String)>) -> ApiError {
    ApiError::invalid(CRD_GROUP, "CustomResourceDefinition", name, &causes)
}

fn columns(version: &Value) -> Vec<PrinterColumn> {
    let Some(cols) = version["additionalPrinterColumns"].as_array() else {
        return Vec::new();
    };
    cols.iter().map(PrinterColumn::from_crd_column).collect()
}

/// The served resource a CRD object describes (422 if it is not acceptable).
fn resource_type(crd: &Value) -> Result<ResourceType, ApiError> {
    let name = meta::name(crd);
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or("");
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or("");
    let kind = names["kind"].as_str().unwrap_or("");
    let mut causes = Vec::new();
    let mut req = |field: &str, ok: bool| {
        if !ok {
            causes.push((
                field.to_string(),
                "FieldValueRequired".to_string(),
                "Required value".to_string(),
            ));
        }
    };
    req("spec.group", !group.is_empty());
    req("spec.names.plural", !plural.is_empty());
    req("spec.names.kind", !kind.is_empty());
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    req("spec.versions", !versions.is_empty());
    if !causes.is_empty() {
        return Err(invalid(name, causes));
    }
    if name != format!("{plural}.{group}") {
        let msg = format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group");
        return Err(invalid(
            name,
            vec![("metadata.name".into(), "FieldValueInvalid".into(), msg)],
        ));
    }
    let mut served = Vec::new();
    let mut deprecations = BTreeMap::new();
    let mut schemas = BTreeMap::new();
    let mut cols = BTreeMap::new();
    let mut has_status = false;
    for (i, v) in versions.iter().enumerate() {
        let vname = v["name"].as_str().unwrap_or("").to_string();
        let field = format!("spec.versions[{i}].schema.openAPIV3Schema");
        let schema = &v["schema"]["openAPIV3Schema"];
        if schema.is_null() {
            let cause = (
                field,
                "FieldValueRequired".into(),
                "Required value: schemas are required".into(),
            );
            return Err(invalid(name, vec![cause]));
        }
        let compiled = CompiledSchema::compile(schema).map_err(|cs| {
            let causes = cs
                .into_iter()
                .map(|c| {
                    let f = if c.field.is_empty() {
                        field.clone()
                    } else {
                        format!("{field}.{}", c.field)
                    };
                    (f, c.reason, c.message)
                })
                .collect();
            invalid(name, causes)
        })?;
        has_status |= v["subresources"]["status"].is_object();
        if v["served"].as_bool().unwrap_or(true) {
            if v["storage"].as_bool().unwrap_or(false) {
                served.insert(0, vname.clone())
            } else {
                served.push(vname.clone())
            }
        }
        if v["deprecated"].as_bool() == Some(true) {
            // apiextensions' default when the CRD gives no deprecationWarning.
            let warning = v["deprecationWarning"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| format!("{group}/{vname} {kind} is deprecated"));
            deprecations.insert(vname.clone(), warning);
        }
        schemas.insert(vname.clone(), Arc::new(compiled));
        cols.insert(vname, columns(v));
    }
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    Ok(ResourceType {
        group: group.into(),
        versions: served,
        plural: plural.into(),
        singular: names["singular"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| kind.to_lowercase()),
        kind: kind.into(),
        namespaced,
        short_names: strings(&names["shortNames"]),
        categories: strings(&names["categories"]),
        has_status,
        subresources: if has_status {
            vec!["status".into()]
        } else {
            Vec::new()
        },
        builtin: false,
        has_generation: true,
        requires_rv_on_update: true,
        storage: ResourceId::new(group, plural),
        conversion: Conversion::None,
        columns: cols,
        schemas,
        deprecations,
    })
}

fn established_status(crd: &Value, storage: &str) -> Value {
    let now = meta::now_string();
    let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": msg});
    json!({
        "acceptedNames": crd["spec"]["names"],
        "conditions": [
            cond("NamesAccepted", "NoConflicts", "no conflicts found"),
            cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": [storage],
    })
}

/// For a CRD write: validate, set status and finalizer, and return the resource to register.
pub(super) fn on_write(
    obj: &mut Value,
    rt: &ResourceType,
) -> Result<Option<ResourceType>, ApiError> {
    if rt.kind != "CustomResourceDefinition" || rt.group != CRD_GROUP {
        return Ok(None);
    }
    let t = resource_type(obj)?;
    let storage = t.versions.first().cloned().unwrap_or_default();
    obj["status"] = established_status(obj, &storage);
    let mut fins = meta::finalizers(obj);
    if !meta::is_deleting(obj) && !fins.iter().any(|f| f == CLEANUP_FINALIZER) {
        fins.push(CLEANUP_FINALIZER.into());
        obj["metadata"]["finalizers"] = json!(fins);
    }
    Ok(Some(t))
}

/// The CRD is gone: its objects go with it and the resource is no longer served.
pub(super) fn on_removed(
    inner: &mut Inner,
    tx: &tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
    crd: &Value,
) {
    let group = crd["spec"]["group"].as_str().unwrap_or("");
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or("");
    let id = ResourceId::new(group, plural);
    let leftovers: Vec<Arc<Value>> = inner
        .objects
        .get(&id)
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default();
    for obj in leftovers {
        inner.commit(tx, &id, EventType::Deleted, (*obj).clone(), Some(obj));
    }
    inner.registry.remove(&id);
}
