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
    #[error("{name} changed since the pass looked at it; not deleted")]
    ChildChanged { name: String },
    #[error("the pod and service caches are not synced yet")]
    CachesNotSynced,
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
            Error::ChildChanged { .. } => "child_changed",
            Error::CachesNotSynced => "caches_not_synced",
            Error::MissingMetadata(_) => "missing_metadata",
            Error::Serialize { .. } => "serialize",
        }
    }

    /// Nothing failed for good; the pass only has to wait: the caches are re-listing, or the
    /// job or a child changed since the pass read it (409 Conflict on the status write or a
    /// delete's precondition: the newer version is on its way through the watch).
    pub fn is_wait(&self) -> bool {
        match self {
            Error::CachesNotSynced | Error::ChildChanged { .. } => true,
            Error::WriteStatus {
                source: kube::Error::Api(status),
                ..
            } => status.code == 409,
            _ => false,
        }
    }
}
