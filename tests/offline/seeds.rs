//! Every TFJob YAML of the user-facing documents (`tests/fixtures/seeds/`, copied from the
//! product's seed documents) deserialises to the expected typed value and renders.

use serde_json::Value;
use tfjob_operator::convert::convert;
use tfjob_operator::crd::defaults::with_defaults;
use tfjob_operator::crd::validation::{parse_tfjob, validate};
use tfjob_operator::crd::{ReplicaType, RestartPolicy, TFJob};
use tfjob_operator::render::render;

use ReplicaType::*;
use RestartPolicy::*;

/// Expected shape of one replica type: replicas, restartPolicy, containers (name, image).
type Replica = (
    ReplicaType,
    Option<i32>,
    Option<RestartPolicy>,
    &'static [(&'static str, &'static str)],
);

struct Seed {
    file: &'static str,
    yaml: &'static str,
    name: Option<&'static str>,
    generate_name: Option<&'static str>,
    namespace: Option<&'static str>,
    replicas: &'static [Replica],
}

const YOUR_IMAGE: &[(&str, &str)] = &[("tensorflow", "gcr.io/your-project/your-image")];
const CPU_BENCH: &[(&str, &str)] = &[(
    "tensorflow",
    "gcr.io/kubeflow/tf-benchmarks-cpu:v20171202-bdab599-dirty-284af3",
)];
const GPU_BENCH: &[(&str, &str)] = &[(
    "tensorflow",
    "gcr.io/kubeflow/tf-benchmarks-gpu:v20171202-bdab599-dirty-284af3",
)];
const MNIST: &[(&str, &str)] = &[(
    "tensorflow",
    "gcr.io/kubeflow-ci/tf-mnist-with-summaries:1.0",
)];
const DOCKER_USER: &[(&str, &str)] = &[("tensorflow", "<DOCKER_USERNAME>/tf-mnist:gpu")];

macro_rules! seed {
    ($file:literal, $name:expr, $gen:expr, $ns:expr, $replicas:expr) => {
        Seed {
            file: $file,
            yaml: include_str!(concat!("../fixtures/seeds/", $file)),
            name: $name,
            generate_name: $gen,
            namespace: $ns,
            replicas: $replicas,
        }
    };
}

fn seeds() -> Vec<Seed> {
    let dist = |workers| -> &'static [Replica] {
        match workers {
            3 => &[
                (Ps, Some(1), Some(OnFailure), YOUR_IMAGE),
                (Worker, Some(3), Some(OnFailure), YOUR_IMAGE),
            ],
            _ => &[
                (Ps, Some(1), Some(OnFailure), YOUR_IMAGE),
                (Worker, Some(1), Some(OnFailure), YOUR_IMAGE),
            ],
        }
    };
    let smoke: &'static [Replica] = &[
        (Ps, Some(1), None, CPU_BENCH),
        (Worker, Some(1), None, GPU_BENCH),
    ];
    vec![
        seed!(
            "001-tfjob-dist-istio.yaml",
            None,
            Some("tfjob"),
            Some("your-user-namespace"),
            dist(3)
        ),
        seed!(
            "002-tfjob-gcp-secret-istio.yaml",
            None,
            Some("tfjob"),
            Some("your-user-namespace"),
            dist(1)
        ),
        seed!(
            "003-tf-smoke-gpu.yaml",
            Some("tf-smoke-gpu"),
            None,
            None,
            smoke
        ),
        seed!(
            "004-tfjob-simple-get-output.yaml",
            Some("tfjob-simple"),
            None,
            Some("kubeflow"),
            &[(Worker, Some(2), Some(OnFailure), MNIST)]
        ),
        seed!(
            "005-tfjob-dist.yaml",
            None,
            Some("tfjob"),
            Some("kubeflow"),
            dist(3)
        ),
        seed!(
            "006-tfjob-gcp-secret.yaml",
            None,
            Some("tfjob"),
            Some("kubeflow"),
            dist(1)
        ),
        seed!(
            "007-tf-smoke-gpu-quoted-cpu.yaml",
            Some("tf-smoke-gpu"),
            None,
            None,
            smoke
        ),
        seed!(
            "008-mnist-get-output-legacy-fields.yaml",
            Some("mnist"),
            None,
            Some("kubeflow"),
            &[(Worker, Some(1), Some(Never), MNIST)]
        ),
        seed!(
            "009-example-tfjob-master.yaml",
            Some("example-tfjob"),
            None,
            None,
            &[(Master, Some(1), None, DOCKER_USER)]
        ),
        seed!(
            "010-module6-ex1-gpu-master.yaml",
            Some("module6-ex1-gpu"),
            None,
            None,
            &[(Master, Some(1), None, DOCKER_USER)]
        ),
    ]
}

fn parse(yaml: &str) -> TFJob {
    let value: Value = serde_saphyr::from_str(yaml).unwrap();
    parse_tfjob(value).unwrap()
}

