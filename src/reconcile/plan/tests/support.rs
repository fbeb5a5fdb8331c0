//! Test support: compact builders for jobs, pods and services as the controller would
//! observe them. Test-only, pure.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    Pod, PodCondition, PodSpec, PodStatus, PodTemplateSpec, Service,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

use crate::crd::labels::{
    LABEL_JOB_NAME, LABEL_OPERATOR_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, OPERATOR_NAME,
    child_name,
};
use serde_json::{Value, json};

use crate::child::{ChildPod, ChildService};
use crate::crd::labels::LABEL_RESTART_ATTEMPT;
use crate::crd::{ReplicaSpec, ReplicaType, RestartPolicy, TFJob, TFJobSpec};
use crate::reconcile::build::gang::Gang;

pub const JOB_UID: &str = "job-uid";
pub const NS: &str = "ns";
/// An arbitrary fixed origin for test clocks.
pub const T0: i64 = 1_700_000_000;

/// `T0 + secs`.
pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(T0 + secs).unwrap()
}

/// A stored job (`ns/<name>`, uid `JOB_UID`) whose templates each run one `tensorflow`
/// container.
pub fn job(name: &str, replicas: &[(ReplicaType, i32, RestartPolicy)]) -> TFJob {
    let specs = replicas
        .iter()
        .map(|&(t, n, policy)| {
            let container = Container {
                name: "tensorflow".into(),
                image: Some("img".into()),
                ..Default::default()
            };
            let template = PodTemplateSpec {
                metadata: None,
                spec: Some(PodSpec {
                    containers: vec![container],
                    ..Default::default()
                }),
            };
            (
                t,
                ReplicaSpec {
                    replicas: Some(n),
                    template: template.into(),
                    restart_policy: Some(policy),
                },
            )
        })
        .collect();
    let mut job = TFJob::new(
        name,
        TFJobSpec {
            tf_replica_specs: specs,
            ..Default::default()
        },
    );
    job.metadata.namespace = Some(NS.into());
    job.metadata.uid = Some(JOB_UID.into());
    job
}

