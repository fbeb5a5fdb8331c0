//! Two admission plugins of a real API server that refuse pods, as they word it: ResourceQuota
//! (pod counts) and Pod Security (`restricted`). Both run on dry runs too. Pure functions of
//! the request and the stored objects.

use serde_json::{Value, json};

use super::error::ApiError;
use super::meta;
use super::objects::Inner;
use super::resource::ResourceId;

impl Inner {
    /// Admission for a pod create in `ns`.
    pub(super) fn admit_pod(&self, ns: &str, pod: &Value) -> Result<(), ApiError> {
        let name = meta::name(pod);
        let namespace = self.get(&ResourceId::new("", "namespaces"), "", ns);
        if let Some(level) = namespace.and_then(|n| n["metadata"]["labels"][ENFORCE].as_str())
            && level == "restricted"
        {
            let violations = restricted_violations(pod);
            if !violations.is_empty() {
                return Err(forbidden(
                    name,
                    format!(
                        "violates PodSecurity \"restricted:latest\": {}",
                        violations.join(", ")
                    ),
                ));
            }
        }
        self.admit_pod_quota(ns, name, pod)
    }

    /// The quota admission for pod counts: a pod that is not finished counts against every
    /// quota of its namespace with a `pods` (or `count/pods`) limit.
    fn admit_pod_quota(&self, ns: &str, name: &str, pod: &Value) -> Result<(), ApiError> {
        if is_finished(pod) {
            return Ok(());
        }
        let quotas = ResourceId::new("", "resourcequotas");
        for quota in self.list(&quotas, Some(ns)) {
            for key in ["pods", "count/pods"] {
                let Some(hard) = quantity(&quota["spec"]["hard"][key]) else {
                    continue;
                };
                let used = self
                    .list(&ResourceId::new("", "pods"), Some(ns))
                    .filter(|p| !is_finished(p))
                    .count() as i64;
                if used + 1 > hard {
                    return Err(forbidden(
                        name,
                        format!(
                            "exceeded quota: {}, requested: {key}=1, used: {key}={used}, limited: {key}={hard}",
                            meta::name(quota)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The namespace label that turns Pod Security enforcement on.
const ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// The resource quota controller's part, done at once: `status.hard` follows `spec.hard`
/// (the quota admission above counts usage from the store itself).
pub(super) fn quota_status(quota: &mut Value) {
    let hard = quota["spec"]["hard"].clone();
    if !quota["status"].is_object() {
        quota["status"] = json!({});
    }
    quota["status"]["hard"] = hard;
}

fn forbidden(name: &str, why: String) -> ApiError {
    let mut e = ApiError::new(
        403,
        "Forbidden",
        format!("pods \"{name}\" is forbidden: {why}"),
    );
    e.details = Some(json!({"name": name, "kind": "pods"}));
    e
}

fn is_finished(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// A count quantity (`"2"` or `2`); other forms are not counts.
fn quantity(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str()?.parse().ok())
}

/// The `restricted` profile's checks that operators' pods meet or miss, worded as the real
/// plugin words them, in its order.
fn restricted_violations(pod: &Value) -> Vec<String> {
    let spec = &pod["spec"];
    let containers: Vec<&Value> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten())
        .collect();
    let names = |pick: &dyn Fn(&Value) -> bool| -> Vec<String> {
        containers
            .iter()
            .filter(|c| pick(c))
            .map(|c| format!("\"{}\"", c["name"].as_str().unwrap_or("")))
            .collect()
    };
    let subject = |names: &[String], pod_too: bool| {
        let noun = match names.len() {
            1 => "container",
            _ => "containers",
        };
        let pod = if pod_too { "pod or " } else { "" };
        format!("{pod}{noun} {} must set", names.join(", "))
    };
    let mut out = Vec::new();
    let sc = |c: &Value| c["securityContext"].clone();
    let host: Vec<&str> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|k| spec[*k].as_bool() == Some(true))
        .collect();
    if !host.is_empty() {
        let set: Vec<String> = host.iter().map(|k| format!("{k}=true")).collect();
        out.push(format!("host namespaces ({})", set.join(", ")));
    }
    let privileged = names(&|c| sc(c)["privileged"].as_bool() == Some(true));
    if !privileged.is_empty() {
        let n = subject(&privileged, false).replace(" must set", " must not set");
        out.push(format!("privileged ({n} securityContext.privileged=true)"));
    }
    let escalation = names(&|c| sc(c)["allowPrivilegeEscalation"].as_bool() != Some(false));
    if !escalation.is_empty() {
        out.push(format!(
            "allowPrivilegeEscalation != false ({} securityContext.allowPrivilegeEscalation=false)",
            subject(&escalation, false)
        ));
    }
    let drops_all = |c: &Value| {
        sc(c)["capabilities"]["drop"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "ALL"))
    };
    let capabilities = names(&|c| !drops_all(c));
    if !capabilities.is_empty() {
        out.push(format!(
            "unrestricted capabilities ({} securityContext.capabilities.drop=[\"ALL\"])",
            subject(&capabilities, false)
        ));
    }
    let host_path: Vec<String> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v.get("hostPath").is_some())
        .map(|v| format!("\"{}\"", v["name"].as_str().unwrap_or("")))
        .collect();
    if !host_path.is_empty() {
        out.push(format!(
            "restricted volume types (volume {} uses restricted volume type \"hostPath\")",
            host_path.join(", ")
        ));
    }
    let pod_sc = &spec["securityContext"];
    let pod_non_root = pod_sc["runAsNonRoot"].as_bool() == Some(true);
    let non_root = names(&|c| match sc(c)["runAsNonRoot"].as_bool() {
        Some(v) => !v,
        None => !pod_non_root,
    });
    if !non_root.is_empty() {
        out.push(format!(
            "runAsNonRoot != true ({} securityContext.runAsNonRoot=true)",
            subject(&non_root, !pod_non_root && pod_sc["runAsNonRoot"].is_null())
        ));
    }
    let root_user = pod_sc["runAsUser"].as_i64() == Some(0)
        || containers
            .iter()
            .any(|c| sc(c)["runAsUser"].as_i64() == Some(0));
    if root_user {
        out.push("runAsUser=0 (pod and containers must not set runAsUser=0)".into());
    }
    let allowed = |t: &Value| matches!(t.as_str(), Some("RuntimeDefault" | "Localhost"));
    let pod_seccomp = &pod_sc["seccompProfile"]["type"];
    let seccomp = names(&|c| {
        let own = &sc(c)["seccompProfile"]["type"];
        if own.is_null() {
            !allowed(pod_seccomp)
        } else {
            !allowed(own)
        }
    });
    if !seccomp.is_empty() {
        out.push(format!(
            "seccompProfile ({} securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")",
            subject(&seccomp, pod_seccomp.is_null())
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_pod_misses_the_four_usual_checks_in_the_real_order() {
        let pod = json!({"spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            restricted_violations(&pod).join(", "),
            "allowPrivilegeEscalation != false (container \"a\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"a\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             runAsNonRoot != true (pod or container \"a\" must set securityContext.runAsNonRoot=true), \
             seccompProfile (pod or container \"a\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn a_hardened_pod_passes() {
        let pod = json!({"spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}});
        assert!(restricted_violations(&pod).is_empty());
        let mut root = pod.clone();
        root["spec"]["containers"][0]["securityContext"]["runAsNonRoot"] = json!(false);
        assert_eq!(
            restricted_violations(&root),
            ["runAsNonRoot != true (container \"a\" must set securityContext.runAsNonRoot=true)"]
        );
    }
}
