//! Server-side field validation (`fieldValidation=Strict|Warn|Ignore` on create, update and
//! patch): finding the fields an object's kind does not declare and the fields a JSON body
//! gives twice, dropping them, and answering as the real handlers do — Strict refuses, Warn
//! (the default when the parameter is absent) sends one `Warning` header per field, Ignore
//! drops them silently (pure).
//!
//! Custom resources are checked against their CRD schema (the pruning the store does anyway).
//! Built-in kinds have no schema here: their top level, `metadata`, and the parts of pods and
//! services the operator writes (pod spec, containers, ports, service spec) are known by field
//! name; anything deeper is accepted as sent.
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::route::Query;
use crate::schema::prune::OBJECT_META_FIELDS;
use crate::store::{ApiError, ResourceType};

/// What to do with unknown fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Directive {
    Strict,
    Warn,
    Ignore,
}

/// The request's directive; absent = Warn (`fieldValidation` in the handlers' rest.go).
/// `options` names the options kind in the error (`CreateOptions`, `UpdateOptions`, ...).
pub fn directive(q: &Query, options: &str) -> Result<Directive, ApiError> {
    match q.get("fieldValidation") {
        None => Ok(Directive::Warn),
        Some("Strict") => Ok(Directive::Strict),
        Some("Warn") => Ok(Directive::Warn),
        Some("Ignore") => Ok(Directive::Ignore),
        Some(other) => {
            let cause = (
                "fieldValidation".to_string(),
                "FieldValueNotSupported".to_string(),
                format!(
                    "Unsupported value: \"{other}\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                ),
            );
            Err(ApiError::invalid("meta.k8s.io", options, "", &[cause]))
        }
    }
}

/// The known fields of a built-in object part: a field name and the shape under it.
#[derive(Clone, Copy)]
enum Shape {
    /// Anything (not checked).
    Open,
    Object(&'static [(&'static str, Shape)]),
    List(&'static Shape),
}

use Shape::{List, Object, Open};

const CONTAINER_PORT: Shape = Object(&[
    ("containerPort", Open),
    ("hostIP", Open),
    ("hostPort", Open),
    ("name", Open),
    ("protocol", Open),
]);

const CONTAINER: Shape = Object(&[
    ("args", Open),
    ("command", Open),
    ("env", Open),
    ("envFrom", Open),
    ("image", Open),
    ("imagePullPolicy", Open),
    ("lifecycle", Open),
    ("livenessProbe", Open),
    ("name", Open),
    ("ports", List(&CONTAINER_PORT)),
    ("readinessProbe", Open),
    ("resizePolicy", Open),
    ("resources", Open),
    ("restartPolicy", Open),
    ("restartPolicyRules", Open),
    ("securityContext", Open),
    ("startupProbe", Open),
    ("stdin", Open),
    ("stdinOnce", Open),
    ("terminationMessagePath", Open),
    ("terminationMessagePolicy", Open),
    ("tty", Open),
    ("volumeDevices", Open),
    ("volumeMounts", Open),
    ("workingDir", Open),
]);

const POD_SPEC: Shape = Object(&[
    ("activeDeadlineSeconds", Open),
    ("affinity", Open),
    ("automountServiceAccountToken", Open),
    ("containers", List(&CONTAINER)),
    ("dnsConfig", Open),
    ("dnsPolicy", Open),
    ("enableServiceLinks", Open),
    ("ephemeralContainers", Open),
    ("hostAliases", Open),
    ("hostIPC", Open),
    ("hostNetwork", Open),
    ("hostPID", Open),
    ("hostUsers", Open),
    ("hostname", Open),
    ("hostnameOverride", Open),
    ("imagePullSecrets", Open),
    ("initContainers", List(&CONTAINER)),
    ("nodeName", Open),
    ("nodeSelector", Open),
    ("os", Open),
    ("overhead", Open),
    ("preemptionPolicy", Open),
    ("priority", Open),
    ("priorityClassName", Open),
    ("readinessGates", Open),
    ("resourceClaims", Open),
    ("resources", Open),
    ("restartPolicy", Open),
    ("runtimeClassName", Open),
    ("schedulerName", Open),
    ("schedulingGates", Open),
    ("securityContext", Open),
    ("serviceAccount", Open),
    ("serviceAccountName", Open),
    ("setHostnameAsFQDN", Open),
    ("shareProcessNamespace", Open),
    ("subdomain", Open),
    ("terminationGracePeriodSeconds", Open),
    ("tolerations", Open),
    ("topologySpreadConstraints", Open),
    ("volumes", Open),
]);

