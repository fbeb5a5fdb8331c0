//! The CRD, generated from the types and refined (CEL rules, short template schema). Pure.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The TFJob CRD exactly as committed under `crds/`.
pub fn crd() -> CustomResourceDefinition {
    todo!()
}

/// `crd()` as YAML, as `tfjob-operator crd` prints it.
pub fn crd_yaml() -> String {
    todo!()
}
