//! Errors of the running operator: what failed, with the object it failed on, in the API
//! server's own words (docs/behaviour.md §13): its message and reason, never a `Debug`
//! rendering of the client's types.

/// A failed step of a reconcile. The job is requeued with backoff; other jobs go on. The
/// variant's name in snake_case is the reconcile-error metric's label.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Error {
    #[error("creating pod {name}: {}", api_words(.source))]
    CreatePod { name: String, source: kube::Error },
    #[error("creating service {name}: {}", api_words(.source))]
    CreateService { name: String, source: kube::Error },
    #[error("deleting pod {name}: {}", api_words(.source))]
    DeletePod { name: String, source: kube::Error },
    #[error("deleting service {name}: {}", api_words(.source))]
    DeleteService { name: String, source: kube::Error },
    #[error("creating PodGroup {name}: {}", api_words(.source))]
    CreatePodGroup { name: String, source: kube::Error },
    #[error("updating PodGroup {name}: {}", api_words(.source))]
    PatchPodGroup { name: String, source: kube::Error },
    #[error("deleting PodGroup {name}: {}", api_words(.source))]
    DeletePodGroup { name: String, source: kube::Error },
    /// Gang scheduling is on but the API server does not serve the PodGroup resource.
    #[error("PodGroup {name}: the CRD {crd} is not installed")]
    PodGroupCrdMissing { name: String, crd: String },
    /// The job's scheduling policy cannot make a PodGroup (field-path style message).
    #[error("PodGroup {name}: {message}")]
    PodGroupInvalid { name: String, message: String },
    #[error("deleting TFJob {name} after its TTL: {}", api_words(.source))]
    DeleteJob { name: String, source: kube::Error },
    #[error("writing status of TFJob {name}: {}", api_words(.source))]
    WriteStatus { name: String, source: kube::Error },
    #[error("{name} changed since the pass looked at it; not deleted")]
    ChildChanged { name: String },
    #[error("namespace {namespace} is being terminated; no children are created in it")]
    NamespaceTerminating { namespace: String },
    #[error("the pod and service caches are not synced yet")]
    CachesNotSynced,
    #[error("TFJob object has no {0}")]
    MissingMetadata(&'static str),
    /// A write or read of the Kueue mode (docs/kueue.md) the API server refused.
    #[error("{action} {name}: {}", api_words(.source))]
    Kueue {
        action: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("the Workload cache is not synced yet")]
    WorkloadsNotSynced,
    #[error("serializing {what}: {source}")]
    Serialize {
        what: &'static str,
        source: serde_json::Error,
    },
}

impl Error {
    /// A create the API server refused, as the job's condition and warning event tell it:
    /// (reason, message), e.g. (`FailedCreatePod`, `Error creating pod a-worker-1: pods
    /// "a-worker-1" is forbidden: exceeded quota: tiny, ... (Forbidden)`), bounded to an
    /// event note's size.
    pub fn create_failure(&self) -> Option<(&'static str, String)> {
        let (reason, kind, name, source) = match self {
            Error::CreatePod { name, source } => ("FailedCreatePod", "pod", name, source),
            Error::CreateService { name, source } => {
                ("FailedCreateService", "service", name, source)
            }
            Error::CreatePodGroup { name, source } => {
                ("FailedCreatePodGroup", "PodGroup", name, source)
            }
            Error::PodGroupCrdMissing { name, crd } => {
                let message = format!(
                    "Error creating PodGroup {name}: the CRD {crd} is not installed; the job's \
                     pods wait for it (install the gang scheduler's PodGroup CRD, or run the \
                     operator without --gang-scheduler-name)"
                );
                return Some(("FailedCreatePodGroup", bounded(message, NOTE_LIMIT)));
            }
            Error::PodGroupInvalid { name, message } => {
                let message = format!("Error creating PodGroup {name}: {message}");
                return Some(("FailedCreatePodGroup", bounded(message, NOTE_LIMIT)));
            }
            _ => return None,
        };
        let message = format!("Error creating {kind} {name}: {}", api_words(source));
        Some((reason, bounded(message, NOTE_LIMIT)))
    }

    /// Nothing failed for good; the pass only has to wait: the caches are re-listing, or the
    /// job or a child changed since the pass read it (409 Conflict on the status write or a
    /// delete's precondition: the newer version is on its way through the watch).
    pub fn is_wait(&self) -> bool {
        match self {
            Error::CachesNotSynced | Error::ChildChanged { .. } | Error::WorkloadsNotSynced => true,
            // A Kueue write on a resourceVersion that moved (Kueue writes Workloads too).
            Error::Kueue {
                source: kube::Error::Api(status),
                ..
            } => status.code == 409,
            Error::WriteStatus {
                source: kube::Error::Api(status),
                ..
            } => status.code == 409,
            _ => false,
        }
    }
}

