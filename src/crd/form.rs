//! Which form of TFJob a document is written in, and what `render`, the demo and the operator
//! say when they meet an older one (`convert` rewrites them, docs/behaviour.md §11). Pure.

use serde_json::Value;

/// The forms `convert` knows (docs/behaviour.md §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `kubeflow.org/v1` as this operator reads it.
    Current,
    /// `kubeflow.org/v1` with `cleanPodPolicy`, `ttlSecondsAfterFinished`,
    /// `activeDeadlineSeconds` or `backoffLimit` directly under `spec`: accepted as is.
    EarlyV1,
    /// `kubeflow.org/v1alpha2`, `v1beta1` or `v1beta2`: the map form with the run policy at the
    /// top of `spec`.
    KubeflowBeta(&'static str),
    /// tf-operator `v1alpha1`: `spec.replicaSpecs` as a list with `tfReplicaType`.
    V1Alpha1,
    /// T9k's `TensorFlowTrainingJob` (`batch.tensorstack.dev`): a list with `type`.
    T9k,
    /// Anything else (another kind): not a TFJob.
    Other,
}

const BETA_VERSIONS: [&str; 3] = ["v1alpha2", "v1beta1", "v1beta2"];

/// The early-v1 run-policy fields that sit directly under `spec`.
pub const EARLY_V1_FIELDS: [&str; 4] = [
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
];

/// Reads the form from `apiVersion`, `kind` and the shape of `spec`.
pub fn form(doc: &Value) -> Form {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("TFJob");
    let api = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api.split_once('/').unwrap_or(("", api));
    if kind == "TensorFlowTrainingJob" && group == "batch.tensorstack.dev" {
        return Form::T9k;
    }
    let tf_job = kind == "TFJob" || (kind == "TfJob" && group == "tensorflow.org");
    if !tf_job || !matches!(group, "kubeflow.org" | "tensorflow.org" | "") {
        return Form::Other;
    }
    if version == "v1alpha1" {
        return Form::V1Alpha1;
    }
    if let Some(v) = BETA_VERSIONS.iter().find(|v| **v == version) {
        return Form::KubeflowBeta(v);
    }
    let spec = doc.get("spec");
    if let Some(Value::Array(items)) = spec.and_then(|s| s.get("replicaSpecs")) {
        // Only the apiVersion was changed: the list decides which older form it was.
        return if items.iter().any(|i| i.get("type").is_some()) {
            Form::T9k
        } else {
            Form::V1Alpha1
        };
    }
    if EARLY_V1_FIELDS
        .iter()
        .any(|f| spec.and_then(|s| s.get(*f)).is_some())
    {
        return Form::EarlyV1;
    }
    Form::Current
}

impl Form {
    /// How the form is named in messages.
    pub fn describe(self) -> String {
        match self {
            Form::Current => "a kubeflow.org/v1 TFJob".into(),
            Form::EarlyV1 => {
                "an early kubeflow.org/v1 TFJob (run policy directly under spec)".into()
            }
            Form::KubeflowBeta(v) => format!("a kubeflow.org/{v} TFJob"),
            Form::V1Alpha1 => {
                "a tf-operator v1alpha1 TFJob (spec.replicaSpecs list with tfReplicaType)".into()
            }
            Form::T9k => "a T9k TensorFlowTrainingJob (spec.replicaSpecs list with type)".into(),
            Form::Other => "not a TFJob".into(),
        }
    }

    /// Whether `kubeflow.org/v1` cannot take the document as it is.
    pub fn needs_convert(self) -> bool {
        matches!(self, Form::KubeflowBeta(_) | Form::V1Alpha1 | Form::T9k)
    }
}

/// What `render` and the demo answer for a document `kubeflow.org/v1` cannot take: the form,
/// and the command that rewrites it. None for current, early-v1 and non-TFJob documents.
pub fn older_form_hint(doc: &Value) -> Option<String> {
    let f = form(doc);
    f.needs_convert().then(|| {
        format!(
            "this is {}, not kubeflow.org/v1: `tfjob-operator convert FILE` rewrites it \
             (and lists what has no kubeflow.org/v1 equivalent)",
            f.describe()
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn forms_by_api_version_kind_and_shape() {
        let cases = [
            (
                json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": {}}}),
                Form::Current,
            ),
            (json!({"spec": {"tfReplicaSpecs": {}}}), Form::Current),
            (
                json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"backoffLimit": 1}}),
                Form::EarlyV1,
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1beta1", "kind": "TFJob"}),
                Form::KubeflowBeta("v1beta1"),
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1alpha2", "kind": "TFJob"}),
                Form::KubeflowBeta("v1alpha2"),
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1beta2", "kind": "TFJob"}),
                Form::KubeflowBeta("v1beta2"),
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1alpha1", "kind": "TFJob"}),
                Form::V1Alpha1,
            ),
            (
                json!({"apiVersion": "tensorflow.org/v1alpha1", "kind": "TfJob"}),
                Form::V1Alpha1,
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"replicaSpecs": [{"tfReplicaType": "MASTER"}]}}),
                Form::V1Alpha1,
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"replicaSpecs": [{"type": "worker"}]}}),
                Form::T9k,
            ),
            (
                json!({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TensorFlowTrainingJob"}),
                Form::T9k,
            ),
            (
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim"}),
                Form::Other,
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}),
                Form::Other,
            ),
        ];
        for (doc, want) in cases {
            assert_eq!(form(&doc), want, "{doc}");
        }
    }

    #[test]
    fn hints_only_for_what_v1_cannot_take() {
        let beta = json!({"apiVersion": "kubeflow.org/v1beta1", "kind": "TFJob"});
        assert_eq!(
            older_form_hint(&beta).unwrap(),
            "this is a kubeflow.org/v1beta1 TFJob, not kubeflow.org/v1: `tfjob-operator convert FILE` \
             rewrites it (and lists what has no kubeflow.org/v1 equivalent)"
        );
        let early = json!({"spec": {"cleanPodPolicy": "None", "tfReplicaSpecs": {}}});
        assert_eq!(older_form_hint(&early), None);
    }
}
