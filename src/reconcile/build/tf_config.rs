//! TF_CONFIG (docs/behaviour.md §5): standard and sparse formats. Pure.
//!
//! The key order of the JSON is part of the contract (`cluster`, `task`, `environment`, as
//! Kubeflow writes it), so it comes from struct field order; maps are `BTreeMap`s, so the
//! replica types inside `cluster` are sorted.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::crd::defaults::TF_DEFAULT_PORT;
use crate::crd::labels::{child_name, job_name, job_namespace};
use crate::crd::{ReplicaSpec, ReplicaType, TFJob};

/// Name of the environment variable.
pub const TF_CONFIG: &str = "TF_CONFIG";

#[derive(Serialize)]
struct Task<'a> {
    #[serde(rename = "type")]
    type_: &'a str,
    index: i32,
}

#[derive(Serialize)]
struct Standard<'a> {
    cluster: BTreeMap<&'a str, Vec<String>>,
    task: Task<'a>,
    environment: &'a str,
}

#[derive(Serialize)]
struct SparseCluster {
    worker: BTreeMap<String, String>,
    ps: Vec<String>,
}

#[derive(Serialize)]
struct Sparse<'a> {
    cluster: SparseCluster,
    task: Task<'a>,
}

/// TF_CONFIG of replica `t`/`index`, or `None` when the job is not distributed (its
/// replicas add up to 1). `job.spec` is assumed defaulted; unset replicas count as 1.
pub fn tf_config(
    job: &TFJob,
    t: ReplicaType,
    index: i32,
    cluster_domain: Option<&str>,
) -> Option<String> {
    if !is_distributed(job) {
        return None;
    }
    let task = Task {
        type_: t.lower(),
        index,
    };
    let json = if job.spec.enable_dynamic_worker == Some(true) {
        serde_json::to_string(&Sparse {
            cluster: sparse_cluster(job, t, index, cluster_domain),
            task,
        })
    } else {
        let cluster = job
            .spec
            .tf_replica_specs
            .iter()
            .map(|(t, spec)| (t.lower(), addresses(job, t, spec, cluster_domain)))
            .collect();
        serde_json::to_string(&Standard {
            cluster,
            task,
            environment: "cloud",
        })
    };
    // Serialising strings, integers and maps of them cannot fail.
    json.ok()
}

/// A job is distributed unless its replicas add up to exactly one pod.
pub fn is_distributed(job: &TFJob) -> bool {
    let total: i64 = job
        .spec
        .tf_replica_specs
        .iter()
        .map(|(_, s)| i64::from(s.count()))
        .sum();
    total != 1
}

/// Sparse cluster: a worker sees itself and every PS; a PS sees only itself; others nothing.
fn sparse_cluster(
    job: &TFJob,
    t: ReplicaType,
    index: i32,
    cluster_domain: Option<&str>,
) -> SparseCluster {
    let ps_spec = job.spec.tf_replica_specs.get(ReplicaType::Ps);
    match t {
        ReplicaType::Worker => {
            let spec = job.spec.tf_replica_specs.get(t);
            let own = address(
                job,
                t,
                index,
                spec.map_or(TF_DEFAULT_PORT, port_of),
                cluster_domain,
            );
            SparseCluster {
                worker: BTreeMap::from([(index.to_string(), own)]),
                ps: ps_spec
                    .map(|s| addresses(job, ReplicaType::Ps, s, cluster_domain))
                    .unwrap_or_default(),
            }
        }
        ReplicaType::Ps => SparseCluster {
            worker: BTreeMap::new(),
            ps: vec![address(
                job,
                t,
                index,
                ps_spec.map_or(TF_DEFAULT_PORT, port_of),
                cluster_domain,
            )],
        },
        _ => SparseCluster {
            worker: BTreeMap::new(),
            ps: Vec::new(),
        },
    }
}

