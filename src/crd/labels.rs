//! The names, labels and selectors of a job's children (docs/behaviour.md §4, §7.1), shared by
//! validation (which checks the names fit) and the controller (which makes them). Pure.

use std::collections::BTreeMap;

use super::replica_type::ReplicaType;
use super::spec::{TFJob, TFJobSpec};

pub const LABEL_OPERATOR_NAME: &str = "training.kubeflow.org/operator-name";
pub const LABEL_JOB_NAME: &str = "training.kubeflow.org/job-name";
pub const LABEL_REPLICA_TYPE: &str = "training.kubeflow.org/replica-type";
pub const LABEL_REPLICA_INDEX: &str = "training.kubeflow.org/replica-index";
pub const LABEL_JOB_ROLE: &str = "training.kubeflow.org/job-role";
/// The label of a pod of a `restart-scope: Job` job (or of a job restarted whole): the
/// attempt it belongs to.
pub const LABEL_RESTART_ATTEMPT: &str = "tfjob-operator.dev/restart-attempt";
pub const OPERATOR_NAME: &str = "tfjob-controller";
/// Value of the job-role label on the pod that plays the chief.
pub const JOB_ROLE_MASTER: &str = "master";
/// Namespace of a job whose manifest names none (as `kubectl apply` would place it).
pub const DEFAULT_NAMESPACE: &str = "default";

/// `<job>-<t>-<i>`, the name of both the pod and the service of a replica.
pub fn child_name(job: &str, t: ReplicaType, index: i32) -> String {
    format!("{job}-{}-{index}", t.lower())
}

/// The job's name (empty when unset, which validation refuses).
pub fn job_name(job: &TFJob) -> &str {
    job.metadata.name.as_deref().unwrap_or_default()
}

/// The job's namespace, `default` when the object does not say.
pub fn job_namespace(job: &TFJob) -> &str {
    job.metadata
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
}

/// Labels every child of the job carries: operator-name and job-name.
pub fn job_selector(job: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_OPERATOR_NAME.to_string(), OPERATOR_NAME.to_string()),
        (LABEL_JOB_NAME.to_string(), job.to_string()),
    ])
}

/// The four labels of a replica's pod and service (also the service's selector).
pub fn replica_labels(job: &str, t: ReplicaType, index: i32) -> BTreeMap<String, String> {
    let mut labels = job_selector(job);
    labels.insert(LABEL_REPLICA_TYPE.to_string(), t.lower().to_string());
    labels.insert(LABEL_REPLICA_INDEX.to_string(), index.to_string());
    labels
}

/// The label selector of one type's pods as a string, keys sorted
/// (`status.replicaStatuses[T].selector`).
pub fn selector_string(job: &str, t: ReplicaType) -> String {
    let mut labels = job_selector(job);
    labels.insert(LABEL_REPLICA_TYPE.to_string(), t.lower().to_string());
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether the replica plays the chief: the Chief/Master, else worker 0 of a job that has
/// neither.
pub fn is_master_role(spec: &TFJobSpec, t: ReplicaType, index: i32) -> bool {
    if t.is_chief() {
        return true;
    }
    let has_chief = spec.tf_replica_specs.iter().any(|(t, _)| t.is_chief());
    t == ReplicaType::Worker && index == 0 && !has_chief
}

/// Read the replica type and index back from a child's labels; `None` when either label is
/// missing or malformed.
pub fn replica_of(labels: &BTreeMap<String, String>) -> Option<(ReplicaType, i32)> {
    let t = ReplicaType::parse(labels.get(LABEL_REPLICA_TYPE)?)?;
    let index = labels
        .get(LABEL_REPLICA_INDEX)?
        .parse::<i32>()
        .ok()
        .filter(|i| *i >= 0)?;
    Some((t, index))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::ReplicaSpec;

    #[test]
    fn child_names() {
        let cases = [
            ("mnist", ReplicaType::Worker, 0, "mnist-worker-0"),
            ("dist", ReplicaType::Ps, 1, "dist-ps-1"),
            ("j", ReplicaType::Chief, 0, "j-chief-0"),
            ("j", ReplicaType::Master, 0, "j-master-0"),
            ("j", ReplicaType::Evaluator, 12, "j-evaluator-12"),
        ];
        for (job, t, i, want) in cases {
            assert_eq!(child_name(job, t, i), want);
        }
    }

    #[test]
    fn four_labels() {
        let labels = replica_labels("mnist", ReplicaType::Ps, 3);
        let want = [
            ("training.kubeflow.org/job-name", "mnist"),
            ("training.kubeflow.org/operator-name", "tfjob-controller"),
            ("training.kubeflow.org/replica-index", "3"),
            ("training.kubeflow.org/replica-type", "ps"),
        ];
        let want: BTreeMap<String, String> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(labels, want);
        assert_eq!(job_selector("mnist").len(), 2);
    }

    #[test]
    fn selector_string_matches_contract_example() {
        assert_eq!(
            selector_string("x", ReplicaType::Worker),
            "training.kubeflow.org/job-name=x,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type=worker"
        );
    }

    #[test]
    fn master_role_table() {
        let spec = |types: &[ReplicaType]| TFJobSpec {
            tf_replica_specs: types.iter().map(|t| (*t, ReplicaSpec::default())).collect(),
            ..Default::default()
        };
        use ReplicaType::*;
        let cases = [
            (&[Chief, Worker][..], Chief, 0, true),
            (&[Chief, Worker][..], Worker, 0, false),
            (&[Master, Worker][..], Master, 0, true),
            (&[Master, Worker][..], Worker, 0, false),
            (&[Ps, Worker][..], Worker, 0, true),
            (&[Ps, Worker][..], Worker, 1, false),
            (&[Ps, Worker][..], Ps, 0, false),
            (&[Worker, Evaluator][..], Evaluator, 0, false),
        ];
        for (types, t, i, want) in cases {
            assert_eq!(
                is_master_role(&spec(types), t, i),
                want,
                "{types:?} {t} {i}"
            );
        }
    }

    #[test]
    fn replica_of_round_trips_and_rejects_junk() {
        for t in ReplicaType::ALL {
            assert_eq!(replica_of(&replica_labels("j", t, 4)), Some((t, 4)));
        }
        let mut bad = replica_labels("j", ReplicaType::Worker, 0);
        bad.insert(LABEL_REPLICA_INDEX.into(), "-1".into());
        assert_eq!(replica_of(&bad), None);
        bad.insert(LABEL_REPLICA_INDEX.into(), "x".into());
        assert_eq!(replica_of(&bad), None);
        let mut unknown = replica_labels("j", ReplicaType::Worker, 0);
        unknown.insert(LABEL_REPLICA_TYPE.into(), "launcher".into());
        assert_eq!(replica_of(&unknown), None);
        assert_eq!(replica_of(&job_selector("j")), None);
    }

    #[test]
    fn namespace_defaults_to_default() {
        let mut job = TFJob::new("j", TFJobSpec::default());
        assert_eq!(job_namespace(&job), "default");
        job.metadata.namespace = Some("ns3".into());
        assert_eq!(job_namespace(&job), "ns3");
        assert_eq!(job_name(&job), "j");
    }
}
