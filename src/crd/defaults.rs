//! Defaulting (docs/behaviour.md §2): applied in memory on every reconcile, never written back,
//! the early-v1 run-policy fields at the top of `spec` folded under `runPolicy` first. Pure.
//!
//! The `tfjob-port` default is applied where a pod or service is built from a template
//! ([`default_tf_port`]), the one place the template is decoded: the spec keeps its templates
//! as text (`crd::template`), and defaulting them on every pass would decode each one.

use k8s_openapi::api::core::v1::{ContainerPort, PodSpec};

use super::spec::{
    CleanPodPolicy, DEFAULT_REPLICAS, RestartPolicy, RunPolicy, SuccessPolicy, TFJobSpec,
};

pub use super::tensorflow::{TF_CONTAINER, TF_DEFAULT_PORT, TF_PORT_NAME, tf_port};

/// The spec with every default filled in: the early-v1 fields folded under `runPolicy`
/// ([`fold_legacy_run_policy`]), replicas 1, restartPolicy Never, cleanPodPolicy Running,
/// successPolicy "", suspend false. The templates are left as written (the `tfjob-port` is
/// defaulted in each pod and service built from them). Idempotent.
pub fn with_defaults(spec: &TFJobSpec) -> TFJobSpec {
    let mut out = spec.clone();
    fold_legacy_run_policy(&mut out);
    for replica in out.tf_replica_specs.specs.values_mut() {
        replica.replicas.get_or_insert(DEFAULT_REPLICAS);
        replica.restart_policy.get_or_insert(RestartPolicy::Never);
    }
    let run_policy = out.run_policy.get_or_insert_with(RunPolicy::default);
    run_policy
        .clean_pod_policy
        .get_or_insert(CleanPodPolicy::Running);
    run_policy.suspend.get_or_insert(false);
    out.success_policy.get_or_insert(SuccessPolicy::Default);
    out
}

/// The early-v1 run-policy fields that sit directly under `spec` (kubeflow.org/v1 before
/// `runPolicy` existed), by their JSON name: `(name, set, overridden by runPolicy)`.
pub fn legacy_run_policy_fields(spec: &TFJobSpec) -> Vec<(&'static str, bool)> {
    let rp = spec.run_policy.clone().unwrap_or_default();
    [
        (
            "cleanPodPolicy",
            spec.clean_pod_policy.is_some(),
            rp.clean_pod_policy.is_some(),
        ),
        (
            "ttlSecondsAfterFinished",
            spec.ttl_seconds_after_finished.is_some(),
            rp.ttl_seconds_after_finished.is_some(),
        ),
        (
            "activeDeadlineSeconds",
            spec.active_deadline_seconds.is_some(),
            rp.active_deadline_seconds.is_some(),
        ),
        (
            "backoffLimit",
            spec.backoff_limit.is_some(),
            rp.backoff_limit.is_some(),
        ),
    ]
    .into_iter()
    .filter(|(_, set, _)| *set)
    .map(|(name, _, overridden)| (name, overridden))
    .collect()
}

/// Moves each early-v1 field (`spec.cleanPodPolicy`, `spec.ttlSecondsAfterFinished`,
/// `spec.activeDeadlineSeconds`, `spec.backoffLimit`) under `runPolicy` unless `runPolicy`
/// sets it already, in which case the old one is dropped: `runPolicy` wins. Idempotent.
pub fn fold_legacy_run_policy(spec: &mut TFJobSpec) {
    fn fold<T>(top: &mut Option<T>, under: &mut Option<T>) {
        let old = top.take();
        if under.is_none() {
            *under = old;
        }
    }
    let TFJobSpec {
        run_policy,
        clean_pod_policy,
        ttl_seconds_after_finished,
        active_deadline_seconds,
        backoff_limit,
        ..
    } = spec;
    if clean_pod_policy.is_none()
        && ttl_seconds_after_finished.is_none()
        && active_deadline_seconds.is_none()
        && backoff_limit.is_none()
    {
        return;
    }
    let rp = run_policy.get_or_insert_with(RunPolicy::default);
    fold(clean_pod_policy, &mut rp.clean_pod_policy);
    fold(
        ttl_seconds_after_finished,
        &mut rp.ttl_seconds_after_finished,
    );
    fold(active_deadline_seconds, &mut rp.active_deadline_seconds);
    fold(backoff_limit, &mut rp.backoff_limit);
}

