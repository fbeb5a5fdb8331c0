//! `meta.k8s.io/v1` Table responses (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), the
//! form `kubectl get` prints: kube-apiserver's pod printer, a CRD's additionalPrinterColumns, a
//! few built-in printers, and NAME/AGE otherwise. Pure, no I/O.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

mod builtin;
mod cells;
mod pod;

use super::jsonpath::jsonpath;
use crate::store::PrinterColumn;
use builtin::builtin_printer;
use cells::{Cells, age, column, name_column, name_of};
use pod::{pod_cells, pod_columns, pod_row_conditions};

/// A CRD column's definition in a Table (`TableColumnDefinition`).
fn definition(c: &PrinterColumn) -> Value {
    let description = c.description.clone().unwrap_or_else(|| {
        format!(
            "Custom resource definition column (in JSONPath format): {}",
            c.json_path
        )
    });
    column(
        &c.name,
        &c.type_,
        c.format.as_deref().unwrap_or(""),
        &description,
        c.priority,
    )
}

/// Builds the Table for `objects` of `kind`. `columns` = the CRD's printer columns (None for
/// built-in kinds). `include_object` = the `includeObject` query: "None" (no object in rows),
/// "Metadata" (the default: a PartialObjectMetadata) or "Object" (the whole object).
/// `list_meta` becomes the Table's `metadata` (resourceVersion, continue).
pub(crate) fn table(
    kind: &str,
    objects: &[Value],
    columns: Option<&[PrinterColumn]>,
    include_object: &str,
    list_meta: Value,
    now: Timestamp,
) -> Value {
    let (definitions, cells_of): (Vec<Value>, Cells) = match (columns, kind) {
        (Some(cols), _) => (
            std::iter::once(name_column())
                .chain(cols.iter().map(definition))
                .collect(),
            Box::new(move |o| custom_cells(o, cols, now)),
        ),
        (None, "Pod") => (pod_columns(), Box::new(move |o| pod_cells(o, now))),
        (None, _) => builtin_printer(kind, now),
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| row(o, cells_of(o), kind, include_object))
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
        "columnDefinitions": definitions, "rows": rows
    })
}

fn row(obj: &Value, cells: Vec<Value>, kind: &str, include_object: &str) -> Value {
    let mut r = Map::new();
    r.insert("cells".to_string(), Value::Array(cells));
    if let Some(conditions) = pod_row_conditions(obj).filter(|_| kind == "Pod") {
        r.insert("conditions".to_string(), conditions);
    }
    match include_object {
        "None" => {}
        "Object" => {
            r.insert("object".to_string(), obj.clone());
        }
        _ => {
            r.insert("object".to_string(), partial_object_metadata(obj));
        }
    }
    Value::Object(r)
}

fn partial_object_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({}))
    })
}

/// A CRD column's cell, as the apiextensions table convertor makes it: only the first JSONPath
/// result counts; `string` columns print it (objects as JSON), other types must match.
fn custom_cells(obj: &Value, cols: &[PrinterColumn], now: Timestamp) -> Vec<Value> {
    let mut cells = vec![name_of(obj)];
    for c in cols {
        let first = jsonpath(obj, &c.json_path).into_iter().next();
        cells.push(first.map_or(Value::Null, |v| typed_cell(&c.type_, v, now)));
    }
    cells
}

