//! Validation of a pod template's containers (docs/behaviour.md §3): at least one, each with an
//! image, exactly one named `tensorflow`. Run once, when the template is read
//! (`crd::template`); validation reports the findings under the replica type. Pure.

use k8s_openapi::api::core::v1::PodSpec;

use crate::crd::field_error::FieldError;
use crate::crd::tensorflow::TF_CONTAINER;

/// What validation finds in a template's containers (none, one without an image, no or two
/// `tensorflow` containers), paths from the template (`spec.containers[0].image`).
pub fn container_problems(pod: Option<&PodSpec>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    validate_containers("spec.containers", pod, &mut errors);
    errors
}

fn validate_containers(path: &str, pod: Option<&PodSpec>, errors: &mut Vec<FieldError>) {
    let containers = pod.map(|p| p.containers.as_slice()).unwrap_or_default();
    if containers.is_empty() {
        errors.push(FieldError::new(path, "Required value"));
        return;
    }
    for (i, c) in containers.iter().enumerate() {
        if c.image.as_deref().is_none_or(|img| img.trim().is_empty()) {
            errors.push(FieldError::new(
                format!("{path}[{i}].image"),
                "Required value",
            ));
        }
    }
    let tf: Vec<usize> = containers
        .iter()
        .enumerate()
        .filter(|(_, c)| c.name == TF_CONTAINER)
        .map(|(i, _)| i)
        .collect();
    match tf.as_slice() {
        [] => errors.push(FieldError::new(
            path,
            format!("Required value: one container must be named \"{TF_CONTAINER}\""),
        )),
        [_] => {}
        [_, rest @ ..] => {
            for i in rest {
                errors.push(FieldError::new(
                    format!("{path}[{i}].name"),
                    format!("Duplicate value: \"{TF_CONTAINER}\""),
                ));
            }
        }
    }
}
