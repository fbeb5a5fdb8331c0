//! Why a patch could not be applied, and the HTTP answer the real server gives for it (pure).

/// Why a patch could not be applied; `http_code` is the status the real server answers with.
// The last three come only from kubectl's patches (`crate::kubectl`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[cfg_attr(not(feature = "kubectl"), allow(dead_code))]
pub enum PatchError {
    /// The patch document itself is malformed (not a JSON patch array, bad op shape, bad
    /// directive): 400 BadRequest.
    #[error("{0}")]
    BadRequest(String),
    /// A JSON patch operation failed against the object (missing path, failed `test`): 422.
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
}
