//! Tests of the desired children, from small YAML jobs.

use std::collections::BTreeMap;

use super::*;
use crate::crd::defaults::with_defaults;

fn job(yaml: &str) -> TFJob {
    let mut job: TFJob = serde_saphyr::from_str(yaml).unwrap();
    job.spec = with_defaults(&job.spec);
    job
}

const DIST: &str = r#"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dist, namespace: ns1, uid: u-1}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 2
      restartPolicy: ExitCode
      template:
        metadata:
          labels: {app: tf, training.kubeflow.org/replica-type: hijack}
          annotations: {sidecar.istio.io/inject: "false"}
        spec:
          restartPolicy: Always
          containers:
          - name: sidecar
            image: busybox
            env: [{name: TF_CONFIG, value: sidecar-keeps-its-own}]
          - name: tensorflow
            image: tf:1
            env:
            - {name: A, value: "1"}
            - {name: TF_CONFIG, value: user}
            ports:
            - {name: metrics, containerPort: 9090}
            - {containerPort: 7000, protocol: UDP}
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: tensorflow, image: tf:1}]
"#;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn env_of<'a>(pod: &'a Pod, container: &str) -> Vec<(&'a str, &'a str)> {
    let c = pod
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .find(|c| c.name == container)
        .unwrap();
    c.env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or("")))
        .collect()
}

#[test]
fn pod_metadata_names_labels_owner() {
    let j = job(DIST);
    let p = pod(&j, ReplicaType::Ps, 1, None, &JobSettings::default());
    let m = &p.metadata;
    assert_eq!(m.name.as_deref(), Some("dist-ps-1"));
    assert_eq!(m.namespace.as_deref(), Some("ns1"));
    assert_eq!(
        m.labels.clone().unwrap(),
        labels(&[
            ("app", "tf"),
            ("training.kubeflow.org/job-name", "dist"),
            ("training.kubeflow.org/operator-name", "tfjob-controller"),
            ("training.kubeflow.org/replica-index", "1"),
            ("training.kubeflow.org/replica-type", "ps"),
        ]),
        "template labels kept, ours win, no job-role on a PS"
    );
    assert_eq!(
        m.annotations.clone().unwrap(),
        labels(&[("sidecar.istio.io/inject", "false")])
    );
    let owner = &m.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str()
        ),
        ("kubeflow.org/v1", "TFJob", "dist", "u-1")
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
}

#[test]
fn job_role_on_chief_or_worker_zero() {
    let j = job(DIST);
    let role = |t, i| {
        pod(&j, t, i, None, &JobSettings::default())
            .metadata
            .labels
            .unwrap()
            .get(LABEL_JOB_ROLE)
            .cloned()
    };
    assert_eq!(role(ReplicaType::Worker, 0).as_deref(), Some("master"));
    assert_eq!(role(ReplicaType::Worker, 1), None);
    let chief = job(&DIST.replace("    Worker:", "    Chief:\n      template: {spec: {containers: [{name: tensorflow, image: x}]}}\n    Worker:"));
    let role = |t, i| {
        pod(&chief, t, i, None, &JobSettings::default())
            .metadata
            .labels
            .unwrap()
            .get(LABEL_JOB_ROLE)
            .cloned()
    };
    assert_eq!(role(ReplicaType::Chief, 0).as_deref(), Some("master"));
    assert_eq!(role(ReplicaType::Worker, 0), None);
    // Services never carry job-role: their selector must match every pod of the replica.
    let svc = service(&chief, ReplicaType::Chief, 0);
    assert!(!svc.metadata.labels.unwrap().contains_key(LABEL_JOB_ROLE));
}

#[test]
fn restart_policy_translation() {
    let cases = [
        (None, "Never"),
        (Some(RestartPolicy::Never), "Never"),
        (Some(RestartPolicy::ExitCode), "Never"),
        (Some(RestartPolicy::OnFailure), "OnFailure"),
        (Some(RestartPolicy::Always), "Always"),
    ];
    for (policy, want) in cases {
        assert_eq!(pod_restart_policy(policy), want, "{policy:?}");
        let mut j = job(DIST);
        j.spec
            .tf_replica_specs
            .specs
            .get_mut(&ReplicaType::Ps)
            .unwrap()
            .restart_policy = policy;
        let p = pod(&j, ReplicaType::Ps, 0, None, &JobSettings::default());
        assert_eq!(
            p.spec.unwrap().restart_policy.as_deref(),
            Some(want),
            "template's Always overridden"
        );
    }
}

