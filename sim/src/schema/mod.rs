//! CRD schemas: the structural check at CRD creation and, on every write of a custom object,
//! pruning, defaulting, OpenAPI validation and CEL rules, in the real server's order (pure).
//!
//! Order per write, as in the apiextensions-apiserver: prune unknown fields → apply defaults
//! (and drop non-nullable nulls) → OpenAPI value validation → `x-kubernetes-validations`, the
//! latter skipped with one extra cause when the object already has type or enum errors.

mod cause;
mod cel;
mod defaults;
mod format;
mod node;
pub(crate) mod prune;
mod structural;
mod validate;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub use cause::Cause;

/// Where `compile` reports schema errors: the first version of an apiextensions.k8s.io/v1 CRD.
pub const DEFAULT_SCHEMA_PATH: &str = "spec.versions[0].schema.openAPIV3Schema";

/// A CRD version's `openAPIV3Schema`, checked and ready for writes.
#[derive(Debug)]
pub struct CompiledSchema {
    root: node::Node,
}

impl CompiledSchema {
    /// Err = why the schema is not structural (CRD create answers 422 with these). Field paths
    /// start at [`DEFAULT_SCHEMA_PATH`]; use [`CompiledSchema::compile_at`] for other versions.
    pub fn compile(open_api_v3_schema: &Value) -> Result<Self, Vec<Cause>> {
        Self::compile_at(open_api_v3_schema, DEFAULT_SCHEMA_PATH)
    }

    /// Like [`CompiledSchema::compile`], with cause field paths under `path` (for example
    /// `spec.versions[1].schema.openAPIV3Schema`).
    pub fn compile_at(open_api_v3_schema: &Value, path: &str) -> Result<Self, Vec<Cause>> {
        let errs = structural::check(open_api_v3_schema, path);
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(CompiledSchema {
            root: node::Node::parse(open_api_v3_schema),
        })
    }

    /// Drop the fields the schema does not declare from `obj` (what the real server's decoder
    /// does); returns one `unknown field "<path>"` per dropped field, the text of its strict
    /// decoding errors and `Warning` headers.
    pub fn prune_unknown(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(&self.root, obj)
    }

    /// On every write of a custom object: prune, default, validate, run CEL (transition rules
    /// only when `old` is Some). Mutates `obj` in place.
    pub fn admit(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), Vec<Cause>> {
        self.admit_with_warnings(obj, old).map(|_warnings| ())
    }

    /// [`CompiledSchema::admit`], also returning the warnings the real server sends in
    /// `Warning` headers for pruned fields (`unknown field "spec.foo"`).
    pub fn admit_with_warnings(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<Vec<String>, Vec<Cause>> {
        let warnings = prune::prune(&self.root, obj);
        defaults::apply(&self.root, obj);
        let mut errs = Vec::new();
        validate::validate(&self.root, obj, "", &mut errs);
        let blocking = errs
            .iter()
            .any(|c| c.reason == "FieldValueTypeInvalid" || c.reason == "FieldValueNotSupported");
        if blocking {
            errs.push(Cause {
                field: "<nil>".into(),
                message: "Invalid value: null: some validation rules were not checked because the \
                          object was invalid; correct the existing errors to complete validation"
                    .into(),
                reason: "FieldValueInvalid".into(),
            });
        } else {
            // The old object went through admission when it was written; default it again so
            // transition rules compare like with like after a schema change.
            let old = old.map(|o| {
                let mut o = o.clone();
                defaults::apply(&self.root, &mut o);
                o
            });
            cel::evaluate(&self.root, obj, old.as_ref(), "", &mut errs);
        }
        if errs.is_empty() {
            Ok(warnings)
        } else {
            Err(errs)
        }
    }
}