fn child_meta(job: &TFJob, t: ReplicaType, i: i32) -> ObjectMeta {
    let name = job.metadata.name.clone().unwrap();
    let labels = [
        (LABEL_OPERATOR_NAME, OPERATOR_NAME.to_string()),
        (LABEL_JOB_NAME, name.clone()),
        (LABEL_REPLICA_TYPE, t.lower().to_string()),
        (LABEL_REPLICA_INDEX, i.to_string()),
    ];
    let owner = OwnerReference {
        api_version: "kubeflow.org/v1".into(),
        kind: "TFJob".into(),
        name: name.clone(),
        uid: JOB_UID.into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    ObjectMeta {
        name: Some(child_name(&name, t, i)),
        namespace: Some(NS.into()),
        uid: Some(format!("uid-{}", child_name(&name, t, i))),
        resource_version: Some("7".into()),
        labels: Some(
            labels
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        ),
        owner_references: Some(vec![owner]),
        ..Default::default()
    }
}

/// An owned service of replica (t, i).
pub fn service(job: &TFJob, t: ReplicaType, i: i32) -> ChildService {
    ChildService::from(&Service {
        metadata: child_meta(job, t, i),
        ..Default::default()
    })
}

/// Builds an owned pod of replica (t, i); phase and container state set by the methods.
pub fn pod(job: &TFJob, t: ReplicaType, i: i32) -> PodBuilder {
    PodBuilder(Pod {
        metadata: child_meta(job, t, i),
        ..Default::default()
    })
}

pub struct PodBuilder(Pod);

impl PodBuilder {
    fn status(&mut self) -> &mut PodStatus {
        self.0.status.get_or_insert_with(Default::default)
    }

    fn tf(&mut self) -> &mut ContainerStatus {
        let statuses = self
            .status()
            .container_statuses
            .get_or_insert_with(Vec::new);
        if statuses.is_empty() {
            statuses.push(ContainerStatus {
                name: "tensorflow".into(),
                ..Default::default()
            });
        }
        &mut statuses[0]
    }

    fn phase(mut self, phase: &str) -> Self {
        self.status().phase = Some(phase.into());
        self
    }

    pub fn pending(self) -> Self {
        self.phase("Pending")
    }

    pub fn running(self) -> Self {
        self.phase("Running")
    }

    /// Succeeded, `tensorflow` exited 0.
    pub fn succeeded(self) -> Self {
        self.phase("Succeeded").exit(0)
    }

    /// Failed; `code` None = the `tensorflow` container never terminated (eviction).
    pub fn failed(self, code: Option<i32>) -> Self {
        let builder = self.phase("Failed");
        match code {
            Some(code) => builder.exit(code),
            None => builder,
        }
    }

    fn exit(mut self, code: i32) -> Self {
        self.tf().state = Some(terminated(code));
        self
    }

    /// An earlier incarnation of the container exited with `code`.
    pub fn last_exit(mut self, code: i32) -> Self {
        self.tf().last_state = Some(terminated(code));
        self
    }

    /// The kubelet restarted the `tensorflow` container `n` times.
    pub fn restarts(mut self, n: i32) -> Self {
        self.tf().restart_count = n;
        self
    }

    pub fn terminating(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(at(-1)));
        self
    }

    /// Owned by another uid (Some) or by nobody (None).
    pub fn owner_uid(mut self, uid: Option<&str>) -> Self {
        let refs = self.0.metadata.owner_references.take().unwrap_or_default();
        self.0.metadata.owner_references = uid.map(|uid| {
            refs.into_iter()
                .map(|r| OwnerReference {
                    uid: uid.into(),
                    ..r
                })
                .collect()
        });
        self
    }

    /// Of attempt `n` (its restart-attempt label).
    pub fn attempt(mut self, n: i32) -> Self {
        let labels = self.0.metadata.labels.get_or_insert_with(Default::default);
        labels.insert(LABEL_RESTART_ATTEMPT.into(), n.to_string());
        self
    }

    /// Created at `at(secs)`.
    pub fn created(mut self, secs: i64) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(at(secs)));
        self
    }

    /// The pod's own reason (`Evicted`, ...).
    pub fn reason(mut self, reason: &str) -> Self {
        self.status().reason = Some(reason.into());
        self
    }

    /// The `tensorflow` container's terminated reason (`OOMKilled`, ...).
    pub fn exit_reason(mut self, reason: &str) -> Self {
        if let Some(t) = self.tf().state.as_mut().and_then(|s| s.terminated.as_mut()) {
            t.reason = Some(reason.into());
        }
        self
    }

    /// Pending, the `tensorflow` container waiting for `reason` with `message`.
    pub fn waiting(mut self, reason: &str, message: &str) -> Self {
        self.tf().state = Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message: Some(message.into()),
            }),
            ..Default::default()
        });
        self.phase("Pending")
    }

    /// A disruption ends it: its `DisruptionTarget` condition, True, with `reason`
    /// (`EvictionByEvictionAPI`, `TerminationByKubelet`, ...).
    pub fn disrupted(mut self, reason: &str) -> Self {
        let conditions = self.status().conditions.get_or_insert_with(Vec::new);
        conditions.push(PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: Some(reason.into()),
            ..Default::default()
        });
        self
    }

    /// The `tensorflow` container's current run ended at `at(secs)`.
    pub fn finished(mut self, secs: i64) -> Self {
        if let Some(t) = self.tf().state.as_mut().and_then(|s| s.terminated.as_mut()) {
            t.finished_at = Some(Time(at(secs)));
        }
        self
    }

    /// Pending, not scheduled: the scheduler's `message`.
    pub fn unschedulable(mut self, message: &str) -> Self {
        self.status().conditions = Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            message: Some(message.into()),
            ..Default::default()
        }]);
        self.phase("Pending")
    }

    /// The pod as the cache holds it.
    pub fn build(self) -> ChildPod {
        ChildPod::from(&self.0)
    }

    /// The k8s pod, for the tests that change it further.
    pub fn build_pod(self) -> Pod {
        self.0
    }
}

fn terminated(code: i32) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A gang-scheduled job `ns/dist` (uid `u1`) with this run policy and these replica specs.
pub fn gang_job(run_policy: Value, specs: Value) -> TFJob {
    serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "dist", "namespace": "ns", "uid": "u1"},
        "spec": {"runPolicy": run_policy, "tfReplicaSpecs": specs}
    }))
    .unwrap()
}

/// A replica spec of `n` pods whose one container has these resources, and the template's
/// PriorityClass.
pub fn gang_replica(n: i32, resources: Value, priority_class: Option<&str>) -> Value {
    let mut spec =
        json!({"containers": [{"name": "tensorflow", "image": "tf", "resources": resources}]});
    if let Some(pc) = priority_class {
        spec["priorityClassName"] = json!(pc);
    }
    json!({"replicas": n, "template": {"spec": spec}})
}

/// scheduler-plugins under Kubeflow's default scheduler name.
pub fn plugins() -> Gang {
    Gang::SchedulerPlugins {
        scheduler_name: "scheduler-plugins-scheduler".into(),
    }
}
