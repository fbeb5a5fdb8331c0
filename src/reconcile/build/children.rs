//! The desired Pod and headless Service of each replica (docs/behaviour.md §4). Pure, deterministic:
//! the same job gives byte-identical objects every time.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::crd::defaults::{TF_CONTAINER, default_tf_port};
use crate::crd::labels::LABEL_RESTART_ATTEMPT;
use crate::crd::labels::{
    JOB_ROLE_MASTER, LABEL_JOB_ROLE, child_name, is_master_role, job_name, job_namespace,
    replica_labels,
};
use crate::crd::settings::JobSettings;
use crate::crd::{ReplicaSpec, ReplicaType, RestartPolicy, TFJob};
use crate::reconcile::build::tf_config::{TF_CONFIG, tf_config};

/// The controller owner reference children carry, so they follow the job on deletion.
pub fn owner_reference(job: &TFJob) -> OwnerReference {
    OwnerReference {
        api_version: "kubeflow.org/v1".to_string(),
        kind: "TFJob".to_string(),
        name: job_name(job).to_string(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The pod of replica `t`/`index`: the template with our labels (winning over the
/// template's), the translated restart policy, the default port and TF_CONFIG.
/// The template is decoded here, and the `tfjob-port` defaulted (docs/behaviour.md §2).
///
/// `settings` are the job's own (as validation read them): under `restart-scope: Job` or with
/// failure rules the kubelet never restarts a container (the operator restarts replicas or
/// the whole job itself, and must see every failure); once a job has been restarted whole,
/// or under `restart-scope: Job`, the pod carries its attempt's label.
pub fn pod(
    job: &TFJob,
    t: ReplicaType,
    index: i32,
    cluster_domain: Option<&str>,
    settings: &JobSettings,
) -> Pod {
    let replica = replica_spec(job, t);
    let template = replica.template.decode();
    let name = job_name(job);
    let attempt = job.status.as_ref().and_then(|s| s.restart_attempt);

    let template_meta = template.metadata.unwrap_or_default();
    let mut labels = template_meta.labels.unwrap_or_default();
    labels.extend(replica_labels(name, t, index));
    if is_master_role(&job.spec, t, index) {
        labels.insert(LABEL_JOB_ROLE.to_string(), JOB_ROLE_MASTER.to_string());
    }
    if settings.whole_job() || attempt.is_some_and(|a| a > 0) {
        labels.insert(
            LABEL_RESTART_ATTEMPT.into(),
            attempt.unwrap_or(0).to_string(),
        );
    }
    let metadata = ObjectMeta {
        labels: Some(labels),
        annotations: template_meta.annotations,
        finalizers: template_meta.finalizers,
        ..child_meta(job, t, index)
    };

    let mut spec = template.spec.unwrap_or_default();
    let policy = match settings.operator_restarts() {
        true => "Never",
        false => pod_restart_policy(replica.restart_policy),
    };
    spec.restart_policy = Some(policy.to_string());
    default_tf_port(&mut spec);
    if let Some(tf) = spec.containers.iter_mut().find(|c| c.name == TF_CONTAINER) {
        set_tf_config(tf, tf_config(job, t, index, cluster_domain));
    }
    Pod {
        metadata,
        spec: Some(spec),
        status: None,
    }
}

/// The headless service of replica `t`/`index`: selects exactly that replica's pod,
/// exposes the `tensorflow` container's ports in declared order, and publishes addresses
/// before the pod is ready so peers resolve each other while starting.
pub fn service(job: &TFJob, t: ReplicaType, index: i32) -> Service {
    let labels = replica_labels(job_name(job), t, index);
    let mut pod_spec = replica_spec(job, t)
        .template
        .decode()
        .spec
        .unwrap_or_default();
    default_tf_port(&mut pod_spec);
    let ports = pod_spec
        .containers
        .iter()
        .find(|c| c.name == TF_CONTAINER)
        .and_then(|c| c.ports.as_ref())
        .map(|ports| {
            ports
                .iter()
                .enumerate()
                .map(|(i, p)| ServicePort {
                    // A service with several ports needs every port named.
                    name: Some(p.name.clone().unwrap_or_else(|| format!("port-{i}"))),
                    port: p.container_port,
                    target_port: Some(IntOrString::Int(p.container_port)),
                    protocol: p.protocol.clone(),
                    ..ServicePort::default()
                })
                .collect()
        });
    Service {
        metadata: ObjectMeta {
            labels: Some(labels.clone()),
            ..child_meta(job, t, index)
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            selector: Some(labels),
            ports,
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// Whether any template sets its own pod restartPolicy, which the replica's policy
/// overrides (one `SetPodTemplateRestartPolicy` Warning per job).
pub fn template_sets_restart_policy(job: &TFJob) -> bool {
    job.spec
        .tf_replica_specs
        .iter()
        .any(|(_, s)| s.template.sets_restart_policy())
}

/// Pod restartPolicy for a replica policy: ExitCode is decided by the operator, so the
/// kubelet must never restart.
pub fn pod_restart_policy(policy: Option<RestartPolicy>) -> &'static str {
    match policy.unwrap_or_default() {
        RestartPolicy::Always => "Always",
        RestartPolicy::OnFailure => "OnFailure",
        RestartPolicy::Never | RestartPolicy::ExitCode => "Never",
    }
}

fn replica_spec(job: &TFJob, t: ReplicaType) -> Cow<'_, ReplicaSpec> {
    job.spec
        .tf_replica_specs
        .get(t)
        .map_or_else(Cow::default, Cow::Borrowed)
}

fn child_meta(job: &TFJob, t: ReplicaType, index: i32) -> ObjectMeta {
    ObjectMeta {
        name: Some(child_name(job_name(job), t, index)),
        namespace: Some(job_namespace(job).to_string()),
        owner_references: Some(vec![owner_reference(job)]),
        ..ObjectMeta::default()
    }
}

/// Replace any user TF_CONFIG with ours (never two of them). A job that is not
/// distributed gets none from us, so a user's own value is left alone there.
fn set_tf_config(container: &mut Container, value: Option<String>) {
    let Some(value) = value else { return };
    let env = container.env.get_or_insert_with(Vec::new);
    env.retain(|e| e.name != TF_CONFIG);
    env.push(EnvVar {
        name: TF_CONFIG.to_string(),
        value: Some(value),
        value_from: None,
    });
}

#[cfg(test)]
mod tests;
