//! Whether a Workload still describes its job (Kueue v0.19.2, `EquivalentToWorkload` and
//! `ComparePodSetSlices`): the same owner, execution limit and PodSets (count, containers,
//! init containers, and tolerations while not admitted). Pure.
//!
//! Kueue compares Go structs decoded from both objects. Here both are JSON, so two things
//! differ and are handled: the Workload's CRD fills in defaults the TFJob's does not (a port's
//! `protocol: TCP`, a key reference's `name: ""`), so what the Workload adds beyond the job's
//! fields is accepted; and quantities are compared by value (Kueue writes `1000m` as `1`).
//! Empty and absent are the same, as for Go's semantic equality.

use serde_json::Value;

use super::job::JobFacts;
use super::workload::{PodSet, Workload};
use crate::reconcile::build::gang::quantity::Amount;

/// Kueue's `EquivalentToWorkload` for a TFJob.
pub fn equivalent(job: &JobFacts, workload: &Workload) -> bool {
    let owned = workload
        .controller()
        .is_some_and(|(uid, name)| name == job.name && uid == job.uid);
    owned
        && workload.spec.maximum_execution_time_seconds == job.max_exec_seconds
        && same_pod_sets(&job.pod_sets, &workload.spec.pod_sets, workload.admitted())
}

/// Counts, containers and init containers agree, and tolerations too unless `admitted`
/// (admission adds the flavor's).
fn same_pod_sets(job: &[PodSet], workload: &[PodSet], admitted: bool) -> bool {
    job.len() == workload.len()
        && job.iter().zip(workload).all(|(j, w)| {
            let fields = ["containers", "initContainers"]
                .into_iter()
                .chain((!admitted).then_some("tolerations"));
            j.count == w.count
                && j.min_count == w.min_count
                && fields
                    .into_iter()
                    .all(|f| covered(&j.template["spec"][f], &w.template["spec"][f], false))
        })
}

/// `job` is covered by `workload`: every field the job sets has the same value there (the
/// Workload may have more, its defaults); lists have the same length and are covered item by
/// item; quantities under `resources` compare by value, and both ways.
fn covered(job: &Value, workload: &Value, quantities: bool) -> bool {
    match (job, workload) {
        (Value::Object(j), Value::Object(w)) if quantities => {
            let set =
                |m: &serde_json::Map<String, Value>, k: &str| m.get(k).is_some_and(|v| !empty(v));
            j.keys()
                .chain(w.keys())
                .filter(|k| set(j, k) || set(w, k))
                .all(|k| same_quantity(j.get(k), w.get(k)))
        }
        (Value::Object(j), Value::Object(w)) => j.iter().all(|(k, v)| {
            let theirs = w.get(k).unwrap_or(&Value::Null);
            covered(v, theirs, k == "requests" || k == "limits")
        }),
        (Value::Array(j), Value::Array(w)) => {
            j.len() == w.len() && j.iter().zip(w).all(|(a, b)| covered(a, b, false))
        }
        (j, Value::Null) => empty(j),
        (Value::Null, w) => empty(w),
        (j, w) => j == w,
    }
}

fn same_quantity(a: Option<&Value>, b: Option<&Value>) -> bool {
    let amount = |v: Option<&Value>| match v? {
        Value::String(s) => Amount::parse(s),
        Value::Number(n) => Amount::parse(&n.to_string()),
        _ => None,
    };
    match (amount(a), amount(b)) {
        (Some(a), Some(b)) => a.nanos == b.nanos,
        _ => a == b,
    }
}

/// Null, an empty string or list, or an object of such: what Go leaves out or treats as unset.
fn empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(o) => o.values().all(empty),
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn podset(count: i32, spec: Value) -> PodSet {
        PodSet {
            name: "worker".into(),
            count,
            template: json!({"spec": spec}),
            ..PodSet::default()
        }
    }

    fn container(cpu: &str) -> Value {
        json!({"name": "tensorflow", "image": "tf", "ports": [{"containerPort": 2222}],
               "resources": {"requests": {"cpu": cpu}}})
    }

    #[test]
    fn defaults_the_workload_adds_and_quantity_spellings_do_not_matter() {
        let job = [podset(2, json!({"containers": [container("1000m")]}))];
        let mut stored = container("1");
        stored["ports"][0]["protocol"] = json!("TCP");
        stored["resources"]["limits"] = json!({});
        let workload = [podset(2, json!({"containers": [stored]}))];
        assert!(same_pod_sets(&job, &workload, false));
    }

    #[test]
    fn counts_resources_containers_and_tolerations_matter() {
        let job = [podset(2, json!({"containers": [container("1")]}))];
        let other_count = [podset(3, json!({"containers": [container("1")]}))];
        let other_cpu = [podset(2, json!({"containers": [container("2")]}))];
        let more_resources = {
            let mut c = container("1");
            c["resources"]["requests"]["memory"] = json!("1Gi");
            [podset(2, json!({"containers": [c]}))]
        };
        let two_containers = [podset(
            2,
            json!({"containers": [container("1"), container("1")]}),
        )];
        for different in [&other_count, &other_cpu, &more_resources, &two_containers] {
            assert!(!same_pod_sets(&job, different, false), "{different:?}");
        }
        let tolerating = [podset(
            2,
            json!({"containers": [container("1")], "tolerations": [{"key": "k", "operator": "Exists"}]}),
        )];
        assert!(!same_pod_sets(&job, &tolerating, false));
        // Admission adds the flavor's tolerations: not compared once admitted.
        assert!(same_pod_sets(&job, &tolerating, true));
    }
}