fn typed_cell(type_: &str, v: Value, now: Timestamp) -> Value {
    match (type_, &v) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(_)) => v,
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(_)) => v,
        ("date", Value::String(s)) => json!(match s.parse::<Timestamp>() {
            Ok(_) => age(s, now),
            Err(_) => "<invalid>".to_string(),
        }),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2024-01-10T00:00:00Z"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn tfjob(conditions: Value) -> Value {
        json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "ns", "creationTimestamp": "2024-01-09T23:58:00Z", "uid": "u"},
            "spec": {"runPolicy": {"suspend": false}},
            "status": {"conditions": conditions}
        })
    }

    fn tfjob_columns() -> Vec<PrinterColumn> {
        [
            json!({"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"}),
            json!({"name": "Suspended", "type": "boolean", "jsonPath": ".spec.runPolicy.suspend", "priority": 1}),
            json!({"name": "Count", "type": "integer", "jsonPath": ".status.conditions[*].count"}),
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ]
        .iter()
        .map(PrinterColumn::from_crd_column)
        .collect()
    }

    #[test]
    fn custom_resource_printer_columns() {
        let cols = tfjob_columns();
        let objs = [
            tfjob(json!([{"type": "Created", "count": 2}, {"type": "Running", "count": 3}])),
            tfjob(json!([])),
        ];
        let t = table(
            "TFJob",
            &objs,
            Some(&cols),
            "None",
            json!({"resourceVersion": "7"}),
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "7"}));
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["Name", "State", "Suspended", "Count", "Age"]);
        assert_eq!(t["columnDefinitions"][2]["priority"], 1);
        assert_eq!(
            t["columnDefinitions"][1]["description"],
            "Custom resource definition column (in JSONPath format): .status.conditions[-1:].type"
        );
        // Only the first JSONPath result counts, as in the apiextensions table convertor.
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["mnist", "Running", false, 2, "2m"])
        );
        assert_eq!(
            t["rows"][1]["cells"],
            json!(["mnist", null, false, null, "2m"])
        );
        assert!(t["rows"][0].get("object").is_none());
    }

    #[test]
    fn typed_cells_follow_the_column_type() {
        let cases = [
            ("string", json!("a"), json!("a")),
            ("string", json!(3), json!("3")),
            ("string", json!({"k": 1}), json!("{\"k\":1}")),
            ("integer", json!(3.7), json!(3)),
            ("integer", json!("3"), Value::Null),
            ("number", json!(2), json!(2.0)),
            ("boolean", json!("true"), Value::Null),
            ("date", json!("2024-01-09T00:00:00Z"), json!("24h")),
            ("date", json!("yesterday"), json!("<invalid>")),
        ];
        for (type_, v, want) in cases {
            assert_eq!(typed_cell(type_, v.clone(), now()), want, "{type_} {v}");
        }
    }

    #[test]
    fn include_object_controls_the_row_object() {
        let objs = [tfjob(json!([]))];
        let meta = table("TFJob", &objs, Some(&[]), "Metadata", json!({}), now());
        assert_eq!(
            meta["rows"][0]["object"],
            json!({
                "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": objs[0]["metadata"]
            })
        );
        let full = table("TFJob", &objs, Some(&[]), "Object", json!({}), now());
        assert_eq!(full["rows"][0]["object"], objs[0]);
        let none = table("TFJob", &objs, Some(&[]), "None", json!({}), now());
        assert!(none["rows"][0].get("object").is_none());
    }

    #[test]
    fn builtin_kinds_without_a_pod_printer() {
        let created = "2024-01-09T23:59:00Z";
        let cases = [
            (
                "ConfigMap",
                json!({"metadata": {"name": "c", "creationTimestamp": created}, "data": {"a": "1", "b": "2"}}),
                json!(["c", 2, "60s"]),
            ),
            (
                "Namespace",
                json!({"metadata": {"name": "n", "creationTimestamp": created}, "status": {"phase": "Active"}}),
                json!(["n", "Active", "60s"]),
            ),
            (
                "Lease",
                json!({"metadata": {"name": "l", "creationTimestamp": created}, "spec": {"holderIdentity": "me"}}),
                json!(["l", "me", "60s"]),
            ),
            (
                "Service",
                json!({"metadata": {"name": "s", "creationTimestamp": created}, "spec": {"clusterIP": "None", "ports": [{"port": 2222}], "selector": {"a": "b"}}}),
                json!(["s", "ClusterIP", "None", "<none>", "2222/TCP", "60s", "a=b"]),
            ),
            (
                "Event",
                json!({"metadata": {"name": "e", "creationTimestamp": created}, "type": "Normal", "reason": "Created", "message": "m",
                             "involvedObject": {"kind": "TFJob", "name": "j"}, "lastTimestamp": created}),
                json!(["60s", "Normal", "Created", "tfjob/j", "m", "e"]),
            ),
            (
                "CustomResourceDefinition",
                json!({"metadata": {"name": "x.y", "creationTimestamp": created}}),
                json!(["x.y", created]),
            ),
        ];
        for (kind, obj, want) in cases {
            let t = table(kind, &[obj], None, "None", json!({}), now());
            assert_eq!(t["rows"][0]["cells"], want, "{kind}");
            assert_eq!(
                t["columnDefinitions"].as_array().map(Vec::len),
                want.as_array().map(Vec::len),
                "{kind}"
            );
        }
    }
}