fn port_of(spec: &ReplicaSpec) -> i32 {
    spec.template.tf_port()
}

fn addresses(job: &TFJob, t: ReplicaType, spec: &ReplicaSpec, domain: Option<&str>) -> Vec<String> {
    let port = port_of(spec);
    (0..spec.count())
        .map(|i| address(job, t, i, port, domain))
        .collect()
}

/// `<job>-<t>-<i>.<namespace>.svc[.<clusterDomain>]:<port>`
fn address(job: &TFJob, t: ReplicaType, index: i32, port: i32, domain: Option<&str>) -> String {
    let host = child_name(job_name(job), t, index);
    let ns = job_namespace(job);
    match domain.filter(|d| !d.is_empty()) {
        Some(d) => format!("{host}.{ns}.svc.{d}:{port}"),
        None => format!("{host}.{ns}.svc:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec};

    use super::*;
    use crate::crd::TFJobSpec;
    use ReplicaType::*;

    fn replica(n: i32, port: Option<i32>) -> ReplicaSpec {
        let ports = port.map(|p| {
            vec![ContainerPort {
                name: Some("tfjob-port".into()),
                container_port: p,
                ..Default::default()
            }]
        });
        let container = Container {
            name: "tensorflow".into(),
            ports,
            ..Default::default()
        };
        ReplicaSpec {
            replicas: Some(n),
            template: PodTemplateSpec {
                spec: Some(PodSpec {
                    containers: vec![container],
                    ..Default::default()
                }),
                ..Default::default()
            }
            .into(),
            restart_policy: None,
        }
    }

    fn job(name: &str, ns: &str, replicas: &[(ReplicaType, ReplicaSpec)], sparse: bool) -> TFJob {
        let mut job = TFJob::new(
            name,
            TFJobSpec {
                tf_replica_specs: replicas.iter().cloned().collect(),
                enable_dynamic_worker: sparse.then_some(true),
                ..Default::default()
            },
        );
        job.metadata.namespace = Some(ns.into());
        job
    }

    #[test]
    fn standard_contract_example_byte_for_byte() {
        let j = job(
            "test-tfjob",
            "ns3",
            &[
                (Worker, replica(1, None)),
                (Ps, replica(1, None)),
                (Evaluator, replica(1, None)),
            ],
            false,
        );
        assert_eq!(
            tf_config(&j, Worker, 0, None).as_deref(),
            Some(
                r#"{"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc:2222"],"ps":["test-tfjob-ps-0.ns3.svc:2222"],"worker":["test-tfjob-worker-0.ns3.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#
            )
        );
    }

    #[test]
    #[allow(clippy::type_complexity)] // a table of cases
    fn standard_format_table() {
        let dist = job(
            "d",
            "ns",
            &[
                (Chief, replica(1, None)),
                (Ps, replica(2, Some(3333))),
                (Worker, replica(2, None)),
            ],
            false,
        );
        let zero_ps = job(
            "z",
            "ns",
            &[(Ps, replica(0, None)), (Worker, replica(2, None))],
            false,
        );
        let cases: Vec<(&str, &TFJob, ReplicaType, i32, Option<&str>, &str)> = vec![
            (
                "chief task, custom tfjob-port, all types sorted",
                &dist,
                Chief,
                0,
                None,
                r#"{"cluster":{"chief":["d-chief-0.ns.svc:2222"],"ps":["d-ps-0.ns.svc:3333","d-ps-1.ns.svc:3333"],"worker":["d-worker-0.ns.svc:2222","d-worker-1.ns.svc:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"}"#,
            ),
            (
                "custom cluster domain",
                &dist,
                Ps,
                1,
                Some("cluster.local"),
                r#"{"cluster":{"chief":["d-chief-0.ns.svc.cluster.local:2222"],"ps":["d-ps-0.ns.svc.cluster.local:3333","d-ps-1.ns.svc.cluster.local:3333"],"worker":["d-worker-0.ns.svc.cluster.local:2222","d-worker-1.ns.svc.cluster.local:2222"]},"task":{"type":"ps","index":1},"environment":"cloud"}"#,
            ),
            (
                "empty cluster domain is no domain",
                &zero_ps,
                Worker,
                1,
                Some(""),
                r#"{"cluster":{"ps":[],"worker":["z-worker-0.ns.svc:2222","z-worker-1.ns.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#,
            ),
        ];
        for (name, j, t, i, domain, want) in cases {
            assert_eq!(tf_config(j, t, i, domain).as_deref(), Some(want), "{name}");
        }
    }

    #[test]
    fn sparse_format_table() {
        let with_ps = job(
            "s",
            "ns",
            &[
                (Ps, replica(2, None)),
                (Worker, replica(3, None)),
                (Evaluator, replica(1, None)),
            ],
            true,
        );
        let no_ps = job(
            "s",
            "ns",
            &[(Chief, replica(1, None)), (Worker, replica(2, None))],
            true,
        );
        let cases: Vec<(&str, &TFJob, ReplicaType, i32, &str)> = vec![
            (
                "worker sees itself and every ps",
                &with_ps,
                Worker,
                2,
                r#"{"cluster":{"worker":{"2":"s-worker-2.ns.svc:2222"},"ps":["s-ps-0.ns.svc:2222","s-ps-1.ns.svc:2222"]},"task":{"type":"worker","index":2}}"#,
            ),
            (
                "worker without ps gets [] not null",
                &no_ps,
                Worker,
                0,
                r#"{"cluster":{"worker":{"0":"s-worker-0.ns.svc:2222"},"ps":[]},"task":{"type":"worker","index":0}}"#,
            ),
            (
                "ps sees only itself",
                &with_ps,
                Ps,
                1,
                r#"{"cluster":{"worker":{},"ps":["s-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}}"#,
            ),
            (
                "evaluator sees nothing",
                &with_ps,
                Evaluator,
                0,
                r#"{"cluster":{"worker":{},"ps":[]},"task":{"type":"evaluator","index":0}}"#,
            ),
            (
                "chief sees nothing",
                &no_ps,
                Chief,
                0,
                r#"{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}"#,
            ),
        ];
        for (name, j, t, i, want) in cases {
            assert_eq!(tf_config(j, t, i, None).as_deref(), Some(want), "{name}");
        }
    }

    #[test]
    fn not_distributed_means_no_tf_config() {
        let cases = [
            (vec![(Worker, replica(1, None))], false),
            (vec![(Chief, replica(1, None))], false),
            (
                vec![(Chief, replica(1, None)), (Worker, replica(0, None))],
                false,
            ),
            (vec![(Worker, replica(2, None))], true),
            (
                vec![(Chief, replica(1, None)), (Worker, replica(1, None))],
                true,
            ),
            (vec![(Worker, replica(0, None))], true),
        ];
        for (replicas, want) in cases {
            let j = job("n", "ns", &replicas, false);
            assert_eq!(is_distributed(&j), want, "{replicas:?}");
            assert_eq!(
                tf_config(&j, Worker, 0, None).is_some(),
                want,
                "{replicas:?}"
            );
        }
        let mut unset = job("n", "ns", &[(Worker, replica(1, None))], false);
        unset
            .spec
            .tf_replica_specs
            .specs
            .get_mut(&Worker)
            .unwrap()
            .replicas = None;
        assert!(!is_distributed(&unset), "unset replicas count as 1");
    }

    #[test]
    fn namespace_defaults_in_addresses() {
        let mut j = job("d", "x", &[(Worker, replica(2, None))], false);
        j.metadata.namespace = None;
        let cfg = tf_config(&j, Worker, 0, None).unwrap();
        assert!(cfg.contains(r#""d-worker-1.default.svc:2222""#), "{cfg}");
    }
}
