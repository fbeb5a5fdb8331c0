//! `tfjob-operator convert`: TFJob manifests of older forms rewritten as `kubeflow.org/v1`
//! (docs/behaviour.md §11) — tf-operator `v1alpha1`, Kubeflow `v1alpha2`/`v1beta1`/`v1beta2`
//! and early `v1`, T9k's `TensorFlowTrainingJob`. Each converted document carries, as YAML
//! comments, every change made and everything dropped with the reason. Pure: text in, text out.

mod cleanup;
mod map_form;
mod notes;
mod replica;
mod t9k;
mod v1alpha1;
mod yaml;

use serde_json::{Value, json};

pub use crate::crd::form::{Form, form, older_form_hint};
pub use notes::{Note, Notes};
pub use v1alpha1::DEFAULT_TF_IMAGE;

/// The converted manifest and one summary line per document.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversion {
    /// The documents as YAML, separated by `---`.
    pub yaml: String,
    /// `<source>: document 1: kubeflow.org/v1beta1 TFJob "x": converted, 2 notes to check`.
    pub summary: Vec<String>,
    /// Notes asking for a look, over all documents.
    pub checks: usize,
}

/// One document converted, with its notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Converted {
    pub doc: Value,
    pub from: Form,
    pub notes: Notes,
}

/// Converts every document of a (multi-document) manifest; documents of other kinds pass
/// through unchanged, so the output can be applied as a whole. Any document that cannot be
/// converted fails the whole input, every problem listed (`document N: ...` with several).
pub fn convert(text: &str, source: &str) -> Result<Conversion, Vec<String>> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| vec![format!("invalid YAML: {e}")])?;
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if docs.is_empty() {
        return Err(vec!["no document in the input".into()]);
    }
    let many = docs.len() > 1;
    let mut out = Vec::new();
    let mut summary = Vec::new();
    let mut errors = Vec::new();
    let mut checks = 0;
    for (n, doc) in docs.into_iter().enumerate() {
        let place = format!("{source}, document {}", n + 1);
        let prefix = if many {
            format!("document {}: ", n + 1)
        } else {
            String::new()
        };
        match convert_document(doc) {
            Ok(c) => {
                let (text, line) = render_document(&c, &place);
                checks += c.notes.checks();
                match text {
                    Ok(text) => out.push(text),
                    Err(e) => errors.push(format!("{prefix}{e}")),
                }
                summary.push(format!("{place}: {line}"));
            }
            Err(e) => errors.push(format!("{prefix}{e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Conversion {
        yaml: out.join("---\n"),
        summary,
        checks,
    })
}

/// One document in `kubeflow.org/v1` form; other kinds unchanged.
pub fn convert_document(mut doc: Value) -> Result<Converted, String> {
    let from = form(&doc);
    let mut notes = Notes::default();
    if from == Form::Other {
        return Ok(Converted { doc, from, notes });
    }
    let old_type = format!(
        "{} {}",
        doc.get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("(no apiVersion)"),
        doc.get("kind").and_then(Value::as_str).unwrap_or("TFJob")
    );
    cleanup::strip_server_fields(&mut doc, &mut notes);
    let Some(obj) = doc.as_object_mut() else {
        return Err("not an object".into());
    };
    let mut spec = match obj.remove("spec") {
        Some(Value::Object(spec)) => spec,
        _ => return Err("spec: Required value".into()),
    };
    match from {
        Form::V1Alpha1 => v1alpha1::convert(&mut spec, &mut notes)?,
        Form::T9k => t9k::convert(&mut spec, &mut notes)?,
        _ => map_form::convert(&mut spec, &mut notes)?,
    }
    obj.insert("spec".into(), Value::Object(spec));
    if old_type != "kubeflow.org/v1 TFJob" {
        notes.changed(format!("{old_type} -> kubeflow.org/v1 TFJob"));
    }
    obj.insert("apiVersion".into(), json!("kubeflow.org/v1"));
    obj.insert("kind".into(), json!("TFJob"));
    Ok(Converted { doc, from, notes })
}

/// The document's YAML with its comment block, and its summary line.
fn render_document(c: &Converted, place: &str) -> (Result<String, String>, String) {
    let name = c
        .doc
        .pointer("/metadata/name")
        .or_else(|| c.doc.pointer("/metadata/generateName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let yaml = yaml::to_yaml(&c.doc);
    if c.from == Form::Other {
        let kind = c.doc.get("kind").and_then(Value::as_str).unwrap_or("?");
        return (
            yaml,
            format!("kind {kind} {name:?}: not a TFJob, unchanged"),
        );
    }
    let what = format!("{} {name:?}", c.from.describe());
    let checks = match c.notes.checks() {
        0 => String::new(),
        1 => ", 1 note to check".into(),
        n => format!(", {n} notes to check"),
    };
    let changes = c.notes.0.len() - c.notes.checks();
    let (heading, line) = if changes == 0 {
        (
            format!("Already kubeflow.org/v1, checked by `tfjob-operator convert` ({place})."),
            format!("{what}: already kubeflow.org/v1, unchanged{checks}"),
        )
    } else {
        (
            format!(
                "Converted by `tfjob-operator convert` from {} ({place}).",
                c.from.describe()
            ),
            format!("{what}: converted, {} notes{checks}", c.notes.0.len()),
        )
    };
    if c.notes.0.is_empty() {
        return (yaml, line);
    }
    (yaml.map(|y| c.notes.comment(&heading) + &y), line)
}

#[cfg(test)]
mod tests;
