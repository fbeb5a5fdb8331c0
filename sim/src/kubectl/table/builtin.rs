//! Printers of the other built-in kinds the simulator serves (Namespace, ConfigMap, Service,
//! Event, Lease, CustomResourceDefinition) and the real server's default (NAME, CREATED AT). Pure.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::cells::{Cells, age, age_column, column, name_column, name_of, str_at};

/// Column definitions and the cell function for a built-in `kind` other than Pod.
pub(super) fn builtin_printer(kind: &str, now: Timestamp) -> (Vec<Value>, Cells<'static>) {
    let age_of = move |o: &Value| json!(age(str_at(o, "/metadata/creationTimestamp"), now));
    match kind {
        "Namespace" => (
            vec![
                name_column(),
                column("Status", "string", "", "The status of the namespace", 0),
                age_column(),
            ],
            Box::new(move |o| vec![name_of(o), json!(str_at(o, "/status/phase")), age_of(o)]),
        ),
        "ConfigMap" => (
            vec![
                name_column(),
                column(
                    "Data",
                    "string",
                    "",
                    "Data contains the configuration data.",
                    0,
                ),
                age_column(),
            ],
            Box::new(move |o| {
                vec![
                    name_of(o),
                    json!(count(o, "data") + count(o, "binaryData")),
                    age_of(o),
                ]
            }),
        ),
        "Lease" => (
            vec![
                name_column(),
                column(
                    "Holder",
                    "string",
                    "",
                    "holderIdentity contains the identity of the holder of a current lease.",
                    0,
                ),
                age_column(),
            ],
            Box::new(move |o| {
                vec![
                    name_of(o),
                    json!(str_at(o, "/spec/holderIdentity")),
                    age_of(o),
                ]
            }),
        ),
        "Service" => (service_columns(), Box::new(move |o| service_cells(o, now))),
        "Event" => (event_columns(), Box::new(move |o| event_cells(o, now))),
        _ => (
            vec![
                name_column(),
                column("Created At", "date", "", super::cells::AGE_DESCRIPTION, 0),
            ],
            Box::new(|o| {
                vec![
                    name_of(o),
                    o.pointer("/metadata/creationTimestamp")
                        .cloned()
                        .unwrap_or(Value::Null),
                ]
            }),
        ),
    }
}

fn count(o: &Value, field: &str) -> usize {
    o.get(field)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

fn service_columns() -> Vec<Value> {
    vec![
        name_column(),
        column(
            "Type",
            "string",
            "",
            "type determines how the Service is exposed.",
            0,
        ),
        column(
            "Cluster-IP",
            "string",
            "",
            "clusterIP is the IP address of the service.",
            0,
        ),
        column(
            "External-IP",
            "string",
            "",
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
            0,
        ),
        column(
            "Port(s)",
            "string",
            "",
            "The list of ports that are exposed by this service.",
            0,
        ),
        age_column(),
        column(
            "Selector",
            "string",
            "",
            "Route service traffic to pods with label keys and values matching this selector.",
            1,
        ),
    ]
}

fn service_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let cluster_ip = o
        .pointer("/spec/clusterIPs/0")
        .and_then(Value::as_str)
        .unwrap_or(str_at(o, "/spec/clusterIP"));
    let ports: Vec<String> = o
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(np) if np > 0 => format!("{port}:{np}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let selector: Vec<String> = o
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    let none_if_empty = |s: String| {
        json!(if s.is_empty() {
            "<none>".to_string()
        } else {
            s
        })
    };
    let svc_type = str_at(o, "/spec/type");
    vec![
        name_of(o),
        json!(if svc_type.is_empty() {
            "ClusterIP"
        } else {
            svc_type
        }),
        none_if_empty(cluster_ip.to_string()),
        json!("<none>"),
        none_if_empty(ports.join(",")),
        json!(age(str_at(o, "/metadata/creationTimestamp"), now)),
        none_if_empty(selector.join(",")),
    ]
}

fn event_columns() -> Vec<Value> {
    vec![
        column(
            "Last Seen",
            "string",
            "",
            "The time at which the most recent occurrence of this event was recorded.",
            0,
        ),
        column(
            "Type",
            "string",
            "",
            "Type of this event (Normal, Warning), new types could be added in the future",
            0,
        ),
        column(
            "Reason",
            "string",
            "",
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            0,
        ),
        column(
            "Object",
            "string",
            "",
            "The object that this event is about.",
            0,
        ),
        column(
            "Message",
            "string",
            "",
            "A human-readable description of the status of this operation.",
            0,
        ),
        column("Name", "string", "name", super::cells::NAME_DESCRIPTION, 1),
    ]
}

fn event_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let last = [
        str_at(o, "/lastTimestamp"),
        str_at(o, "/eventTime"),
        str_at(o, "/metadata/creationTimestamp"),
    ]
    .into_iter()
    .find(|s| !s.is_empty())
    .unwrap_or("");
    let object = format!(
        "{}/{}",
        str_at(o, "/involvedObject/kind").to_lowercase(),
        str_at(o, "/involvedObject/name")
    );
    vec![
        json!(age(last, now)),
        json!(str_at(o, "/type")),
        json!(str_at(o, "/reason")),
        json!(object),
        json!(str_at(o, "/message")),
        name_of(o),
    ]
}