#[test]
fn every_seed_deserialises_to_the_expected_job() {
    let seeds = seeds();
    assert_eq!(seeds.len(), 10);
    for seed in seeds {
        let job = parse(seed.yaml);
        let file = seed.file;
        assert_eq!(job.metadata.name.as_deref(), seed.name, "{file}");
        assert_eq!(
            job.metadata.generate_name.as_deref(),
            seed.generate_name,
            "{file}"
        );
        assert_eq!(job.metadata.namespace.as_deref(), seed.namespace, "{file}");
        let specs = &job.spec.tf_replica_specs;
        assert!(specs.rejected_keys.is_empty(), "{file}");
        let types: Vec<_> = specs.iter().map(|(t, _)| t).collect();
        let want_types: Vec<_> = seed.replicas.iter().map(|r| r.0).collect();
        assert_eq!(types, want_types, "{file}: canonical replica types");
        for (t, replicas, policy, containers) in seed.replicas {
            let spec = specs.get(*t).unwrap();
            assert_eq!(spec.replicas, *replicas, "{file} {t}");
            assert_eq!(spec.restart_policy, *policy, "{file} {t}");
            let pod = spec.template.decode().spec.unwrap();
            let got: Vec<_> = pod
                .containers
                .iter()
                .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or_default()))
                .collect();
            assert_eq!(got, containers.to_vec(), "{file} {t}");
        }
        if job.metadata.name.is_some() {
            assert_eq!(validate(&job).map(drop), Ok(()), "{file}");
        }
    }
}

#[test]
fn seed_details_survive() {
    let gpu = parse(include_str!("../fixtures/seeds/003-tf-smoke-gpu.yaml"));
    let worker = gpu
        .spec
        .tf_replica_specs
        .get(Worker)
        .unwrap()
        .template
        .decode()
        .spec
        .unwrap();
    assert_eq!(worker.restart_policy.as_deref(), Some("OnFailure"));
    let limits = worker.containers[0]
        .resources
        .clone()
        .unwrap()
        .limits
        .unwrap();
    assert_eq!(limits["nvidia.com/gpu"].0, "1");
    let quoted = parse(include_str!(
        "../fixtures/seeds/007-tf-smoke-gpu-quoted-cpu.yaml"
    ));
    let ps = quoted
        .spec
        .tf_replica_specs
        .get(Ps)
        .unwrap()
        .template
        .decode()
        .spec
        .unwrap();
    assert_eq!(
        ps.containers[0].resources.clone().unwrap().limits.unwrap()["cpu"].0,
        "1"
    );

    let istio = parse(include_str!("../fixtures/seeds/001-tfjob-dist-istio.yaml"));
    let annotations = istio
        .spec
        .tf_replica_specs
        .get(Worker)
        .unwrap()
        .template
        .decode()
        .metadata
        .unwrap()
        .annotations
        .unwrap();
    assert_eq!(annotations["sidecar.istio.io/inject"], "false");

    // `kubectl get -o yaml` outputs: status read, legacy fields ignored.
    let simple = parse(include_str!(
        "../fixtures/seeds/004-tfjob-simple-get-output.yaml"
    ));
    let status = simple.status.unwrap();
    assert_eq!(status.conditions.len(), 3);
    assert_eq!(status.replica_statuses[&Worker].succeeded, Some(2));
    let mnist = parse(include_str!(
        "../fixtures/seeds/008-mnist-get-output-legacy-fields.yaml"
    ));
    assert_eq!(
        (mnist.spec.run_policy, mnist.spec.clean_pod_policy),
        (None, Some(tfjob_operator::crd::CleanPodPolicy::None)),
        "the early v1 spec.cleanPodPolicy is read where it is written"
    );
    assert_eq!(
        with_defaults(
            &parse(include_str!(
                "../fixtures/seeds/008-mnist-get-output-legacy-fields.yaml"
            ))
            .spec
        )
        .run_policy
        .unwrap()
        .clean_pod_policy,
        Some(tfjob_operator::crd::CleanPodPolicy::None),
        "and honoured"
    );
    assert_eq!(
        mnist.status.unwrap().replica_statuses[&Worker].active,
        None,
        "old `running` ignored"
    );
}

fn rendered(yaml: &str) -> Vec<Value> {
    let out = render(yaml, None).unwrap_or_else(|e| panic!("{e:?}"));
    serde_saphyr::from_multiple(&out).unwrap()
}

