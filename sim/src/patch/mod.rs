//! The PATCH mechanisms every client may use, over stored JSON objects: JSON merge patch
//! (`application/merge-patch+json`, RFC 7386, the `json-patch` crate's `merge`) and JSON patch
//! (`application/json-patch+json`, with kube-apiserver's quirks). Strategic merge and
//! server-side apply are kubectl's, in `crate::kubectl`. Pure, no I/O.

mod error;
mod json;

pub(crate) use error::PatchError;
pub(crate) use json::json_patch;

/// Applies a JSON merge patch to `target` in place: objects merge recursively, `null` deletes a
/// member, any other value (arrays included) replaces.
pub(crate) fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    json_patch::merge(target, patch);
}