#[test]
fn template_restart_policy_detection() {
    assert!(template_sets_restart_policy(&job(DIST)));
    assert!(!template_sets_restart_policy(&job(
        &DIST.replace("restartPolicy: Always", "")
    )));
}

#[test]
fn tf_config_replaces_user_value_in_tensorflow_container_only() {
    let j = job(DIST);
    let p = pod(
        &j,
        ReplicaType::Ps,
        0,
        Some("example.org"),
        &JobSettings::default(),
    );
    let env = env_of(&p, "tensorflow");
    assert_eq!(env.len(), 2, "{env:?}");
    assert_eq!(env[0], ("A", "1"));
    assert_eq!(env[1].0, "TF_CONFIG");
    assert_eq!(
        env[1].1,
        tf_config(&j, ReplicaType::Ps, 0, Some("example.org")).unwrap()
    );
    assert!(
        env[1].1.contains("dist-ps-0.ns1.svc.example.org:2222"),
        "{}",
        env[1].1
    );
    assert_eq!(
        env_of(&p, "sidecar"),
        vec![("TF_CONFIG", "sidecar-keeps-its-own")]
    );
}

#[test]
fn non_distributed_job_gets_no_tf_config() {
    let single = job(
        "metadata: {name: one}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template:\n        spec:\n          containers: [{name: tensorflow, image: x}]\n",
    );
    let p = pod(
        &single,
        ReplicaType::Worker,
        0,
        None,
        &JobSettings::default(),
    );
    assert!(env_of(&p, "tensorflow").is_empty());
    assert_eq!(p.metadata.namespace.as_deref(), Some("default"));
}

#[test]
fn tensorflow_port_defaulted_on_pod() {
    let p = pod(
        &job(DIST),
        ReplicaType::Worker,
        0,
        None,
        &JobSettings::default(),
    );
    let c = &p.spec.unwrap().containers[0];
    let ports: Vec<_> = c
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.as_deref(), p.container_port))
        .collect();
    assert_eq!(ports, vec![(Some("tfjob-port"), 2222)]);
}

#[test]
fn service_is_headless_selects_replica_and_keeps_port_order() {
    let j = job(DIST);
    let s = service(&j, ReplicaType::Ps, 1);
    assert_eq!(s.metadata.name.as_deref(), Some("dist-ps-1"));
    assert_eq!(s.metadata.namespace.as_deref(), Some("ns1"));
    assert_eq!(
        s.metadata.owner_references.as_ref().unwrap()[0],
        owner_reference(&j)
    );
    let spec = s.spec.unwrap();
    let four = replica_labels("dist", ReplicaType::Ps, 1);
    assert_eq!(s.metadata.labels.as_ref(), Some(&four));
    assert_eq!(spec.selector.as_ref(), Some(&four));
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    let ports: Vec<_> = spec
        .ports
        .unwrap()
        .into_iter()
        .map(|p| (p.name.unwrap(), p.port, p.protocol))
        .collect();
    assert_eq!(
        ports,
        vec![
            ("metrics".to_string(), 9090, None),
            ("port-1".to_string(), 7000, Some("UDP".to_string())),
            ("tfjob-port".to_string(), 2222, None),
        ]
    );
}

#[test]
fn children_are_byte_identical_across_calls_and_key_orders() {
    // The same job with the replica types and the template labels written in another order.
    let (head, rest) = DIST.split_once("    PS:\n").unwrap();
    let (ps, worker) = rest.split_once("    Worker:\n").unwrap();
    let reordered = format!("{head}    Worker:\n{worker}    PS:\n{ps}").replace(
        "{app: tf, training.kubeflow.org/replica-type: hijack}",
        "{training.kubeflow.org/replica-type: hijack, app: tf}",
    );
    let (a, b) = (job(DIST), job(&reordered));
    for t in [ReplicaType::Ps, ReplicaType::Worker] {
        for i in 0..2 {
            let first =
                serde_json::to_string(&pod(&a, t, i, None, &JobSettings::default())).unwrap();
            assert_eq!(
                first,
                serde_json::to_string(&pod(&a, t, i, None, &JobSettings::default())).unwrap()
            );
            assert_eq!(
                first,
                serde_json::to_string(&pod(&b, t, i, None, &JobSettings::default())).unwrap()
            );
            let svc = serde_json::to_string(&service(&a, t, i)).unwrap();
            assert_eq!(svc, serde_json::to_string(&service(&b, t, i)).unwrap());
        }
    }
}