/// Append `{name: tfjob-port, containerPort: 2222}` to the `tensorflow` container when it has
/// no port of that name. Idempotent; other containers are left alone.
pub fn default_tf_port(pod_spec: &mut PodSpec) {
    let Some(container) = pod_spec
        .containers
        .iter_mut()
        .find(|c| c.name == TF_CONTAINER)
    else {
        return;
    };
    let ports = container.ports.get_or_insert_with(Vec::new);
    if !ports
        .iter()
        .any(|p| p.name.as_deref() == Some(TF_PORT_NAME))
    {
        ports.push(ContainerPort {
            name: Some(TF_PORT_NAME.to_string()),
            container_port: TF_DEFAULT_PORT,
            ..ContainerPort::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};

    use super::*;
    use crate::crd::{ReplicaSpec, ReplicaType};

    fn port(name: Option<&str>, n: i32) -> ContainerPort {
        ContainerPort {
            name: name.map(str::to_string),
            container_port: n,
            ..Default::default()
        }
    }

    fn container(name: &str, ports: Option<Vec<ContainerPort>>) -> Container {
        Container {
            name: name.into(),
            image: Some("img".into()),
            ports,
            ..Default::default()
        }
    }

    fn spec_with(containers: Vec<Container>, replica: ReplicaSpec) -> TFJobSpec {
        let template = PodTemplateSpec {
            spec: Some(PodSpec {
                containers,
                ..Default::default()
            }),
            ..Default::default()
        };
        TFJobSpec {
            tf_replica_specs: [(
                ReplicaType::Worker,
                ReplicaSpec {
                    template: template.into(),
                    ..replica
                },
            )]
            .into_iter()
            .collect(),
            ..Default::default()
        }
    }

    fn ports(pod: &PodSpec) -> Vec<Vec<ContainerPort>> {
        pod.containers
            .iter()
            .map(|c| c.ports.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn job_level_defaults() {
        let d = with_defaults(&spec_with(
            vec![container("tensorflow", None)],
            Default::default(),
        ));
        let w = d.tf_replica_specs.get(ReplicaType::Worker).unwrap();
        assert_eq!(w.replicas, Some(1));
        assert_eq!(w.restart_policy, Some(RestartPolicy::Never));
        let rp = d.run_policy.unwrap();
        assert_eq!(rp.clean_pod_policy, Some(CleanPodPolicy::Running));
        assert_eq!(rp.suspend, Some(false));
        assert_eq!(
            rp.backoff_limit, None,
            "no backoff limit unless the user sets one"
        );
        assert_eq!(d.success_policy, Some(SuccessPolicy::Default));
    }

    #[test]
    fn explicit_values_are_kept() {
        let replica = ReplicaSpec {
            replicas: Some(0),
            restart_policy: Some(RestartPolicy::ExitCode),
            ..Default::default()
        };
        let mut spec = spec_with(vec![container("tensorflow", None)], replica);
        spec.run_policy = Some(RunPolicy {
            clean_pod_policy: Some(CleanPodPolicy::None),
            suspend: Some(true),
            ..Default::default()
        });
        spec.success_policy = Some(SuccessPolicy::AllWorkers);
        let d = with_defaults(&spec);
        let w = d.tf_replica_specs.get(ReplicaType::Worker).unwrap();
        assert_eq!(
            (w.replicas, w.restart_policy),
            (Some(0), Some(RestartPolicy::ExitCode))
        );
        let rp = d.run_policy.unwrap();
        assert_eq!(
            (rp.clean_pod_policy, rp.suspend),
            (Some(CleanPodPolicy::None), Some(true))
        );
        assert_eq!(d.success_policy, Some(SuccessPolicy::AllWorkers));
    }

    #[test]
    fn early_v1_fields_are_honoured_unless_run_policy_sets_them() {
        // (top level, runPolicy, effective runPolicy)
        let rp = |clean, ttl, deadline, backoff| RunPolicy {
            clean_pod_policy: clean,
            ttl_seconds_after_finished: ttl,
            active_deadline_seconds: deadline,
            backoff_limit: backoff,
            ..Default::default()
        };
        let cases = [
            (
                rp(Some(CleanPodPolicy::None), Some(5), Some(60), Some(2)),
                None,
                rp(Some(CleanPodPolicy::None), Some(5), Some(60), Some(2)),
            ),
            (
                rp(Some(CleanPodPolicy::None), Some(5), None, Some(2)),
                Some(rp(Some(CleanPodPolicy::All), None, Some(30), Some(0))),
                rp(Some(CleanPodPolicy::All), Some(5), Some(30), Some(0)),
            ),
            (rp(None, None, None, None), None, rp(None, None, None, None)),
        ];
        for (top, under, want) in cases {
            let mut spec = spec_with(vec![container("tensorflow", None)], Default::default());
            spec.clean_pod_policy = top.clean_pod_policy;
            spec.ttl_seconds_after_finished = top.ttl_seconds_after_finished;
            spec.active_deadline_seconds = top.active_deadline_seconds;
            spec.backoff_limit = top.backoff_limit;
            spec.run_policy = under.clone();
            let overridden: Vec<_> = legacy_run_policy_fields(&spec)
                .into_iter()
                .filter(|(_, o)| *o)
                .map(|(n, _)| n)
                .collect();
            let d = with_defaults(&spec);
            let got = d.run_policy.clone().unwrap();
            assert_eq!(
                (
                    got.clean_pod_policy.or(Some(CleanPodPolicy::Running)),
                    got.ttl_seconds_after_finished,
                    got.active_deadline_seconds,
                    got.backoff_limit
                ),
                (
                    want.clean_pod_policy.or(Some(CleanPodPolicy::Running)),
                    want.ttl_seconds_after_finished,
                    want.active_deadline_seconds,
                    want.backoff_limit
                ),
                "{top:?} under {under:?}"
            );
            assert_eq!(
                (d.clean_pod_policy, d.backoff_limit),
                (None, None),
                "folded away"
            );
            assert_eq!(with_defaults(&d), d, "idempotent");
            if under.is_some() {
                assert_eq!(overridden, ["cleanPodPolicy", "backoffLimit"]);
            }
        }
    }

    #[test]
    #[allow(clippy::type_complexity)] // a table of cases
    fn port_defaulting_table() {
        let tf_port = port(Some(TF_PORT_NAME), TF_DEFAULT_PORT);
        let cases: Vec<(&str, Vec<Container>, Vec<Vec<ContainerPort>>)> = vec![
            (
                "no ports: appended",
                vec![container("tensorflow", None)],
                vec![vec![tf_port.clone()]],
            ),
            (
                "other ports: appended after them",
                vec![container(
                    "tensorflow",
                    Some(vec![port(Some("metrics"), 9090)]),
                )],
                vec![vec![port(Some("metrics"), 9090), tf_port.clone()]],
            ),
            (
                "custom tfjob-port: kept as is",
                vec![container(
                    "tensorflow",
                    Some(vec![port(Some(TF_PORT_NAME), 3333)]),
                )],
                vec![vec![port(Some(TF_PORT_NAME), 3333)]],
            ),
            (
                "sidecar untouched",
                vec![container("sidecar", None), container("tensorflow", None)],
                vec![vec![], vec![tf_port.clone()]],
            ),
        ];
        for (name, containers, want) in cases {
            let mut pod = PodSpec {
                containers,
                ..Default::default()
            };
            default_tf_port(&mut pod);
            assert_eq!(ports(&pod), want, "{name}");
            let once = pod.clone();
            default_tf_port(&mut pod);
            assert_eq!(pod, once, "{name}: defaulting is idempotent");
        }
    }

    #[test]
    fn templates_are_left_as_written() {
        // The port goes into the pods built from the template, not into the spec: a pass
        // that builds nothing decodes nothing.
        let spec = spec_with(vec![container("tensorflow", None)], Default::default());
        let d = with_defaults(&spec);
        let template = |s: &TFJobSpec| {
            s.tf_replica_specs
                .get(ReplicaType::Worker)
                .unwrap()
                .template
                .clone()
        };
        assert_eq!(template(&d), template(&spec));
        assert_eq!(ports(&template(&d).decode().spec.unwrap()), vec![vec![]]);
    }

    #[test]
    fn tf_port_lookup() {
        let spec = |ports| PodSpec {
            containers: vec![container("tensorflow", ports)],
            ..Default::default()
        };
        assert_eq!(tf_port(None), 2222);
        assert_eq!(tf_port(Some(&spec(None))), 2222);
        assert_eq!(
            tf_port(Some(&spec(Some(vec![port(Some("other"), 1)])))),
            2222
        );
        assert_eq!(
            tf_port(Some(&spec(Some(vec![port(Some(TF_PORT_NAME), 3333)])))),
            3333
        );
    }
}
