//! kubectl fidelity, behind one door: what `kubectl` needs beyond the API every client uses —
//! `meta.k8s.io/v1` Tables for `kubectl get` (printer columns, JSONPath), the OpenAPI documents
//! `kubectl apply` reads first, strategic merge patch and server-side apply with managed fields.
//! Pure, no I/O. The core calls only this file.
//!
//! Built with the cargo feature `kubectl` (on by default; the operator's tests and demo ask for
//! it). Without it the core still builds and serves every other request, and a request for one
//! of these answers a Status naming what is missing (406 for a Table, 415 for the two patch
//! types, 404 for the OpenAPI documents) instead of a wrong answer.
// Each function below returns from its feature branch; without the feature its arguments go
// unused (the proof that would allow the call cannot exist).
#![allow(clippy::needless_return)]
#![cfg_attr(not(feature = "kubectl"), allow(unused_variables))]

#[cfg(feature = "kubectl")]
mod apply;
#[cfg(feature = "kubectl")]
mod jsonpath;
#[cfg(feature = "kubectl")]
mod openapi;
#[cfg(feature = "kubectl")]
mod strategic;
#[cfg(feature = "kubectl")]
mod table;

use serde_json::Value;

use crate::patch::PatchError;
use crate::store::{ApiError, Registry, ResourceType};

#[cfg(feature = "kubectl")]
type Built = ();
/// Without the feature no [`Kubectl`] can exist, so the calls below cannot be reached.
#[cfg(not(feature = "kubectl"))]
type Built = std::convert::Infallible;

/// The sentence a Status carries when `what` is asked for and [`Kubectl::built`] is None.
pub(crate) fn left_out(what: &str) -> String {
    format!("tfjob-sim: {what} is kubectl's, left out of this build (cargo feature `kubectl`)")
}

/// Proof that kubectl's capabilities are built in: only [`Kubectl::built`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kubectl(Built);

impl Kubectl {
    /// The capabilities, if this build has them.
    pub(crate) fn built() -> Option<Kubectl> {
        #[cfg(feature = "kubectl")]
        return Some(Kubectl(()));
        #[cfg(not(feature = "kubectl"))]
        None
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
        #[cfg(feature = "kubectl")]
        return table::table(
            &rt.kind,
            objects,
            rt.columns
                .get(version)
                .filter(|c| !c.is_empty())
                .map(Vec::as_slice),
            include,
            list_meta,
            jiff::Timestamp::now(),
        );
        #[cfg(not(feature = "kubectl"))]
        match self.0 {}
    }

    /// `/openapi/v2` in the media type `accept` asks for (None = 406).
    pub(crate) fn openapi_v2(self, accept: &str) -> Option<(&'static str, Vec<u8>)> {
        #[cfg(feature = "kubectl")]
        return openapi::openapi_v2(accept);
        #[cfg(not(feature = "kubectl"))]
        match self.0 {}
    }

    /// `/openapi/v3`: one entry per group-version.
    pub(crate) fn openapi_v3_root(self, reg: &Registry, hash: u64) -> Value {
        #[cfg(feature = "kubectl")]
        return openapi::openapi_v3_root(reg, hash);
        #[cfg(not(feature = "kubectl"))]
        match self.0 {}
    }

    /// `/openapi/v3/<api/v1 | apis/g/v>` (None = nothing served there).
    pub(crate) fn openapi_v3_group_version(self, reg: &Registry, gv_path: &str) -> Option<Value> {
        #[cfg(feature = "kubectl")]
        return openapi::openapi_v3_group_version(reg, gv_path);
        #[cfg(not(feature = "kubectl"))]
        match self.0 {}
    }

    /// A strategic merge patch of a built-in `kind`, applied to `target` in place.
    pub(crate) fn strategic_merge(
        self,
        target: &mut Value,
        patch: &Value,
        kind: &str,
    ) -> Result<(), PatchError> {
        #[cfg(feature = "kubectl")]
        return strategic::strategic_merge(target, patch, kind);
        #[cfg(not(feature = "kubectl"))]
        match self.0 {}
    }

    /// The body of an apply patch: YAML (or JSON, which is YAML); 400 if it does not parse.
    pub(crate) fn apply_body(self, body: &[u8]) -> Result<Value, ApiError> {
        #[cfg(feature = "kubectl")]
        return apply::parse_body(body);
        #[cfg(not(feature = "kubectl"))]
        match self.0 {}
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
        #[cfg(feature = "kubectl")]
        return apply::server_side_apply(existing, applied, manager, is_builtin, kind, force, now);
        #[cfg(not(feature = "kubectl"))]
        match self.0 {}
    }
}
