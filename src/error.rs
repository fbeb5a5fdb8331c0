//! Errors of the running operator: what failed, with the object it failed on.

/// A failed step of a reconcile. The job is requeued with backoff; other jobs go on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("creating pod {name}: {source}")]
    CreatePod { name: String, source: kube::Error },
    #[error("creating service {name}: {source}")]
    CreateService { name: String, source: kube::Error },
    #[error("deleting pod {name}: {source}")]
    DeletePod { name: String, source: kube::Error },
    #[error("deleting service {name}: {source}")]
    DeleteService { name: String, source: kube::Error },
    #[error("deleting TFJob {name} after its TTL: {source}")]
    DeleteJob { name: String, source: kube::Error },
    #[error("writing status of TFJob {name}: {source}")]
    WriteStatus { name: String, source: kube::Error },
    #[error("TFJob object has no {0}")]
    MissingMetadata(&'static str),
    #[error("serializing {what}: {source}")]
    Serialize {
        what: &'static str,
        source: serde_json::Error,
    },
}

impl Error {
    /// A low-cardinality label for the reconcile-error metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::CreatePod { .. } => "create_pod",
            Error::CreateService { .. } => "create_service",
            Error::DeletePod { .. } => "delete_pod",
            Error::DeleteService { .. } => "delete_service",
            Error::DeleteJob { .. } => "delete_job",
            Error::WriteStatus { .. } => "write_status",
            Error::MissingMetadata(_) => "missing_metadata",
            Error::Serialize { .. } => "serialize",
        }
    }

    /// The API server asked us to slow down (429) or failed (5xx): retry politely.
    pub fn is_transient(&self) -> bool {
        let source = match self {
            Error::CreatePod { source, .. }
            | Error::CreateService { source, .. }
            | Error::DeletePod { source, .. }
            | Error::DeleteService { source, .. }
            | Error::DeleteJob { source, .. }
            | Error::WriteStatus { source, .. } => source,
            _ => return false,
        };
        match source {
            kube::Error::Api(status) => {
                status.code == 429 || status.code >= 500 || status.code == 409
            }
            _ => true,
        }
    }
}
