//! The slice of built-in kinds' validation (`pkg/apis/core/validation`) that clients of the sim
//! run into: container and service port names, pod status transitions out of `terminated`, and
//! the length limits of events with an `eventTime` (pure). Field paths, reasons and messages are
//! the real ones.
use serde_json::Value;

use super::error::ApiError;
use super::meta;
use super::options::Sub;
use super::resource::ResourceType;

/// A `StatusCause`: (field, reason, message).
type Cause = (String, String, String);

fn invalid(field: String, value: &str, detail: &str) -> Cause {
    (
        field,
        "FieldValueInvalid".into(),
        format!("Invalid value: \"{value}\": {detail}"),
    )
}

/// `IsValidPortName` (apimachinery `util/validation`): an IANA_SVC_NAME.
pub(super) fn port_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters");
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen");
    }
    errs
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// `IsDNS1123Label`.
pub(super) fn dns1123_label_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 63 {
        errs.push("must be no more than 63 characters");
    }
    let label = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    };
    if !label(name) {
        // A valid subdomain that is not a label can only be so because of its dots.
        if name.split('.').all(label) {
            errs.push("must not contain dots");
        } else {
            errs.push(DNS1123_LABEL_MSG);
        }
    }
    errs
}

/// `validateContainerPorts`: names are IANA_SVC_NAMEs, unique within a container.
fn container_ports(pod: &Value, out: &mut Vec<Cause>) {
    for list in ["initContainers", "containers"] {
        let containers = pod["spec"][list].as_array().map(Vec::as_slice);
        for (i, c) in containers.unwrap_or_default().iter().enumerate() {
            let mut seen = Vec::new();
            let ports = c["ports"].as_array().map(Vec::as_slice).unwrap_or_default();
            for (j, p) in ports.iter().enumerate() {
                let Some(name) = p["name"].as_str().filter(|n| !n.is_empty()) else {
                    continue;
                };
                let field = format!("spec.{list}[{i}].ports[{j}].name");
                let errs = port_name_errors(name);
                if !errs.is_empty() {
                    out.extend(errs.iter().map(|e| invalid(field.clone(), name, e)));
                } else if seen.contains(&name) {
                    let msg = format!("Duplicate value: \"{name}\"");
                    out.push((field, "FieldValueDuplicate".into(), msg));
                } else {
                    seen.push(name);
                }
            }
        }
    }
}

/// `validateServicePort`: DNS-1123 label names, required and unique when there are several.
fn service_ports(svc: &Value, out: &mut Vec<Cause>) {
    let ports = svc["spec"]["ports"].as_array().map(Vec::as_slice);
    let ports = ports.unwrap_or_default();
    let mut seen = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let field = format!("spec.ports[{i}].name");
        let name = p["name"].as_str().unwrap_or("");
        if name.is_empty() {
            if ports.len() > 1 {
                out.push((field, "FieldValueRequired".into(), "Required value".into()));
            }
            continue;
        }
        out.extend(
            dns1123_label_errors(name)
                .iter()
                .map(|e| invalid(field.clone(), name, e)),
        );
        if seen.contains(&name) {
            let msg = format!("Duplicate value: \"{name}\"");
            out.push((field, "FieldValueDuplicate".into(), msg));
        } else {
            seen.push(name);
        }
    }
}

/// `ValidateContainerStateTransition` (via `ValidatePodStatusUpdate`): unless the pod restarts
/// always, a terminated container may only leave `terminated` if it failed under OnFailure.
/// Init containers with their own `restartPolicy: Always` (sidecars) may restart.
fn state_transitions(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    let policy = old["spec"]["restartPolicy"].as_str().unwrap_or("Always");
    if policy == "Always" {
        return;
    }
    for (list, specs) in [
        ("containerStatuses", "containers"),
        ("initContainerStatuses", "initContainers"),
    ] {
        let olds = old["status"][list].as_array().map(Vec::as_slice);
        let news = new["status"][list].as_array().map(Vec::as_slice);
        for (i, o) in olds.unwrap_or_default().iter().enumerate() {
            let Some(code) = o["state"]["terminated"]["exitCode"].as_i64() else {
                continue;
            };
            if code != 0 && policy == "OnFailure" {
                continue;
            }
            let sidecar = old["spec"][specs]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["name"] == o["name"]))
                .is_some_and(|c| c["restartPolicy"] == "Always");
            if sidecar {
                continue;
            }
            let left = news
                .unwrap_or_default()
                .iter()
                .any(|n| n["name"] == o["name"] && n["state"].get("terminated").is_none());
            if left {
                out.push((
                    format!("status.{list}[{i}].state"),
                    "FieldValueForbidden".into(),
                    "Forbidden: may not be transitioned to non-terminated state".into(),
                ));
            }
        }
    }
}

