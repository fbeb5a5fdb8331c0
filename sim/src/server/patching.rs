//! PATCH requests: choose the patch flavour from the content type and apply it atomically to
//! the stored object through the patch module (no I/O besides the response).
use http::{Response, header};
use serde_json::{Value, json};

use super::field_validation::{self, Directive};
use super::respond::{self, Body};
use super::target::{Req, Target, parse_json};
use crate::kubectl::{self, Kubectl};
use crate::patch::{self, PatchError};
use crate::store::{ApiError, meta};

const JSON: &str = "application/json-patch+json";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavour {
    Json,
    Merge,
    /// kubectl's two, served when built in.
    Strategic(Kubectl),
    Apply(Kubectl),
}

fn flavour(req: &Req<'_>, t: &Target) -> Result<Flavour, ApiError> {
    let ct = req
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // As the real server lists them: strategic merge only for built-in kinds.
    let mut accepted = vec![JSON, MERGE];
    if Kubectl::built().is_some() {
        accepted.push(APPLY);
        if t.rt.builtin {
            accepted.push(STRATEGIC);
        }
    }
    let kubectl = |what: &str| {
        Kubectl::built()
            .ok_or_else(|| ApiError::new(415, "UnsupportedMediaType", kubectl::left_out(what)))
    };
    match ct.split(';').next().unwrap_or("").trim() {
        JSON => Ok(Flavour::Json),
        MERGE => Ok(Flavour::Merge),
        STRATEGIC if t.rt.builtin => Ok(Flavour::Strategic(kubectl(
            "strategic merge patch (application/strategic-merge-patch+json)",
        )?)),
        APPLY => Ok(Flavour::Apply(kubectl(
            "server-side apply (application/apply-patch+yaml)",
        )?)),
        _ => Err(ApiError::unsupported_media(&accepted.join(", "))),
    }
}

fn patch_error(e: PatchError) -> ApiError {
    let code = e.http_code();
    let reason = match code {
        400 => "BadRequest",
        409 => "Conflict",
        415 => "UnsupportedMediaType",
        _ => "Invalid",
    };
    ApiError::new(code, reason, e.to_string())
}

pub(super) fn patch(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let fl = flavour(req, t)?;
    let apply = match fl {
        Flavour::Apply(k) => Some(k),
        _ => None,
    };
    let body = match apply {
        Some(k) => k.apply_body(&req.body)?,
        None => parse_json(&req.body)?,
    };
    let manager = req.query.get("fieldManager").unwrap_or("").to_string();
    if apply.is_some() && manager.is_empty() {
        let cause = (
            "fieldManager".to_string(),
            "FieldValueRequired".to_string(),
            "Required value: is required for apply patch".to_string(),
        );
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &[cause],
        ));
    }
    // Server-side apply is left out: its unknown fields are the field manager's business.
    let directive = field_validation::directive(req.query, "PatchOptions")?;
    let mut warnings = Vec::new();
    let force = req.query.flag("force");
    let (group, plural, name) = (
        t.rt.group.clone(),
        t.rt.plural.clone(),
        t.name().to_string(),
    );
    let mut opts = t.write_options(req.query);
    let opts_sub_is_status = opts.sub == crate::store::Sub::Status;
    opts.unconditional = true;
    let out = req.state.store.write(&t.st, &t.ns, &name, &opts, |cur| {
        let now = meta::format_time(jiff::Timestamp::now());
        let server_side_apply = |k: Kubectl, existing: Option<&Value>| {
            let (builtin, kind) = (t.rt.builtin, &t.rt.kind);
            k.server_side_apply(existing, &body, &manager, builtin, kind, force, &now)
                .map_err(patch_error)
        };
        let Some(cur) = cur else {
            return match apply {
                Some(k) if !opts_sub_is_status => {
                    let mut created = server_side_apply(k, None)?;
                    created["metadata"]["name"] = json!(name);
                    Ok(t.to_storage(created))
                }
                _ => Err(ApiError::not_found(&group, &plural, &name)),
            };
        };
        let mut obj = t.present(cur);
        match fl {
            Flavour::Merge => patch::merge_patch(&mut obj, &body),
            Flavour::Json => patch::json_patch(&mut obj, &body).map_err(patch_error)?,
            Flavour::Strategic(k) => k
                .strategic_merge(&mut obj, &body, &t.rt.kind)
                .map_err(patch_error)?,
            Flavour::Apply(k) => obj = server_side_apply(k, Some(&obj))?,
        }
        if apply.is_none() {
            let patched = obj.clone();
            // A merge or strategic patch is shaped like the object: a key it gives twice is
            // reported at the object's path. (JSON patches: not checked, see README.)
            let mut strict = match fl {
                Flavour::Merge | Flavour::Strategic(_) => field_validation::duplicates(&req.body),
                _ => Vec::new(),
            };
            strict.extend(field_validation::prune_unknown(&t.rt, &t.version, &mut obj));
            if directive == Directive::Strict && !strict.is_empty() {
                return Err(field_validation::patch_error(&patched, &strict));
            }
            warnings = field_validation::warnings(directive, strict);
        }
        Ok(t.to_storage(obj))
    })?;
    Ok(respond::with_warnings(
        respond::json(200, &t.present(&out)),
        &warnings,
    ))
}
