//! Writing a job's status through the status subresource, only when it changed. I/O.

use kube::Resource;
use kube::api::PostParams;
use serde::{Deserialize, Serialize};

use crate::crd::{TFJob, TFJobStatus};
use crate::error::Error;
use crate::reconcile::context::Shared;
use crate::reconcile::job::JobMeta;

/// Writes `new` when it differs from the stored status. The write carries the
/// resourceVersion the pass planned on, so a concurrent change answers 409 Conflict and the
/// job is planned again on the newer object instead of overwriting it. The status
/// subresource takes only `status` from the body, so the body carries nothing else.
pub async fn write(
    shared: &Shared,
    job: &JobMeta<'_>,
    new: Option<&TFJobStatus>,
) -> Result<(), Error> {
    let Some(new) = new else { return Ok(()) };
    let old = job.status;
    if old == Some(new) || (old.is_none() && *new == TFJobStatus::default()) {
        return Ok(());
    }
    let written = replace_status(shared, job, new).await?;
    if let Some(after) = written.metadata.resource_version {
        let before = job.resource_version.to_string();
        shared
            .memory
            .with(job.uid, |m| m.wrote_status(before, after));
    }
    shared
        .metrics
        .count_transitions(job.namespace, job.created, old, new);
    Ok(())
}

/// The body of a status write: the object's identity and the status, serialised straight
/// from the plan's status (the status subresource reads nothing else).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusBody<'a> {
    api_version: &'a str,
    kind: &'a str,
    metadata: BodyMeta<'a>,
    status: &'a TFJobStatus,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BodyMeta<'a> {
    name: &'a str,
    namespace: &'a str,
    resource_version: &'a str,
}

/// What the pass reads of the stored job the write returns: its new resourceVersion (the
/// rest of the object is skipped unparsed; the watch brings the job itself).
#[derive(Deserialize)]
struct Written {
    metadata: WrittenMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenMeta {
    resource_version: Option<String>,
}

/// The JSON body of the status write.
fn body(job: &JobMeta<'_>, status: &TFJobStatus) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&StatusBody {
        api_version: &TFJob::api_version(&()),
        kind: &TFJob::kind(&()),
        metadata: BodyMeta {
            name: job.name,
            namespace: job.namespace,
            resource_version: job.resource_version,
        },
        status,
    })
}

/// `PUT .../tfjobs/{name}/status` with the resourceVersion the pass planned on.
async fn replace_status(
    shared: &Shared,
    job: &JobMeta<'_>,
    status: &TFJobStatus,
) -> Result<Written, Error> {
    let failed = |source| Error::WriteStatus {
        name: job.name.to_string(),
        source,
    };
    let body = body(job, status).map_err(|source| Error::Serialize {
        what: "status",
        source,
    })?;
    let mut request = kube::core::Request::new(TFJob::url_path(&(), Some(job.namespace)))
        .replace_subresource("status", job.name, &PostParams::default(), body)
        .map_err(|e| failed(kube::Error::BuildRequest(e)))?;
    // As kube's `Api::replace_status` marks it (the client's trace span is named after it).
    request.extensions_mut().insert("replace_status");
    shared.client.request(request).await.map_err(failed)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ObjectReference;
    use serde_json::{Value, json};

    use super::*;
    use crate::crd::{ConditionStatus, ConditionType, JobCondition};

    #[test]
    fn the_body_is_the_job_identity_and_the_status_and_the_answer_gives_the_new_version() {
        let job = JobMeta {
            name: "mnist",
            namespace: "ns",
            uid: "u1",
            resource_version: "41",
            deleting: false,
            status: None,
            created: None,
            reference: ObjectReference::default(),
        };
        let status = TFJobStatus {
            conditions: vec![JobCondition {
                type_: ConditionType::Created,
                status: ConditionStatus::True,
                reason: Some("TFJobCreated".into()),
                message: None,
                last_update_time: None,
                last_transition_time: None,
            }],
            ..TFJobStatus::default()
        };
        let sent: Value = serde_json::from_slice(&body(&job, &status).unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {"name": "mnist", "namespace": "ns", "resourceVersion": "41"},
                "status": serde_json::to_value(&status).unwrap(),
            })
        );
        let answer = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "resourceVersion": "42",
                "managedFields": [{"fieldsV1": {"f:status": {}}}]},
            "spec": {"tfReplicaSpecs": {}}, "status": sent["status"]});
        let written: Written = serde_json::from_value(answer).unwrap();
        assert_eq!(written.metadata.resource_version.as_deref(), Some("42"));
    }
}
