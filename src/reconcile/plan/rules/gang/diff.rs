//! What differs between the PodGroup spec a job wants and the one it has, as the JSON merge
//! patch that fixes it. Pure.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Map, Value};

use crate::reconcile::build::gang::quantity;

/// The merge patch that brings `observed` to `desired`, None when they agree. Only the
/// fields the operator sets are compared: a field it leaves unset (say `queue`, which
/// Volcano's admission fills in) is the server's to keep. Quantities compare by value; a
/// resource gone from `minResources` is removed (null).
pub fn spec_patch(desired: &Value, observed: &Value) -> Option<Value> {
    let mut patch = Map::new();
    let wanted = desired.as_object()?;
    for (key, want) in wanted {
        let have = observed.get(key).unwrap_or(&Value::Null);
        if key == "minResources" {
            if let Some(p) = resources_patch(want, have) {
                patch.insert(key.clone(), p);
            }
        } else if want != have {
            patch.insert(key.clone(), want.clone());
        }
    }
    let have_resources = observed.get("minResources").and_then(Value::as_object);
    if !wanted.contains_key("minResources") && have_resources.is_some_and(|r| !r.is_empty()) {
        patch.insert("minResources".into(), Value::Null);
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

fn resources_patch(want: &Value, have: &Value) -> Option<Value> {
    let quantity = |v: &Value| match v {
        Value::String(s) => Some(Quantity(s.clone())),
        Value::Number(n) => Some(Quantity(n.to_string())),
        _ => None,
    };
    let (want, empty) = (want.as_object()?, Map::new());
    let have = have.as_object().unwrap_or(&empty);
    let mut patch = Map::new();
    for (name, w) in want {
        let same = match (quantity(w), have.get(name).and_then(quantity)) {
            (Some(a), Some(b)) => quantity::same(&a, &b),
            _ => false,
        };
        if !same {
            patch.insert(name.clone(), w.clone());
        }
    }
    for name in have.keys().filter(|k| !want.contains_key(*k)) {
        patch.insert(name.clone(), Value::Null);
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}
