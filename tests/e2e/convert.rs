//! The seed examples of every older form (tf-operator v1alpha1, Kubeflow v1beta1, early v1,
//! T9k) run once converted (docs/behaviour.md §11): `convert`, then `render` accepts the
//! result, then the operator runs it to success with exactly the pods `render` listed — on the
//! simulator and on the real tier.

use crate::support::{TestCluster, eventually, has_condition, until};
use serde_json::Value;
use tfjob_operator::convert::convert;
use tfjob_operator::crd::ConditionType;
use tfjob_operator::render::render;

/// The older-form seed examples (names are unique, so all run side by side).
const SEEDS: [(&str, &str); 7] = [
    (
        "011-v1alpha1-example-job.yaml",
        include_str!("../fixtures/seeds/011-v1alpha1-example-job.yaml"),
    ),
    (
        "012-v1alpha1-tf-smoke-gpu.yaml",
        include_str!("../fixtures/seeds/012-v1alpha1-tf-smoke-gpu.yaml"),
    ),
    (
        "014-v1beta1-example-tfjob.yaml",
        include_str!("../fixtures/seeds/014-v1beta1-example-tfjob.yaml"),
    ),
    (
        "015-v1beta1-module6-ex1-gpu.yaml",
        include_str!("../fixtures/seeds/015-v1beta1-module6-ex1-gpu.yaml"),
    ),
    (
        "017-t9k-tensorflow-example-scheduler-tensorboard.yaml",
        include_str!("../fixtures/seeds/017-t9k-tensorflow-example-scheduler-tensorboard.yaml"),
    ),
    (
        "008-mnist-get-output-legacy-fields.yaml",
        include_str!("../fixtures/seeds/008-mnist-get-output-legacy-fields.yaml"),
    ),
    (
        // The v1alpha1 `kubectl get -o yaml` output, renamed so it runs beside 011.
        "013-v1alpha1-example-job-get-output.yaml",
        include_str!("../fixtures/seeds/013-v1alpha1-example-job-get-output.yaml"),
    ),
];

/// The converted job, in the test's namespace, and the pod names `render` gives it there.
fn converted(file: &str, yaml: &str, namespace: &str) -> (Value, Vec<String>) {
    let c = convert(yaml, file).unwrap_or_else(|e| panic!("{file}: {e:?}"));
    let mut job: Value = serde_saphyr::from_str(&c.yaml).unwrap();
    job["metadata"]["namespace"] = namespace.into();
    if file.starts_with("013") {
        job["metadata"]["name"] = "example-job-from-get".into();
    }
    if file.starts_with("008") {
        // The MNIST claim needs a bound volume on a real cluster: e2e_kubectl provides one
        // for the same job; here the pod runs without it.
        let pod = &mut job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
        pod.as_object_mut().unwrap().remove("volumes");
        pod["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("volumeMounts");
    }
    let text = serde_saphyr::to_string(&job).unwrap();
    let out = render(&text, None).unwrap_or_else(|e| panic!("{file}: {e:?}"));
    let children: Vec<Value> = serde_saphyr::from_multiple(&out).unwrap();
    let mut pods: Vec<String> = children
        .iter()
        .filter(|c| c["kind"] == "Pod")
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    pods.sort();
    (job, pods)
}

#[tokio::test]
async fn converted_seed_examples_of_every_older_form_run_to_success() {
    let c = TestCluster::start("convert").await;
    let mut jobs = Vec::new();
    for (file, yaml) in SEEDS {
        let (job, pods) = converted(file, yaml, &c.namespace);
        let name = job["metadata"]["name"].as_str().unwrap().to_string();
        c.create(job).await;
        jobs.push((file, name, pods));
    }
    for (file, name, pods) in &jobs {
        let what = format!("{file}: every pod render listed");
        eventually(&what, || async {
            let lp = kube::api::ListParams::default()
                .labels(&format!("training.kubeflow.org/job-name={name}"));
            let mut seen: Vec<String> = c
                .pods()
                .list(&lp)
                .await
                .ok()?
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            seen.sort();
            (&seen == pods).then_some(())
        })
        .await;
    }
    for (file, name, _) in &jobs {
        until(&c.jobs(), name, &format!("{file} succeeded"), |j| {
            j.filter(|j| has_condition(j, ConditionType::Succeeded))
                .map(|_| ())
        })
        .await;
    }
    let t9k = c.jobs().get("tensorflow-example").await.unwrap();
    let queue = t9k
        .spec
        .run_policy
        .and_then(|r| r.scheduling_policy)
        .and_then(|s| s.queue);
    assert_eq!(queue.as_deref(), Some("default"), "the T9k queue, stored");
}

/// Early `v1` run policy fields at the top of `spec` are honoured as written, without
/// converting (docs/behaviour.md §2): `cleanPodPolicy: None` keeps the parameter server after
/// success, `activeDeadlineSeconds` fails a job that runs too long.
#[tokio::test]
async fn early_v1_run_policy_fields_are_honoured_as_written() {
    let c = TestCluster::start("early-v1").await;
    let mut keep = crate::support::job("keep", &[("PS", 1, "Never"), ("Worker", 1, "Never")]);
    keep["spec"]["cleanPodPolicy"] = "None".into();
    crate::support::annotate(&mut keep, "PS", "sim.tfjob.dev/run-seconds", "300");
    let mut late = crate::support::job("late", &[("Worker", 1, "Never")]);
    late["spec"]["activeDeadlineSeconds"] = 2.into();
    crate::support::annotate(&mut late, "Worker", "sim.tfjob.dev/run-seconds", "300");
    c.create(keep).await;
    c.create(late).await;

    c.until_condition("keep", ConditionType::Succeeded).await;
    crate::support::settle().await;
    assert_eq!(
        c.pod_names("keep").await,
        ["keep-ps-0", "keep-worker-0"],
        "cleanPodPolicy None (the default, Running, would delete the PS)"
    );
    let failed = c.until_condition("late", ConditionType::Failed).await;
    assert_eq!(
        crate::support::reason_and_message(&failed, ConditionType::Failed),
        Some((
            "TFJobFailed".to_string(),
            "Job late has failed because it was active longer than specified deadline".to_string()
        ))
    );
    let stored = c.jobs().get("keep").await.unwrap();
    assert_eq!(
        stored.spec.clean_pod_policy,
        Some(tfjob_operator::crd::CleanPodPolicy::None),
        "stored where it was written: the API server kept it"
    );
}
