//! What the caches and the watch bookkeeping read of any watched object: its place, uid,
//! resourceVersion, job label and controlling TFJob. Implemented by the flat children and,
//! through `kube::Resource`, by every k8s object (the TFJob cache, tests). Pure.

use kube::Resource;

use super::{ChildPod, ChildService};
use crate::crd::labels::LABEL_JOB_NAME;

/// The identity of a watched object.
pub trait Identity {
    fn name(&self) -> &str;
    fn namespace(&self) -> Option<&str>;
    fn uid(&self) -> Option<&str>;
    fn resource_version(&self) -> Option<&str>;
    /// Its job-name label, empty without.
    fn job_label(&self) -> &str;
    /// The name of the TFJob (`kubeflow.org/v1`) that controls it, if one does.
    fn controlling_tfjob(&self) -> Option<&str>;
}

impl<K: Resource> Identity for K {
    fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or_default()
    }
    fn namespace(&self) -> Option<&str> {
        self.meta().namespace.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.meta().uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.meta().resource_version.as_deref()
    }
    fn job_label(&self) -> &str {
        let labels = self.meta().labels.as_ref();
        labels
            .and_then(|l| l.get(LABEL_JOB_NAME))
            .map(String::as_str)
            .unwrap_or_default()
    }
    fn controlling_tfjob(&self) -> Option<&str> {
        let owners = self.meta().owner_references.as_deref()?;
        let owner = owners.iter().find(|o| {
            o.controller == Some(true) && o.kind == TFJOB_KIND && o.api_version == TFJOB_API
        })?;
        Some(&owner.name)
    }
}

/// The kind and apiVersion of a controller reference to a TFJob.
pub const TFJOB_KIND: &str = "TFJob";
pub const TFJOB_API: &str = "kubeflow.org/v1";

macro_rules! flat_identity {
    ($t:ty) => {
        impl Identity for $t {
            fn name(&self) -> &str {
                &self.name
            }
            fn namespace(&self) -> Option<&str> {
                Some(&*self.namespace).filter(|ns| !ns.is_empty())
            }
            fn uid(&self) -> Option<&str> {
                self.uid.as_deref()
            }
            fn resource_version(&self) -> Option<&str> {
                self.resource_version.as_deref()
            }
            fn job_label(&self) -> &str {
                &self.job
            }
            fn controlling_tfjob(&self) -> Option<&str> {
                let owner = self.owner.as_ref().filter(|o| o.tfjob)?;
                Some(&owner.name)
            }
        }
    };
}

flat_identity!(ChildPod);
flat_identity!(ChildService);
