//! `tfjob-operator render`: the children a TFJob would get, as a YAML stream. Pure: takes
//! the manifest text, returns the output text or the problems found.

use k8s_openapi::api::core::v1::{Pod, Service};
use serde::Serialize;

use crate::crd::TFJob;
use crate::crd::defaults::with_defaults;
use crate::crd::validation::{parse_tfjob, validate};
use crate::reconcile::desired::{pod, service, template_sets_restart_policy};
use crate::reconcile::labels::job_name;

/// Suffix standing in for the random one the API server appends to `generateName`.
pub const GENERATED_SUFFIX: &str = "xxxxx";

#[derive(Serialize)]
#[serde(untagged)]
enum Child {
    Pod(Box<Pod>),
    Service(Box<Service>),
}

/// Render every TFJob of a (multi-document) YAML manifest: for each replica, its Pod then
/// its Service. Documents of other kinds are skipped. Any problem in any job fails the
/// whole render, listing every problem (prefixed by the document when there are several).
pub fn render(yaml: &str, cluster_domain: Option<&str>) -> Result<String, Vec<String>> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(yaml).map_err(|e| vec![format!("invalid YAML: {e}")])?;
    let docs: Vec<_> = docs.into_iter().filter(|d| !d.is_null()).collect();
    let many = docs.len() > 1;
    let mut notes = String::new();
    let mut children = Vec::new();
    let mut errors = Vec::new();
    for (n, doc) in docs.into_iter().enumerate() {
        let kind = doc
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("TFJob")
            .to_string();
        if kind != "TFJob" {
            notes.push_str(&format!("# skipped document {}: kind {kind}\n", n + 1));
            continue;
        }
        let prefix = if many {
            format!("document {}: ", n + 1)
        } else {
            String::new()
        };
        match job_children(doc, cluster_domain, &mut notes) {
            Ok(mut c) => children.append(&mut c),
            Err(problems) => errors.extend(problems.into_iter().map(|p| format!("{prefix}{p}"))),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if children.is_empty() {
        return Err(vec!["no TFJob in the input".to_string()]);
    }
    let stream = serde_saphyr::to_string_multiple(&children).map_err(|e| vec![e.to_string()])?;
    Ok(notes + &stream)
}

fn job_children(
    doc: serde_json::Value,
    cluster_domain: Option<&str>,
    notes: &mut String,
) -> Result<Vec<Child>, Vec<String>> {
    let mut job = parse_tfjob(doc).map_err(|e| vec![e.to_string()])?;
    if job.metadata.name.as_deref().unwrap_or_default().is_empty()
        && let Some(prefix) = job.metadata.generate_name.clone()
    {
        let name = format!("{prefix}{GENERATED_SUFFIX}");
        notes.push_str(&format!(
            "# metadata.generateName {prefix:?}: rendered as {name:?}; the API server picks the real suffix\n"
        ));
        job.metadata.name = Some(name);
    }
    validate(&job).map_err(|errs| errs.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    if template_sets_restart_policy(&job) {
        // The operator reports this once per job as a `SetPodTemplateRestartPolicy` Warning.
        notes.push_str(&format!(
            "# {}: a template sets restartPolicy; the replica's restartPolicy (default Never) replaces it\n",
            job_name(&job)
        ));
    }
    job.spec = with_defaults(&job.spec);
    Ok(children_of(&job, cluster_domain))
}

fn children_of(job: &TFJob, cluster_domain: Option<&str>) -> Vec<Child> {
    let mut out = Vec::new();
    for (t, spec) in job.spec.tf_replica_specs.iter() {
        for i in 0..spec.replicas.unwrap_or_default() {
            out.push(Child::Pod(Box::new(pod(job, t, i, cluster_domain))));
            out.push(Child::Service(Box::new(service(job, t, i))));
        }
    }
    out
}