fn tf_config_of(pod: &Value) -> Option<String> {
    let containers = pod["spec"]["containers"].as_array().unwrap();
    let tf = containers
        .iter()
        .find(|c| c["name"] == "tensorflow")
        .unwrap();
    tf["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == "TF_CONFIG")
        .map(|e| e["value"].as_str().unwrap().to_string())
}

/// The `kubectl get -o yaml` output of an early-v1 job: the API server refuses its status
/// (`running` is no v1 field), so it renders once `convert` has cleaned it.
const GET_OUTPUT_OF_AN_OLDER_JOB: &str = "008-mnist-get-output-legacy-fields.yaml";

#[test]
fn every_seed_renders() {
    for seed in seeds() {
        let direct = render(seed.yaml, None);
        let yaml = if seed.file == GET_OUTPUT_OF_AN_OLDER_JOB {
            assert!(direct.is_err(), "{}", seed.file);
            convert(seed.yaml, seed.file).unwrap().yaml
        } else {
            assert!(direct.is_ok(), "{}: {direct:?}", seed.file);
            seed.yaml.to_string()
        };
        let docs = rendered(&yaml);
        let total: i32 = seed.replicas.iter().map(|r| r.1.unwrap_or(1)).sum();
        assert_eq!(
            docs.len() as i32,
            2 * total,
            "{}: a pod and a service per replica",
            seed.file
        );
        let namespace = seed.namespace.unwrap_or("default");
        let name = seed
            .name
            .map(str::to_string)
            .unwrap_or_else(|| format!("{}xxxxx", seed.generate_name.unwrap()));
        for pair in docs.chunks(2) {
            let (pod, svc) = (&pair[0], &pair[1]);
            assert_eq!(
                (pod["kind"].as_str(), svc["kind"].as_str()),
                (Some("Pod"), Some("Service"))
            );
            assert_eq!(pod["metadata"]["name"], svc["metadata"]["name"]);
            assert_eq!(pod["metadata"]["namespace"], namespace, "{}", seed.file);
            assert!(
                pod["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{name}-"))
            );
            assert_eq!(
                tf_config_of(pod).is_some(),
                total != 1,
                "{}: TF_CONFIG only when distributed",
                seed.file
            );
        }
    }
}

#[test]
fn distributed_seed_renders_the_contract_tf_config() {
    let docs = rendered(include_str!("../fixtures/seeds/005-tfjob-dist.yaml"));
    let names: Vec<_> = docs
        .iter()
        .step_by(2)
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "tfjobxxxxx-ps-0",
            "tfjobxxxxx-worker-0",
            "tfjobxxxxx-worker-1",
            "tfjobxxxxx-worker-2"
        ]
    );
    assert_eq!(
        tf_config_of(&docs[4]).unwrap(),
        r#"{"cluster":{"ps":["tfjobxxxxx-ps-0.kubeflow.svc:2222"],"worker":["tfjobxxxxx-worker-0.kubeflow.svc:2222","tfjobxxxxx-worker-1.kubeflow.svc:2222","tfjobxxxxx-worker-2.kubeflow.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#
    );
}

#[test]
fn legacy_master_seed_is_the_chief() {
    let docs = rendered(include_str!(
        "../fixtures/seeds/009-example-tfjob-master.yaml"
    ));
    let pod = &docs[0];
    assert_eq!(pod["metadata"]["name"], "example-tfjob-master-0");
    assert_eq!(
        pod["metadata"]["labels"]["training.kubeflow.org/job-role"],
        "master"
    );
    assert_eq!(
        pod["metadata"]["labels"]["training.kubeflow.org/replica-type"],
        "master"
    );
    assert_eq!(
        pod["spec"]["restartPolicy"], "Never",
        "replica policy (default Never) overrides the template's OnFailure"
    );
}

#[test]
fn every_example_renders() {
    let examples = [
        ("simple.yaml", include_str!("../../examples/simple.yaml"), 2),
        (
            "tf_job_gcp_secret.yaml",
            include_str!("../../examples/tf_job_gcp_secret.yaml"),
            2,
        ),
        (
            "tf_job_gpu.yaml",
            include_str!("../../examples/tf_job_gpu.yaml"),
            2,
        ),
        (
            "tf_job_master_v1beta1.yaml",
            include_str!("../../examples/tf_job_master_v1beta1.yaml"),
            1,
        ),
        (
            "tf_job_mnist.yaml",
            include_str!("../../examples/tf_job_mnist.yaml"),
            1,
        ),
        (
            "tf_job_ps_worker.yaml",
            include_str!("../../examples/tf_job_ps_worker.yaml"),
            4,
        ),
    ];
    for (file, yaml, replicas) in examples {
        assert_eq!(rendered(yaml).len(), 2 * replicas, "{file}");
    }
    let mnist = rendered(include_str!("../../examples/tf_job_mnist.yaml"));
    assert_eq!(
        mnist[0]["metadata"]["name"], "mnist-worker-0",
        "the name docs/behaviour.md §10 uses"
    );
    let job: Value =
        serde_saphyr::from_multiple::<Value>(include_str!("../../examples/tf_job_mnist.yaml"))
            .unwrap()[0]
            .clone();
    assert_eq!(
        parse_tfjob(job)
            .unwrap()
            .spec
            .run_policy
            .unwrap()
            .clean_pod_policy,
        Some(tfjob_operator::crd::CleanPodPolicy::None)
    );
}