/// `legacyValidateEvent`: events with an `eventTime` (all events.k8s.io ones) have length limits,
/// counted in bytes, on the core field names.
fn event_limits(ev: &Value, out: &mut Vec<Cause>) {
    if ev["eventTime"].as_str().is_none_or(str::is_empty) {
        return;
    }
    for (field, limit) in [
        ("reportingInstance", 128),
        ("action", 128),
        ("reason", 128),
        ("message", 1024),
    ] {
        if ev[field].as_str().is_some_and(|s| s.len() > limit) {
            let msg = format!("Invalid value: \"\": can have at most {limit} characters");
            out.push((field.into(), "FieldValueInvalid".into(), msg));
        }
    }
}

/// Validate a client's write of a built-in object (`old` is the stored object on updates).
pub(super) fn validate(
    rt: &ResourceType,
    obj: &Value,
    old: Option<&Value>,
    sub: Sub,
) -> Result<(), ApiError> {
    if !rt.group.is_empty() || !rt.builtin {
        return Ok(());
    }
    let mut causes = Vec::new();
    match (rt.plural.as_str(), sub, old) {
        ("pods", Sub::Status, Some(old)) => state_transitions(obj, old, &mut causes),
        ("pods", Sub::Main, _) => container_ports(obj, &mut causes),
        ("services", Sub::Main, _) => service_ports(obj, &mut causes),
        ("events", _, _) => event_limits(obj, &mut causes),
        _ => {}
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("", &rt.kind, meta::name(obj), &causes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn port_names() {
        // (name, IANA_SVC_NAME errors, DNS-1123 label errors)
        let cases: [(&str, usize, usize); 8] = [
            ("tfjob-port", 0, 0),
            ("customPort", 1, 1),
            ("a-very-long-port-name", 1, 0),
            ("8080", 1, 0),
            ("-grpc", 1, 1),
            ("grpc--x", 1, 0),
            ("a.b", 1, 1),
            ("", 2, 1),
        ];
        for (name, iana, label) in cases {
            assert_eq!(
                port_name_errors(name).len(),
                iana,
                "{name}: {:?}",
                port_name_errors(name)
            );
            assert_eq!(dns1123_label_errors(name).len(), label, "{name}");
        }
        assert_eq!(dns1123_label_errors("a.b"), ["must not contain dots"]);
    }

    fn running(code: Option<i64>) -> Value {
        match code {
            Some(c) => json!({"name": "c", "state": {"terminated": {"exitCode": c}}}),
            None => json!({"name": "c", "state": {"running": {}}}),
        }
    }

    #[test]
    fn terminated_containers_stay_terminated_unless_the_policy_restarts_them() {
        // (restartPolicy, old exit code, allowed to run again)
        let cases = [
            ("Never", 0, false),
            ("Never", 1, false),
            ("OnFailure", 0, false),
            ("OnFailure", 1, true),
            ("Always", 0, true),
        ];
        for (policy, code, allowed) in cases {
            let old = json!({"spec": {"restartPolicy": policy, "containers": [{"name": "c"}]},
                "status": {"containerStatuses": [running(Some(code))]}});
            let new = json!({"status": {"containerStatuses": [running(None)]}});
            let mut out = Vec::new();
            state_transitions(&new, &old, &mut out);
            assert_eq!(out.is_empty(), allowed, "{policy} {code}: {out:?}");
            if !allowed {
                assert_eq!(out[0].0, "status.containerStatuses[0].state");
            }
        }
    }

    #[test]
    fn messages_and_paths_are_the_real_ones() {
        let registry = crate::store::resource::Registry::with_builtins();
        let rt = |plural: &str, _kind: &str| {
            registry
                .lookup("", "v1", plural)
                .cloned()
                .expect("built-in")
        };
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "ports": [{"name": "customPort", "containerPort": 1}]}]}});
        let e = validate(&rt("pods", "Pod"), &pod, None, Sub::Main).expect_err("invalid");
        assert_eq!(
            e.message,
            "Pod \"p\" is invalid: spec.containers[0].ports[0].name: Invalid value: \"customPort\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
        );
        let svc = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"name": "a", "port": 1}, {"port": 2}]}});
        let e = validate(&rt("services", "Service"), &svc, None, Sub::Main).expect_err("invalid");
        assert_eq!(
            e.message,
            "Service \"s\" is invalid: spec.ports[1].name: Required value"
        );
        let note = "x".repeat(1025);
        let ev = json!({"metadata": {"name": "e"}, "eventTime": "2024-01-01T00:00:00.000000Z", "message": note});
        let e = validate(&rt("events", "Event"), &ev, None, Sub::Main).expect_err("invalid");
        assert_eq!(
            e.message,
            "Event \"e\" is invalid: message: Invalid value: \"\": can have at most 1024 characters"
        );
        let old_style = json!({"metadata": {"name": "e"}, "message": "x".repeat(5000)});
        assert!(validate(&rt("events", "Event"), &old_style, None, Sub::Main).is_ok());
    }
}