/// The most an event note may hold: the API server refuses a longer `events.k8s.io` note
/// (and the event with it).
pub const NOTE_LIMIT: usize = 1024;

/// A client error in the words a Kubernetes user knows: for a refusal, the API server's
/// message and its reason (`pods "x" is forbidden: exceeded quota: ... (Forbidden)`); for a
/// failure to reach it, the transport's own message.
pub fn api_words(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            let message = if status.message.is_empty() {
                format!("the API server answered {}", status.code)
            } else {
                status.message.clone()
            };
            match (status.reason.as_str(), status.code) {
                ("", 0) => message,
                ("", code) => format!("{message} ({code})"),
                (reason, _) => format!("{message} ({reason})"),
            }
        }
        other => other.to_string(),
    }
}

/// Whether the API server refused a create because the namespace is being deleted: its
/// lifecycle admission answers 403 with the cause `NamespaceTerminating`.
pub fn is_namespace_terminating(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => {
            status.code == 403
                && status
                    .details
                    .as_ref()
                    .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
        }
        _ => false,
    }
}

/// `text` cut to at most `limit` bytes (on a character boundary), marked with `...` when cut.
pub fn bounded(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use kube::core::response::{StatusCause, StatusDetails};

    fn refused(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            reason: reason.into(),
            message: message.into(),
            ..Status::failure(message, reason)
        }))
    }

    #[test]
    fn a_quota_refusal_reads_as_the_api_server_wrote_it() {
        let e = Error::CreatePod {
            name: "dist-worker-1".into(),
            source: refused(
                403,
                "Forbidden",
                "pods \"dist-worker-1\" is forbidden: exceeded quota: tiny, requested: pods=1, used: pods=1, limited: pods=1",
            ),
        };
        let (reason, message) = e.create_failure().unwrap();
        assert_eq!(reason, "FailedCreatePod");
        assert_eq!(
            message,
            "Error creating pod dist-worker-1: pods \"dist-worker-1\" is forbidden: exceeded quota: \
             tiny, requested: pods=1, used: pods=1, limited: pods=1 (Forbidden)"
        );
        assert_eq!(
            e.to_string(),
            "creating pod dist-worker-1: pods \"dist-worker-1\" is forbidden: exceeded quota: \
             tiny, requested: pods=1, used: pods=1, limited: pods=1 (Forbidden)"
        );
    }

    #[test]
    fn no_rust_types_in_any_message() {
        let invalid = refused(
            422,
            "Invalid",
            "Service \"a-worker-0\" is invalid: spec.ports[0].port: Invalid value: 0",
        );
        let e = Error::CreateService {
            name: "a-worker-0".into(),
            source: invalid,
        };
        let (reason, message) = e.create_failure().unwrap();
        assert_eq!(reason, "FailedCreateService");
        assert!(message.ends_with("Invalid value: 0 (Invalid)"), "{message}");
        for text in [message, e.to_string()] {
            for rust in ["ApiError", "Status {", "Some(", "ListMeta", "code:"] {
                assert!(!text.contains(rust), "{rust:?} in {text}");
            }
        }
    }

    #[test]
    fn a_status_without_reason_names_its_code() {
        let e = refused(500, "", "etcdserver: request timed out");
        assert_eq!(api_words(&e), "etcdserver: request timed out (500)");
        let e = refused(503, "", "");
        assert_eq!(api_words(&e), "the API server answered 503 (503)");
    }

    #[test]
    fn notes_stay_within_the_event_limit() {
        let long = "x".repeat(600) + &"é".repeat(600);
        let e = Error::CreatePod {
            name: "p".into(),
            source: refused(403, "Forbidden", &long),
        };
        let (_, message) = e.create_failure().unwrap();
        assert!(message.len() <= NOTE_LIMIT, "{}", message.len());
        assert!(message.ends_with("..."));
        assert_eq!(bounded("short".into(), NOTE_LIMIT), "short");
    }

    #[test]
    fn namespace_termination_is_told_by_its_cause() {
        let mut status = Status::failure(
            "pods \"a\" is forbidden: unable to create new content in namespace n because it is being terminated",
            "Forbidden",
        );
        status.code = 403;
        assert!(!is_namespace_terminating(&kube::Error::Api(Box::new(
            status.clone()
        ))));
        status.details = Some(StatusDetails {
            causes: vec![StatusCause {
                reason: "NamespaceTerminating".into(),
                message: "namespace n is being terminated".into(),
                field: "metadata.namespace".into(),
            }],
            name: "a".into(),
            group: String::new(),
            kind: "pods".into(),
            uid: String::new(),
            retry_after_seconds: 0,
        });
        assert!(is_namespace_terminating(&kube::Error::Api(Box::new(
            status
        ))));
        assert!(!is_namespace_terminating(&refused(
            403,
            "Forbidden",
            "quota"
        )));
    }
}
