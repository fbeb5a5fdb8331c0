//! `tfjob-operator render`: the children a TFJob would get, as a YAML stream, or every problem
//! the API server and the operator would find (docs/behaviour.md §3), and, for a job with
//! settings of ours, how each replica's failures would be handled. Pure: takes the manifest
//! text, returns the output text or the problems found.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Service};
use serde::Serialize;

use crate::convert::older_form_hint;
use crate::crd::TFJob;
use crate::crd::check::check;
use crate::crd::defaults::{legacy_run_policy_fields, with_defaults};
use crate::crd::labels::job_name;
use crate::crd::settings::JobSettings;
use crate::crd::validation::{parse_tfjob, validate};
use crate::reconcile::build::children::{pod, service, template_sets_restart_policy};
use crate::reconcile::build::gang::{Gang, podgroup, pods as gang_pods};
use crate::reconcile::plan::rules::restarts::describe::handling;

/// Suffix standing in for the random one the API server appends to `generateName`.
pub const GENERATED_SUFFIX: &str = "xxxxx";

#[derive(Serialize)]
#[serde(untagged)]
enum Child {
    PodGroup(Box<serde_json::Value>),
    Pod(Box<Pod>),
    Service(Box<Service>),
}

/// Render every TFJob of a (multi-document) YAML manifest: for each replica, its Pod then
/// its Service. Documents of other kinds are skipped. Any problem in any job fails the
/// whole render, listing every problem (prefixed by the document when there are several).
pub fn render(yaml: &str, cluster_domain: Option<&str>) -> Result<String, Vec<String>> {
    render_with(yaml, cluster_domain, None)
}

