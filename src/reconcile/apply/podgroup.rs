//! Applying the pass's PodGroup decision: create, patch or delete the job's PodGroup, and
//! say so in the job's events. I/O.

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::events::EventType;
use serde_json::Value;

use super::events::record;
use super::{Deleted, Target, delete_exactly, refused};
use crate::error::Error;
use crate::reconcile::build::gang::Gang;
use crate::reconcile::plan::model::GroupAction;

/// Carries out `action`. Ok means the job's PodGroup is as the pass wants it (or is being
/// left alone), so its pods may be created; an error says why not, in the job's words.
pub async fn write(t: &Target<'_>, action: &GroupAction) -> Result<(), Error> {
    let Some(api) = &t.podgroups else {
        return Ok(());
    };
    match action {
        GroupAction::None => Ok(()),
        GroupAction::Wait => Err(Error::CachesNotSynced),
        GroupAction::CrdMissing { crd } => {
            let error = Error::PodGroupCrdMissing {
                name: job_name(t),
                crd: crd.clone(),
            };
            Err(refused(t, error).await)
        }
        GroupAction::Invalid(message) => {
            let error = Error::PodGroupInvalid {
                name: job_name(t),
                message: message.clone(),
            };
            Err(refused(t, error).await)
        }
        GroupAction::Create(group) => create(t, api, group).await,
        GroupAction::Patch { name, patch } => {
            let params = PatchParams::default();
            match api.patch(name, &params, &Patch::Merge(patch)).await {
                Ok(_) => {
                    let note = format!("Updated PodGroup: {name}");
                    record(t, EventType::Normal, "SuccessfulUpdatePodGroup", note).await;
                    Ok(())
                }
                Err(source) => Err(Error::PatchPodGroup {
                    name: name.clone(),
                    source,
                }),
            }
        }
        GroupAction::Delete(d) => match delete_exactly(api, d).await {
            Ok(Deleted::Yes) => {
                let note = format!("Deleted PodGroup: {}", d.name);
                record(t, EventType::Normal, "SuccessfulDeletePodGroup", note).await;
                Ok(())
            }
            Ok(Deleted::Changed) => Err(Error::ChildChanged {
                name: d.name.clone(),
            }),
            Err(source) => Err(Error::DeletePodGroup {
                name: d.name.clone(),
                source,
            }),
        },
    }
}

async fn create(
    t: &Target<'_>,
    api: &kube::Api<DynamicObject>,
    group: &Value,
) -> Result<(), Error> {
    let name = group["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let object: DynamicObject =
        serde_json::from_value(group.clone()).map_err(|source| Error::Serialize {
            what: "PodGroup",
            source,
        })?;
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => {
            let note = format!("Created PodGroup: {name}");
            record(t, EventType::Normal, "SuccessfulCreatePodGroup", note).await;
            Ok(())
        }
        // Created by an earlier pass the cache does not show yet: its event brings it.
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => Ok(()),
        // The CRD went away since the cache listed (its watch will say so too).
        Err(kube::Error::Api(s)) if s.code == 404 => {
            let crd = t.gang.map(Gang::crd_name).unwrap_or_default();
            Err(refused(t, Error::PodGroupCrdMissing { name, crd }).await)
        }
        Err(source) => Err(refused(t, Error::CreatePodGroup { name, source }).await),
    }
}

fn job_name(t: &Target<'_>) -> String {
    t.job_ref.name.clone().unwrap_or_default()
}
