//! The PATCH mechanisms of kube-apiserver over stored JSON objects: JSON merge patch, JSON patch,
//! strategic merge patch and server-side apply (with `managedFields`). Pure, no I/O.

mod apply;
mod fields;
mod json;
mod managed;
mod merge;
mod strategic;

pub use apply::server_side_apply;
pub use json::json_patch;
pub use managed::record_update;
pub use merge::merge_patch;
pub use strategic::strategic_merge;

/// Why a patch could not be applied; `http_code` is the status the real server answers with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is malformed (not a JSON patch array, bad op shape, bad
    /// directive): 400 BadRequest.
    #[error("{0}")]
    BadRequest(String),
    /// A JSON patch operation failed against the object (missing path, failed `test`). The real
    /// server answers 422 with a generic message and this text as the cause.
    #[error("{0}")]
    OperationFailed(String),
    /// The patch is well-formed but cannot be applied to this object (e.g. a list element
    /// without its merge key): 422 Invalid.
    #[error("{0}")]
    Invalid(String),
    /// Server-side apply without `fieldManager`: 422 Invalid.
    #[error(
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    )]
    FieldManagerRequired,
    /// Server-side apply conflicts with fields other managers own (`force` not set): 409.
    #[error("{message}")]
    Conflict {
        message: String,
        /// (field path like `.spec.replicas`, `conflict with "mgr" using v1`)
        conflicts: Vec<(String, String)>,
    },
}

impl PatchError {
    /// The HTTP status code of the `Status` the server answers with.
    pub fn http_code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::OperationFailed(_) | PatchError::Invalid(_) => 422,
            PatchError::FieldManagerRequired => 422,
            PatchError::Conflict { .. } => 409,
        }
    }

    /// The `Status.reason` of the answer.
    pub fn reason(&self) -> &'static str {
        match self.http_code() {
            400 => "BadRequest",
            409 => "Conflict",
            _ => "Invalid",
        }
    }

    /// The `Status.message`. For failed JSON patch operations the real server answers with the
    /// generic 422 text and puts the detail in a cause.
    pub fn status_message(&self) -> String {
        match self {
            PatchError::OperationFailed(_) => {
                "the server rejected our request due to an error in our request".to_string()
            }
            other => other.to_string(),
        }
    }

    /// The `Status.details.causes` entries the real server sends.
    pub fn causes(&self) -> Vec<serde_json::Value> {
        match self {
            PatchError::OperationFailed(detail) => vec![serde_json::json!({
                "type": "UnexpectedServerResponse", "message": detail
            })],
            PatchError::FieldManagerRequired => vec![serde_json::json!({
                "type": "FieldValueRequired", "message": "Required value: is required for apply patch",
                "field": "fieldManager"
            })],
            PatchError::Conflict { conflicts, .. } => conflicts
                .iter()
                .map(|(field, message)| {
                    serde_json::json!({"type": "FieldManagerConflict", "message": message, "field": field})
                })
                .collect(),
            PatchError::BadRequest(_) | PatchError::Invalid(_) => Vec::new(),
        }
    }
}
