//! kubectl fidelity, behind one door: what `kubectl` needs beyond the API every client uses —
//! `meta.k8s.io/v1` Tables for `kubectl get` (printer columns, JSONPath), the OpenAPI documents
//! `kubectl apply` reads first, strategic merge patch and server-side apply with managed fields.
//! Pure, no I/O. The core calls only this file.

mod apply;
mod jsonpath;
mod openapi;
mod strategic;
mod table;

use serde_json::Value;

use crate::patch::PatchError;
use crate::store::{ApiError, Registry, ResourceType};

/// The sentence a Status carries when `what` is asked for and [`Kubectl::built`] is None.
pub(crate) fn left_out(what: &str) -> String {
    format!("tfjob-sim: {what} is kubectl's, left out of this build")
}

/// Proof that kubectl's capabilities are built in: only [`Kubectl::built`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kubectl(());

impl Kubectl {
    /// The capabilities, if this build has them.
    pub(crate) fn built() -> Option<Kubectl> {
        Some(Kubectl(()))
    }

    /// The Table of `objects` of `rt` served at `version` (its CRD printer columns, or the
    /// built-in printer of its kind); `include` = the `includeObject` query.
    pub(crate) fn table(
        self,
        rt: &ResourceType,
        version: &str,
        objects: &[Value],
        include: &str,
        list_meta: Value,
    ) -> Value {
        table::table(
            &rt.kind,
            objects,
            rt.columns
                .get(version)
                .filter(|c| !c.is_empty())
                .map(Vec::as_slice),
            include,
            list_meta,
            jiff::Timestamp::now(),
        )
    }

    /// `/openapi/v2` in the media type `accept` asks for (None = 406).
    pub(crate) fn openapi_v2(self, accept: &str) -> Option<(&'static str, Vec<u8>)> {
        openapi::openapi_v2(accept)
    }

    /// `/openapi/v3`: one entry per group-version.
    pub(crate) fn openapi_v3_root(self, reg: &Registry, hash: u64) -> Value {
        openapi::openapi_v3_root(reg, hash)
    }

    /// `/openapi/v3/<api/v1 | apis/g/v>` (None = nothing served there).
    pub(crate) fn openapi_v3_group_version(self, reg: &Registry, gv_path: &str) -> Option<Value> {
        openapi::openapi_v3_group_version(reg, gv_path)
    }

    /// A strategic merge patch of a built-in `kind`, applied to `target` in place.
    pub(crate) fn strategic_merge(
        self,
        target: &mut Value,
        patch: &Value,
        kind: &str,
    ) -> Result<(), PatchError> {
        strategic::strategic_merge(target, patch, kind)
    }

    /// The body of an apply patch: YAML (or JSON, which is YAML); 400 if it does not parse.
    pub(crate) fn apply_body(self, body: &[u8]) -> Result<Value, ApiError> {
        apply::parse_body(body)
    }

    /// Server-side apply of `applied` by `manager` onto `existing` (None = create).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn server_side_apply(
        self,
        existing: Option<&Value>,
        applied: &Value,
        manager: &str,
        is_builtin: bool,
        kind: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, PatchError> {
        apply::server_side_apply(existing, applied, manager, is_builtin, kind, force, now)
    }
}