const SERVICE_PORT: Shape = Object(&[
    ("appProtocol", Open),
    ("name", Open),
    ("nodePort", Open),
    ("port", Open),
    ("protocol", Open),
    ("targetPort", Open),
]);

const SERVICE_SPEC: Shape = Object(&[
    ("allocateLoadBalancerNodePorts", Open),
    ("clusterIP", Open),
    ("clusterIPs", Open),
    ("externalIPs", Open),
    ("externalName", Open),
    ("externalTrafficPolicy", Open),
    ("healthCheckNodePort", Open),
    ("internalTrafficPolicy", Open),
    ("ipFamilies", Open),
    ("ipFamilyPolicy", Open),
    ("loadBalancerClass", Open),
    ("loadBalancerIP", Open),
    ("loadBalancerSourceRanges", Open),
    ("ports", List(&SERVICE_PORT)),
    ("publishNotReadyAddresses", Open),
    ("selector", Open),
    ("sessionAffinity", Open),
    ("sessionAffinityConfig", Open),
    ("trafficDistribution", Open),
    ("type", Open),
]);

/// Top-level fields besides apiVersion, kind and metadata, by built-in resource as served.
fn top_level(rt: &ResourceType) -> Option<&'static [(&'static str, Shape)]> {
    Some(match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => &[("spec", POD_SPEC), ("status", Open)],
        ("", "services") => &[("spec", SERVICE_SPEC), ("status", Open)],
        ("", "namespaces" | "nodes") | ("apiextensions.k8s.io", "customresourcedefinitions") => {
            &[("spec", Open), ("status", Open)]
        }
        ("", "configmaps") => &[("data", Open), ("binaryData", Open), ("immutable", Open)],
        ("coordination.k8s.io", "leases") => &[("spec", Open)],
        ("", "events") => &[
            ("involvedObject", Open),
            ("reason", Open),
            ("message", Open),
            ("source", Open),
            ("firstTimestamp", Open),
            ("lastTimestamp", Open),
            ("count", Open),
            ("type", Open),
            ("eventTime", Open),
            ("series", Open),
            ("action", Open),
            ("related", Open),
            ("reportingComponent", Open),
            ("reportingInstance", Open),
        ],
        ("events.k8s.io", "events") => &[
            ("eventTime", Open),
            ("series", Open),
            ("reportingController", Open),
            ("reportingInstance", Open),
            ("action", Open),
            ("reason", Open),
            ("regarding", Open),
            ("related", Open),
            ("note", Open),
            ("type", Open),
            ("deprecatedSource", Open),
            ("deprecatedFirstTimestamp", Open),
            ("deprecatedLastTimestamp", Open),
            ("deprecatedCount", Open),
        ],
        _ => return None,
    })
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn prune_shape(shape: Shape, value: &mut Value, path: &str, out: &mut Vec<String>) {
    match (shape, value) {
        (Object(fields), Value::Object(map)) => prune_fields(fields, map, path, out),
        (List(item), Value::Array(items)) => {
            for (i, v) in items.iter_mut().enumerate() {
                prune_shape(*item, v, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn prune_fields(
    fields: &[(&str, Shape)],
    map: &mut Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        match fields.iter().find(|(name, _)| *name == k) {
            Some((_, shape)) => {
                if let Some(v) = map.get_mut(&k) {
                    prune_shape(*shape, v, &child(path, &k), out);
                }
            }
            None => {
                map.remove(&k);
                out.push(child(path, &k));
            }
        }
    }
}

/// A built-in object: top level, metadata and the known nested parts.
fn prune_builtin(fields: &[(&str, Shape)], obj: &mut Map<String, Value>, out: &mut Vec<String>) {
    let keys: Vec<String> = obj.keys().cloned().collect();
    for k in keys {
        if k == "apiVersion" || k == "kind" {
            continue;
        }
        if k == "metadata" {
            if let Some(Value::Object(meta)) = obj.get_mut(&k) {
                let unknown: Vec<String> = meta
                    .keys()
                    .filter(|f| !OBJECT_META_FIELDS.contains(&f.as_str()))
                    .cloned()
                    .collect();
                for f in unknown {
                    meta.remove(&f);
                    out.push(child("metadata", &f));
                }
            }
            continue;
        }
        match fields.iter().find(|(name, _)| *name == k) {
            Some((_, shape)) => {
                if let Some(v) = obj.get_mut(&k) {
                    prune_shape(*shape, v, &k, out);
                }
            }
            None => {
                obj.remove(&k);
                out.push(k);
            }
        }
    }
}

/// Drop from `obj` (as the client sent it, at `version`) the fields its kind does not declare;
/// returns their errors (`unknown field "spec.x"`).
pub fn prune_unknown(rt: &ResourceType, version: &str, obj: &mut Value) -> Vec<String> {
    if !rt.builtin {
        return rt
            .schemas
            .get(version)
            .map(|s| s.prune_unknown(obj))
            .unwrap_or_default();
    }
    let (Some(fields), Some(map)) = (top_level(rt), obj.as_object_mut()) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    prune_builtin(fields, map, &mut paths);
    paths
        .into_iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect()
}

/// The fields a JSON body gives more than once, as the strict JSON decoder reports them
/// (sigs.k8s.io/json: `duplicate field "spec.replicas"`, list items as `[i]`, each path once,
/// in the order met); the last value is the one kept, as there. Empty for a body that is not
/// JSON (its parse fails on its own).
pub fn duplicates(body: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let scan = Scan {
        path: String::new(),
        found: &mut found,
    };
    if scan.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    let mut seen = HashSet::new();
    found.retain(|p| seen.insert(p.clone()));
    found
        .into_iter()
        .map(|p| format!("duplicate field \"{p}\""))
        .collect()
}

/// Walks a JSON value, recording the paths of keys an object repeats.
struct Scan<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = child(&self.path, &key);
            if !keys.insert(key) {
                self.found.push(path.clone());
            }
            map.next_value_seed(Scan {
                path,
                found: &mut *self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Scan {
                path: format!("{}[{i}]", self.path),
                found: &mut *self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// `strict decoding error: unknown field "a", unknown field "b"` (runtime.StrictDecodingError).
pub fn strict_error(unknown: &[String]) -> String {
    format!("strict decoding error: {}", unknown.join(", "))
}

/// A create or update body with unknown fields under Strict: 400 BadRequest, as the handlers'
/// `transformDecodeError` words it.
pub fn decode_error(rt: &ResourceType, version: &str, unknown: &[String]) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {}",
        strict_error(unknown),
        kind = rt.kind
    ))
}

/// A patch whose result has unknown fields under Strict: 422 Invalid on the field `patch`, the
/// value being the patched object (the patch handler's `applyPatchToCurrentObject`).
pub fn patch_error(patched: &Value, unknown: &[String]) -> ApiError {
    let js = serde_json::to_string(patched).unwrap_or_default();
    let value = serde_json::to_string(&Value::String(js)).unwrap_or_default();
    let cause = (
        "patch".to_string(),
        "FieldValueInvalid".to_string(),
        format!("Invalid value: {value}: {}", strict_error(unknown)),
    );
    ApiError::invalid("", "", "", &[cause])
}

/// The warnings a Warn request gets (none for the other directives).
pub fn warnings(d: Directive, unknown: Vec<String>) -> Vec<String> {
    if d == Directive::Warn {
        unknown
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Registry;
    use serde_json::json;

    #[test]
    fn directives_default_to_warn_and_refuse_unknown_values() {
        let cases = [
            ("", Some(Directive::Warn)),
            ("fieldValidation=Strict", Some(Directive::Strict)),
            ("fieldValidation=Warn", Some(Directive::Warn)),
            ("fieldValidation=Ignore", Some(Directive::Ignore)),
            ("fieldValidation=strict", None),
        ];
        for (q, want) in cases {
            let got = directive(&Query::parse(Some(q)), "CreateOptions");
            assert_eq!(got.as_ref().ok().copied(), want, "{q}");
        }
        let e = directive(&Query::parse(Some("fieldValidation=x")), "PatchOptions").err();
        assert_eq!(
            e.map(|e| e.message).as_deref(),
            Some(
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"x\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
            )
        );
    }

    #[test]
    fn built_in_kinds_know_their_top_level_metadata_and_pod_and_service_parts() {
        let reg = Registry::with_builtins();
        let rt = |g: &str, p: &str| reg.lookup(g, "v1", p).cloned().expect("built-in");
        // (resource, object, unknown fields)
        let cases = [
            (
                rt("", "pods"),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labelz": {}},
                    "spec": {"restartPolcy": "Never", "containers": [{"name": "c", "imagePullPolcy": "x",
                        "ports": [{"containerPort": 1, "nmae": "x"}], "resources": {"anything": 1}}]},
                    "extra": 1}),
                vec![
                    "extra",
                    "metadata.labelz",
                    "spec.containers[0].imagePullPolcy",
                    "spec.containers[0].ports[0].nmae",
                    "spec.restartPolcy",
                ],
            ),
            (
                rt("", "services"),
                json!({"spec": {"clusterIP": "None", "ports": [{"port": 1, "targetPrt": 2}]}}),
                vec!["spec.ports[0].targetPrt"],
            ),
            (
                rt("", "configmaps"),
                json!({"data": {"a": "b"}, "dta": {}}),
                vec!["dta"],
            ),
            (
                rt("events.k8s.io", "events"),
                json!({"note": "n", "message": "m"}),
                vec!["message"],
            ),
        ];
        for (rt, mut obj, want) in cases {
            let mut got = prune_unknown(&rt, "v1", &mut obj);
            got.sort();
            let want: Vec<String> = want
                .iter()
                .map(|p| format!("unknown field \"{p}\""))
                .collect();
            assert_eq!(got, want, "{}", rt.plural);
            assert!(
                prune_unknown(&rt, "v1", &mut obj).is_empty(),
                "pruned in place"
            );
        }
    }

    #[test]
    fn duplicate_fields_are_found_with_their_paths() {
        // (body, duplicates as a v1.34 API server reports them)
        let cases = [
            (
                r#"{"metadata":{"name":"d","name":"d"},"spec":{"tfReplicaSpecs":{"Worker":{"replicas":1,"replicas":2,"template":{"spec":{"containers":[{"name":"t","image":"x","image":"y"}]}}}}}}"#,
                vec![
                    "metadata.name",
                    "spec.tfReplicaSpecs.Worker.replicas",
                    "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image",
                ],
            ),
            (r#"{"data":{"a":"1","a":"2","a":"3"}}"#, vec!["data.a"]),
            (r#"{"a":[{"b":1},{"b":1,"b":2}]}"#, vec!["a[1].b"]),
            (r#"{"a":1,"b":2}"#, vec![]),
            ("not json", vec![]),
        ];
        for (body, want) in cases {
            let want: Vec<String> = want
                .iter()
                .map(|p| format!("duplicate field \"{p}\""))
                .collect();
            assert_eq!(duplicates(body.as_bytes()), want, "{body}");
        }
        let last_wins: Value = serde_json::from_str(r#"{"a":1,"a":2}"#).expect("json");
        assert_eq!(last_wins["a"], 2, "as the real decoder keeps it");
    }

    #[test]
    fn strict_answers_word_it_like_the_real_handlers() {
        let reg = Registry::with_builtins();
        let pods = reg.lookup("", "v1", "pods").cloned().expect("pods");
        let unknown = vec![
            "unknown field \"spec.a\"".to_string(),
            "unknown field \"b\"".to_string(),
        ];
        assert_eq!(
            decode_error(&pods, "v1", &unknown).message,
            "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.a\", unknown field \"b\""
        );
        let e = patch_error(&json!({"a": 1}), &unknown[..1]);
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            e.message,
            " \"\" is invalid: patch: Invalid value: \"{\\\"a\\\":1}\": strict decoding error: unknown field \"spec.a\""
        );
    }
}
