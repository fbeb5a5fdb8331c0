//! What gang scheduling adds to a job's pods: the gang scheduler's name and the group they
//! belong to, in the label or annotations that scheduler reads. Pure.

use k8s_openapi::api::core::v1::Pod;

use super::Gang;
use crate::crd::{ReplicaType, TFJob};

/// scheduler-plugins' Coscheduling finds a pod's PodGroup by this label.
pub const LABEL_POD_GROUP: &str = "scheduling.x-k8s.io/pod-group";
/// Volcano finds a pod's PodGroup by this annotation.
pub const ANNOTATION_GROUP_NAME: &str = "scheduling.k8s.io/group-name";
/// Volcano's queue of a pod (the PodGroup's queue is what it schedules by; the pod's says
/// the same for tools that read pods).
pub const ANNOTATION_QUEUE_NAME: &str = "scheduling.volcano.sh/queue-name";
/// Volcano's task of a pod within its group (Kubeflow writes the replica type).
pub const ANNOTATION_TASK_SPEC: &str = "volcano.sh/task-spec";

/// Marks `pod`, of replica type `t` of `job`, as a member of the job's gang. A template that
/// names a scheduler of its own keeps it (as Kubeflow does): the user chose it.
pub fn decorate(pod: &mut Pod, gang: &Gang, job: &TFJob, t: ReplicaType) {
    let group = job.metadata.name.clone().unwrap_or_default();
    if let Some(spec) = pod.spec.as_mut()
        && spec
            .scheduler_name
            .as_deref()
            .unwrap_or_default()
            .is_empty()
    {
        spec.scheduler_name = Some(gang.scheduler_name().to_string());
    }
    let meta = &mut pod.metadata;
    match gang {
        Gang::SchedulerPlugins { .. } => {
            meta.labels
                .get_or_insert_with(Default::default)
                .insert(LABEL_POD_GROUP.to_string(), group);
        }
        Gang::Volcano => {
            let annotations = meta.annotations.get_or_insert_with(Default::default);
            annotations.insert(ANNOTATION_GROUP_NAME.to_string(), group);
            annotations.insert(ANNOTATION_TASK_SPEC.to_string(), t.as_str().to_lowercase());
            let queue = job
                .spec
                .run_policy
                .as_ref()
                .and_then(|r| r.scheduling_policy.as_ref())
                .and_then(|s| s.queue.as_deref())
                .filter(|q| !q.is_empty());
            if let Some(queue) = queue {
                annotations.insert(ANNOTATION_QUEUE_NAME.to_string(), queue.to_string());
            }
        }
    }
}

/// The replica types whose template names a scheduler other than the gang's: their pods
/// are not gang-scheduled, which the job is told once (`PodTemplateSchedulerNameAlreadySet`).
pub fn foreign_schedulers(job: &TFJob, gang: &Gang) -> Vec<(ReplicaType, String)> {
    job.spec
        .tf_replica_specs
        .iter()
        .filter_map(|(t, s)| {
            let name = s.template.scheduler_name()?;
            (!name.is_empty() && name != gang.scheduler_name()).then(|| (t, name.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::build::children;
    use serde_json::json;

    fn job(queue: Option<&str>, scheduler: Option<&str>) -> TFJob {
        let mut spec = json!({"containers": [{"name": "tensorflow", "image": "tf"}]});
        if let Some(s) = scheduler {
            spec["schedulerName"] = json!(s);
        }
        let mut run_policy = json!({});
        if let Some(q) = queue {
            run_policy = json!({"schedulingPolicy": {"queue": q}});
        }
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "dist", "namespace": "ns", "uid": "u1"},
            "spec": {"runPolicy": run_policy, "tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": spec}}}}
        }))
        .unwrap()
    }

    fn decorated(job: &TFJob, gang: &Gang) -> Pod {
        let mut pod = children::pod(job, ReplicaType::Worker, 1, None, &Default::default());
        decorate(&mut pod, gang, job, ReplicaType::Worker);
        pod
    }

    #[test]
    fn scheduler_plugins_pods_carry_the_group_label_and_the_scheduler() {
        let gang = Gang::SchedulerPlugins {
            scheduler_name: "scheduler-plugins-scheduler".into(),
        };
        let pod = decorated(&job(Some("q"), None), &gang);
        let labels = pod.metadata.labels.unwrap();
        assert_eq!(labels[LABEL_POD_GROUP], "dist");
        assert_eq!(
            pod.spec.unwrap().scheduler_name.as_deref(),
            Some("scheduler-plugins-scheduler")
        );
        assert!(
            pod.metadata
                .annotations
                .unwrap_or_default()
                .keys()
                .all(|k| !k.contains("volcano") && k != ANNOTATION_GROUP_NAME)
        );
    }

    #[test]
    fn volcano_pods_carry_the_group_queue_and_task_annotations() {
        let pod = decorated(&job(Some("research"), None), &Gang::Volcano);
        let a = pod.metadata.annotations.unwrap();
        assert_eq!(a[ANNOTATION_GROUP_NAME], "dist");
        assert_eq!(a[ANNOTATION_QUEUE_NAME], "research");
        assert_eq!(a[ANNOTATION_TASK_SPEC], "worker");
        assert_eq!(pod.spec.unwrap().scheduler_name.as_deref(), Some("volcano"));
        let no_queue = decorated(&job(None, None), &Gang::Volcano);
        assert!(
            !no_queue
                .metadata
                .annotations
                .unwrap()
                .contains_key(ANNOTATION_QUEUE_NAME)
        );
    }

    #[test]
    fn a_template_s_own_scheduler_is_kept_and_reported() {
        let j = job(None, Some("my-scheduler"));
        let pod = decorated(&j, &Gang::Volcano);
        assert_eq!(
            pod.spec.unwrap().scheduler_name.as_deref(),
            Some("my-scheduler")
        );
        assert_eq!(
            foreign_schedulers(&j, &Gang::Volcano),
            [(ReplicaType::Worker, "my-scheduler".to_string())]
        );
        assert!(foreign_schedulers(&job(None, Some("volcano")), &Gang::Volcano).is_empty());
    }
}