/// `render`, as an operator with gang scheduling `gang` would make the children: each job's
/// PodGroup first, then its pods (marked for the gang) and services.
pub fn render_with(
    yaml: &str,
    cluster_domain: Option<&str>,
    gang: Option<&Gang>,
) -> Result<String, Vec<String>> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(yaml).map_err(|e| vec![format!("invalid YAML: {e}")])?;
    let docs: Vec<_> = docs.into_iter().filter(|d| !d.is_null()).collect();
    let many = docs.len() > 1;
    let mut notes = String::new();
    let mut children = Vec::new();
    let mut errors = Vec::new();
    for (n, doc) in docs.into_iter().enumerate() {
        let prefix = if many {
            format!("document {}: ", n + 1)
        } else {
            String::new()
        };
        if let Some(hint) = older_form_hint(&doc) {
            errors.push(format!("{prefix}{hint}"));
            continue;
        }
        let kind = doc
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("TFJob")
            .to_string();
        if kind != "TFJob" {
            notes.push_str(&format!("# skipped document {}: kind {kind}\n", n + 1));
            continue;
        }
        match job_children(doc, cluster_domain, gang, &mut notes) {
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
    gang: Option<&Gang>,
    notes: &mut String,
) -> Result<Vec<Child>, Vec<String>> {
    // What the API server would refuse first (unknown fields under kubectl's strict field
    // validation, values its schema rejects), then what the operator would: all of it.
    let checked = check(&doc);
    let from_get = checked
        .unknown
        .iter()
        .any(|u| u.starts_with("unknown field \"status."));
    let mut problems: Vec<String> = checked.unknown;
    if from_get {
        problems.push(
            "status: this looks like `kubectl get -o yaml` output of an older TFJob; \
             `tfjob-operator convert FILE` drops the status and what the API server wrote"
                .into(),
        );
    }
    problems.extend(checked.invalid.iter().map(ToString::to_string));
    let mut job = match parse_tfjob(checked.cleaned) {
        Ok(job) => job,
        Err(e) => {
            problems.push(e.to_string());
            return Err(problems);
        }
    };
    if job.metadata.name.as_deref().unwrap_or_default().is_empty()
        && let Some(prefix) = job.metadata.generate_name.clone()
    {
        let name = format!("{prefix}{GENERATED_SUFFIX}");
        notes.push_str(&format!(
            "# metadata.generateName {prefix:?}: rendered as {name:?}; the API server picks the real suffix\n"
        ));
        job.metadata.name = Some(name);
    }
    let settings = match validate(&job) {
        Ok(settings) if problems.is_empty() => settings,
        Ok(_) => return Err(problems),
        Err(errs) => {
            for e in errs.iter().map(ToString::to_string) {
                if !problems.contains(&e) {
                    problems.push(e);
                }
            }
            return Err(problems);
        }
    };
    for (field, overridden) in legacy_run_policy_fields(&job.spec) {
        let what = if overridden {
            format!("ignored: spec.runPolicy.{field} is set and wins")
        } else {
            format!("honoured as spec.runPolicy.{field}")
        };
        notes.push_str(&format!(
            "# {}: spec.{field} is the early kubeflow.org/v1 place, {what}; `tfjob-operator convert` moves it\n",
            job_name(&job)
        ));
    }
    if template_sets_restart_policy(&job) {
        // The operator reports this once per job as a `SetPodTemplateRestartPolicy` Warning.
        notes.push_str(&format!(
            "# {}: a template sets restartPolicy; the replica's restartPolicy (default Never) replaces it\n",
            job_name(&job)
        ));
    }
    job.spec = with_defaults(&job.spec);
    if settings != JobSettings::default() {
        failure_notes(&job, &settings, notes);
    }
    let mut out = Vec::new();
    if let Some(gang) = gang {
        out.push(Child::PodGroup(Box::new(gang_group(&job, gang, notes)?)));
    }
    out.extend(children_of(&job, cluster_domain, gang, &settings));
    Ok(out)
}

/// How each replica type's failures would be handled (`tfjob-operator.dev/` settings).
fn failure_notes(job: &TFJob, settings: &JobSettings, notes: &mut String) {
    if let Some(seconds) = settings.wait_for_evaluator_seconds {
        notes.push_str(&format!(
            "# {}: success waits for the evaluator, up to {seconds} s after the chief (or worker 0) succeeded\n",
            job_name(job)
        ));
    }
    notes.push_str(&format!(
        "# {}: failures are handled in this order, the first that matches deciding:\n",
        job_name(job)
    ));
    let dynamic = job.spec.enable_dynamic_worker.unwrap_or(false);
    for (t, spec) in job.spec.tf_replica_specs.iter() {
        let policy = spec.restart_policy.unwrap_or_default();
        let words = handling(settings, t, policy, dynamic);
        notes.push_str(&format!("#   {t}: {words}\n"));
    }
}

/// The job's PodGroup. PriorityClasses are the cluster's: offline every template's counts
/// as 0, which the output says when it matters.
fn gang_group(
    job: &TFJob,
    gang: &Gang,
    notes: &mut String,
) -> Result<serde_json::Value, Vec<String>> {
    let group = podgroup::desired(job, gang, &BTreeMap::new()).map_err(|e| vec![e])?;
    let named_classes = job
        .spec
        .tf_replica_specs
        .iter()
        .any(|(_, s)| s.template.priority_class_name().is_some());
    let policy = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.scheduling_policy.as_ref());
    if named_classes && policy.is_none_or(|p| p.min_resources.is_none()) {
        notes.push_str(&format!(
            "# {}: minResources takes replica types by their PriorityClass's value, unknown offline: here in type order\n",
            job_name(job)
        ));
    }
    for (t, name) in gang_pods::foreign_schedulers(job, gang) {
        notes.push_str(&format!(
            "# {}: {t} pods keep their template's schedulerName {name}: not gang-scheduled\n",
            job_name(job),
            t = t.as_str()
        ));
    }
    Ok(group)
}

fn children_of(
    job: &TFJob,
    cluster_domain: Option<&str>,
    gang: Option<&Gang>,
    settings: &JobSettings,
) -> Vec<Child> {
    let mut out = Vec::new();
    for (t, spec) in job.spec.tf_replica_specs.iter() {
        for i in 0..spec.replicas.unwrap_or_default() {
            let mut pod = pod(job, t, i, cluster_domain, settings);
            if let Some(gang) = gang {
                gang_pods::decorate(&mut pod, gang, job, t);
            }
            out.push(Child::Pod(Box::new(pod)));
            out.push(Child::Service(Box::new(service(job, t, i))));
        }
    }
    out
}
