//! API errors as the Kubernetes `Status` objects the real API server answers with (pure).
use serde_json::{Value, json};

/// An error answer: HTTP code, `reason`, message and optional `details`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub details: Option<Value>,
    /// Seconds for a `Retry-After` header (429 from fault injection).
    pub retry_after: Option<u32>,
}

/// `pods` or `tfjobs.kubeflow.org`: how the real server names a resource in messages.
pub fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

fn details(group: &str, plural: &str, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": plural});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        let msg = format!("{} \"{name}\" not found", qualified(group, plural));
        Self {
            details: Some(details(group, plural, name)),
            ..Self::new(404, "NotFound", msg)
        }
    }
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        let msg = format!("{} \"{name}\" already exists", qualified(group, plural));
        Self {
            details: Some(details(group, plural, name)),
            ..Self::new(409, "AlreadyExists", msg)
        }
    }
    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        let msg = format!(
            "Operation cannot be fulfilled on {} \"{name}\": {why}",
            qualified(group, plural)
        );
        Self {
            details: Some(details(group, plural, name)),
            ..Self::new(409, "Conflict", msg)
        }
    }
    pub fn stale(group: &str, plural: &str, name: &str) -> Self {
        Self::conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }
    pub fn unsupported_media(accepted: &str) -> Self {
        let msg = format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        );
        Self::new(415, "UnsupportedMediaType", msg)
    }
    /// 422 Invalid; `causes` are (field, reason, message) as the schema module reports them.
    pub fn invalid(
        group: &str,
        kind: &str,
        name: &str,
        causes: &[(String, String, String)],
    ) -> Self {
        let items: Vec<String> = causes
            .iter()
            .map(|(f, _, m)| {
                if f.is_empty() {
                    m.clone()
                } else {
                    format!("{f}: {m}")
                }
            })
            .collect();
        let joined = if items.len() == 1 {
            items[0].clone()
        } else {
            format!("[{}]", items.join(", "))
        };
        let gk = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let msg = format!("{gk} \"{name}\" is invalid: {joined}");
        let causes: Vec<Value> = causes
            .iter()
            .map(|(f, r, m)| json!({"reason": r, "message": m, "field": f}))
            .collect();
        let mut d = json!({"name": name, "kind": kind, "causes": causes});
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        Self {
            details: Some(d),
            ..Self::new(422, "Invalid", msg)
        }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// The `Status` object sent on the wire.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        if let Some(secs) = self.retry_after {
            let d = s.get("details").cloned().unwrap_or_else(|| json!({}));
            s["details"] = d;
            s["details"]["retryAfterSeconds"] = json!(secs);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_real_server() {
        let cases = [
            (
                ApiError::not_found("", "pods", "a"),
                404,
                "pods \"a\" not found",
            ),
            (
                ApiError::not_found("kubeflow.org", "tfjobs", "a"),
                404,
                "tfjobs.kubeflow.org \"a\" not found",
            ),
            (
                ApiError::already_exists("", "configmaps", "c"),
                409,
                "configmaps \"c\" already exists",
            ),
        ];
        for (err, code, msg) in cases {
            let s = err.to_status();
            assert_eq!(s["code"], code);
            assert_eq!(s["message"], msg);
            assert_eq!(s["status"], "Failure");
        }
        let inv = ApiError::invalid(
            "kubeflow.org",
            "TFJob",
            "j",
            &[
                (
                    "spec.x".into(),
                    "FieldValueRequired".into(),
                    "Required value".into(),
                ),
                (
                    "spec.y".into(),
                    "FieldValueInvalid".into(),
                    "Invalid value: 1".into(),
                ),
            ],
        );
        assert_eq!(
            inv.message,
            "TFJob.kubeflow.org \"j\" is invalid: [spec.x: Required value, spec.y: Invalid value: 1]"
        );
        assert_eq!(inv.to_status()["details"]["causes"][0]["field"], "spec.x");
    }
}
