//! What the Kueue side reads from the cluster when it needs it, once per Workload made or
//! admitted: the admitted ResourceFlavors and the priority classes. Reads only. I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;

use super::plan::admission;
use super::plan::build::{self, Priority, PrioritySource};
use super::plan::job::JobFacts;
use super::plan::workload::{FlavorSpec, GROUP, PriorityClassRef, VERSION, Workload};
use crate::error::Error;

fn kueue_api(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, kind);
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

fn failed(action: &'static str, name: &str) -> impl FnOnce(kube::Error) -> Error {
    let name = name.to_string();
    move |source| Error::Kueue {
        action,
        name,
        source,
    }
}

/// The node labels and tolerations of each ResourceFlavor the Workload was admitted to.
pub async fn flavors(client: &Client, w: &Workload) -> Result<BTreeMap<String, FlavorSpec>, Error> {
    let api = kueue_api(client, "ResourceFlavor", "resourceflavors");
    let mut flavors = BTreeMap::new();
    for name in admission::flavor_names(w) {
        let flavor = api
            .get(&name)
            .await
            .map_err(failed("reading ResourceFlavor", &name))?;
        let spec = serde_json::from_value(flavor.data["spec"].clone()).unwrap_or_default();
        flavors.insert(name, spec);
    }
    Ok(flavors)
}

/// The job's priority from the first source that applies (`ExtractPriority`); a named class
/// that does not exist is an error, as in Kueue (the job waits for it).
pub async fn priority(client: &Client, job: &JobFacts) -> Result<Priority, Error> {
    match build::priority_source(job) {
        PrioritySource::WorkloadClass(name) => {
            let api = kueue_api(client, "WorkloadPriorityClass", "workloadpriorityclasses");
            let class = api
                .get(&name)
                .await
                .map_err(failed("reading WorkloadPriorityClass", &name))?;
            let value = class.data["value"].as_i64().unwrap_or(0);
            Ok(Priority {
                class: Some(PriorityClassRef::workload(&name)),
                value: i32::try_from(value).unwrap_or(0),
            })
        }
        PrioritySource::PodClass(name) => {
            let api: Api<PriorityClass> = Api::all(client.clone());
            let class = api
                .get(&name)
                .await
                .map_err(failed("reading PriorityClass", &name))?;
            Ok(Priority {
                class: Some(PriorityClassRef::pod(&name)),
                value: class.value,
            })
        }
        PrioritySource::Default => {
            let api: Api<PriorityClass> = Api::all(client.clone());
            let classes = api
                .list(&Default::default())
                .await
                .map_err(failed("listing PriorityClasses", ""))?;
            let default = classes
                .items
                .into_iter()
                .filter(|c| c.global_default == Some(true))
                .min_by_key(|c| c.value);
            Ok(default
                .map(|c| Priority {
                    class: Some(PriorityClassRef::pod(
                        c.metadata.name.as_deref().unwrap_or_default(),
                    )),
                    value: c.value,
                })
                .unwrap_or_default())
        }
    }
}
